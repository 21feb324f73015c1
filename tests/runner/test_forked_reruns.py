"""Reruns forked from a warm pytest: as fresh as a new process, and a new process where unsafe.

Every test runs ``flakewarden run`` on a real project; the tests record, from inside the
test process, what a rerun shares with attempt 1 (its pid, its hash of a string, a
module-level counter, ``random``'s draw) and report.json says how each process started.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from helpers.project import ISOLATED_INI, PYTEST, Project

from flakewarden.model import Attempt
from flakewarden.model.attempts import FORKED, NEW_PROCESS

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="forks on Linux")

#: A test that fails its first ``FAILS`` runs, noting what its process is each time.
NOTING = """
import json, os, random
from pathlib import Path

HERE = Path(__file__).parent
COUNTER = [0]  # fresh in every process: 1 whenever a test of this module runs first


def runs():
    mark = HERE / ".runs"
    n = int(mark.read_text()) + 1 if mark.exists() else 1
    mark.write_text(str(n))
    return n


def test_noted():
    COUNTER[0] += 1
    note = {{"pid": os.getpid(), "hash": hash("flakewarden"), "counter": COUNTER[0],
             "random": random.random(), "env_seed": os.environ.get("PYTHONHASHSEED")}}
    with open(HERE / ".notes", "a") as stream:
        stream.write(json.dumps(note) + "\\n")
    assert runs() > {fails}
"""


def _notes(project: Project) -> list[dict[str, Any]]:
    text = (project.root / "tests" / ".notes").read_text()
    return [json.loads(line) for line in text.splitlines()]


def _processes(report: dict[str, Any]) -> list[tuple[str, str]]:
    return [(a["process"], a["process_note"]) for a in report["attempts"]]


def test_a_failed_test_passes_in_a_forked_rerun_as_fresh_as_a_new_process(
    project: Project,
) -> None:
    project.write("tests/test_noted.py", NOTING.format(fails=1))
    result = project.run()
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.outcomes == {"tests/test_noted.py::test_noted": "flaky"}
    assert _processes(result.report) == [(NEW_PROCESS, ""), (FORKED, "")]
    first, rerun = _notes(project)
    assert rerun["pid"] != first["pid"]
    assert rerun["hash"] != first["hash"]  # a hash seed of its own
    # ... in the interpreter only: the environment is a new process's, so the test's own
    # subprocesses draw their hash seeds as they would under a new process.
    assert first["env_seed"] is None and rerun["env_seed"] is None
    assert first["counter"] == rerun["counter"] == 1  # the test module imported afresh
    assert "ran in a new process" not in result.stdout


def test_a_fixed_hash_seed_is_kept_and_random_is_reseeded_in_each_fork(
    project: Project,
) -> None:
    """With PYTHONHASHSEED fixed one server forks every rerun: ``random`` still differs."""
    project.write("tests/test_noted.py", NOTING.format(fails=2))
    result = project.run(env={"PYTHONHASHSEED": "123"})
    assert result.returncode == 0, result.stdout + result.stderr
    assert _processes(result.report) == [(NEW_PROCESS, ""), (FORKED, ""), (FORKED, "")]
    notes = _notes(project)
    assert len({n["pid"] for n in notes}) == 3
    assert len({n["hash"] for n in notes}) == 1
    assert len({n["random"] for n in notes}) == 3
    assert [n["counter"] for n in notes] == [1, 1, 1]


CONFTEST_IMPORTS = """
import os
from pathlib import Path

with open(Path(__file__).parent / ".imported", "a") as stream:
    stream.write(f"{os.getpid()}\\n")
