"""Each corpus scenario runs plain pytest (or coverage.py) and ``flakewarden run`` side by side.

A scenario returns a ``Check``: the two sides' figures and whether they agree. Nothing
here decides what is acceptable beyond equality; a difference is a finding.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Optional

import corpus_counts as counts
import sdist
from corpus_projects import TOOLS, Project

HERE = Path(__file__).resolve().parent
TIMEOUT = 900  # seconds for one command; the slowest suite takes well under a minute
SEED = 20261201  # --randomly-seed of the randomly scenario


@dataclasses.dataclass
class Check:
    """One scenario of one project: what each side said, and whether they agree."""

    scenario: str
    plain: Any
    flakewarden: Any
    ok: bool
    plain_seconds: float = 0.0
    flakewarden_seconds: float = 0.0
    detail: str = ""


@dataclasses.dataclass
class Prepared:
    project: Project
    root: Path  # the unpacked source tree; commands run here
    python: Path  # the project's own venv
    work: Path  # scratch space for report directories and data files


def prepare(project: Project, work: Path) -> Prepared:
    """Download the sdist, unpack it, and give it a venv with its test dependencies."""
    root = sdist.fetch(project.name, project.version, work / "src")
    requirements = [*TOOLS, *project.deps]
    if project.install:
        requirements += ["-e", str(root)]
    venv_dir = work / "venvs" / f"{project.name}-{project.version}"
    stamp = venv_dir / "corpus-requirements.json"
    python = venv_dir / "bin" / "python"
    if not (stamp.exists() and json.loads(stamp.read_text()) == requirements):
        python = sdist.make_venv(venv_dir, requirements)
        stamp.write_text(json.dumps(requirements))
    scratch = work / "runs" / project.name
    if scratch.exists():
        shutil.rmtree(scratch)
    scratch.mkdir(parents=True)
    return Prepared(project, root, python, scratch)


def clean_env(extra: Optional[Mapping[str, str]] = None) -> dict[str, str]:
    """The environment of every command: nothing of ours or of a caller's pytest leaks in."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("PYTEST_", "COVERAGE_", "FLAKEWARDEN_", "CORPUS_", "COV_CORE_"))
        and k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")
    }
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    # One hash seed for every process: a suite that parametrizes over a set (packaging)
    # otherwise collects in a different order in each xdist worker, plain or not.
    env["PYTHONHASHSEED"] = "0"
    env.update(extra or {})
    return env


def run(
    command: Sequence[str], cwd: Path, env: Optional[Mapping[str, str]] = None
) -> tuple[int, str, float]:
    started = time.monotonic()
    done = subprocess.run(
        list(command),
        cwd=cwd,
        env=clean_env(env),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        errors="replace",
        timeout=TIMEOUT,
        check=False,
    )
    return done.returncode, done.stdout, time.monotonic() - started


def fw_command(report_dir: Path, options: Sequence[str], tail: Sequence[str]) -> list[str]:
    return [
        sys.executable,
        "-m",
        "flakewarden",
        "run",
        "--report-dir",
        str(report_dir),
        *options,
        "--",
        *tail,
    ]


def pytest_command(p: Prepared, *extra: str) -> list[str]:
    return [str(p.python), "-m", "pytest", *extra, *p.project.args]


def has_xdist(p: Prepared) -> bool:
    return "-n" in p.project.args


