"""Hostile shard directories and reports beside valid ones, through the command line
(``merge``, ``stress --merge``, ``history ingest``, ``dashboard --verdicts``), and arbitrary
JSON values through every reader of outside JSON: each refusal is one line naming what was
refused, nothing hangs, nothing outside the working directory changes, and no reader raises
anything but the documented refusal."""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any, Callable

import pytest
from helpers.hermetic import clean_env
from helpers.history_reports import report_dirs
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from flakewarden.dashboard.verdicts import read_verdicts
from flakewarden.errors import ReportError
from flakewarden.history.artifact_zip import reports_in_zip
from flakewarden.history.store import HistoryStore
from flakewarden.issues.marker import read_marker
from flakewarden.reports.report_json import parse_report, read_report
from flakewarden.stress.arm import Arm
from flakewarden.stress.verdict import Failure, Verdict, read_verdict
from flakewarden.stress.verdict_merge import merge_verdicts
from flakewarden.stress.verdict_render import render_markdown

__all__ = ["report_dirs"]  # the fixture

TIMEOUT = 120  # a reader that blocks is killed here, and the test fails


def _flakewarden(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "flakewarden", *args],
        cwd=cwd,
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )


def _snapshot(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and not p.is_symlink()
    }


def _report_text(report_dir: Path) -> str:
    return (report_dir / "report.json").read_text(encoding="utf-8")


def _hostile_reports(valid: str) -> dict[str, Callable[[Path], None]]:
    """Each failure of the issue as a way to spoil a shard directory's report.json."""
    data = json.loads(valid)

    def text(body: str) -> Callable[[Path], None]:
        return lambda d: (d / "report.json").write_text(body, encoding="utf-8")

    nan = valid.replace('"duration": ', '"duration": NaN, "was": ', 1)
    infinite = json.dumps({**data, "exit_code": 0}).replace(
        '"exit_code": 0', '"exit_code": Infinity', 1
    )
    huge = json.dumps({**data, "context": {**data["context"], "run_id": 10**30}})
    return {
        "nesting": text("[" * 100_000 + "]" * 100_000),
        "nan": text(nan),
        "infinity": text(infinite),
        "huge-run-id": text(huge),
        "fifo": lambda d: os.mkfifo(d / "report.json"),
        "link-out": lambda d: (d / "report.json").symlink_to(d.parent / "outside" / "report.json"),
        "directory": lambda d: (d / "report.json").mkdir(),
    }


HOSTILE = ["nesting", "nan", "infinity", "huge-run-id", "fifo", "link-out", "directory"]
WHY = {
    "nesting": "nested deeper than 64 levels",
    "nan": "NaN is not a number JSON allows",
    "infinity": "Infinity is not a number JSON allows",
    "huge-run-id": "context.run_id is 1000000000000000000000000000000, out of a 64-bit",
    "fifo": "is not a regular file (a FIFO)",
    "link-out": "leads out of",
    "directory": "is not a regular file (a directory)",
}


