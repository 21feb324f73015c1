"""``flakewarden merge``: real shard runs combined into the report of the whole suite."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

from helpers.hermetic import clean_env
from helpers.project import Project, flaky_module
from helpers.workflow_commands import parse_commands

from flakewarden.inside.plugin import shard_of

COVERAGE_CONFIG = """
[run]
source = pkg

[paths]
source =
    pkg
    */checkout-*/pkg
"""

# Three functions, each covered by its own test module: a shard covers only its modules'.
PKG = {
    "pkg/__init__.py": "",
    "pkg/ops.py": """
        def add(a, b):
            return a + b


        def sub(a, b):
            return a - b


        def mul(a, b):
            return a * b


        def never_called():
            return None
        """,
}


BROKEN = "tests/test_broken.py::test_broken"


CHECKS = (("add", "add(1, 2) == 3"), ("sub", "sub(3, 2) == 1"), ("mul", "mul(2, 3) == 6"))


def _package(project: Project, tests_per_function: int) -> list[str]:
    """pkg/ops.py, and a test module per function with that many tests; their ids."""
    project.write(".coveragerc", COVERAGE_CONFIG)
    for path, text in PKG.items():
        project.write(path, text)
    ids = []
    for name, expr in CHECKS:
        tests = [f"test_{name}_{n}" for n in range(tests_per_function)]
        body = f"from pkg.ops import {name}\n\n\n"
        body += "".join(f"def {test}():\n    assert {expr}\n\n\n" for test in tests)
        project.write(f"tests/test_{name}.py", body)
        ids += [f"tests/test_{name}.py::{test}" for test in tests]
    return ids


def _project(project: Project) -> list[str]:
    ids = _package(project, 3)
    project.write("tests/test_flaky.py", flaky_module("flaky"))
    project.write("tests/test_broken.py", "def test_broken():\n    assert False, 'broken'\n")
    return [*ids, "tests/test_flaky.py::test_flaky", BROKEN]


def _merge(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "flakewarden", "merge", *args],
        cwd=cwd,
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )


def _shards(project: Project, count: int) -> list[Path]:
    dirs = []
    for k in range(1, count + 1):
        result = project.run("--shard", f"{k}/{count}", "--coverage", "-q", report_dir=f"s{k}")
        # The shard holding test_broken (when the project has it) fails; the others pass.
        broken = any(t["id"] == BROKEN for t in result.report["tests"])
        assert result.returncode == int(broken), result.stdout + result.stderr
        dirs.append(result.report_dir)
    return dirs


def test_merged_shards_equal_the_unsharded_run(project: Project) -> None:
    ids = _project(project)
    whole = project.run("--coverage", "-q", report_dir="whole")
    assert whole.returncode == 1, whole.stdout + whole.stderr
    # The flake's counter is shared: start it again for the sharded runs.
    (project.root / "tests" / ".counter-flaky").unlink()
    dirs = _shards(project, 3)
    done = _merge(project.root, *map(str, dirs), "--report-dir", "merged", "--expect", "3")
    assert done.returncode == 1, done.stdout + done.stderr  # test_broken fails in both
    merged = json.loads((project.root / "merged" / "report.json").read_text(encoding="utf-8"))
    assert merged["totals"] == whole.report["totals"]
    outcomes = {t["id"]: t["outcome"] for t in merged["tests"]}
    assert outcomes == whole.outcomes and sorted(outcomes) == sorted(ids)
    # Coverage combined across shards: every function but never_called, as unsharded.
    assert merged["coverage"]["percent"] == whole.report["coverage"]["percent"]
    split = shard_of(ids, 3, {})
    uids = []
    for k, directory in enumerate(dirs):
        shard = json.loads((directory / "report.json").read_text(encoding="utf-8"))
        assert {t["id"] for t in shard["tests"]} == {i for i in ids if split[i] == k}
        assert re.fullmatch(r"[0-9a-f]{32}", shard["uid"])
        uids.append(shard["uid"])
        # Each test that went wrong is the hit of the shard run that ran it.
        wrong = [t["id"] for t in shard["tests"] if t["outcome"] in ("flaky", "failed")]
        assert all(merged["origins"][i] == shard["uid"] for i in wrong)
    assert sorted(merged["origins"]) == sorted(["tests/test_flaky.py::test_flaky", BROKEN])
    assert len(set(uids)) == 3 and merged["uid"] not in uids and whole.report["uid"] not in uids
    # Merging the same shards again (a re-run merge job) names the same run: no hit twice.
    again = _merge(project.root, *map(str, dirs), "--report-dir", "again", "--expect", "3")
    assert again.returncode == 1, again.stdout + again.stderr
    twice = json.loads((project.root / "again" / "report.json").read_text(encoding="utf-8"))
    assert (twice["uid"], twice["origins"]) == (merged["uid"], merged["origins"])
    assert merged["merged_from"] == [f"shard {k}/3 (s{k})" for k in (1, 2, 3)]
    rerun = (project.root / "merged" / "rerun-report.txt").read_text(encoding="utf-8")
    unsharded = (whole.report_dir / "rerun-report.txt").read_text(encoding="utf-8")
    assert sorted(rerun.splitlines()) == sorted(unsharded.splitlines())  # shard order differs
    junit = (project.root / "merged" / "junit.xml").read_text(encoding="utf-8")
    assert junit.count("<testcase ") == len(ids) and "flakyFailure" in junit
    summary = (project.root / "merged" / "summary.md").read_text(encoding="utf-8")
    assert "Merged from 3 reports: shard 1/3 (s1), shard 2/3 (s2), shard 3/3 (s3)." in summary
    # publish reads the merged report as any other: one annotation per flaky and failed test.
    published = subprocess.run(
        [sys.executable, "-m", "flakewarden", "publish", "--report-dir", "merged"],
        cwd=project.root,
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert published.returncode == 0, published.stderr
    lines = published.stdout.splitlines()
    assert len([line for line in lines if line.startswith(("::warning ", "::error "))]) == 2


def test_a_missing_shard_is_never_a_green_merge(project: Project) -> None:
    _project(project)
    project.write("tests/test_broken.py", "def test_fine():\n    pass\n")
    dirs = _shards(project, 3)
    done = _merge(project.root, str(dirs[0]), str(dirs[2]), "--report-dir", "merged")
    assert done.returncode == 1, done.stdout + done.stderr
    problem = "shard 2 of 3 missing: the merged report does not cover the whole suite"
    assert f"flakewarden: {problem}" in done.stdout.splitlines()
    merged = json.loads((project.root / "merged" / "report.json").read_text(encoding="utf-8"))
    assert merged["problems"] == [problem] and merged["totals"]["failed"] == 0
    # --expect catches a shard that never uploaded, even when every report present agrees.
    done = _merge(project.root, *map(str, dirs), "--report-dir", "m4", "--expect", "4")
    assert done.returncode == 1
    assert "the reports are shards of 3, but 4 were expected" in done.stdout
    assert "shard 4 of 4 missing" in done.stdout


def test_a_test_in_two_shards_names_both(project: Project) -> None:
    _project(project)
    first = _shards(project, 2)[0]
    whole = project.run("-q", report_dir="whole")
    done = _merge(project.root, str(first), str(whole.report_dir), "--report-dir", "merged")
    assert done.returncode == 4
    [line] = done.stderr.splitlines()
    assert line.startswith("flakewarden: error: tests/") and "ran in two shards" in line
    assert line.endswith(f"{first} and {whole.report_dir}")
    again = _merge(project.root, str(first), str(first), "--report-dir", "merged")
    assert again.returncode == 4
    assert again.stderr == f"flakewarden: error: shard 1/2 is in both {first} and {first}\n"


def test_coverage_of_checkouts_at_different_paths_is_combined_with_paths(
    tmp_path: Path, project: Project
) -> None:
    ids = _project(project)
    whole = project.run("--coverage", "-q", report_dir="whole")
    (project.root / "tests" / ".counter-flaky").unlink()
    dirs = []
    for k in (1, 2):
        checkout = tmp_path / f"checkout-{k}"
        shutil.copytree(project.root, checkout, ignore=shutil.ignore_patterns("whole"))
        there = Project(checkout)
        result = there.run("--shard", f"{k}/2", "--coverage", "-q", report_dir="report")
        broken = any(t["id"] == BROKEN for t in result.report["tests"])
        assert result.returncode == int(broken), result.stdout + result.stderr
        dirs.append(result.report_dir)
    done = _merge(project.root, *map(str, dirs), "--report-dir", "merged")
    assert done.returncode == 1, done.stdout + done.stderr
    merged = json.loads((project.root / "merged" / "report.json").read_text(encoding="utf-8"))
    assert merged["coverage"]["errors"] == []
    assert merged["coverage"]["percent"] == whole.report["coverage"]["percent"]
    assert sorted(t["id"] for t in merged["tests"]) == sorted(ids)


def test_the_coverage_gate_applies_to_the_merged_total(project: Project) -> None:
    # One test per function: each shard covers only its own functions' bodies.
    ids = _package(project, 1)
    # In 3 shards, one function's test each (mul, sub, add).
    assert sorted(shard_of(ids, 3, {}).values()) == [0, 1, 2]
    dirs = _shards(project, 3)
    # ops.py: 4 defs and 4 bodies. A shard runs the defs and its one function's body.
    shard_totals = [
        json.loads((d / "report.json").read_text(encoding="utf-8"))["coverage"]["percent"]
        for d in dirs
    ]
    assert shard_totals == [100 * 5 / 8] * 3
    ok = _merge(project.root, *map(str, dirs), "--report-dir", "m", "--cov-fail-under", "80")
    assert ok.returncode == 0, ok.stdout + ok.stderr
    merged = json.loads((project.root / "m" / "report.json").read_text(encoding="utf-8"))
    assert merged["coverage"]["percent"] == 100 * 7 / 8  # all but never_called's body
    failing = _merge(project.root, *map(str, dirs), "--report-dir", "m2", "--cov-fail-under", "95")
    assert failing.returncode == 1
    assert "flakewarden: merged coverage 88% (total of 88 is less than fail-under=95)" in (
        failing.stdout.splitlines()
    )


def test_a_corrupt_shard_report_is_one_line(project: Project) -> None:
    _project(project)
    dirs = _shards(project, 2)
    (dirs[1] / "report.json").write_text('{"schema": 1, "tests": [{"id": 3}]', encoding="utf-8")
    done = _merge(project.root, *map(str, dirs), "--report-dir", "merged")
    assert done.returncode == 3
    [line] = done.stderr.splitlines()
    assert line.startswith(f"flakewarden: error: cannot read {dirs[1] / 'report.json'}")
    # A shard that never arrived is the command line's fault: a usage error, exit 4.
    missing = _merge(project.root, str(dirs[0]), str(project.root / "nope"), "--report-dir", "m")
    assert missing.returncode == 4
    assert (
        missing.stderr == f"flakewarden: error: {project.root / 'nope'}: no report.json there "
        "(did that shard's job upload its report?)\n"
    )


def test_hostile_ids_and_folder_names_reach_the_log_inert(project: Project, tmp_path: Path) -> None:
    """A downloaded report names the tests and its folder: neither may form a command."""
    _project(project)
    first = _shards(project, 2)[0]
    hostile = "tests/x.py::test[\n::error::pwn ##[warning]owned]"
    copies = []
    for k, name in ((1, "::error::a"), (2, "##[error]b")):
        copy = tmp_path / name
        shutil.copytree(first, copy)
        data = json.loads((copy / "report.json").read_text(encoding="utf-8"))
        data["shard"] = f"{k}/3"
        data["tests"][0]["id"] = hostile
        data["problems"] = ["::warning::from the shard ##[error]x"]
        (copy / "report.json").write_text(json.dumps(data), encoding="utf-8")
        copies.append(str(copy))
    twice = _merge(project.root, *copies, "--report-dir", "merged")
    assert twice.returncode == 4 and "ran in two shards" in twice.stderr
    assert parse_commands(twice.stdout + twice.stderr) == []
    data = json.loads((Path(copies[1]) / "report.json").read_text(encoding="utf-8"))
    for test in data["tests"]:  # another shard's tests: none in common with the first's
        test["id"] = test["id"].replace("tests/", "other/", 1)
    (Path(copies[1]) / "report.json").write_text(json.dumps(data), encoding="utf-8")
    missing = _merge(project.root, *copies, "--report-dir", "merged")
    assert missing.returncode == 1 and "shard 3 of 3 missing" in missing.stdout
    assert "##[error]b" not in missing.stdout and "from the shard" in missing.stdout
    assert parse_commands(missing.stdout + missing.stderr) == []
