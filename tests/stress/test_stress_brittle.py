"""Brittle tests: they fail alone and pass after the earlier test that sets their state.

A brittle test is the inverse of a victim: every isolated run fails, yet in
the suite it passes, because a state-setter ran before it. A recorded run that
holds its pass (``--order-from``) is replayed and bisected to the
state-setter, and the verdict is ``order-dependent``, never ``deterministic``.
Each project is real: its run is recorded with ``flakewarden run`` and then
stressed with the real CLI. None of these reaches the timing phase.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from helpers.project import make_project
from helpers.stress_runs import PYTEST, arm, stress

# The evidence here is which tests ran before which, never timing: these stress runs need
# no machine to themselves and run in the parallel part of the suite.

OPTIONS = ("--runs", "20", "--budget-seconds", "120")
RECORD = ("--reruns", "0", "--no-quarantine-from-github", "--report-dir")

# test_lookup_csv reads what test_register_csv, two tests earlier in its file, registers.
ONE_FILE = {
    "registry.py": """
        _formats = {}

        def register(name, reader):
            _formats[name] = reader

        def lookup(name):
            return _formats[name]
        """,
    "test_formats.py": """
        import registry

        def test_title():
            assert "formats".title() == "Formats"

        def test_length():
            assert len("formats") == 7

        def test_register_csv():
            registry.register("csv", ",")
            assert registry.lookup("csv") == ","

        def test_split():
            assert "a,b".split(",") == ["a", "b"]

        def test_join():
            assert ",".join("ab") == "a,b"

        def test_lookup_csv():
            assert registry.lookup("csv") == ","
        """,
}
ONE_FILE_TEST = "test_formats.py::test_lookup_csv"
ONE_FILE_SETTER = "test_formats.py::test_register_csv"

# Across files: a test of one file sets an environment variable that a later file reads.
TWO_FILES = {
    "tests/test_setup_side.py": """
        import os

        def test_defaults():
            assert os.sep == "/"

        def test_select_backend():
            os.environ["APP_BACKEND"] = "memory"  # never restored
            assert os.environ["APP_BACKEND"] == "memory"

        def test_noop():
            assert True
        """,
    "tests/test_user.py": """
        import os

        def test_unrelated():
            assert 2 * 2 == 4

        def test_backend_is_selected():
            assert os.environ.get("APP_BACKEND") == "memory"
        """,
}
TWO_FILES_TEST = "tests/test_user.py::test_backend_is_selected"
TWO_FILES_SETTER = "tests/test_setup_side.py::test_select_backend"


def _ends_with_then_seeds(reason: str, clause: str) -> bool:
    """``clause`` closes the reason, before the draws phase's: under which seeds it failed.

    A test that failed every run in processes forked from one server (one hash seed) is a
    real break only once processes with hash seeds of their own failed it too.
    """
    return (
        re.search(
            re.escape(clause) + r"; it failed under \d+ random seeds and \d+ hash seeds$", reason
        )
        is not None
    )


# The registry broken: every lookup fails, whatever ran before it.
BROKEN_REGISTRY = """
def register(name, reader):
    pass

def lookup(name):
    raise KeyError(name)
