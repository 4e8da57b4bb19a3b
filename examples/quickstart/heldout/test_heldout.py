import pytest
from solution import decode, encode

pytestmark = pytest.mark.heldout


def test_unicode() -> None:
    assert decode(encode("ééé🙂")) == "ééé🙂"


def test_negative_count_rejected() -> None:
    with pytest.raises(ValueError, match="negative"):
        decode([("a", -1)])
