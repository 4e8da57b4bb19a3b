from solution import is_palindrome, slugify, word_counts


class TestSlugify:
    def test_simple(self):
        assert slugify("Hello World") == "hello-world"

    def test_punctuation(self):
        assert slugify("a, b & c!") == "a-b-c"


class TestPalindrome:
    def test_yes(self):
        assert is_palindrome("racecar")

    def test_no(self):
        assert not is_palindrome("python")


def test_word_counts(sentence):
    assert word_counts(sentence) == {"the": 2, "cat": 1, "and": 1, "hat": 1}


def test_word_counts_empty():
    assert word_counts("") == {}
