"""What ``flakewarden run`` imports before the tests start, and what it leaves for later.

Every run's first test waits for what is imported before pytest is spawned; what is
imported beside the tests costs the run nothing. A child interpreter runs the real
command on a small suite and notes which modules were loaded when the first process
was spawned, and which at the end.
"""

from __future__ import annotations

from helpers.project import Project

DRIVER = """
import json, subprocess, sys

preloaded = sorted(sys.modules)  # by the interpreter's start (site, .pth files), not ours
spawned = []
original = subprocess.Popen.__init__

def noting(self, *args, **kwargs):
    if not spawned:
        spawned.append(sorted(sys.modules))
    original(self, *args, **kwargs)

subprocess.Popen.__init__ = noting
from flakewarden.cli import main

code = main(["run", "--report-dir", "report", "-q", "--", sys.executable, "-m", "pytest"])
print(json.dumps({
    "code": code, "preloaded": preloaded, "spawned": spawned[0], "end": sorted(sys.modules)
}))
"""

#: Needed only once attempt 1's process has exited: imported beside it, never before.
AFTER_THE_TESTS = (
    "dataclasses",  # with inspect and ast: ~14 ms
    "datetime",
    "inspect",
    "xml.etree.ElementTree",
    "flakewarden.history.context",
    "flakewarden.model.results",
    "flakewarden.model.run",
    "flakewarden.reports.junit",
    "flakewarden.reports.rendered",
    "flakewarden.reports.report_json",
    "flakewarden.reports.summary",
    "flakewarden.runner.consistency",
    "flakewarden.runner.crashes",
    "flakewarden.runner.folding",
    "flakewarden.runner.sessions",
)


def test_what_the_tests_wait_for_is_only_what_starting_them_needs(project: Project) -> None:
    project.write("tests/test_ok.py", "def test_ok():\n    pass\n")
    seen = project.drive(DRIVER)
    assert seen["code"] == 0
    before = set(seen["spawned"]) - set(seen["preloaded"])
    end = set(seen["end"])
    assert "flakewarden.runner.process" in before
    assert sorted(before & set(AFTER_THE_TESTS)) == []
    assert sorted(set(AFTER_THE_TESTS) - end) == []
