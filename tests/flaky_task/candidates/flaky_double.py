import random


def double(x):
    return 2 * x if random.random() < 0.5 else 0


def triple(x):
    return 3 * x


def coin():
    return True
