"""A suite with a test that depends on chance in the reference itself (``coin``)."""

import solution


def test_double():
    assert solution.double(2) == 4


def test_coin():
    assert solution.coin()


def test_triple():
    assert solution.triple(3) == 9
