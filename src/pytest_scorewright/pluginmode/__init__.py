"""Plugin mode (``pytest --scorewright-out``): settings, the collector on the reporting
process, and coverage. plugin.py, at the top level, is the entry point that wires them in."""
