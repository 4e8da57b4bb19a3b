from solution import is_palindrome, slugify, word_counts


def test_slugify_accents():
    assert slugify("Crème Brûlée") == "creme-brulee"


def test_slugify_edges():
    assert slugify("--Already--slugged--") == "already-slugged"


def test_palindrome_sentence():
    assert is_palindrome("A man, a plan, a canal: Panama")


def test_palindrome_empty():
    assert is_palindrome("")


def test_word_counts_case():
    assert word_counts("Go go GO") == {"go": 3}


def test_word_counts_apostrophe():
    assert word_counts("don't stop") == {"don't": 1, "stop": 1}
