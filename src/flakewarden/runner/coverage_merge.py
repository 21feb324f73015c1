"""Validate and combine the coverage data files that each attempt wrote.

Every attempt runs in a fresh process that writes its own data file in its own folder (see
`attempt_env`), so a rerun never overwrites the first run's measurement and pytest-cov's clean-up
never reaches another attempt's files. `merge` checks each file, combines the good ones with
coverage.py, and writes the merged ``.coverage`` and ``coverage.xml`` to the report directory.
"""

from __future__ import annotations

import contextlib
import inspect
import io
import math
import os
import re
import shutil
import sqlite3
import tempfile
import warnings
from collections.abc import Collection, Iterator
from pathlib import Path
from typing import NamedTuple, Optional, Union

import coverage
import coverage.files
from coverage.exceptions import ConfigError, CoverageException, CoverageWarning

from flakewarden.model import CoverageSummary
from flakewarden.runner.process import PLUGIN_DIR_PREFIX

DATA_FILE = ".coverage"
XML_FILE = "coverage.xml"

# The data file schema of coverage.py 7 (pyproject requires coverage<8).
_SCHEMA = 7

# SQLite's side files, never data files of their own.
_SQLITE_SIDE_FILES = ("-journal", "-wal", "-shm")

# coverage>=7.10 can open a data file without ever writing to it; older versions quietly give
# a non-coverage SQLite file a fresh, empty schema when asked to read it.
_CAN_READ_ONLY = "read_only" in inspect.signature(coverage.CoverageData).parameters


def attempt_env(attempt_dir: Path) -> dict[str, str]:
    """Environment additions that make an attempt write its coverage data into attempt_dir.

    ``COVERAGE_FILE`` is read by coverage.py itself, so it works for pytest-cov (``--cov``), for
    ``coverage run`` and for xdist workers, whose parallel files land next to it. The folder is
    created, and the path is absolute so the attempt may run from any directory.
    """
    attempt_dir = attempt_dir.absolute()
    attempt_dir.mkdir(parents=True, exist_ok=True)
    return {"COVERAGE_FILE": str(attempt_dir / DATA_FILE)}


def find_data_files(attempt_dir: Path) -> list[Path]:
    """The coverage data files an attempt left: the main file, then any parallel ``.coverage.*``.

    Parallel files come from ``coverage run -p``, ``[run] parallel = true`` or xdist workers whose
    data was not combined (a worker that crashed). Returns ``[]`` when the attempt left nothing.
    """
    if not attempt_dir.is_dir():
        return []
    found: list[Path] = []
    main = attempt_dir / DATA_FILE
    if main.is_file():
        found.append(main)
    parallel = (
        path
        for path in attempt_dir.glob(DATA_FILE + ".*")
        if path.is_file() and not path.name.endswith(_SQLITE_SIDE_FILES)
    )
    found.extend(sorted(parallel))
    return found


