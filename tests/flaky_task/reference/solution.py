import random


def double(x):
    return 2 * x


def triple(x):
    return 3 * x


def coin():
    return random.random() < 0.5
