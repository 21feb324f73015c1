"""The action on a pull request: blame is on by default, and its words reach the annotations
and the job summary (action.yml's steps run with bash in the simulated runner)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from blame_project import BROKEN_TOTAL, blame_repo
from helpers.actions_runner import Runner
from helpers.github_emulator import GitHubEmulator
from helpers.github_fixtures import seed_issue
from helpers.workflow_commands import parse_commands


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
        {
            "working-directory": "repo",
            "reruns": "1",
            "check-base": "true",
            "untouched-failures": "warn",
        }
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
    pushed = runner.run({"working-directory": "repo", "reruns": "1"}).step("run")
    assert "blame:" not in pushed.stdout and "BLAME:" not in pushed.stdout
    runner.event_name = "pull_request"
    off = runner.run({"working-directory": "repo", "reruns": "1", "blame": "false"}).step("run")
    assert "BLAME:" not in off.stdout
    bad = runner.run({"working-directory": "repo", "reruns": "1", "blame": "sometimes"}).step("run")
    assert bad.returncode == 4
    assert "input blame must be auto, true or false" in bad.stdout


def test_a_shallow_checkout_says_what_to_fetch_and_the_run_goes_on(runner: Runner) -> None:
    repo = runner.workspace / "repo"
    subprocess.run(["git", "update-ref", "-d", "refs/remotes/origin/main"], cwd=repo, check=True)
    step = runner.run({"working-directory": "repo", "reruns": "1"}).step("run")
    assert step.returncode == 1  # the failures fail it, not blame
    assert "blame: the base 'origin/main' is not in this clone: fetch it" in step.stdout
    assert "fetch-depth: 0" in step.stdout
    assert "BLAME: not judged against" in step.stdout


def test_the_flake_issue_of_a_test_failing_on_the_base_too_links_the_run(runner: Runner) -> None:
    broken = "tests/test_broken.py::test_broken"
    with GitHubEmulator() as github:
        number = seed_issue(github, {"id": broken, "hits": 2})
        runner.extra_env.update(
            {
                "GITHUB_API_URL": github.url,
                "GITHUB_REPOSITORY": github.full_name,
                "GITHUB_SERVER_URL": "https://github.example",
                "GITHUB_RUN_ID": "77",
                "GITHUB_REF": "refs/pull/5/merge",
            }
        )
        head = {"repo": {"full_name": github.full_name}}
        runner.event = {"pull_request": {"number": 5, "base": {"ref": "main"}, "head": head}}
        given = {
            "working-directory": "repo",
            "reruns": "1",
            "check-base": "true",
            "github-token": github.token,
        }
        for said in ("commented on", "the comment is up to date on"):  # a retried job
            run = runner.run(given)
            step = run.step("link-base-failures")
            assert step.condition is True and step.returncode == 0, step.stdout + step.stderr
            assert f"{broken} fails on the base too: {said} #{number}" in step.stdout
        comments = github.comments[number]
        assert list(github.issues) == [number] and github.schema_errors == []
        # A fork's pull request gets a read-only token: auto leaves the step out (the run
        # judges nothing here, to be quick: the step's condition reads only the inputs).
        runner.event["pull_request"]["head"] = {"repo": {"full_name": "someone/fork"}}
        fork = runner.run(
            {**given, "blame": "false", "command": "python -m pytest tests/test_cart.py"}
        )
        assert fork.step("run").outputs["report-dir"]
        assert fork.step("link-base-failures").condition is False
    (comment,) = comments
    assert (
        "Failed on every attempt in [run 77](https://github.example/"
        f"{github.full_name}/actions/runs/77) for pull request #5, and fails on its merge base `"
    ) in comment["body"]
    assert "too: main is broken here, not the pull request." in comment["body"]
    assert run.step("run").env.get("GITHUB_TOKEN") is None
