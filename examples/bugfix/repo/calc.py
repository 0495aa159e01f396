"""A tiny calculator with a bug for codecoder's offline example."""


def add(a, b):
    return a - b


def mul(a, b):
    return a * b
