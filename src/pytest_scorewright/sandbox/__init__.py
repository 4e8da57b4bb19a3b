"""The trusted parent's side of a run: plan it (plan.py), fork it (launch.py), watch its
clock and enforce its deadline (deadline.py), kill and reap what is left (sweep.py), and
learn the suite's tests once (collect.py). Never imports candidate code.

``wire.py`` holds every type and message that crosses a process boundary and ``channel.py``
their framing; those two are shared with the child side (child/).
"""
