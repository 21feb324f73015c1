"""Coverage totals shown and judged as coverage.py shows and judges them.

The merged total is kept unrounded; every place that shows it uses ``display_percent`` with the
project's ``[report] precision``, so a figure never has more (or fewer) digits than ``coverage
report`` prints, and the gate is coverage.py's own ``should_fail_under``.
"""

from __future__ import annotations


def display_percent(total: float, precision: int) -> str:
    """The total as ``coverage report`` prints it: rounding never shows a false 0 or 100."""
    near0 = 1.0 / 10**precision
    if 0 < total < near0:
        total = near0
    elif 100.0 - near0 < total < 100:
        total = 100.0 - near0
    else:
        total = round(total, precision)
    return f"{total:.{precision}f}"


def fails_under(total: float, fail_under: float, precision: int) -> bool:
    """True when coverage.py's ``fail_under`` check would fail this total.

    coverage.py rounds the total to the precision (and, in recent versions, to the digits the
    threshold itself has) and holds ``fail_under = 100`` to exactly 100; its own function
    decides, so the gate cannot drift from ``coverage report --fail-under``.
    """
    if not 0 <= fail_under <= 100:
        return total < fail_under  # coverage.py refuses such a threshold; config checks it
    from coverage.results import should_fail_under  # imported only when a gate is set

    return bool(should_fail_under(total, fail_under, precision))


def fail_under_message(total: float, fail_under: float, precision: int) -> str:
    """coverage.py's own words for a failed gate, in the digits its comparison used."""
    try:
        from coverage.results import format_fail_under_msg
    except ImportError:  # pragma: no cover - older coverage.py compares at the precision only
        shown = display_percent(total, precision)
        return f"total of {shown} is less than fail-under={fail_under:.{precision}f}"
    return str(format_fail_under_msg(total, fail_under, precision))
