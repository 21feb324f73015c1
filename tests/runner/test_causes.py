"""A run's causes: failed attempts grouped by signature in report.json, summary.md, report.html."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

from helpers.cause_projects import reset, storm_project
from helpers.hermetic import clean_env
from helpers.project import ISOLATED_INI, Project, make_project


def _cause_of(report: dict[str, Any], test_id: str) -> list[str]:
    return [c["id"] for c in report["causes"] if test_id in c["tests"]]


def _html_data(report_dir: Path) -> dict[str, Any]:
    page = (report_dir / "report.html").read_text(encoding="utf-8")
    found = re.search(r'<script type="application/json" id="fw-data">(.*?)</script>', page, re.S)
    assert found, "report.html holds its data block"
    return json.loads(found[1])


def test_a_storm_is_one_cause_named_by_every_attempt_it_failed(tmp_path: Path) -> None:
    project = storm_project(tmp_path / "p", storm=6, modules=2)
    result = project.run("-q")
    assert result.returncode == 0, result.stdout + result.stderr
    report = result.report
    storm = [t["id"] for t in report["tests"] if "test_query_" in t["id"]]
    assert len(storm) == 6
    first, second = report["causes"]
    assert first["tests"] == storm  # widest first, the report's order within
    assert first["exception"] == "ConnectionRefusedError"
    assert first["message"] == "[Errno N] Connection refused: could not connect to N:N"
    assert first["frame"] == "tests/conftest.py::query"
    assert first["attempts"] == [{"test": test, "attempt": 1} for test in storm]
    assert second["tests"] == ["tests/test_loner.py::test_alone"]
    for test in report["tests"]:
        failed = [a for a in test["attempts"] if a["outcome"] == "failed"]
        passed = [a for a in test["attempts"] if a["outcome"] == "passed"]
        assert [a["cause"] for a in failed] == _cause_of(report, test["id"])
        assert all("cause" not in a for a in passed)
    summary = (result.report_dir / "summary.md").read_text(encoding="utf-8")
    causes_at = summary.index("### Causes")
    assert causes_at < summary.index("### Failed and flaky tests")
    said = summary[causes_at:].splitlines()[2]
    assert said.startswith(
        "- 6 tests failed their first attempt with ConnectionRefusedError: "
        "\\[Errno N\\] Connection refused: could not connect to N:N in tests/conftest.py:\\:query; "
        "all 6 passed on a rerun; the environment, not the tests "
        f"(it matches type:ConnectionRefusedError) (cause `{first['id']}`)"
    ), said
    assert "test_alone" not in said  # a cause of one test stays in the table
    html = _html_data(result.report_dir)
    assert [c["id"] for c in html["causes"]] == [first["id"]]
    assert html["causes"][0]["more"] == 1 and len(html["causes"][0]["tests"]) == 5


def test_a_cause_keeps_its_id_across_runs_and_shards(tmp_path: Path) -> None:
    project = storm_project(tmp_path / "p", storm=6, modules=3)
    whole = project.run("-q", report_dir="whole")
    assert whole.returncode == 0, whole.stdout + whole.stderr
    ids = {c["id"]: c["tests"] for c in whole.report["causes"]}
    reset(project.root)
    again = project.run("-q", report_dir="again")
    assert {c["id"]: c["tests"] for c in again.report["causes"]} == ids
    reset(project.root)
    shards = []
    for k in (1, 2, 3):
        shard = project.run("--shard", f"{k}/3", "-q", report_dir=f"shard-{k}")
        assert shard.returncode == 0, shard.stdout + shard.stderr
        shards.append(str(shard.report_dir))
    merged = subprocess.run(
        [sys.executable, "-m", "flakewarden", "merge", *shards, "--report-dir", "merged"],
        cwd=project.root,
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert merged.returncode == 0, merged.stdout + merged.stderr
    data = json.loads((project.root / "merged" / "report.json").read_text(encoding="utf-8"))
    assert {c["id"]: sorted(c["tests"]) for c in data["causes"]} == {
        k: sorted(v) for k, v in ids.items()
    }


MASKED = {
    "vendor/backend.py": """
        def first():
            raise OSError("backend unavailable")




        def second():
            raise OSError("backend unavailable")
        """,
    "p/tests/conftest.py": """
        import sys
        from pathlib import Path

        sys.path.insert(0, str(Path(__file__).parents[2] / "vendor"))


        def bump(name):
            count = Path(__file__).with_name(".runs-" + name)
            runs = int(count.read_text()) + 1 if count.exists() else 1
            count.write_text(str(runs))
            return runs
        """,
    "p/tests/test_masks.py": """
        import pytest

        import backend
        from conftest import bump


        class Handle:
            pass


        @pytest.mark.parametrize("n", range(3))
        def test_lock(n, tmp_path):
            held = Handle()
            raise RuntimeError(f"lock file {tmp_path / 'db.lock'} is held by {held!r}")


        @pytest.mark.parametrize("which", ["first", "second"])
        def test_backend(which):
            getattr(backend, which)()


        def test_two_ways(request):
            runs = bump(request.node.name)
            assert runs != 1, "the queue was empty"
            assert runs != 2, "the lock was held"
        """,
}


def test_what_changes_from_run_to_run_is_masked_and_different_assertions_are_not(
    tmp_path: Path,
) -> None:
    make_project(tmp_path, MASKED, ini=None)
    (tmp_path / "p" / "pytest.ini").write_text(ISOLATED_INI, encoding="utf-8")
    result = Project(tmp_path / "p").run("-q")
    assert result.returncode == 1, result.stdout + result.stderr
    report = result.report
    locks = [f"tests/test_masks.py::test_lock[{n}]" for n in range(3)]
    messages = [a["message"] for t in locks for a in result.test(t)["attempts"]]
    assert len(set(messages)) == len(messages) == 9  # each says its own path and address
    (lock,) = {cause for test in locks for cause in _cause_of(report, test)}
    (cause,) = [c for c in report["causes"] if c["id"] == lock]
    assert cause["tests"] == locks and len(cause["attempts"]) == 9
    assert cause["message"] == "lock file <path> is held by <test_masks.Handle object at <hex>>"
    backends = [f"tests/test_masks.py::test_backend[{w}]" for w in ("first", "second")]
    texts = [result.test(t)["attempts"][0]["longrepr"] for t in backends]
    assert "backend.py:2: OSError" in texts[0] and "backend.py:8: OSError" in texts[1]
    assert _cause_of(report, backends[0]) == _cause_of(report, backends[1])
    two_ways = result.test("tests/test_masks.py::test_two_ways")
    assert [a["outcome"] for a in two_ways["attempts"]] == ["failed", "failed", "passed"]
    first, second = (a["cause"] for a in two_ways["attempts"][:2])
    assert first != second
    assert len(_cause_of(report, "tests/test_masks.py::test_two_ways")) == 2
