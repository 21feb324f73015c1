"""Shards' report directories combined into the one report of the whole suite.

Each shard (``flakewarden run --shard K/N`` in a matrix job) wrote its own report; the
merge checks that every expected shard is there once and that no test ran in two, joins
their tests and attempts, combines their coverage data with the project's configuration
(``[paths]`` maps checkouts at different paths together), applies the coverage gate to the
merged total, and judges the exit code from the whole. A partial suite is never green:
a missing shard is a problem of the merged report and fails it.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple, Optional

from flakewarden import __version__
from flakewarden.errors import ReportError, ReportMissing, UsageError
from flakewarden.model import Attempt, BlameRun, ExitCode, Outcome, RunReport, TestResult
from flakewarden.reports.report_json import read_report

#: The exit codes that say a shard's run itself went wrong, worst first.
_BROKEN = (ExitCode.INTERRUPTED, ExitCode.INTERNAL_ERROR, ExitCode.USAGE_ERROR)


class Shard(NamedTuple):
    directory: Path
    report: RunReport
    number: Optional[int]  # K of K/N; None for a report of no shard
    of: Optional[int]  # N


def read_shards(directories: Sequence[Path]) -> list[Shard]:
    """Each directory's report, with its shard; ``ReportError`` names a bad one (exit 3),
    ``UsageError`` one that is not there (exit 4)."""
    shards = []
    for directory in directories:
        try:
            report = read_report(directory)
        except ReportMissing:  # a shard that never uploaded: the command line's fault
            raise UsageError(
                f"{directory}: no report.json there (did that shard's job upload its report?)"
            ) from None
        index = count = None
        if report.shard is not None:
            k, _, n = report.shard.partition("/")
            if not (k.isdigit() and n.isdigit() and 1 <= int(k) <= int(n)):
                raise ReportError(f"{directory}: report.json names shard {report.shard!r}")
            index, count = int(k), int(n)
        shards.append(Shard(directory, report, index, count))
    return shards


def completeness(shards: Sequence[Shard], expect: Optional[int]) -> list[str]:
    """The problems that make the merge partial: shards missing, or of another split.

    Two directories holding the same shard, or a test in two shards, is an error instead:
    the same tests counted twice cannot be told apart afterwards.
    """
    counts = {s.of for s in shards if s.of is not None}
    if len(counts) > 1:
        raise UsageError(f"the reports split the suite differently: into {sorted(counts)} shards")
    total = expect if expect is not None else next(iter(counts), None)
    if total is None:
        return []
    problems = []
    if counts and counts != {total}:
        problems.append(f"the reports are shards of {counts.pop()}, but {total} were expected")
    seen: dict[int, Path] = {}
    for shard in shards:
        if shard.number is None:
            problems.append(f"{shard.directory} is not a shard (it ran without --shard)")
            continue
        if shard.number in seen:
            raise UsageError(
                f"shard {shard.number}/{shard.of} is in both {seen[shard.number]} and "
                f"{shard.directory}"
            )
        seen[shard.number] = shard.directory
    missing = [k for k in range(1, total + 1) if k not in seen]
    if missing:
        listed = ", ".join(map(str, missing))
        problems.append(
            f"shard{'s' if len(missing) > 1 else ''} {listed} of {total} missing: "
            "the merged report does not cover the whole suite"
        )
    return problems


def merged_tests(shards: Sequence[Shard]) -> list[TestResult]:
    where: dict[str, Path] = {}
    tests: list[TestResult] = []
    for shard in shards:
        for test in shard.report.tests:
            if test.id in where:
                raise UsageError(
                    f"{test.id} ran in two shards: {where[test.id]} and {shard.directory}"
                )
            where[test.id] = shard.directory
            tests.append(test)
    return tests


def _attempts(shard: Shard, out: Path) -> list[Attempt]:
    """The shard's attempts, their folders named from the merged report's directory."""
    attempts = []
    for attempt in shard.report.attempts:
        copy = Attempt.from_json(attempt.to_json())
        copy.directory = _relative(shard.directory / attempt.directory, out)
        for continuation in copy.continuations:
            continuation.directory = _relative(shard.directory / continuation.directory, out)
        attempts.append(copy)
    return attempts


def _relative(path: Path, base: Path) -> str:
    try:
        return str(path.absolute().relative_to(base.absolute()))
    except ValueError:
        return str(path.absolute())


def _went_red_otherwise(report: RunReport) -> bool:
    """A shard's exit 1 that its failed tests, cutoff and gates do not explain."""
    if report.exit_code != ExitCode.TESTS_FAILED:
        return False
    totals = report.totals
    explained = totals.failed or totals.error or report.cutoff or totals.flaky
    gate = report.coverage is not None and report.coverage.below_threshold
    return not (explained or gate)


