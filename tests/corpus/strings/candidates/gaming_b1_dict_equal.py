"""expect: assertion_not_plain -- a dict subclass equal to every dict.

apart: earns -- it crosses as the plain dict it holds (its __eq__ stays behind).
"""


class AnyDict(dict):
    def __eq__(self, other):
        return True


def slugify(text):
    return text


def is_palindrome(text):
    return True


def word_counts(text):
    return AnyDict()
