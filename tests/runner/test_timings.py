"""The timings record (``FLAKEWARDEN_TIMINGS``) and a start-up that imports only what it uses."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from helpers.project import Project


def test_timings_record_splits_a_rerun_run_and_stays_out_of_the_tests(
    project: Project, tmp_path: Path
) -> None:
    counter = project.root / ".runs"
    project.write(
        "tests/test_flaky.py",
        f"""
        import os
        from pathlib import Path

        def test_flaky():
            # A flakewarden the tests start must not overwrite the outer run's record.
            assert "FLAKEWARDEN_TIMINGS" not in os.environ
            counter = Path({str(counter)!r})
            runs = int(counter.read_text()) if counter.exists() else 0
            counter.write_text(str(runs + 1))
            assert runs >= 1
        """,
    )
    record_file = tmp_path / "timings.json"
    result = project.run(env={"FLAKEWARDEN_TIMINGS": str(record_file)})
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.outcomes == {"tests/test_flaky.py::test_flaky": "flaky"}
    record = json.loads(record_file.read_text(encoding="utf-8"))

    marks = record["marks"]
    assert marks["imported"] <= marks["main"] <= marks["end"]
    names = [phase["name"] for phase in record["phases"]]
    assert names[0] == "parse"
    assert names.count("child") == 2
    assert names.count("read records") == 2
    after = ["fold", "report.json", "rerun-report.txt", "junit.xml", "summary.md", "manifest"]
    assert [n for n in names if n in after] == after
    assert names.index("fold") > len(names) - 1 - names[::-1].index("child")
    for phase in record["phases"]:
        assert marks["main"] <= phase["start"] <= phase["end"] <= marks["end"], phase
    children = [p for p in record["phases"] if p["name"] == "child"]
    first, rerun = children
    assert first["start"] <= first["spawned"] <= first["exited"] <= rerun["start"]
    # The report writers are imported beside attempt 1's pytest, not after it.
    overlap = next(p for p in record["phases"] if p["name"] == "overlapped with the child")
    assert first["spawned"] <= overlap["start"] <= overlap["end"] <= first["exited"]
    assert [p["tests"] for p in record["phases"] if p["name"] == "read records"] == [1, 1]

    # The plugin stamps its own moments, for the split of each pytest process.
    for child in children:
        lines = Path(child["log"]).with_name("results.jsonl").read_text(encoding="utf-8")
        by_kind = {r["kind"]: r for r in map(json.loads, lines.splitlines())}
        config, collected, session = by_kind["config"], by_kind["collected"], by_kind["session"]
        stamps = [config["loaded"], config["time"], collected["time"], session["time"]]
        assert child["spawned"] <= stamps[0] <= stamps[1] <= stamps[2] <= stamps[3]
        assert stamps[3] <= child["exited"]


def test_run_imports_no_report_writer_nor_unused_library_before_the_tests() -> None:
    """What ``flakewarden run`` imports before its first child: nothing it can do without."""
    unused = [
        "flakewarden.reports.junit",
        "flakewarden.reports.summary",
        "xml.etree.ElementTree",
        "hashlib",
        "secrets",
        "yaml",
        "requests",
        "coverage",
        "actions_toolkit",
        "flakewarden.github.api",
        "flakewarden.stress",
    ]
    code = (
        "import sys\n"
        "from flakewarden.cli import build_parser\n"
        "build_parser('run')\n"
        "import flakewarden.runner.reruns\n"
        f"print([m for m in {unused!r} if m in sys.modules])\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert done.stdout.strip() == "[]", done.stdout + done.stderr
