"""The cut-off: more failed tests than ``--max-failures`` is a real break, unless most are
one thing the environment did.

A change that breaks a shared fixture fails dozens of tests, and rerunning them only
wastes the job's time. A database that refused connections during attempt 1 fails as
many, and every one of them passes on a rerun. The two are told apart by their causes
(``model/causes.py``): failures that are causes of the environment's are one event to
rerun, within ``causes.environment_rerun_limit`` tests; the other failures are counted
against ``--max-failures`` as before.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, NamedTuple

from flakewarden.model import AttemptResult, TestRecord
from flakewarden.model.environment import environment_pattern
from flakewarden.model.signatures import Signature

if TYPE_CHECKING:
    from flakewarden.runner.run_options import RunOptions


class CutOff(NamedTuple):
    """Whether attempt 1's failures stop the run, and the line that says why."""

    cut: bool
    said: str


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


def over_max_failures(
    failing: Sequence[str],
    records: Mapping[str, Sequence[tuple[int, TestRecord]]],
    options: RunOptions,
) -> CutOff:
    """The verdict on ``failing`` (more than ``--max-failures`` tests after attempt 1), by
    their causes; ``records`` holds each test's records so far, by attempt."""
    return judge(
        failing,
        {test_id: records[test_id][-1][1] for test_id in failing if records.get(test_id)},
        options.max_failures,
        options.environment,
        options.environment_rerun_limit,
    )


def judge(
    failing: Sequence[str],
    first: Mapping[str, TestRecord],
    max_failures: int,
    environment: Sequence[str],
    limit: int,
) -> CutOff:
    """The verdict on ``failing``: ``first`` holds each one's record in attempt 1, ``limit``
    the most tests rerun for causes of the environment's."""
    causes: dict[str, tuple[Signature, list[str]]] = {}
    others = []
    for test_id in failing:
        record = first.get(test_id)
        sig = None if record is None else AttemptResult.from_record(1, record).signature
        if sig is not None and environment_pattern(sig, environment):
            causes.setdefault(sig.key, (sig, []))[1].append(test_id)
        else:
            others.append(test_id)
    total = _plural(len(failing), "test")
    if len(others) > max_failures or not causes:
        return CutOff(
            True,
            f"{total} failed, more than --max-failures {max_failures}: "
            "that is a real break, not flakiness; no reruns",
        )
    outage = len(failing) - len(others)
    if len(failing) > limit:
        return CutOff(
            True,
            f"{total} failed, more than --max-failures {max_failures}; {outage} of them the "
            f"environment's, more than its rerun limit of {limit} tests "
            "(causes.environment_rerun_limit): no reruns",
        )
    widest = max(causes.values(), key=lambda item: len(item[1]))[0]
    named = f"{widest.exception}: {widest.message}"
    kinds = _plural(len(causes), "cause")
    rest = f" and {len(others)} {'is' if len(others) == 1 else 'are'} not" if others else ""
    return CutOff(
        False,
        f"{total} failed, more than --max-failures {max_failures}, but {outage} of them are "
        f"{kinds} of the environment's ({named}{' and more' if len(causes) > 1 else ''})"
        f"{rest}: one event, not a real break; rerunning them",
    )
