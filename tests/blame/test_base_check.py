"""The base check, on real git repositories and real pytest processes."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any, Optional

import pytest
from helpers.git_repo import Repo
from helpers.hermetic import clean_env
from helpers.project import ISOLATED_INI, PYTEST

from flakewarden.blame.base_check import check_on_base
from flakewarden.blame.base_verdicts import NOT_AT_BASE
from flakewarden.model.blame import BaseCheck
from flakewarden.runner.process import plugin_dir, plugin_env, run_child
from flakewarden.runner.process_results import read_results

A = "tests/test_shop.py::test_a"
B = "tests/test_shop.py::test_b"
C = "tests/test_new.py::test_c"
D = "tests/test_shop.py::test_d"

SHOP_BASE = """
def price(n):
    return 2 * n
"""
SHOP_BROKEN = """
def price(n):
    return 3 * n
"""
TESTS_BASE = """
import pytest
from shop import price


def test_a():
    assert price(1) == 5, "already broken on the base"


def test_b():
    assert price(2) == 4


def test_d():
    pytest.skip("waits for the new pricing")
"""
TESTS_BRANCH = TESTS_BASE.replace('    pytest.skip("waits for the new pricing")', "    assert 0")
NEW_TEST = """
def test_c():
    assert False, "new and failing"
"""


def _repository(root: Path) -> tuple[Repo, str]:
    """``main``: A fails, B passes, D skips; ``topic`` breaks B, fails D and adds C."""
    repo = Repo(root)
    base = repo.commit(
        "base",
        **{
            "pytest.ini": ISOLATED_INI,
            "src/shop/__init__.py": SHOP_BASE,
            "tests/test_shop.py": TESTS_BASE,
            "conftest.py": "import sys, pathlib\n"
            "sys.path.append(str(pathlib.Path(__file__).parent / 'src'))\n",
        },
    )
    repo.branch("topic")
    repo.commit(
        "topic",
        **{
            "src/shop/__init__.py": SHOP_BROKEN,
            "tests/test_shop.py": TESTS_BRANCH,
            "tests/test_new.py": NEW_TEST,
        },
    )
    return repo, base


def _first_config(root: Path, command: list[str], work: Path) -> dict[str, Any]:
    """The plugin's ``config`` record of the command run in the checkout, as a run has it."""
    work.mkdir(parents=True, exist_ok=True)
    with plugin_dir() as plugin:
        env = plugin_env(plugin, work / "results.jsonl", base=clean_env())
        run_child(command, cwd=root, env=env, log=work / "output.log", timeout=120)
    config = read_results(work / "results.jsonl").config
    assert config is not None
    return config


def _worktrees(repo: Repo) -> list[str]:
    listed = repo.git("worktree", "list", "--porcelain")
    return [line for line in listed.splitlines() if line.startswith("worktree ")]


def _check(
    repo: Repo,
    merge_base: str,
    ids: list[str],
    work: Path,
    *,
    command: Optional[list[str]] = None,
    config: Optional[dict[str, Any]] = None,
    environ: Optional[dict[str, str]] = None,
    timeout: float = 120,
) -> tuple[dict[str, BaseCheck], list[str]]:
    said: list[str] = []
    checks = check_on_base(
        root=repo.root,
        merge_base=merge_base,
        cwd=repo.root,
        command=command or [*PYTEST, "tests"],
        test_ids=ids,
        work_dir=work,
        timeout=timeout,
        say=said.append,
        config=config,
        environ=clean_env() if environ is None else environ,
    )
    return checks, said