"""


def test_the_conftest_is_imported_by_the_server_not_by_the_rerun(project: Project) -> None:
    """A conftest in a package is imported once, in the server; the test in the rerun."""
    project.write("tests/__init__.py", "")
    project.write("tests/conftest.py", CONFTEST_IMPORTS)
    project.write("tests/test_noted.py", NOTING.format(fails=1))
    result = project.run("--reruns", "1")  # the last attempt: no server warmed after it
    assert result.returncode == 0, result.stdout + result.stderr
    assert _processes(result.report)[1] == (FORKED, "")
    first, rerun = _notes(project)
    imported = [int(line) for line in (project.root / "tests" / ".imported").read_text().split()]
    assert imported[0] == first["pid"]
    assert len(imported) == 2 and imported[1] not in (first["pid"], rerun["pid"])


def test_a_green_run_starts_no_server(project: Project) -> None:
    project.write("tests/__init__.py", "")
    project.write("tests/conftest.py", CONFTEST_IMPORTS)
    project.write("tests/test_ok.py", "def test_ok():\n    pass\n")
    result = project.run()
    assert result.returncode == 0, result.stdout + result.stderr
    assert len((project.root / "tests" / ".imported").read_text().split()) == 1


def test_a_conftest_that_starts_a_thread_gives_new_processes(project: Project) -> None:
    project.write(
        "tests/conftest.py",
        "import threading, time\n\n"
        "threading.Thread(target=time.sleep, args=(60,), daemon=True).start()\n",
    )
    project.write("tests/test_noted.py", NOTING.format(fails=2))
    result = project.run()
    assert result.returncode == 0, result.stdout + result.stderr
    conftest = project.root / "tests" / "conftest.py"
    why = (
        f"the tested interpreter ran 2 threads after importing {conftest}, and forking it is unsafe"
    )
    assert _processes(result.report) == [(NEW_PROCESS, ""), (NEW_PROCESS, why), (NEW_PROCESS, why)]
    assert result.stdout.count(f"ran in a new process: {why}") == 1
    summary = (result.report_dir / "summary.md").read_text()
    assert (
        "0 of 2 reruns forked from a warm pytest; a new process: the tested interpreter" in summary
    )
    first, second, third = _notes(project)
    assert len({first["hash"], second["hash"], third["hash"]}) == 3


def test_a_conftest_that_opens_a_socket_gives_new_processes(project: Project) -> None:
    project.write(
        "tests/conftest.py",
        "import socket\n\nLISTENING = socket.socket()\nLISTENING.bind(('127.0.0.1', 0))\n",
    )
    project.write("tests/test_noted.py", NOTING.format(fails=1))
    result = project.run()
    assert result.returncode == 0, result.stdout + result.stderr
    conftest = project.root / "tests" / "conftest.py"
    why = f"importing {conftest} opened a socket, which forked children would share"
    assert _processes(result.report) == [(NEW_PROCESS, ""), (NEW_PROCESS, why)]


@pytest.mark.parametrize("how", ["option", "config"])
def test_forking_reruns_can_be_turned_off(project: Project, how: str) -> None:
    project.write("tests/test_noted.py", NOTING.format(fails=1))
    if how == "config":
        project.write(".github/flakewarden.yml", "fork_reruns: false\n")
        result = project.run()
    else:
        result = project.run("--no-fork-reruns")
    assert result.returncode == 0, result.stdout + result.stderr
    [(started, why)] = _processes(result.report)[1:]
    assert started == NEW_PROCESS
    assert why.startswith("forking reruns is turned off")
    assert "ran in a new process" not in result.stdout  # the user's choice: not said
    if how == "config":  # the command line wins over the file
        (project.root / "tests" / ".runs").unlink()
        again = project.run("--fork-reruns")
        assert _processes(again.report)[1] == (FORKED, "")


def test_a_command_that_is_not_pytest_gives_new_processes(project: Project) -> None:
    project.write("tests/test_noted.py", NOTING.format(fails=1))
    result = project.run(command=["sh", "-c", 'exec "$0" -m pytest "$@"', PYTEST[0]])
    assert result.returncode == 0, result.stdout + result.stderr
    [(started, why)] = _processes(result.report)[1:]
    assert started == NEW_PROCESS and "does not start pytest" in why


CRASHING = """
import ctypes, os
from pathlib import Path

