"""Each test's verdict from the base's records, as a table: records in, verdict out."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Optional

import pytest

from flakewarden.blame.base_verdicts import (
    NOT_AT_BASE,
    Ended,
    foreign_import,
    loaded_files,
    one_line,
    verdicts,
)
from flakewarden.runner.process_results import read_results

T = "tests/test_x.py::test_x"
CONFIG = {"kind": "config", "rootdir": "/r", "args": [], "file_or_dir": []}
SESSION = {"kind": "session", "exitstatus": 1, "testscollected": 1}


def _test(*phases: tuple[str, str], **extra: Any) -> dict[str, Any]:
    return {
        "kind": "test",
        "id": T,
        "file": "tests/test_x.py",
        "line": 1,
        "phases": [{"when": w, "outcome": o, "duration": 0.0, **extra} for w, o in phases],
    }


PASSED = _test(("setup", "passed"), ("call", "passed"), ("teardown", "passed"))
FAILED = _test(("setup", "passed"), ("call", "failed"), ("teardown", "passed"))


def _verdict(
    tmp_path: Path, records: list[dict[str, Any]], *, exit_code: int = 1, timed_out: bool = False
) -> tuple[str, str]:
    results = tmp_path / "results.jsonl"
    results.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    ended = Ended(exit_code, timed_out, 30.0, tmp_path / "output.log")
    check = verdicts([T], read_results(results), ended, "abc")[T]
    assert check.commit == "abc" and "\n" not in check.why
    return check.verdict, check.why


@pytest.mark.parametrize(
    ("records", "verdict", "why"),
    [
        ([CONFIG, PASSED, SESSION], "passes", "passed on the base"),
        ([CONFIG, FAILED, SESSION], "fails", "failed on the base"),
        (
            [CONFIG, _test(("setup", "failed"), ("teardown", "passed")), SESSION],
            "fails",
            "error in setup on the base",
        ),
        ([CONFIG, {**FAILED, "crash": "worker died"}, SESSION], "fails", "crashed on the base"),
        (
            [CONFIG, _test(("setup", "passed"), ("call", "skipped"), wasxfail=True), SESSION],
            "fails",
            "failed on the base, where it is marked xfail",
        ),
        (
            [CONFIG, _test(("setup", "skipped"), longrepr="Skipped: no\nnetwork"), SESSION],
            "error",
            "skipped on the base: Skipped: no network",
        ),
        (
            [CONFIG, {**PASSED, "unfinished": "Exit: stop"}, SESSION],
            "error",
            "the session on the base ended while it ran: Exit: stop",
        ),
        ([CONFIG, {**SESSION, "exitstatus": 5}], "error", NOT_AT_BASE),
        (
            [
                CONFIG,
                {"kind": "collect_error", "id": "tests/test_x.py", "longrepr": "E  boom\nE  Err"},
                {**SESSION, "exitstatus": 2},
            ],
            "error",
            "tests/test_x.py does not collect on the base: E  Err",
        ),
        (
            [CONFIG, {**SESSION, "exitstatus": 4}],
            "error",
            "pytest stopped on the base before collecting it (exit status 4)",
        ),
        (
            [CONFIG, {"kind": "start", "id": T, "file": "tests/test_x.py", "line": 1}],
            "error",
            "the test process died on the base while it ran (exit code -9)",
        ),
        ([CONFIG], "error", "the test process died on the base before it ran (exit code -9)"),
    ],
)
def test_records_give_the_verdict(
    tmp_path: Path, records: list[dict[str, Any]], verdict: str, why: str
) -> None:
    assert _verdict(tmp_path, records, exit_code=-9) == (verdict, why)


@pytest.mark.parametrize(
    ("started", "why"),
    [
        (True, "timed out on the base after 30 seconds, while it ran"),
        (False, "timed out on the base after 30 seconds, before it ran"),
    ],
)
def test_a_timeout_is_an_error(tmp_path: Path, started: bool, why: str) -> None:
    start = {"kind": "start", "id": T, "file": "tests/test_x.py", "line": 1}
    records = [CONFIG, start] if started else [CONFIG]
    assert _verdict(tmp_path, records, exit_code=-15, timed_out=True) == ("error", why)


def test_pytest_that_never_started_is_an_error(tmp_path: Path) -> None:
    verdict, why = _verdict(tmp_path, [], exit_code=127)
    assert verdict == "error"
    assert why.startswith("the command did not start pytest on the base (exit code 127); see ")


def test_an_import_from_the_checkout_makes_every_verdict_an_error(tmp_path: Path) -> None:
    results = tmp_path / "results.jsonl"
    checkout = tmp_path / "checkout"
    first, second = checkout / "src" / "a.py", checkout / "src" / "b.py"
    records = [
        CONFIG,
        {"kind": "modules", "under": str(checkout), "files": [str(first)]},
        PASSED,
        {"kind": "modules", "under": str(checkout), "files": [str(first), str(second)]},
        SESSION,
    ]
    results.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    assert read_results(results).tests[0].id == T  # the reader skips the new record kind

    files = loaded_files(results)
    foreign = foreign_import(files or [], checkout)

    assert files == [str(first), str(second)]
    assert foreign == (
        "imported src/a.py from the pull request's checkout, not the base's (an editable install?)"
    )
    ended = Ended(1, False, 30.0, tmp_path / "output.log")
    check = verdicts([T], read_results(results), ended, "abc", foreign=foreign)[T]
    assert (check.verdict, check.why) == ("error", foreign)


@pytest.mark.parametrize(
    ("records", "expected"),
    [
        ([], None),  # no modules record: nothing to tell from
        ([{"kind": "modules", "files": []}], []),
    ],
)
def test_loaded_files(
    tmp_path: Path, records: list[dict[str, Any]], expected: Optional[list[str]]
) -> None:
    results = tmp_path / "results.jsonl"
    results.write_text("".join(json.dumps(r) + "\n" for r in records) + '{"kind": "mod', "utf-8")
    assert loaded_files(results) == expected
    assert foreign_import(expected or [], tmp_path) is None


def test_one_line() -> None:
    assert one_line("a\nb\r\nc\u2028d") == "a b c d"
    assert one_line("x" * 400, 10) == "x" * 9 + "…"
