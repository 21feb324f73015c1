"""A small module the demo measures: part of it is never exercised."""


def add(a: int, b: int) -> int:
    return a + b


def divide(a: float, b: float) -> float:
    if b == 0:
        raise ZeroDivisionError("cannot divide by zero")
    return a / b


def mean(values: list[float]) -> float:
    # Not tested on purpose: the demo shows partial coverage.
    if not values:
        raise ValueError("mean of nothing")
    return sum(values) / len(values)
