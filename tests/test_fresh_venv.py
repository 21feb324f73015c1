"""Green in a virtualenv: part of the suite, run from a fresh venv that alone holds flakewarden.

The failure this guards against: a test put a link to ``sys.executable`` on ``PATH`` as
``python``; a link to a venv's interpreter from outside the venv is no longer that venv, so
the scripts it ran imported flakewarden from the base installation (``No module named
flakewarden`` where only the venv has it). Here the package is copied into a new venv, marked
with a version of its own, and the workflow tests that run ``python -m flakewarden`` from bash
scripts run from that venv: each report they leave must have been written by the marked copy.
That holds whatever the base interpreter has installed.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

from helpers.hermetic import clean_env

from flakewarden import __version__

REPO = Path(__file__).resolve().parents[1]
MARKED = f"{__version__}+fresh.venv"
# Tests whose bash scripts call `python -m flakewarden`, as a workflow's steps do.
INNER = ["tests/test_pytest_workflow.py"]


def _fresh_venv(where: Path) -> Path:
    """A venv (no pip) holding a marked copy of flakewarden; the suite's tools beside it."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(where)], check=True)
    python = where / "bin" / "python"
    site = Path(
        subprocess.run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    )
    package = site / "flakewarden"
    shutil.copytree(
        REPO / "src" / "flakewarden", package, ignore=shutil.ignore_patterns("__pycache__")
    )
    init = package / "__init__.py"
    text = init.read_text(encoding="utf-8")
    assert f'__version__ = "{__version__}"' in text
    init.write_text(text.replace(__version__, MARKED, 1), encoding="utf-8")
    # pytest, coverage and the rest: this interpreter's site-packages, as plain folders on the
    # path. Their .pth files are not run, so an editable flakewarden there stays out of sight,
    # and the venv's own site-packages comes first.
    ours = {sysconfig.get_path("purelib"), sysconfig.get_path("platlib")}
    shelves = [p for p in dict.fromkeys(sys.path) if p in ours or p.endswith("site-packages")]
    (site / "suite-tools.pth").write_text("\n".join(shelves) + "\n", encoding="utf-8")
    return python


def test_the_workflow_tests_pass_from_a_venv_that_alone_holds_flakewarden(tmp_path: Path) -> None:
    python = _fresh_venv(tmp_path / "fresh")
    probe = subprocess.run(
        [str(python), "-c", "import flakewarden, sys; print(flakewarden.__version__, sys.prefix)"],
        capture_output=True,
        text=True,
        check=True,
        cwd=tmp_path,
    )
    assert probe.stdout.split() == [MARKED, str(tmp_path / "fresh")]
    env = clean_env(
        {"PATH": f"{python.parent}{os.pathsep}{os.environ.get('PATH', '')}"},
    )
    for name in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME"):
        env.pop(name, None)
    env = {k: v for k, v in env.items() if not k.startswith("COV_CORE_")}
    basetemp = tmp_path / "inner"
    done = subprocess.run(
        [
            str(python),
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            "-p",
            "no:randomly",
            "-p",
            "no:xdist",
            "--basetemp",
            str(basetemp),
            *INNER,
        ],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    # Every report the inner tests' scripts wrote came from the venv's marked copy.
    reports = sorted(basetemp.rglob("report.json"))
    versions = {
        str(p.relative_to(basetemp)): json.loads(p.read_text(encoding="utf-8"))["tool"]["version"]
        for p in reports
    }
    assert len(versions) >= 2, versions  # a shard and the merge, at least
    assert set(versions.values()) == {MARKED}, versions