def counts_check(p: Prepared, scenario: str, extra: Sequence[str]) -> Check:
    """Plain pytest and ``flakewarden run`` with the same arguments: the same counts."""
    command = pytest_command(p, *extra)
    code, output, plain_s = run(command, p.root)
    (p.work / f"{scenario}.plain.log").write_text(output)
    try:
        plain = counts.summary_counts(output)
    except counts.NoSummary as exc:
        return Check(scenario, f"exit {code}: {exc}", None, False, plain_s)
    report_dir = p.work / scenario
    fw_code, fw_output, fw_s = run(fw_command(report_dir, ["-q"], command), p.root)
    (p.work / f"{scenario}.flakewarden.log").write_text(fw_output)
    if not (report_dir / "report.json").exists():
        return Check(scenario, plain, f"exit {fw_code}, no report.json", False, plain_s, fw_s)
    recorded = counts.attempt_counts(report_dir)
    data = counts.report(report_dir)
    folded = counts.folded_totals(data)
    expected = counts.folded_expectation(plain)
    problems = []
    if counts.compared(plain) != counts.compared(recorded):
        problems.append("attempt 1's records differ from pytest's summary line")
        extra_calls = counts.extra_call_reports(report_dir)
        if extra_calls:
            problems.append(
                f"the records hold {extra_calls} call reports beyond one per test "
                "(subtests, not marked as such); report.json folds them into "
                f"{folded['passed']} passed, {folded['failed']} failed"
            )
    # flakewarden's own consistency check compares the same two things on every attempt.
    disagreements = data["attempts"][0].get("disagreements") or []
    if disagreements:
        problems.append("flakewarden's consistency check: " + "; ".join(disagreements))
    reruns = len(data["attempts"]) - 1
    totals = data["totals"]
    if reruns:
        # Tests that failed in attempt 1 end failed, flaky or error: fold them back.
        folded["failed"] += int(totals["flaky"])
    if folded != expected:
        problems.append(f"report.json totals {folded} do not fold pytest's {expected}")
    # After reruns the exit code follows the folded outcomes, not attempt 1's.
    still_red = bool(totals["failed"] or totals["error"])
    expected_code = int(still_red) if reruns else code
    if fw_code != expected_code:
        problems.append(f"flakewarden exited {fw_code}, expected {expected_code} (pytest {code})")
    notes = []
    if reruns:
        ids = [t["id"] for t in data["tests"] if t["runs"] > 1]
        outcomes = ", ".join(f"{t['id']} {t['outcome']}" for t in data["tests"] if t["runs"] > 1)
        notes.append(
            f"pytest's run was red; flakewarden reran {len(ids)} test(s) "
            f"{reruns} time(s): {outcomes}"
        )
    extras = {k: v for k, v in plain.items() if k not in counts.CATEGORIES and v}
    if extras:
        notes.append(f"pytest also printed {extras}")
    detail = "; ".join(problems + notes)
    return Check(
        scenario,
        counts.compared(plain),
        counts.compared(recorded),
        not problems,
        plain_s,
        fw_s,
        detail,
    )


def _coverage_json(p: Prepared, data_file: Path, out: Path) -> float:
    code, output, _ = run(
        [
            str(p.python),
            "-m",
            "coverage",
            "json",
            "-q",
            "--data-file",
            str(data_file),
            "-o",
            str(out),
        ],
        p.root,
    )
    if code != 0:
        raise RuntimeError(f"coverage json failed: {output.strip()[-300:]}")
    return counts.coverage_total(out)


def _erase_data(root: Path) -> None:
    for path in root.glob(".coverage*"):
        if path.is_file() and path.name != ".coveragerc":
            path.unlink()


def coverage_check(p: Prepared, scenario: str) -> Check:
    """``coverage run -m pytest`` + ``coverage report`` against ``flakewarden run --coverage``
    (``scenario`` "coverage"), or ``pytest --cov`` against ``flakewarden run -- pytest --cov``
    (``scenario`` "pytest-cov"): the same total to two decimals."""
    _erase_data(p.root)
    if scenario == "coverage":
        plain_cmd = [
            str(p.python),
            "-m",
            "coverage",
            "run",
            "-m",
            "pytest",
            "-p",
            "no:randomly",
            *p.project.args,
        ]
        fw_options = ["-q", "--coverage"]
        fw_tail = pytest_command(p, "-p", "no:randomly")
    else:
        # --cov last: its value is optional, so "--cov tests" would mean --cov=tests.
        plain_cmd = [*pytest_command(p, "-p", "no:randomly"), "--cov"]
        fw_options = ["-q"]
        fw_tail = plain_cmd
    code, output, plain_s = run(plain_cmd, p.root)
    (p.work / f"{scenario}.plain.log").write_text(output)
    data_files = [f for f in p.root.glob(".coverage*") if f.is_file() and f.name != ".coveragerc"]
    if scenario == "coverage" and not (p.root / ".coverage").exists() and data_files:
        # [run] parallel = true: combining is part of the plain workflow.
        run([str(p.python), "-m", "coverage", "combine", "-q"], p.root)
    if not (p.root / ".coverage").exists():
        return Check(scenario, f"exit {code}: no .coverage written", None, False, plain_s)
    plain = _coverage_json(p, p.root / ".coverage", p.work / f"{scenario}.plain.json")
    _erase_data(p.root)
    report_dir = p.work / scenario
    fw_code, fw_output, fw_s = run(fw_command(report_dir, fw_options, fw_tail), p.root)
    (p.work / f"{scenario}.flakewarden.log").write_text(fw_output)
    _erase_data(p.root)
    shown: Any = None
    problems = []
    if (report_dir / "report.json").exists():
        data = counts.report(report_dir)
        coverage = data.get("coverage") or {}
        shown = coverage.get("percent")
        problems += [f"flakewarden: {e}" for e in coverage.get("errors") or []]
    else:
        problems.append("no report.json")
    if fw_code != code:
        tail = [ln for ln in fw_output.splitlines() if ln.startswith("flakewarden: error")]
        problems.append(
            f"flakewarden exited {fw_code}, plain {code}" + (f": {tail[-1]}" if tail else "")
        )
    # report.json keeps coverage.py's unrounded total, so the two must be equal, not only
    # equal to two decimals.
    if shown is None or abs(float(shown) - plain) > 1e-9:
        problems.append(f"total {shown} is not plain {plain}")
    fw_shown = None if shown is None else round(float(shown), 2)
    return Check(
        scenario, round(plain, 2), fw_shown, not problems, plain_s, fw_s, "; ".join(problems)
    )


