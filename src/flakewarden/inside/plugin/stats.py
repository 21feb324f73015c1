"""What pytest's own terminal summary counted, for the consistency check."""

from __future__ import annotations

from typing import Any, Optional

from .recorder import is_subtest

MAX_IDS = 1000  # node ids pytest counted as failed or error, kept for the consistency check


def terminal_counts(config: Any) -> Optional[dict[str, Any]]:
    """What pytest's terminal summary line counts, read from the terminal reporter itself.

    Read from its ``stats`` rather than scraped from the output, which ``-q``/``-qq``
    reshape; ``-p no:terminal`` leaves no reporter and no record (nothing to compare).
    ``summary`` is the line itself; ``tests`` its test reports per category (what
    the plugin's records must add up to), ``collect`` its collection reports;
    ``subtests`` counts subtest reports per outcome, including the passed ones the
    line hides at default verbosity. ``failed_ids``: what pytest counted as failed
    or error, which must never be a pass in the records.
    """
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    stats = getattr(reporter, "stats", None)
    if not isinstance(stats, dict):
        return None
    counts: dict[str, dict[str, int]] = {"summary": {}, "tests": {}, "collect": {}, "subtests": {}}

    def bump(group: str, key: str) -> None:
        counts[group][key] = counts[group].get(key, 0) + 1

    failed_ids: dict[str, None] = {}
    for category, reports in stats.items():
        if category == "warnings" or not isinstance(reports, list):
            continue
        for report in reports:
            shown = category != "" and getattr(report, "count_towards_summary", True)
            if shown:
                bump("summary", category)
            failed = category in ("failed", "error") or getattr(report, "failed", False)
            is_test = getattr(report, "when", "collect") != "collect"  # xdist's crash: "???"
            if failed and is_test and len(failed_ids) < MAX_IDS:
                failed_ids.setdefault(str(report.nodeid), None)
            if is_subtest(report):
                bump("subtests", "xfailed" if hasattr(report, "wasxfail") else report.outcome)
            elif shown:
                bump("tests" if is_test else "collect", category)
    return {
        "kind": "pytest_stats",
        "source": "terminalreporter",
        **counts,
        "failed_ids": list(failed_ids),
    }
