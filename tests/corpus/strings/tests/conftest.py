import pytest


@pytest.fixture
def sentence():
    return "The cat and the hat."
