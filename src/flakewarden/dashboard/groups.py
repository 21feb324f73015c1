"""Failures grouped across tests by signature: one root cause, one group, every test it hits.

A study of flaky tests across projects found three in four failing together in clusters;
a shared fixture, a port, a slow service. Grouped by the masked signature the history
keeps for each failed attempt, such a cause shows once, with the tests it hits, how often
and since when, instead of as a dozen unrelated flakes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from flakewarden.history.failures import Failure, SignatureRow
from flakewarden.model.causes import FailureGroup
from flakewarden.model.environment import DEFAULT_PATTERNS, environment_pattern

#: Groups shown at most (the widest first), tests and sample messages per group.
MAX_GROUPS = 200
MAX_TESTS = 100
MAX_MESSAGES = 3
MAX_RUNS = 8
#: The newest runs a trend compares with as many before them; a cause none of them saw stopped.
TREND_RUNS = 10


def trend(hit: set[int], ordered: Sequence[int]) -> tuple[str, str]:
    """The trend of a cause that hit the runs ``hit``, ``ordered`` newest first, in a word
    and in words."""
    newest = set(ordered[:TREND_RUNS])
    before = set(ordered[TREND_RUNS : 2 * TREND_RUNS])
    now, then = len(hit & newest), len(hit & before)
    if len(ordered) > TREND_RUNS and not now:
        return "stopped", f"stopped: not seen in the newest {TREND_RUNS} runs"
    if now > then:
        return "rising", f"rising: {now} of the newest {len(newest)} runs, {then} before"
    if now < then:
        return "falling", f"falling: {now} of the newest {len(newest)} runs, {then} before"
    return "steady", f"steady: {now} of the newest {len(newest)} runs, as many before"


def group_failures(
    found: Sequence[Failure],
    signatures: Mapping[int, SignatureRow],
    test_names: Mapping[int, str],
    runs: Mapping[int, tuple[str, str]],
    environment: Sequence[str] = DEFAULT_PATTERNS,
) -> list[FailureGroup]:
    """The groups, widest first: most tests hit, then most runs hit, then most failures,
    then newest.

    ``runs`` maps a run's database id to its start time and its link ("" when none);
    ``environment``: the patterns that mark a cause as the environment's.
    """
    ordered = sorted(runs, key=lambda r: runs[r][0], reverse=True)
    by_signature: dict[int, list[Failure]] = {}
    for failure in found:
        by_signature.setdefault(failure.signature, []).append(failure)
    groups = []
    for number, members in by_signature.items():
        row = signatures.get(number)
        if row is None:
            continue
        per_test: dict[int, int] = {}
        for failure in members:
            per_test[failure.test] = per_test.get(failure.test, 0) + 1
        times = sorted({runs.get(f.run, ("", ""))[0] for f in members} - {""})
        newest_runs = sorted(
            {f.run for f in members}, key=lambda r: runs.get(r, ("", ""))[0], reverse=True
        )
        messages = list(dict.fromkeys(f.message for f in members if f.message))
        tests = sorted(per_test.items(), key=lambda item: (-item[1], test_names.get(item[0], "")))
        word, words = trend({f.run for f in members}, ordered)
        groups.append(
            FailureGroup(
                signature=row.signature,
                example=row.example,
                failures=len(members),
                runs=len({f.run for f in members}),
                tests=tuple((test_names.get(t, "?"), n) for t, n in tests[:MAX_TESTS]),
                tests_total=len(per_test),
                first=times[0] if times else "",
                last=times[-1] if times else "",
                messages=tuple(messages[:MAX_MESSAGES]),
                recent=tuple(runs[r] for r in newest_runs[:MAX_RUNS] if r in runs),
                environment=environment_pattern(row.signature, environment),
                trend=word,
                trend_text=words,
            )
        )
    groups.sort(key=lambda g: g.last, reverse=True)
    groups.sort(key=lambda g: (-g.tests_total, -g.runs, -g.failures))
    return groups[:MAX_GROUPS]