def merge(
    data_files: list[Path],
    report_dir: Path,
    *,
    config_file: Union[str, bool] = True,
    cwd: Path,
    fail_under: Optional[float] = None,
    precision: Optional[int] = None,
    may_measure_nothing: Collection[Path] = (),
) -> CoverageSummary:
    """Validate then combine; write report_dir/.coverage and report_dir/coverage.xml.

    A file in ``may_measure_nothing`` (a rerun's: its tests need not touch the measured
    code) that measured no file is left out without an error; any other such file is one.

    ``data_files`` come in attempt order: the first readable file decides whether the run
    measured lines or branches, and a later file of the other kind is left out. Each bad file
    gives one line in ``errors`` and the rest are still combined; when no file is usable the
    summary has ``percent=None`` and nothing is raised, so the caller still writes its report.
    The inputs are never modified or deleted: they are the evidence of each attempt.

    The percent is the total ``coverage report`` prints, with the project's configuration read
    from ``cwd`` (``config_file`` as in ``coverage.Coverage``): precision, include/omit,
    ``[paths]``, ``relative_files`` and branch all apply. ``fail_under`` defaults to the
    configuration's ``[report] fail_under`` and is compared with the merged total only;
    ``precision`` (pytest-cov's ``--cov-precision``) overrides ``[report] precision``.
    """
    cwd = cwd.absolute()
    report_dir = report_dir.absolute()
    inputs = [path.absolute() for path in data_files]
    quiet = {path.absolute() for path in may_measure_nothing}
    report_dir.mkdir(parents=True, exist_ok=True)
    # A stale merged file would be combined into the new one, or outlive a merge with no data.
    for output in (DATA_FILE, XML_FILE):
        (report_dir / output).unlink(missing_ok=True)
    summary = CoverageSummary(percent=None, fail_under=fail_under)

    with tempfile.TemporaryDirectory(prefix="flakewarden-coverage-") as scratch:
        checked: list[_DataFile] = []
        for index, path in enumerate(inputs):
            name = _display_name(path, cwd)
            result = _check(path, name, Path(scratch) / f"{index}{DATA_FILE}")
            if result is None:  # measured nothing
                if path not in quiet:
                    summary.errors.append(
                        f"coverage data file {name} measures no file: no code under "
                        "measurement ran (check --cov or [run] source)"
                    )
            elif isinstance(result, str):
                summary.errors.append(result)
            elif checked and result.has_arcs != checked[0].has_arcs:
                summary.errors.append(_mixed_kinds(checked[0], result))
            else:
                checked.append(result)
        if not checked:
            if not inputs:
                summary.errors.append("no coverage data file was written by any attempt")
            return summary
        with _working_directory(cwd):
            _combine_and_report(checked, report_dir, config_file, summary, precision)
    return summary


class _DataFile(NamedTuple):
    """A data file that passed the checks, and the private copy that gets combined."""

    name: str
    copy: Path
    has_arcs: bool


def _check(path: Path, name: str, copy: Path) -> Union[_DataFile, str, None]:
    """Read the whole file through coverage.py; a message naming the file if it is unusable,
    None if it is sound but measured no file."""
    if not path.exists():
        return f"coverage data file {name} is missing: the attempt wrote no coverage data"
    if not path.is_file():
        return f"coverage data file {name} is not a file"
    if path.stat().st_size == 0:
        return (
            f"coverage data file {name} is empty (0 bytes): the process writing it was probably "
            "killed before it saved"
        )
    # Reading and combining work on a copy, so nothing coverage.py does can touch the evidence.
    shutil.copyfile(path, copy)
    data = _open_data(copy)
    try:
        data.read()
        measured = data.measured_files()
        has_arcs = data.has_arcs()
        # read() only loads the file table; touch every row so truncation shows up here and
        # not as a warning halfway through combining.
        for source in measured:
            if has_arcs:
                data.arcs(source)
            else:
                data.lines(source)
            data.file_tracer(source)
        data.measured_contexts()
    except (CoverageException, sqlite3.Error) as exc:
        detail = str(exc).replace(str(copy), name).splitlines()[0]
        problem = (
            "is not coverage data" if "coverage_schema" in detail else "is truncated or corrupt"
        )
        return f"coverage data file {name} {problem}: {detail}"
    finally:
        _close(data)
    injected = [source for source in measured if is_injected(source)]
    if injected:
        try:
            _drop_files(copy, injected)
        except (CoverageException, sqlite3.Error) as exc:
            return f"coverage data file {name}: cannot leave out flakewarden's plugin: {exc}"
    if len(injected) == len(measured):
        return None
    return _DataFile(name=name, copy=copy, has_arcs=has_arcs)


def is_injected(measured: str) -> bool:
    """True for a file flakewarden put into the tested process (its plugin folder's files).

    Matched by the folder's name, not this run's folder, so data measured in any run (an
    earlier attempt, another job) is cleaned the same way, with any ``relative_files``.
    """
    parts = re.split(r"[/\\]", measured)
    return len(parts) >= 2 and parts[-2].startswith(PLUGIN_DIR_PREFIX)


