"""argparse value types shared by the subcommands: one clear message per bad value.

Every number read from a command line is finite and bounded: ``nan`` or ``inf``
would silently turn a gate or a budget off, and a 5,000-digit number is a typo.
"""

from __future__ import annotations

import argparse
import math
from typing import Callable

#: The largest whole number any option takes.
MAX_WHOLE = 1_000_000_000
#: An error message quotes at most this much of a bad value.
SHOWN = 40


def _shown(text: str) -> str:
    return repr(text if len(text) <= SHOWN else text[: SHOWN - 1] + "…")


def whole_number(minimum: int, maximum: int = MAX_WHOLE) -> Callable[[str], int]:
    """A whole number in ``[minimum, maximum]``."""

    def parse(text: str) -> int:
        digits = text.strip().lstrip("+-")
        if len(digits) > len(str(MAX_WHOLE)) and digits.isdigit():
            raise argparse.ArgumentTypeError(f"expected at most {maximum}, got {_shown(text)}")
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"expected a whole number, got {_shown(text)}"
            ) from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"expected {minimum} or more, got {value}")
        if value > maximum:
            raise argparse.ArgumentTypeError(f"expected at most {maximum}, got {value}")
        return value

    return parse


def number(
    low: float, high: float = math.inf, *, low_open: bool = False, what: str = "a number"
) -> Callable[[str], float]:
    """A finite number in ``[low, high]`` (``(low, high]`` with ``low_open``)."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {what}, got {_shown(text)}") from None
        if not math.isfinite(value) and high == math.inf:
            raise argparse.ArgumentTypeError(f"expected {what}, a finite one, got {_shown(text)}")
        if not math.isfinite(value) or value > high or value < low or (low_open and value == low):
            above = f"more than {low:g}" if low_open else f"{low:g} or more"
            limit = "" if high == math.inf else f" and at most {high:g}"
            raise argparse.ArgumentTypeError(f"expected {above}{limit}, got {value:g}")
        return value

    return parse


def add_gate_options(parser: argparse.ArgumentParser) -> None:
    """``--cov-fail-under`` and ``--fail-on-flaky``: what fails a run that ran its tests."""
    parser.add_argument(
        "--cov-fail-under",
        type=number(0, 100, what="a percentage"),
        default=None,
        metavar="PCT",
        help="fail when the merged coverage total is below PCT",
    )
    parser.add_argument(
        "--fail-on-flaky",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="exit 1 when a test was flaky (--no-fail-on-flaky overrides the config file)",
    )


def rerun_pattern(text: str) -> str:
    """A ``--rerun-only`` / ``--rerun-except`` pattern: an exception's name or a regex."""
    from flakewarden.model.rerun_policy import check

    try:
        return check(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)[:200]) from None


def add_xunit1_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--junit-xunit1",
        action="store_true",
        help="also write junit-xunit1.xml: junit.xml with pytest's xunit1 file, line and "
        "nodeid attributes on each testcase, for consumers that annotate from them (no "
        "schema allows those attributes; junit.xml keeps them in its properties)",
    )
