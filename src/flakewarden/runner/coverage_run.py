"""Coverage through reruns: wrap the command in ``coverage run``, merge every attempt's data.

Kept apart from the attempt loop because it is about how a command is measured and how
the parts' data files become one total, not about which tests run again.
"""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Optional

from flakewarden.errors import UsageError
from flakewarden.runner import pytest_args

if TYPE_CHECKING:
    from flakewarden.model import Attempt, CoverageSummary


def coverage_command(command: Sequence[str], cwd: Path) -> list[str]:
    """Wrap a pytest command in ``coverage run`` (``--coverage``)."""
    located = pytest_args.locate(command)
    if located is None:
        raise UsageError(
            "--coverage needs a command that runs pytest (python -m pytest or pytest); "
            "for other commands measure with pytest-cov (--cov)"
        )
    prefix = located.prefix
    if prefix[-2:] == ["-m", "pytest"]:
        return [*prefix[:-2], "-m", "coverage", "run", "-m", "pytest", *located.args]
    program = shutil.which(prefix[-1], path=None) or prefix[-1]
    interpreter = _shebang_interpreter(Path(program))
    if interpreter is None:
        raise UsageError(
            f"--coverage cannot tell which Python runs {prefix[-1]}: "
            "write the command as python -m pytest"
        )
    return [*interpreter, "-m", "coverage", "run", "-m", "pytest", *located.args]


def _shebang_interpreter(script: Path) -> Optional[list[str]]:
    try:
        with open(script, "rb") as stream:
            first = stream.readline(4096).decode("utf-8", "replace").strip()
    except OSError:
        return None
    if not first.startswith("#!"):
        return None
    parts = first[2:].split()
    return parts or None


def merge_coverage(
    attempts: Sequence[Attempt],
    report_dir: Path,
    *,
    command: Sequence[str],
    cwd: Path,
    fail_under: Optional[float],
) -> CoverageSummary:
    """One total from the data files of every attempt and continuation under ``report_dir``.

    ``command`` is the user's command as given, read for pytest-cov's ``--cov-precision``.
    """
    from flakewarden.runner import coverage_merge

    files: list[Path] = []
    partial: list[Path] = []  # a rerun's or a continuation's: its tests need not touch the code
    missing = []
    for attempt in attempts:
        parts = [(attempt.directory, attempt.crash)]
        parts += [(c.directory, c.crash) for c in attempt.continuations]
        for number, (directory, crash) in enumerate(parts):
            found = coverage_merge.find_data_files(report_dir / directory)
            if not found:
                part = f" (continuation {number})" if number else ""
                why = f" (its process {crash})" if crash else ""
                missing.append(f"attempt {attempt.number}{part} wrote no coverage data file{why}")
            files.extend(found)
            if attempt.number > 1 or number:
                partial.extend(found)
    located = pytest_args.locate(command)
    summary = coverage_merge.merge(
        files,
        report_dir,
        cwd=cwd,
        fail_under=fail_under,
        precision=None if located is None else _cov_precision(located.args),
        may_measure_nothing=partial,
    )
    summary.errors = missing + summary.errors
    return summary


def _cov_precision(args: Sequence[str]) -> Optional[int]:
    """pytest-cov's ``--cov-precision``, which overrides ``[report] precision`` as it reports."""
    found = None  # the last one given wins, as in pytest's own parsing
    for index, token in enumerate(args):
        value = None
        if token.startswith("--cov-precision="):
            value = token.split("=", 1)[1]
        elif token == "--cov-precision" and index + 1 < len(args):
            value = args[index + 1]
        if value is not None and value.isdigit():
            found = int(value)
    return found
