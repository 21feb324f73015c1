"""``flakewarden burn-in`` stressing what a change adds: real git, real pytest, the real engine.

The broken tests fail every isolated run, so the engine decides before its timing phase
and no burner runs; the race is timing evidence and runs in the serial part of the suite.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from burn_in_project import base_project, burn_in
from helpers.workflow_commands import parse_commands

from flakewarden.model.binomial import upper_bound

BROKEN = """
def test_broken():
    assert 1 + 1 == 3
"""


def test_a_detached_head_burns_in_what_it_adds_and_a_broken_test_fails(tmp_path: Path) -> None:
    repo = base_project(tmp_path / "repo")
    repo.commit("add a test", **{"tests/test_broken.py": BROKEN})
    repo.git("checkout", "-q", "--detach")
    result = burn_in(repo.root, "--base", "main", "--budget-seconds", "1")
    assert result.returncode == 1, result.output
    test_id = "tests/test_broken.py::test_broken"
    assert f"run: {test_id} (new test)" in result.stdout
    tested = result.test(test_id)
    assert tested["verdict"] == "deterministic" and tested["failing"] is True
    assert tested["failures"] == tested["runs"] > 0 and tested["bound"] is None
    assert tested["reproduce"].endswith(test_id) and "python" in tested["reproduce"]
    assert (tested["file"], tested["line"]) == ("tests/test_broken.py", 1)
    assert "NEW FLAKY TEST: fails every run: a broken test, not a flake" in result.stdout
    assert test_id in result.markdown and tested["reproduce"] in result.markdown
    assert result.data["failing"] == [test_id] and result.data["exit_code"] == 1


HOSTILE_ID = "::error title=x::pwned ##[error]boom"
HOSTILE = f"""
import pytest


@pytest.mark.parametrize("n", [1], ids=[{HOSTILE_ID!r}])
def test_hostile(n):
    assert n == 2