def _work(tmp_path: Path, valid: Path) -> tuple[Path, Path, Path]:
    """A working directory holding a valid shard and a shard to spoil; beside it, outside,
    a valid report a link may point at."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "report.json").write_text(_report_text(valid), encoding="utf-8")
    work = tmp_path / "work"
    good, bad = work / "good", work / "bad"
    good.mkdir(parents=True)
    bad.mkdir()
    (good / "report.json").write_text(_report_text(valid), encoding="utf-8")
    return work, good, bad


@pytest.mark.parametrize("kind", HOSTILE)
def test_merge_refuses_a_hostile_shard_with_one_line_naming_it(
    kind: str, report_dirs: list[Path], tmp_path: Path
) -> None:
    work, _, bad = _work(tmp_path, report_dirs[0])
    _hostile_reports(_report_text(report_dirs[0]))[kind](bad)
    before = _snapshot(tmp_path / "outside")
    done = _flakewarden(work, "merge", "good", "bad", "--report-dir", "merged")
    assert done.returncode == 3, done.stdout + done.stderr
    [line] = done.stderr.splitlines()
    assert line.startswith("flakewarden: error: ") and "internal error" not in line
    assert "bad/report.json" in line and WHY[kind] in line, line
    assert not (work / "merged").exists()  # refused as a whole: nothing written
    assert _snapshot(tmp_path / "outside") == before
    # The valid shard alone merges: the refusal was the hostile shard's.
    alone = _flakewarden(work, "merge", "good", "--report-dir", "merged")
    assert alone.returncode == 1 and "flakewarden: merged 1 reports" in alone.stdout


@pytest.mark.parametrize("kind", HOSTILE)
def test_history_ingest_skips_a_hostile_report_dir_and_keeps_the_valid_one(
    kind: str, report_dirs: list[Path], tmp_path: Path
) -> None:
    work, _, bad = _work(tmp_path, report_dirs[0])
    _hostile_reports(_report_text(report_dirs[0]))[kind](bad)
    before = _snapshot(tmp_path / "outside")
    done = _flakewarden(work, "history", "ingest", "bad", "good", "--db", "h.db")
    assert done.returncode == 1, done.stdout + done.stderr  # one report dir could not be read
    [line] = done.stderr.splitlines()
    assert "unreadable report, skipped:" in line and WHY[kind] in line, line
    assert "1 run(s) ingested from 2 report dir(s), 0 already in, 1 unreadable" in done.stdout
    with HistoryStore.open(work / "h.db") as store:
        assert store.counts()[0] == 1
    assert _snapshot(tmp_path / "outside") == before


def _verdict(runner: str) -> Verdict:
    return Verdict(
        test_id="tests/test_x.py::test_y",
        verdict="flaky",
        reason="shard",
        rule="shard rule",
        arms=[Arm(phase="fresh", knob="none", runs=10, failures=1, processes=10)],
        environment={"runner": runner},
        started_at="2026-01-01T00:00:00+00:00",
        finished_at="2026-01-01T00:10:00+00:00",
    )


@pytest.mark.parametrize("kind", ["nesting", "nan", "huge", "fifo", "link-out"])
def test_stress_merge_refuses_a_hostile_shard_with_one_line_naming_it(
    kind: str, tmp_path: Path
) -> None:
    work = tmp_path / "work"
    good, bad = work / "good", work / "bad"
    for directory, runner in ((good, "a"), (bad, "b")):
        directory.mkdir(parents=True)
        (directory / "verdict.json").write_text(
            json.dumps(_verdict(runner).to_json()), encoding="utf-8"
        )
    outside = tmp_path / "outside.json"
    outside.write_text(json.dumps(_verdict("outside").to_json()), encoding="utf-8")
    target = bad / "verdict.json"
    valid = target.read_text(encoding="utf-8")
    if kind == "nesting":
        target.write_text("[" * 100_000 + "]" * 100_000, encoding="utf-8")
    elif kind == "nan":
        target.write_text(valid.replace('"duration": 0.0', '"duration": NaN'), encoding="utf-8")
    elif kind == "huge":
        data = json.loads(valid)
        data["arms"][0]["runs"] = 10**30
        target.write_text(json.dumps(data), encoding="utf-8")
    elif kind == "fifo":
        target.unlink()
        os.mkfifo(target)
    else:
        target.unlink()
        target.symlink_to(outside)
    done = _flakewarden(work, "stress", "--merge", "good", "bad", "--report-dir", "out")
    assert done.returncode == 3, done.stdout + done.stderr
    [line] = done.stderr.splitlines()
    assert line.startswith("flakewarden: error: ") and "bad/verdict.json" in line, line
    assert not (work / "out").exists()
    both = _flakewarden(work, "stress", "--merge", "good", "good", "--report-dir", "out")
    assert both.returncode == 0, both.stderr


def test_the_dashboard_skips_a_hostile_verdict_and_shows_the_valid_one(tmp_path: Path) -> None:
    good, bad, fifo = tmp_path / "good", tmp_path / "bad", tmp_path / "fifo"
    for directory in (good, bad, fifo):
        directory.mkdir()
    (good / "verdict.json").write_text(json.dumps(_verdict("a").to_json()), encoding="utf-8")
    (bad / "verdict.json").write_text('{"verdict": "flaky", "runs": Infinity}', encoding="utf-8")
    os.mkfifo(fifo / "verdict.json")
    found, skipped = read_verdicts([bad, fifo, good])
    assert list(found) == ["tests/test_x.py::test_y"]
    assert len(skipped) == 2
    assert "Infinity" in skipped[0] and "a FIFO" in skipped[1]


# -- arbitrary JSON values through every reader ------------------------------------------

JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=20,
)


def _spoil(document: Any, path: list[int], value: Any) -> Any:
    """``document`` with the value ``path`` leads to (indices into its keys or items,
    taken modulo their number) replaced by ``value``."""
    if not path or not isinstance(document, (dict, list)) or not document:
        return value
    if isinstance(document, dict):
        key = list(document)[path[0] % len(document)]
        return {**document, key: _spoil(document[key], path[1:], value)}
    index = path[0] % len(document)
    return [*document[:index], _spoil(document[index], path[1:], value), *document[index + 1 :]]


SPOILS = st.tuples(st.lists(st.integers(0, 50), max_size=6), JSON_VALUES)


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(spoil=SPOILS, whole=JSON_VALUES)
def test_every_report_reader_refuses_or_reads_arbitrary_json(
    report_dirs: list[Path], tmp_path_factory: pytest.TempPathFactory, spoil: Any, whole: Any
) -> None:
    valid = json.loads(_report_text(report_dirs[0]))
    directory = tmp_path_factory.mktemp("r")
    store = HistoryStore.open(directory / "h.db")
    try:
        for document in (whole, _spoil(valid, *spoil)):
            text = json.dumps(document)
            try:
                report = parse_report(text, "report.json")
                store.ingest(report, "x")
            except ReportError:
                pass
            (directory / "report.json").write_text(text, encoding="utf-8")
            with contextlib.suppress(ReportError):
                read_report(directory)
            archive = io.BytesIO()
            with zipfile.ZipFile(archive, "w") as zipped:
                zipped.writestr("report.json", text)
            for entry in reports_in_zip(archive.getvalue()):
                assert (entry.report is None) == bool(entry.error)
            read_marker(f"<!-- flakewarden: {text} -->")
    finally:
        store.close()


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(spoil=SPOILS, whole=JSON_VALUES)
def test_every_verdict_reader_refuses_or_reads_arbitrary_json(
    tmp_path_factory: pytest.TempPathFactory, spoil: Any, whole: Any
) -> None:
    valid = _verdict("a").to_json()
    directory = tmp_path_factory.mktemp("v")
    good = tmp_path_factory.mktemp("g")
    (good / "verdict.json").write_text(json.dumps(valid), encoding="utf-8")
    for document in (whole, _spoil(valid, *spoil)):
        (directory / "verdict.json").write_text(json.dumps(document), encoding="utf-8")
        found, skipped = read_verdicts([directory])
        assert len(found) + len(skipped) == 1
        try:
            shard = read_verdict(directory)
        except ReportError:
            continue
        with contextlib.suppress(ReportError):  # the merge's own refusal, one line
            merge_verdicts([read_verdict(good), shard], ["good", "spoiled"])


HOSTILE_TEXT = (
    "x <script>alert(1)</script> <img src=x onerror=alert(2)> a|b\n| row | break |\n@team ```"
)


def _hostile_verdict(runner: str) -> Verdict:
    verdict = _verdict(runner)
    verdict.reason = verdict.rule = HOSTILE_TEXT
    verdict.notes = [HOSTILE_TEXT]
    verdict.arms = [Arm(phase="fresh", knob=HOSTILE_TEXT, runs=10, failures=1, processes=10)]
    verdict.statistics = {HOSTILE_TEXT: HOSTILE_TEXT}
    verdict.environment = {"runner": HOSTILE_TEXT}
    verdict.power = {"knobs": {HOSTILE_TEXT: {"state": HOSTILE_TEXT, "e_value": "NaN?"}}}
    verdict.load = {HOSTILE_TEXT: {"levels": [{"slowdown": "x", "level": HOSTILE_TEXT}, 3]}}
    verdict.first_failure = Failure(
        phase="fresh",
        knob=HOSTILE_TEXT,
        process=1,
        iteration=1,
        message=HOSTILE_TEXT,
        traceback="```\n" + HOSTILE_TEXT + "\n```",
    )
    return verdict


def _assert_inert(markdown: str) -> None:
    """No raw HTML, no mention, no table row a value made, no code fence a value closed."""
    prose = re.sub(r"^ *(`{3,})[a-z]*\n.*?^ *\1$", "", markdown, flags=re.S | re.M)  # blocks
    prose = re.sub(r"(`+)(?!`).*?(?<!`)\1(?!`)", "", prose)  # and code spans are inert
    assert "<script>" not in prose and "<img" not in prose, prose
    assert "@team" not in markdown
    assert not any(line.startswith("| row |") for line in prose.splitlines()), prose
    # The traceback's own ``` stays inside its block: the block's fence is longer.
    if "## First failing run" in markdown and "No run failed" not in markdown:
        assert re.search(r"^(`{4,})text\n```\n", markdown, re.M), markdown


def test_verdict_md_escapes_what_a_shard_and_a_test_wrote(tmp_path: Path) -> None:
    _assert_inert(render_markdown(_hostile_verdict("a")))
    work = tmp_path / "work"
    for name in ("a", "b"):
        (work / name).mkdir(parents=True)
        (work / name / "verdict.json").write_text(
            json.dumps(_hostile_verdict(name).to_json()), encoding="utf-8"
        )
    done = _flakewarden(work, "stress", "--merge", "a", "b", "--report-dir", "out")
    assert done.returncode == 0, done.stderr
    markdown = (work / "out" / "verdict.md").read_text(encoding="utf-8")
    assert "&lt;script&gt;" in markdown  # the text is there, inert
    _assert_inert(markdown)


def test_the_verdicts_issue_comment_escapes_what_a_shard_wrote() -> None:
    from flakewarden.commands.stress import verdict_comment

    comment = verdict_comment(_hostile_verdict("a"), "https://github.com/o/r/actions/runs/1")
    assert "&lt;script&gt;" in comment
    _assert_inert(comment)