def _drop_files(copy: Path, paths: list[str]) -> None:
    """Remove every row about ``paths`` from a private copy of a data file.

    coverage.py's ``purge_files`` keeps the file in the file table, so ``coverage report`` on
    the merged data would still look for its (long deleted) source; the rows go here instead,
    in the schema every coverage.py 7 writes.
    """
    with contextlib.closing(sqlite3.connect(copy)) as db, db:
        [(version,)] = db.execute("select version from coverage_schema").fetchall()
        if version != _SCHEMA:
            raise CoverageException(f"coverage data schema {version} is not {_SCHEMA}")
        marks = ",".join("?" * len(paths))
        ids = [row[0] for row in db.execute(f"select id from file where path in ({marks})", paths)]
        id_marks = ",".join("?" * len(ids))
        for table in ("line_bits", "arc", "tracer"):
            db.execute(f"delete from {table} where file_id in ({id_marks})", ids)
        db.execute(f"delete from file where id in ({id_marks})", ids)


def _open_data(path: Path) -> coverage.CoverageData:
    if _CAN_READ_ONLY:
        return coverage.CoverageData(basename=str(path), read_only=True)
    return coverage.CoverageData(basename=str(path))  # pragma: no cover - coverage<7.10


def _close(data: coverage.CoverageData) -> None:
    close = getattr(data, "close", None)  # not in every coverage 7; then closed when collected
    if close is not None:
        close()


def _mixed_kinds(first: _DataFile, other: _DataFile) -> str:
    def kind(data_file: _DataFile) -> str:
        return "branches" if data_file.has_arcs else "lines"

    return (
        f"coverage data file {other.name} not combined: {first.name} measured {kind(first)}, "
        f"{other.name} {kind(other)}; set branch the same way for every run "
        "([run] branch or --cov-branch)"
    )


def _combine_and_report(
    checked: list[_DataFile],
    report_dir: Path,
    config_file: Union[str, bool],
    summary: CoverageSummary,
    precision_given: Optional[int],
) -> None:
    """Combine the checked copies into report_dir/.coverage and report on them, from the cwd."""
    data_path = report_dir / DATA_FILE
    xml_path = report_dir / XML_FILE
    try:
        cov = coverage.Coverage(data_file=str(data_path), config_file=config_file)
        if precision_given is not None:
            cov.set_option("report:precision", precision_given)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", CoverageWarning)
            # keep=True: coverage deletes combined inputs by default.
            cov.combine([str(data_file.copy) for data_file in checked], strict=True, keep=True)
        summary.errors.extend(
            f"coverage warning while combining: {warning.message}"
            for warning in caught
            if issubclass(warning.category, CoverageWarning)
        )
        cov.save()
        summary.data_file = DATA_FILE
        summary.files_combined = len(checked)
        summary.branch = cov.get_data().has_arcs()
        total = cov.report(file=io.StringIO())
        cov.xml_report(outfile=str(xml_path))
        summary.xml_file = XML_FILE
        precision = _number_option(cov, "report:precision")
        if precision < 0 or precision != int(precision):
            raise CoverageException(f"[report] precision is {precision:g}, not a whole number >= 0")
        summary.precision = int(precision)
        summary.percent = float(total)
        if summary.fail_under is None:
            fail_under = _number_option(cov, "report:fail_under")
            if not 0 <= fail_under <= 100:
                raise CoverageException(f"[report] fail_under is {fail_under:g}, not 0 to 100")
            summary.fail_under = fail_under or None
    except (CoverageException, ConfigError) as exc:  # ConfigError is not one in every 7.x
        summary.errors.append(f"cannot combine or report coverage: {exc}")


def _number_option(cov: coverage.Coverage, name: str) -> float:
    value = cov.get_option(name)
    if not isinstance(value, (int, float)) or not math.isfinite(value):
        raise CoverageException(f"[{name.replace(':', '] ')} is {value!r}, not a finite number")
    return float(value)


def _display_name(path: Path, cwd: Path) -> str:
    """The path relative to the project when it is inside it, as a user would type it."""
    try:
        return str(path.relative_to(cwd))
    except ValueError:
        return str(path)


@contextlib.contextmanager
def _working_directory(path: Path) -> Iterator[None]:
    """Run coverage.py from the project directory, where its config and relative paths live."""
    previous = os.getcwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(previous)
        # Coverage keeps the directory report paths are relative to in a module global, set
        # when a Coverage object initialises; point it back here so a Coverage measuring this
        # process (pytest-cov) still reports relative to where it started.
        coverage.files.set_relative_directory()