def merge_reports(
    shards: Sequence[Shard], out: Path, problems: list[str]
) -> tuple[RunReport, Optional[int], bool]:
    """The merged report (coverage not yet combined), the exit code a broken shard forces,
    and whether something other than its tests made a shard red (or the merge partial)."""
    first = shards[0].report
    tests = merged_tests(shards)
    attempts = [a for shard in shards for a in _attempts(shard, out)]
    merged = RunReport(
        command=first.command,
        rootdir=first.rootdir,
        tests=tests,
        attempts=attempts,
        order=[test_id for shard in shards for test_id in shard.report.order],
        exit_code=0,
        started_at=min(s.report.started_at for s in shards),
        finished_at=max(s.report.finished_at for s in shards),
        duration=max(s.report.duration for s in shards),
        version=__version__,
        cutoff=any(s.report.cutoff for s in shards),
        interrupted=any(s.report.interrupted for s in shards),
        problems=list(problems),
        max_failures=first.max_failures,
        reruns=first.reruns,
        quarantine_known=sorted({i for s in shards for i in s.report.quarantine_known}),
        context=None if first.context is None else dataclasses.replace(first.context),
        merged_from=[_label(s) for s in shards],
        uid=_merged_uid(shards),
        origins=_origins(shards),
        blame=_blame(shards),
    )
    for shard in shards:
        merged.problems += [f"{_label(shard)}: {p}" for p in shard.report.problems]
    broken = [s.report.exit_code for s in shards if s.report.exit_code in _BROKEN]
    ended_with = min(broken, key=_BROKEN.index) if broken else None
    red = bool(problems) or any(_went_red_otherwise(s.report) for s in shards)
    return merged, ended_with, red


def _blame(shards: Sequence[Shard]) -> Optional[BlameRun]:
    """The change the shards were judged against (the same diff in every one), with every
    shard's failures its policy kept out of the gate."""
    judged = [s.report.blame for s in shards if s.report.blame is not None]
    if not judged:
        return None
    merged = dataclasses.replace(judged[0])
    merged.ignored = sorted({test for blame in judged for test in blame.ignored})
    return merged


def _merged_uid(shards: Sequence[Shard]) -> str:
    """A digest of the shards' keys: merging the same shards again gives the same uid."""
    keys = sorted(s.report.uid or s.report.evidence_key("") for s in shards)
    return "m-" + hashlib.sha256("\n".join(keys).encode()).hexdigest()[:32]


def _origins(shards: Sequence[Shard]) -> dict[str, str]:
    """Which shard's run produced each test that went wrong: its hit is that run's.

    A re-run merge job over the same shards counts no hit twice; a shard that ran
    again counts its own flakes anew and no other shard's.
    """
    return {
        test.id: shard.report.evidence_key(test.id)
        for shard in shards
        for test in shard.report.tests
        if test.outcome is not Outcome.PASSED and test.outcome is not Outcome.SKIPPED
    }


def _label(shard: Shard) -> str:
    where = shard.directory.name or str(shard.directory)
    return where if shard.number is None else f"shard {shard.number}/{shard.of} ({where})"


def coverage_inputs(shards: Sequence[Shard]) -> tuple[list[Path], list[str]]:
    """Each shard's merged coverage data file, and a line for each shard that has none."""
    measured = [s for s in shards if s.report.coverage is not None]
    if not measured:
        return [], []
    files, missing = [], []
    for shard in shards:
        coverage = shard.report.coverage
        data = shard.directory / coverage.data_file if coverage and coverage.data_file else None
        if data is None or not data.is_file():
            missing.append(f"{_label(shard)} has no coverage data file to combine")
        else:
            files.append(data)
    return files, missing