"""


def test_a_hostile_test_name_stays_inert_and_fail_on_flaky_false_only_warns(
    tmp_path: Path,
) -> None:
    repo = base_project(tmp_path / "repo")
    repo.commit(
        "hostile",
        **{
            "tests/test_hostile.py": HOSTILE,
            ".github/flakewarden.yml": "burn_in:\n  fail_on_flaky: false\n",
        },
    )
    summary = tmp_path / "summary.md"
    env = {
        "GITHUB_ACTIONS": "true",
        "GITHUB_WORKSPACE": str(repo.root),
        "GITHUB_STEP_SUMMARY": str(summary),
    }
    result = burn_in(repo.root, "--base", "main", "--budget-seconds", "1", env=env)
    assert result.returncode == 0, result.output
    assert "a warning only (burn_in.fail_on_flaky: false)" in result.stdout
    test_id = f"tests/test_hostile.py::test_hostile[{HOSTILE_ID}]"
    assert result.test(test_id)["verdict"] == "deterministic"
    # The runner acts on one command only: the warning annotation flakewarden meant.
    commands = parse_commands(result.stdout)
    assert [name for name, _, _ in commands] == ["warning"], commands
    _, properties, message = commands[0]
    assert properties["title"].endswith(test_id)
    # pytest's line of a decorated test is its first decorator's.
    assert (properties["file"], properties["line"]) == ("tests/test_hostile.py", "4")
    assert message.startswith("Burn-in: fails every run")
    assert parse_commands(result.stderr) == []
    # Every other line, ours and the engine's, holds no workflow command at all.
    for line in result.output.splitlines():
        if not line.startswith("::warning title=New test fails every run"):
            assert not line.lstrip().startswith("::") and "##[" not in line, line
    # In the job summary (Markdown, never read for commands) it is code, as written.
    shown = summary.read_text(encoding="utf-8")
    assert f"`{test_id}`" in shown and shown == result.markdown


RACE_CHANGE = '''
import threading


class Counter:
    def __init__(self):
        self.value = 0

    def increment(self):
        current = self.value  # read ...
        parts = []
        for n in range(40):  # ... a call inside the window ...
            parts.append(n)
        self.value = current + 1  # ... then write


def test_two_threads_count_every_increment():
    """Check-then-act: at a 10 us switch interval most runs lose an increment."""
    counter = Counter()
    ready = []

    def worker():
        ready.append(1)
        while len(ready) < 2:  # start together
            pass
        for _ in range(200):
            counter.increment()

    threads = [threading.Thread(target=worker) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert counter.value == 400


def test_sums():
    assert sum(range(10)) == 45
'''


@pytest.mark.serial
def test_a_race_is_a_new_flaky_test_and_a_stable_test_bounds_its_rate(tmp_path: Path) -> None:
    repo = base_project(tmp_path / "repo")
    conftest = (repo.root / "tests/conftest.py").read_text(encoding="utf-8")
    old = (repo.root / "tests/test_old.py").read_text(encoding="utf-8")
    repo.commit(
        "add a counter, rename a test, change a fixture",
        **{
            "tests/test_counter.py": RACE_CHANGE,
            "tests/test_old.py": old.replace("test_old_name", "test_new_name"),
            "tests/conftest.py": conftest.replace('{"rows": 1}', '{"rows": 2}'),
        },
    )
    summary = tmp_path / "summary.md"
    env = {
        "GITHUB_ACTIONS": "true",
        "GITHUB_WORKSPACE": str(repo.root),
        "GITHUB_STEP_SUMMARY": str(summary),
    }
    result = burn_in(repo.root, "--base", "main", "--budget-seconds", "150", env=env)
    print(result.stdout)
    assert result.returncode == 1, result.output
    race, stable = (
        "tests/test_counter.py::test_two_threads_count_every_increment",
        ("tests/test_counter.py::test_sums"),
    )
    user = "tests/test_users.py::test_reads_db"
    selection = result.data["selection"]
    assert {t["id"]: t["reasons"] for t in selection["run"]} == {
        race: ["new test"],
        stable: ["new test"],
        user: ["uses changed fixture db"],
    }
    assert selection["not_run"] == [] and "test_new_name" not in result.stdout
    found = result.test(race)
    assert found["verdict"] == "race", found["reason"]
    assert found["knob"] == "switch-interval" and found["failing"] is True
    assert "setswitchinterval(1e-05)" in found["reproduce"]
    assert (result.report_dir / found["verdict_dir"] / "verdict.json").is_file()
    assert f"{race}: NEW FLAKY TEST: a race under switch-interval" in result.stdout
    for clean_id in (stable, user):
        clean = result.test(clean_id)
        assert clean["failures"] == 0 and not clean["failing"]
        assert clean["verdict"] in ("stable", "not-reproducible")
        assert clean["bound"] == round(upper_bound(0, clean["runs"]), 6) < 0.259
        said = re.search(
            rf"{re.escape(clean_id)}: \S+: 0 failures in {clean['runs']} runs: its rate is "
            r"below [0-9.]+% with 95% confidence \(10 plain retries would bound it only "
            r"below 25\.9%\)",
            result.stdout,
        )
        assert said, result.stdout
    (annotation,) = parse_commands(result.stdout)
    name, properties, message = annotation
    assert name == "error" and properties["title"] == f"New flaky test (race): {race}"
    assert (properties["file"], properties["line"]) == ("tests/test_counter.py", "16")
    assert "setswitchinterval" in message
    markdown = result.markdown
    assert found["reproduce"].replace("@", "@\u200b") in markdown
    assert "| `tests/test_counter.py::test_sums` |" in markdown
    assert summary.read_text(encoding="utf-8") == markdown


POLLUTER = """
SEEN = []


def test_leaves_state():
    SEEN.append(1)
    assert SEEN
"""

VICTIM = """

def test_starts_clean():
    assert SEEN == []
"""


def test_a_new_test_broken_by_another_of_its_file_names_that_test(tmp_path: Path) -> None:
    # Alone, the new test passes every run; after the file's older test_leaves_state it
    # fails. The engine's order phase replays the file's other tests before it, and bisects.
    repo = base_project(tmp_path / "repo")
    repo.commit("a test that leaves state", **{"tests/test_state.py": POLLUTER})
    repo.commit("add a test", **{"tests/test_state.py": POLLUTER + VICTIM})
    result = burn_in(repo.root, "--base", "HEAD~1", "--budget-seconds", "30")
    assert result.returncode == 1, result.output
    assert "run: tests/test_state.py::test_starts_clean (new test)" in result.stdout
    assert "tests/test_state.py::test_leaves_state (" not in result.stdout  # not selected
    victim = result.test("tests/test_state.py::test_starts_clean")
    assert victim["verdict"] == "order-dependent", victim
    assert "tests/test_state.py::test_leaves_state" in result.markdown
