"""Honest but partial: no Unicode normalisation, simple palindromes only."""
import re


def slugify(text):
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def is_palindrome(text):
    t = "".join(c.lower() for c in text if c.isalnum())
    return t == t[::-1]


def word_counts(text):
    counts = {}
    for word in text.lower().split():
        word = word.strip(".,!?")
        if word:
            counts[word] = counts.get(word, 0) + 1
    return counts
