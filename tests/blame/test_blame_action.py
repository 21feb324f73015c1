"""The action on a pull request: blame is on by default, and its words reach the annotations
and the job summary (action.yml's steps run with bash in the simulated runner)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from blame_project import blame_repo
from helpers.actions_runner import Runner
from helpers.workflow_commands import parse_commands

BROKEN_TOTAL = """
TAX = 0


def total(items):
    return sum(items) + TAX + 1


def describe(items):
    return f"{len(items)} items"
"""


@pytest.fixture
def runner(tmp_path: Path) -> Runner:
    runner = Runner(tmp_path)
    runner.extra_env["FLAKEWARDEN_PREINSTALLED_VENV"] = sys.prefix
    runner.event_name = "pull_request"
    runner.extra_env["GITHUB_BASE_REF"] = "main"
    repo = blame_repo(runner.workspace / "repo")
    repo.commit("break total", **{"src/shop/cart.py": BROKEN_TOTAL})
    # As actions/checkout with fetch-depth 0 leaves it: the base branch as a remote ref.
    repo.git("update-ref", "refs/remotes/origin/main", "main")
    return runner


def test_a_pull_request_run_says_which_failures_ran_the_change(runner: Runner) -> None:
    run = runner.run(
        {"working-directory": "repo", "check-base": "true", "untouched-failures": "warn"}
    )
    step = run.step("run")
    assert step.returncode == 1, step.stdout + step.stderr
    commands = parse_commands(step.stdout)
    by_title = {props["title"]: (kind, text) for kind, props, text in commands if "title" in props}
    kind, text = by_title["Failed test: tests/test_cart.py::test_total"]
    assert kind == "error"
    assert "Ran 1 changed line in src/shop/cart.py." in text
    assert "Passes on the base." not in text  # it ran the change: not sent to the base
    broken = [(kind, text) for title, (kind, text) in by_title.items() if "test_broken" in title]
    assert len(broken) == 1
    kind, text = broken[0]
    assert kind == "warning"  # warn: ran none of the change, and fails on the base too
    assert (
        "A warning, not an error (blame.untouched_failures: warn): it ran none of this pull "
        "request's changes and fails on the base too."
    ) in text
    assert "**Blame:** Judged against origin/main" in step.summary
    assert "BLAME: tests/test_cart.py::test_total (ran 1 changed line in src/shop/cart.py)" in (
        step.stdout
    )


def test_blame_is_off_on_a_push_and_when_the_input_says_so(runner: Runner) -> None:
    runner.event_name = "push"
    pushed = runner.run({"working-directory": "repo"}).step("run")
    assert "blame:" not in pushed.stdout and "BLAME:" not in pushed.stdout
    runner.event_name = "pull_request"
    off = runner.run({"working-directory": "repo", "blame": "false"}).step("run")
    assert "BLAME:" not in off.stdout
    bad = runner.run({"working-directory": "repo", "blame": "sometimes"}).step("run")
    assert bad.returncode == 4
    assert "input blame must be auto, true or false" in bad.stdout


def test_a_shallow_checkout_says_what_to_fetch_and_the_run_goes_on(runner: Runner) -> None:
    repo = runner.workspace / "repo"
    subprocess.run(["git", "update-ref", "-d", "refs/remotes/origin/main"], cwd=repo, check=True)
    step = runner.run({"working-directory": "repo"}).step("run")
    assert step.returncode == 1  # the failures fail it, not blame
    assert "blame: the base 'origin/main' is not in this clone: fetch it" in step.stdout
    assert "fetch-depth: 0" in step.stdout
    assert "BLAME: not judged against" in step.stdout
