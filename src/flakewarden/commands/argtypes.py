"""argparse value types shared by the subcommands: one clear message per bad value."""

from __future__ import annotations

import argparse
import math
from typing import Callable


def whole_number(minimum: int) -> Callable[[str], int]:
    """A whole number of at least ``minimum``."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"expected {minimum} or more, got {value}")
        return value

    return parse


def number(
    low: float, high: float = math.inf, *, low_open: bool = False, what: str = "a number"
) -> Callable[[str], float]:
    """A number in ``[low, high]`` (``(low, high]`` with ``low_open``)."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}") from None
        if math.isnan(value) or value > high or value < low or (low_open and value == low):
            above = f"more than {low:g}" if low_open else f"{low:g} or more"
            limit = "" if high == math.inf else f" and at most {high:g}"
            raise argparse.ArgumentTypeError(f"expected {above}{limit}, got {value:g}")
        return value

    return parse