@pytest.mark.parametrize("with_config", [True, False], ids=["narrowed", "whole-command"])
def test_old_failure_fails_broken_test_passes_new_test_is_not_at_the_base(
    tmp_path: Path, with_config: bool
) -> None:
    repo, base = _repository(tmp_path / "repo")
    config = _first_config(repo.root, [*PYTEST, "tests"], tmp_path / "run") if with_config else None
    work = tmp_path / "report" / "base"

    checks, said = _check(repo, "main", [A, B, C, D], work, config=config)

    assert {i: c.verdict for i, c in checks.items()} == {
        A: "fails",
        B: "passes",
        C: "error",
        D: "error",
    }
    assert checks[C].why == NOT_AT_BASE
    assert checks[D].why == "skipped on the base: Skipped: waits for the new pricing"
    assert {c.commit for c in checks.values()} == {base}
    assert _worktrees(repo) == [f"worktree {repo.root}"]
    assert json.loads((work / "select.json").read_text()) == (
        [A, B, D] if with_config else [A, B, C, D]
    )
    assert (work / "output.log").exists() and (work / "results.jsonl").exists()
    if with_config:  # only the failed tests' file is collected, under the worktree's rootdir
        config_line = (work / "results.jsonl").read_text().splitlines()[0]
        args = json.loads(config_line)["args"]
        assert not any(str(repo.root) in arg for arg in args), args
        tree = args[0].removeprefix("--rootdir=")
        assert args == [
            f"--rootdir={tree}",
            f"{tree}/tests/test_shop.py",
            "--continue-on-collection-errors",
        ]
    assert said[-1] == "base check: 2 error, 1 fails, 1 passes"


def test_a_hanging_base_is_an_error_within_the_timeout(tmp_path: Path) -> None:
    repo = Repo(tmp_path / "repo")
    repo.commit(
        "base",
        **{
            "pytest.ini": ISOLATED_INI,
            "tests/test_slow.py": "import time\n\n\ndef test_slow():\n    time.sleep(600)\n",
        },
    )
    repo.branch("topic")
    repo.commit("topic", **{"tests/test_slow.py": "def test_slow():\n    assert 0\n"})

    checks, _ = _check(repo, "main", ["tests/test_slow.py::test_slow"], tmp_path / "w", timeout=3)

    check = checks["tests/test_slow.py::test_slow"]
    assert check.verdict == "error"
    assert check.why == "timed out on the base after 3 seconds, while it ran"
    assert _worktrees(repo) == [f"worktree {repo.root}"]


def test_a_bad_merge_base_is_an_error_with_gits_reason(tmp_path: Path) -> None:
    repo, _ = _repository(tmp_path / "repo")

    checks, _ = _check(repo, "0" * 40, [A, B], tmp_path / "w")

    assert {c.verdict for c in checks.values()} == {"error"}
    why = checks[A].why
    assert why.startswith("the merge base could not be checked out: ")
    assert "0" * 40 in why and "\n" not in why  # git's one line: "invalid reference: 000..."
    assert checks[A].commit == "0" * 40
    assert _worktrees(repo) == [f"worktree {repo.root}"]
    assert not list(tmp_path.glob("flakewarden-base-*"))


def test_an_option_for_a_merge_base_is_refused(tmp_path: Path) -> None:
    repo, _ = _repository(tmp_path / "repo")
    checks, _ = _check(repo, "--orphan=x", [A], tmp_path / "w")
    assert checks[A].verdict == "error" and "not a commit" in checks[A].why


def test_a_command_missing_on_the_base_is_an_error(tmp_path: Path) -> None:
    repo, _ = _repository(tmp_path / "repo")
    checks, _ = _check(repo, "main", [A], tmp_path / "w", command=["./run-tests", "tests"])
    assert checks[A].verdict == "error"
    assert checks[A].why == "the command cannot run on the base: command not found: ./run-tests"
    assert _worktrees(repo) == [f"worktree {repo.root}"]


def test_the_pull_requests_source_on_pythonpath_is_moved_to_the_base(tmp_path: Path) -> None:
    repo, _ = _repository(tmp_path / "repo")
    # The checkout's src first on the path, as `PYTHONPATH=src` or an editable install puts it.
    environ = clean_env({"PYTHONPATH": str(repo.root / "src")})

    checks, _ = _check(repo, "main", [A, B], tmp_path / "w", environ=environ)

    assert checks[B].verdict == "passes", checks[B]  # the base's shop, not the branch's
    assert checks[A].verdict == "fails"