def flaky_check(p: Prepared, base: Path) -> Check:
    """One test fails its first call only (``-p corpus_flaky``): rerun in a fresh process,
    reported flaky, exit 0, every other test as in the green run at ``base``."""
    green = counts.report(base)
    target = pick_target(green["tests"], p.project.flaky)
    plugin = p.work / "flaky-plugin"
    plugin.mkdir(exist_ok=True)
    shutil.copyfile(HERE / "corpus_flaky.py", plugin / "corpus_flaky.py")
    marker = p.work / "flaky-marker"
    marker.unlink(missing_ok=True)
    env = {
        "PYTHONPATH": str(plugin),
        "CORPUS_FLAKY_TEST": target,
        "CORPUS_FLAKY_MARKER": str(marker),
    }
    report_dir = p.work / "flaky"
    tail = pytest_command(p, "-p", "no:randomly", "-p", "corpus_flaky")
    code, output, seconds = run(fw_command(report_dir, ["-q"], tail), p.root, env)
    (p.work / "flaky.flakewarden.log").write_text(output)
    problems = []
    if not marker.exists():
        problems.append("the injected failure never fired")
    data = counts.report(report_dir)
    by_id = {t["id"]: t for t in data["tests"]}
    test = by_id.get(target)
    outcome = test["outcome"] if test else "missing"
    # Exit 0 when the rest of the suite is green; a project's own real failure still counts.
    expected_code = 1 if green["totals"]["failed"] or green["totals"]["error"] else 0
    if code != expected_code:
        problems.append(f"exit {code}, expected {expected_code}")
    if outcome != "flaky":
        problems.append(f"{target} is {outcome}, not flaky")
    # The first rerun holds the target (and any test of the project that fails anyway);
    # no later attempt needs it again.
    selections = [a["selected"] for a in data["attempts"]]
    if (
        len(selections) < 2
        or target not in selections[1]
        or any(target in later for later in selections[2:])
    ):
        problems.append(f"attempts: {[sel[:3] for sel in selections]}")
    else:
        first = counts.attempt_config(report_dir, 1)["pid"]
        second = counts.attempt_config(report_dir, 2)["pid"]
        if first == second:
            problems.append("the rerun ran in the same process")
    others = {t["id"]: t["outcome"] for t in data["tests"] if t["id"] != target}
    was = {t["id"]: t["outcome"] for t in green["tests"] if t["id"] != target}
    if others != was:
        moved = sorted(set(others.items()) ^ set(was.items()))[:3]
        problems.append(f"other tests changed: {moved}")
    shown = f"{outcome}, exit {code}, {len(data['attempts'])} attempts"
    return Check("flaky", target, shown, not problems, 0.0, seconds, "; ".join(problems))


def pick_target(tests: list[dict[str, Any]], prefer: str) -> str:
    """A passed test to make fail once: the middle one of those whose id holds ``prefer``."""
    passed = sorted(t["id"] for t in tests if t["outcome"] == "passed")
    chosen = [t for t in passed if prefer in t] or passed
    if not chosen:
        raise ValueError("no passed test to inject a failure into")
    return chosen[len(chosen) // 2]


SCENARIOS = ("counts", "xdist", "randomly", "coverage", "pytest-cov", "flaky")


def check_project(p: Prepared, scenarios: Sequence[str] = SCENARIOS) -> list[Check]:
    checks = []
    if "counts" in scenarios or "flaky" in scenarios:
        checks.append(counts_check(p, "counts", ["-p", "no:randomly"]))
    if "xdist" in scenarios:
        extra = ["-p", "no:randomly"] + ([] if has_xdist(p) else ["-n", "2"])
        checks.append(counts_check(p, "xdist", extra))
    if "randomly" in scenarios:
        checks.append(counts_check(p, "randomly", [f"--randomly-seed={SEED}"]))
    for scenario in ("coverage", "pytest-cov"):
        if scenario in scenarios:
            checks.append(coverage_check(p, scenario))
    if "flaky" in scenarios:
        checks.append(flaky_check(p, p.work / "counts"))
    return checks
