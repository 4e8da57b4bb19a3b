"""Honest, object-oriented, with a value class that compares properly."""
import collections
import re
import unicodedata


class Slug(str):
    pass


class Counter(collections.Counter):
    def __eq__(self, other):
        return dict(self) == dict(other)

    __hash__ = None


def slugify(text):
    text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    return str(Slug(re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")))


def is_palindrome(text):
    t = [c for c in text.lower() if c.isalnum()]
    return t == list(reversed(t))


def word_counts(text):
    return dict(Counter(re.findall(r"[a-z']+", text.lower())))
