"""The plugin's in-process repeats keep fixtures as pytest-repeat does.

``FLAKEWARDEN_REPEAT`` runs a test several times in one process. Fixtures wider
than the function (class, module, session) must stay set up across the
repeats, or a test whose module fixture starts something slow (a process pool,
a server) pays that cold start on every repeat; function-scoped fixtures must
still be set up afresh for each one. pytest-repeat's ``--count`` is what users
know, so the fixture log of both must be the same.
"""

from __future__ import annotations

import subprocess

from helpers.project import PYTEST, Project

from flakewarden.runner.process import plugin_dir, plugin_env
from flakewarden.runner.process_results import read_results

CONFTEST = """
import pytest

LOG = __import__("os").environ["FIXTURE_LOG"]


def log(text):
    with open(LOG, "a") as stream:
        stream.write(text + "\\n")


def make(scope):
    @pytest.fixture(scope=scope)
    def fixture(request):
        log(f"setup {scope} {request.node.name.split('[')[0]}".strip())
        yield []
        log(f"teardown {scope}")

    return fixture


session_thing = make("session")
module_thing = make("module")
class_thing = make("class")
function_thing = make("function")
"""

TESTS = """
def test_first(session_thing, module_thing, function_thing):
    function_thing.append(1)
    assert function_thing == [1]  # a fresh list per repeat


class TestGroup:
    def test_in_class(self, class_thing, module_thing, function_thing):
        function_thing.append(1)
        assert function_thing == [1]
"""

OTHER = """
def test_other(session_thing, module_thing, function_thing):
    function_thing.append(1)
    assert function_thing == [1]
"""


def test_repeats_keep_wider_fixtures_and_renew_function_ones(project: Project) -> None:
    project.write("tests/conftest.py", CONFTEST)
    project.write("tests/test_a.py", TESTS)
    project.write("tests/test_b.py", OTHER)
    ours = project.root / "ours.log"
    theirs = project.root / "theirs.log"
    results_file = project.root / "results.jsonl"
    with plugin_dir() as directory:
        env = plugin_env(directory, results_file, extra={"FLAKEWARDEN_REPEAT": "3"})
        env.pop("PYTEST_XDIST_WORKER", None)
        env["FIXTURE_LOG"] = str(ours)
        done = subprocess.run(
            [*PYTEST, "-p", "no:randomly", "-p", "no:repeat", "tests"],
            cwd=project.root,
            env=env,
            capture_output=True,
            text=True,
        )
    assert done.returncode == 0, done.stdout
    results = read_results(results_file)
    assert [(r.id.split("::")[-1], r.iteration, r.outcome.value) for r in results.tests] == [
        (name, iteration, "passed")
        for name in ("test_first", "test_in_class", "test_other")
        for iteration in range(3)
    ]
    plain = project.env({"FIXTURE_LOG": str(theirs)})
    reference = subprocess.run(
        [*PYTEST, "-p", "no:randomly", "-p", "repeat", "--count=3", "tests"],
        cwd=project.root,
        env=plain,
        capture_output=True,
        text=True,
    )
    assert reference.returncode == 0, reference.stdout
    log = ours.read_text().splitlines()
    assert log == theirs.read_text().splitlines()
    assert log.count("setup session") == 1
    assert log.count("setup module test_a.py") == 1
    assert log.count("setup module test_b.py") == 1
    assert log.count("setup class TestGroup") == 1
    assert sum(line.startswith("setup function") for line in log) == 9
    assert sum(line == "teardown function" for line in log) == 9
    # The first module's fixture ends before the second module's starts.
    assert log.index("teardown module") < log.index("setup module test_b.py")