def _trap_venv(where: Path, checkout_src: Path) -> Path:
    """A virtual environment whose .pth puts ``checkout_src`` first on ``sys.path``, as an
    old ``setup.py develop`` did: no ``PYTHONPATH`` entry can come before it."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(where)], check=True)
    python = where / "bin" / "python"
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    ours = Path(pytest.__file__).parent.parent  # where this suite's pytest is installed
    Path(site, "trap.pth").write_text(
        f"{ours}\nimport sys; sys.path.insert(0, {str(checkout_src)!r})\n", encoding="utf-8"
    )
    return python


def test_an_import_from_the_pull_requests_checkout_makes_every_verdict_an_error(
    tmp_path: Path,
) -> None:
    repo, _ = _repository(tmp_path / "repo")
    python = _trap_venv(tmp_path / "venv", repo.root / "src")

    checks, _ = _check(repo, "main", [A, B], tmp_path / "w", command=[str(python), "-m", "pytest"])

    expected = (
        "imported src/shop/__init__.py from the pull request's checkout, not the base's "
        "(an editable install?)"
    )
    assert checks == {
        A: BaseCheck("error", checks[A].commit, expected),
        B: BaseCheck("error", checks[A].commit, expected),
    }
    assert _worktrees(repo) == [f"worktree {repo.root}"]


DRIVER = """
import json, sys
from pathlib import Path
from flakewarden.blame.base_check import check_on_base
from flakewarden.runner.process import Interrupted

root, work = Path(sys.argv[1]), Path(sys.argv[2])
try:
    check_on_base(
        root=root, merge_base="main", cwd=root,
        command=[sys.executable, "-m", "pytest", "tests"],
        test_ids=["tests/test_slow.py::test_slow"], work_dir=work, timeout=300,
        say=lambda line: print(line, flush=True),
    )
except Interrupted as stopped:
    print("interrupted", stopped, flush=True)
    sys.exit(2)
"""


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_an_interrupt_removes_the_worktree(tmp_path: Path, signum: signal.Signals) -> None:
    repo = Repo(tmp_path / "repo")
    repo.commit(
        "base",
        **{
            "pytest.ini": ISOLATED_INI,
            "tests/test_slow.py": "import time\n\n\ndef test_slow():\n    time.sleep(600)\n",
        },
    )
    work = tmp_path / "w"
    driver = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(DRIVER), str(repo.root), str(work)],
        env=clean_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        results = work / "results.jsonl"
        for _ in range(600):  # until the test has started on the base
            if results.exists() and '"kind": "start"' in results.read_text():
                break
            time.sleep(0.1)
        else:
            raise AssertionError("the test never started on the base")
        made = Path(_worktrees(repo)[1].removeprefix("worktree "))
        assert made.is_dir() and repo.root not in made.parents
        driver.send_signal(signum)
        output, _ = driver.communicate(timeout=60)
    finally:
        driver.kill()
    assert driver.returncode == 2, output
    assert f"interrupted {signum.name}" in output
    assert _worktrees(repo) == [f"worktree {repo.root}"]
    assert not made.exists() and not made.parent.exists()


def test_an_xdist_command_runs_in_one_process_so_every_import_is_seen(tmp_path: Path) -> None:
    repo, _ = _repository(tmp_path / "repo")
    command = [*PYTEST, "tests", "-n", "2"]
    config = _first_config(repo.root, command, tmp_path / "run")
    assert config["xdist"] is True
    python = _trap_venv(tmp_path / "venv", repo.root / "src")
    trapped = [str(python), *command[1:]]
    work = tmp_path / "w"

    checks, _ = _check(repo, "main", [A, B], work, command=trapped, config=config)

    args = json.loads((work / "results.jsonl").read_text().splitlines()[0])["args"]
    assert args[-1] == "-n0"
    assert checks[B].verdict == "error"  # the test module imported shop in this process
    assert checks[B].why.startswith("imported src/shop/__init__.py from the pull request's")