HERE = Path(__file__).parent


def runs(name):
    mark = HERE / f".runs-{{name}}"
    n = int(mark.read_text()) + 1 if mark.exists() else 1
    mark.write_text(str(n))
    return n


def test_p1():
    n = runs("p1")
    if n == 2:
        {crash}
    assert n > 2


def test_p2():
    assert runs("p2") > 1
"""


@pytest.mark.parametrize("crash", ["ctypes.string_at(0)", "os._exit(1)"])
def test_a_forked_rerun_that_crashes_continues_as_a_spawned_one(tmp_path: Path, crash: str) -> None:
    """The same crash, forked and spawned: the same attempts, crash and continuation."""
    from helpers.project import make_project

    seen = {}
    for mode in ("--fork-reruns", "--no-fork-reruns"):
        project = Project(make_project(tmp_path / mode, {}, ini=ISOLATED_INI))
        project.write("tests/test_r.py", CRASHING.format(crash=crash))
        result = project.run(mode)
        assert result.returncode == 0, result.stdout + result.stderr
        second = result.report["attempts"][1]
        seen[mode] = (
            [[a["outcome"] for a in t["attempts"]] for t in result.report["tests"]],
            second["crash"],
            [c["selected"] for c in second["continuations"]],
            result.report["attempts"][2]["selected"],
            result.report["problems"],
        )
        forked = mode == "--fork-reruns"
        assert (second["process"] == FORKED) is forked
        assert (second["continuations"][0]["process"] == FORKED) is forked
    assert seen["--fork-reruns"] == seen["--no-fork-reruns"]
    outcomes, how, continued, third, problems = seen["--fork-reruns"]
    assert outcomes == [["failed", "crashed", "passed"], ["failed", "passed"]]
    assert how.startswith("was killed by SIGSEGV" if "ctypes" in crash else "exited with status 1")
    assert continued == [1] and third == ["tests/test_r.py::test_p1"] and problems == []


def test_a_forked_rerun_that_hangs_is_stopped_by_the_attempt_timeout(project: Project) -> None:
    project.write(
        "tests/test_hang.py",
        """
        import time
        from pathlib import Path

        MARK = Path(__file__).parent / ".runs"

        def test_hang():
            n = int(MARK.read_text()) + 1 if MARK.exists() else 1
            MARK.write_text(str(n))
            if n == 2:
                time.sleep(60)
            assert n > 2
        """,
    )
    result = project.run("--attempt-timeout", "4")
    assert result.returncode == 0, result.stdout + result.stderr
    attempts = result.report["attempts"]
    assert attempts[1]["process"] == FORKED
    assert attempts[1]["crash"] == "timed out after 4 s (--attempt-timeout) and was stopped"
    assert [a["outcome"] for a in result.test("tests/test_hang.py::test_hang")["attempts"]] == [
        "failed",
        "crashed",
        "passed",
    ]


COVERED = {
    "src/pkg/__init__.py": "",
    "src/pkg/code.py": "def one():\n    return 1\n\n\ndef two():\n    return 2\n",
}


@pytest.mark.parametrize("how", ["--coverage", "--cov"])
def test_a_measured_run_reruns_in_new_processes_with_the_same_coverage(
    tmp_path: Path, how: str
) -> None:
    """A warm pytest imported some of what a rerun runs: coverage needs a new process."""
    from helpers.project import make_project

    totals = []
    for mode in ("--fork-reruns", "--no-fork-reruns"):
        project = Project(make_project(tmp_path / mode, {}, ini=ISOLATED_INI))
        for name, text in COVERED.items():
            project.write(name, text)
        project.write("tests/conftest.py", "import sys\n\nsys.path.insert(0, 'src')\nimport pkg\n")
        project.write(
            "tests/test_noted.py",
            NOTING.format(fails=1) + "\n\ndef test_two():\n    from pkg.code import two\n"
            "    assert two() == 2\n",
        )
        args = [mode, "--coverage"] if how == "--coverage" else [mode]
        command = [*PYTEST] if how == "--coverage" else [*PYTEST, "--cov=pkg"]
        result = project.run(*args, command=command)
        assert result.returncode == 0, result.stdout + result.stderr
        [(started, why)] = _processes(result.report)[1:]
        assert started == NEW_PROCESS
        if mode == "--fork-reruns":
            assert why.startswith("coverage is measured")
        # Documented and chosen with coverage: report.json says it, the summary does not.
        assert "warm pytest" not in (result.report_dir / "summary.md").read_text()
        totals.append((result.report["coverage"]["percent"], _line_hits(result.report_dir)))
    assert totals[0] == totals[1]
    assert totals[0][0] is not None and totals[0][1]


def _line_hits(report_dir: Path) -> dict[str, dict[str, str]]:
    """What the merged ``coverage.xml`` says of each line of each file."""
    import xml.etree.ElementTree as ET

    root = ET.parse(report_dir / "coverage.xml").getroot()
    return {
        str(c.get("filename")): {
            str(li.get("number")): str(li.get("hits")) for li in c.iter("line")
        }
        for c in root.iter("class")
    }


def test_xdist_attempt_then_forked_reruns(project: Project) -> None:
    project.write("tests/test_noted.py", NOTING.format(fails=1))
    for n in range(4):
        project.write(f"tests/test_ok{n}.py", "def test_ok():\n    pass\n")
    result = project.run(command=[*PYTEST, "-n", "2"])
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.outcomes["tests/test_noted.py::test_noted"] == "flaky"
    assert _processes(result.report) == [(NEW_PROCESS, ""), (FORKED, "")]
    rerun = result.report["attempts"][1]["command"]
    assert rerun[rerun.index("-n") + 1] == "2"
    first, second = _notes(project)
    assert first["hash"] != second["hash"] and second["counter"] == 1


def test_an_older_report_reads_as_new_processes() -> None:
    old = {"number": 2, "command": ["pytest"], "reason": "rerun", "continuations": [{}]}
    attempt = Attempt.from_json(old)
    assert (attempt.process, attempt.process_note) == (NEW_PROCESS, "")
    assert attempt.continuations[0].process == NEW_PROCESS
    forked = Attempt.from_json({**old, "process": FORKED, "continuations": []})
    assert Attempt.from_json(forked.to_json()) == forked
    assert forked.process == FORKED


def test_a_rerun_whose_server_dies_runs_again_in_a_new_process(project: Project) -> None:
    project.write(
        "tests/test_kills.py",
        """
        import os, signal, time
        from pathlib import Path

        MARK = Path(__file__).parent / ".runs"

        def test_kills_its_server():
            n = int(MARK.read_text()) + 1 if MARK.exists() else 1
            MARK.write_text(str(n))
            parent = Path(f"/proc/{os.getppid()}/cmdline").read_bytes()
            if b"flakewarden_fork_server" in parent:
                os.kill(os.getppid(), signal.SIGKILL)
                time.sleep(30)
            assert n > 1
        """,
    )
    result = project.run()
    assert result.returncode == 0, result.stdout + result.stderr
    [rerun] = result.report["attempts"][1:]
    assert (rerun["process"], rerun["process_note"]) == (
        NEW_PROCESS,
        "the fork server died while the rerun ran: it ran again in a new process",
    )
    # What the killed child recorded is dropped: one run of the test per attempt.
    runs = result.test("tests/test_kills.py::test_kills_its_server")["attempts"]
    assert [a["outcome"] for a in runs] == ["failed", "passed"]
    assert (project.root / "tests" / ".runs").read_text() == "3"