"""


def record(project: Path, code: int = 0) -> Path:
    """``flakewarden run`` of the whole suite, in its fixed order; its ``report.json``.

    ``code``: the run's exit code, 0 where every test passes in the suite's own order.
    """
    report_dir = project / "recorded"
    done = subprocess.run(
        [sys.executable, "-m", "flakewarden", "run", *RECORD, str(report_dir), "--", *PYTEST],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == code, done.stdout + done.stderr
    return report_dir / "report.json"


def _isolation_failed_every_run(data: dict[str, Any]) -> None:
    fresh = arm(data, "isolation", "baseline")
    assert (fresh["runs"], fresh["failures"], fresh["processes"]) == (10, 10, 10)
    repeats = arm(data, "isolation", "in-process")
    assert (repeats["runs"], repeats["failures"]) == (10, 10)
    assert not any(row["phase"] == "timing" for row in data["arms"])


def _brittle_verdict(data: dict[str, Any], test_id: str, setter: str, predecessors: int) -> None:
    assert data["verdict"] == "order-dependent", data["reason"]
    assert data["quarantine_allowed"] is True
    assert data["polluter"] is None
    assert data["state_setter"] == [setter]
    order = data["order"]
    assert order["kind"] == "brittle"
    assert order["state_setter"] == [setter]
    assert order["predecessors"] == predecessors
    assert (order["recorded_outcome"], order["attempt"]) == ("passed", 1)
    _isolation_failed_every_run(data)
    replayed = arm(data, "order", "after-predecessors")
    assert (replayed["runs"], replayed["failures"]) == (3, 0)
    confirm = arm(data, "order", "after-state-setter")
    assert (confirm["runs"], confirm["failures"], confirm["processes"]) == (5, 0, 5)
    # 5/5 passes right after the state-setter against 0/10 alone: 1 / C(15, 5).
    assert confirm["p_value"] == pytest.approx(1 / 3003)
    assert order["confirm"] == {"setters": 1, "runs": 5, "passes": 5, "p_value": confirm["p_value"]}
    assert data["reason"] == (
        "fails alone (10/10 isolated runs failed) but passed 5/5 times right after its "
        f"state-setter {setter}: brittle, it relies on state {setter} sets"
    )
    assert "brittle" in data["rule"] and "Fisher" in data["rule"]
    # Both orders reproduce by hand: the test alone, and the state-setter then the test.
    assert arm(data, "isolation", "baseline")["command"].endswith(f"--tb=long {test_id}")
    assert confirm["command"].endswith(f"--tb=long {setter} {test_id}")
    assert data["first_failure"]["phase"] == "isolation"


def test_brittle_test_in_one_file_names_its_state_setter(tmp_path: Path) -> None:
    project = make_project(tmp_path / "one-file", ONE_FILE)
    report = record(project)
    result, data = stress(project, ONE_FILE_TEST, "--order-from", str(report), *OPTIONS)
    assert result.returncode == 0, result.stderr
    _brittle_verdict(data, ONE_FILE_TEST, ONE_FILE_SETTER, 5)
    # Halving: not after [title, length], after [register, split, join]; then after
    # [register] and not after [split, join].
    steps = data["order"]["bisection"]
    assert [(s["context"], s["sizes"], s["passes"], s["kept"]) for s in steps] == [
        (0, [2, 3], [0, 2], "second half"),
        (0, [1, 2], [2, 0], "first half"),
    ]
    markdown = (project / "flakewarden-stress" / "verdict.md").read_text(encoding="utf-8")
    assert "brittle" in markdown and ONE_FILE_SETTER in markdown


def test_brittle_test_across_files_names_the_state_setter_in_the_other_file(
    tmp_path: Path,
) -> None:
    project = make_project(tmp_path / "two-files", TWO_FILES)
    report = record(project)
    result, data = stress(project, TWO_FILES_TEST, "--order-from", str(report), *OPTIONS)
    assert result.returncode == 0, result.stderr
    _brittle_verdict(data, TWO_FILES_TEST, TWO_FILES_SETTER, 4)
    # The pair reproduces by hand, without flakewarden; the test alone fails.
    confirm = arm(data, "order", "after-state-setter")["command"]
    assert subprocess.run(confirm, shell=True, capture_output=True).returncode == 0
    alone = arm(data, "isolation", "baseline")["command"]
    assert subprocess.run(alone, shell=True, capture_output=True).returncode == 1


def test_brittle_test_without_a_recorded_run_is_deterministic_with_a_hint(
    tmp_path: Path,
) -> None:
    project = make_project(tmp_path / "no-record", ONE_FILE)
    result, data = stress(project, ONE_FILE_TEST, *OPTIONS)
    assert result.returncode == 0, result.stderr
    assert data["verdict"] == "deterministic", data["reason"]
    assert data["quarantine_allowed"] is False
    _isolation_failed_every_run(data)
    assert data["order"] == {}
    assert _ends_with_then_seeds(
        data["reason"],
        "; a test that passes in the suite but fails alone may be brittle (it relies on "
        "state an earlier test sets): to check, stress it with --order-from the "
        "report.json of a run where it passed",
    )


def test_real_break_stays_deterministic_when_the_recorded_order_fails_too(
    tmp_path: Path,
) -> None:
    project = make_project(tmp_path / "broken", ONE_FILE)
    report = record(project)  # it passed here, after its state-setter
    # Then the code broke: the lookup now fails whatever ran before it.
    (project / "registry.py").write_text(BROKEN_REGISTRY, encoding="utf-8")
    result, data = stress(project, ONE_FILE_TEST, "--order-from", str(report), *OPTIONS)
    assert result.returncode == 0, result.stderr
    assert data["verdict"] == "deterministic", data["reason"]
    assert data["quarantine_allowed"] is False
    _isolation_failed_every_run(data)
    replayed = arm(data, "order", "after-predecessors")
    assert (replayed["runs"], replayed["failures"]) == (3, 3)
    assert data["order"]["kind"] == "brittle" and data["order"]["reproduced"] is False
    assert "state_setter" not in data["order"]
    assert _ends_with_then_seeds(
        data["reason"],
        f"; replaying the 5 predecessors it passed after in its recorded run ({report}), "
        "in order, failed it too (3/3 runs): it fails even in the order it passed in",
    )
    assert any("replaying its 5 predecessors in that order failed" in n for n in data["notes"])
    assert [row["knob"] for row in data["arms"] if row["phase"] == "order"] == [
        "after-predecessors"
    ]


def test_real_break_that_failed_in_the_recorded_run_is_deterministic_without_a_replay(
    tmp_path: Path,
) -> None:
    project = make_project(
        tmp_path / "failed-recorded", {**ONE_FILE, "registry.py": BROKEN_REGISTRY}
    )
    report = record(project, code=1)  # the broken lookup fails in the suite too
    result, data = stress(project, ONE_FILE_TEST, "--order-from", str(report), *OPTIONS)
    assert result.returncode == 0, result.stderr
    assert data["verdict"] == "deterministic", data["reason"]
    _isolation_failed_every_run(data)
    assert not any(row["phase"] == "order" for row in data["arms"])
    assert _ends_with_then_seeds(
        data["reason"],
        f"; its recorded run ({report}) holds no pass of it either (outcome failed), so "
        "there was no order it passed in to replay",
    )


# Two state-setters in different halves: neither half alone is enough.
TWO_SETTERS = {
    "test_config.py": """
        import os

        def test_set_host():
            os.environ["APP_HOST"] = "localhost"

        def test_a():
            assert True

        def test_b():
            assert True

        def test_set_port():
            os.environ["APP_PORT"] = "8080"

        def test_c():
            assert True

        def test_url():
            assert os.environ["APP_HOST"] + ":" + os.environ["APP_PORT"] == "localhost:8080"
        """,
}


def test_brittle_test_needing_two_state_setters_in_different_halves_names_both(
    tmp_path: Path,
) -> None:
    project = make_project(tmp_path / "two-setters", TWO_SETTERS)
    report = record(project)
    test_id = "test_config.py::test_url"
    result, data = stress(project, test_id, "--order-from", str(report), *OPTIONS)
    assert result.returncode == 0, result.stderr
    assert data["verdict"] == "order-dependent", data["reason"]
    setters = ["test_config.py::test_set_host", "test_config.py::test_set_port"]
    assert data["order"]["kind"] == "brittle"
    assert data["order"]["state_setter"] == setters
    assert data["state_setter"] == setters
    assert data["polluter"] is None
    # Neither [set_host, a] nor [b, set_port, c] is enough alone: each half is bisected
    # with the other (then with what was found) run before it too.
    steps = data["order"]["bisection"]
    assert [(s["context"], s["sizes"], s["passes"], s["kept"]) for s in steps] == [
        (0, [2, 3], [0, 0], "both halves"),
        (3, [1, 1], [2, 0], "first half"),
        (1, [1, 2], [0, 2], "second half"),
        (1, [1, 1], [2, 0], "first half"),
    ]
    confirm = arm(data, "order", "after-state-setter")
    assert (confirm["runs"], confirm["failures"]) == (5, 0)
    assert confirm["command"].endswith(f"--tb=long {' '.join(setters)} {test_id}")
    assert data["reason"] == (
        "fails alone (10/10 isolated runs failed) but passed 5/5 times right after its "
        f"state-setters {setters[0]} + {setters[1]}: brittle, it relies on state they set"
    )


# The state is set only the first time the state-setter ever runs in the project: the
# replay passes once, and nothing confirms afterwards.
ONCE = {
    "test_once.py": """
        import os
        from pathlib import Path

        MARK = Path(__file__).parent / ".session-opened"
        STATE = {}

        def test_title():
            assert "once".title() == "Once"

        def test_length():
            assert len("once") == 4

        def test_open_session():
            try:
                os.close(os.open(MARK, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
            except FileExistsError:
                return
            STATE["session"] = "open"

        def test_split():
            assert "a b".split() == ["a", "b"]

        def test_join():
            assert " ".join("ab") == "a b"

        def test_uses_session():
            assert STATE.get("session") == "open"
        """,
}


def test_recorded_pass_that_no_state_setter_explains_is_inconclusive(tmp_path: Path) -> None:
    project = make_project(tmp_path / "once", ONCE)
    report = record(project)
    (project / ".session-opened").unlink()  # the first replay to open it passes, once
    test_id = "test_once.py::test_uses_session"
    result, data = stress(project, test_id, "--order-from", str(report), *OPTIONS)
    assert result.returncode == 0, result.stderr
    assert data["verdict"] == "inconclusive", data["reason"]
    assert data["quarantine_allowed"] is False
    assert data["polluter"] is None and data["state_setter"] is None
    _isolation_failed_every_run(data)
    replayed = arm(data, "order", "after-predecessors")
    assert (replayed["runs"], replayed["failures"]) == (3, 2)
    order = data["order"]
    assert order["kind"] == "brittle" and "state_setter" not in order
    # Nothing narrowed it down: every predecessor stays a candidate, and none confirmed.
    assert order["candidates"] == [
        "test_once.py::test_title",
        "test_once.py::test_length",
        "test_once.py::test_open_session",
        "test_once.py::test_split",
        "test_once.py::test_join",
    ]
    confirm = arm(data, "order", "after-state-setter")
    assert (confirm["runs"], confirm["failures"], confirm["p_value"]) == (5, 5, 1.0)
    assert data["reason"].startswith(
        "fails alone (10/10 isolated runs failed) but passed 1/3 times right after its 5 "
        "recorded predecessors, and no state-setter confirmed (p = 1)"
    )
