"""Stress processes forked from a fork server behave as spawned ones, and fall back to spawning.

Every test runs real pytest processes of a small generated project, forked from
a real server in this interpreter (or spawned, to compare), through ``run_all``.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, Optional

import pytest
from helpers.console_script import pytest_script
from helpers.project import make_project

from flakewarden.runner.fork_target import Target, target_for
from flakewarden.runner.forkserver import ForkServer
from flakewarden.runner.process import FORK_SERVER_FILE, plugin_dir, plugin_env
from flakewarden.runner.pytest_args import PytestCommand
from flakewarden.stress.engine import StressOptions
from flakewarden.stress.launcher import FORK_ENV, Launcher
from flakewarden.stress.pool import ChildSpec, run_all
from flakewarden.stress.probe import run_probe
from flakewarden.stress.runs import Job, StressProcesses

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="forks on Linux")

PREFIX = [sys.executable, "-m", "pytest"]
ARGS = ["-p", "no:randomly", "-p", "no:cacheprovider", "-q"]
_LEAKY_ENV = ("PYTEST_ADDOPTS", "PYTEST_XDIST_WORKER", "PYTEST_XDIST_TESTRUNUID", "COVERAGE_FILE")


def _base_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in _LEAKY_ENV}
    env.pop(FORK_ENV, None)
    env.update(extra)
    return env


@pytest.fixture
def plugin() -> Iterator[Path]:
    with plugin_dir() as directory:
        yield directory


def _specs(
    project: Path,
    plugin: Path,
    name: str,
    count: int,
    *,
    test: str = "test_it.py",
    prefix: Sequence[str] = PREFIX,
    timeout: float = 120.0,
    base: Optional[dict[str, str]] = None,
) -> list[ChildSpec]:
    specs = []
    for number in range(count):
        directory = project.parent / f"{name}-{number}"
        directory.mkdir()
        env = plugin_env(plugin, directory / "results.jsonl", base=base or _base_env())
        command = [*prefix, *ARGS, test]
        specs.append(ChildSpec(command, project, env, directory / "output.log", timeout))
    return specs


def _server(project: Path, plugin: Path, spec: ChildSpec, **options: Any) -> ForkServer:
    target = Target(sys.executable, None, list(PREFIX))
    return ForkServer(target, plugin / FORK_SERVER_FILE, project, spec.env, **options)


def _records(spec: ChildSpec) -> list[dict[str, Any]]:
    text = Path(spec.env["FLAKEWARDEN_RESULTS"]).read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines()]


def _shape(spec: ChildSpec) -> list[tuple[str, list[str], object]]:
    """Each record's kind and keys, and for test records the phases' outcomes."""
    shape = []
    for record in _records(spec):
        phases = [(p["when"], p["outcome"]) for p in record.get("phases", [])]
        shape.append((record["kind"], sorted(record), phases))
    return shape


class Recording:
    """A throttle that checks each pid leads its own live group when it is added."""

    def __init__(self) -> None:
        self.added: list[int] = []
        self.discarded: list[int] = []

    def add(self, pid: int, results: Optional[Path] = None) -> None:
        assert os.getpgid(pid) == pid
        assert results is not None and results.name == "results.jsonl"
        self.added.append(pid)

    def discard(self, pid: int) -> None:
        self.discarded.append(pid)


def _gone(pid: int, timeout: float = 30.0) -> bool:
    """The process no longer runs (gone, or a zombie waiting for its reaper)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            return True
        if stat.rsplit(")", 1)[1].split()[0] in ("Z", "X"):
            return True
        time.sleep(0.05)
    return False


def _group_gone(group: int, timeout: float = 30.0) -> bool:
    """No process is left in the group, once the last zombie is reaped."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            os.killpg(group, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.05)
    return False


PASSES_AND_FAILS = """
    def test_passes():
        assert 1 + 1 == 2


    def test_fails():
        assert 1 + 1 == 3
"""


def test_a_forked_run_records_like_a_spawned_one(tmp_path: Path, plugin: Path) -> None:
    project = make_project(tmp_path / "proj", {"test_it.py": PASSES_AND_FAILS})
    runs = {}
    for test, code in (("test_it.py::test_passes", 0), ("test_it.py::test_fails", 1)):
        spawned = _specs(project, plugin, f"spawn-{code}", 1, test=test)
        forked = _specs(project, plugin, f"fork-{code}", 1, test=test)
        with _server(project, plugin, forked[0]) as server:
            [fork_outcome] = run_all(forked, 1, server=server)
            assert server.forked == 1
        [spawn_outcome] = run_all(spawned, 1)
        assert spawn_outcome.exit_code == fork_outcome.exit_code == code
        assert _shape(forked[0]) == _shape(spawned[0])
        runs[code] = (_records(spawned[0]), _records(forked[0]))
    spawned_config, forked_config = runs[0][0][0], runs[0][1][0]
    assert forked_config["kind"] == "config"
    for key in ("rootdir", "invocation_dir", "args", "file_or_dir", "executable", "pytest"):
        assert forked_config[key] == spawned_config[key], key
    # The same traceback, down to the rewritten assert's explanation.
    spawned_test, forked_test = (next(r for r in rs if r["kind"] == "test") for rs in runs[1])
    assert forked_test["phases"][1]["longrepr"] == spawned_test["phases"][1]["longrepr"]
    assert "E       assert (1 + 1) == 3" in forked_test["phases"][1]["longrepr"]


CRASHES = """
    import os
    import signal


    def test_abort():
        os.abort()


    def test_sigkill():
        os.kill(os.getpid(), signal.SIGKILL)


    def test_exit_7():
        os._exit(7)
"""


def test_a_crashing_child_ends_as_a_spawned_one_does(tmp_path: Path, plugin: Path) -> None:
    project = make_project(tmp_path / "proj", {"test_it.py": CRASHES})
    for name, code in (("abort", -signal.SIGABRT), ("sigkill", -signal.SIGKILL), ("exit_7", 7)):
        test = f"test_it.py::test_{name}"
        spawned = _specs(project, plugin, f"spawn-{name}", 1, test=test)
        forked = _specs(project, plugin, f"fork-{name}", 1, test=test)
        with _server(project, plugin, forked[0]) as server:
            [fork_outcome] = run_all(forked, 1, server=server)
            assert server.forked == 1
        [spawn_outcome] = run_all(spawned, 1)
        assert fork_outcome.exit_code == spawn_outcome.exit_code == code, name
        assert fork_outcome.timed_out is spawn_outcome.timed_out is False
        assert [r["kind"] for r in _records(forked[0])] == [r["kind"] for r in _records(spawned[0])]


LEAVES_THINGS = """
    import os
    import subprocess
    import sys
    import threading
    import time
    from pathlib import Path


    def test_hangs():
        helper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
        Path(os.environ["PIDS"]).write_text(f"{os.getpid()} {helper.pid}")
        time.sleep(120)


    def test_leaves_a_thread_and_a_process():
        threading.Thread(target=time.sleep, args=(120,), daemon=True).start()
        helper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
        Path(os.environ["PIDS"]).write_text(f"{os.getpid()} {helper.pid}")
"""


def test_a_hanging_child_is_killed_at_its_timeout_with_its_group(
    tmp_path: Path, plugin: Path
) -> None:
    project = make_project(tmp_path / "proj", {"test_it.py": LEAVES_THINGS})
    pids = tmp_path / "pids"
    base = _base_env(PIDS=str(pids))
    specs = _specs(project, plugin, "fork", 1, test="test_it.py::test_hangs", base=base)
    specs[0].timeout = 3.0
    throttle = Recording()
    with _server(project, plugin, specs[0]) as server:
        [outcome] = run_all(specs, 1, server=server, throttle=throttle)
        assert server.forked == 1
    assert outcome.exit_code is None and outcome.timed_out
    child, helper = (int(p) for p in pids.read_text().split())
    assert throttle.added == throttle.discarded == [child]
    assert _gone(child) and _gone(helper)
    assert _group_gone(child)


def test_what_a_child_leaves_running_ends_with_it(tmp_path: Path, plugin: Path) -> None:
    project = make_project(tmp_path / "proj", {"test_it.py": LEAVES_THINGS})
    pids = tmp_path / "pids"
    test = "test_it.py::test_leaves_a_thread_and_a_process"
    specs = _specs(project, plugin, "fork", 1, test=test, base=_base_env(PIDS=str(pids)))
    throttle = Recording()
    with _server(project, plugin, specs[0]) as server:
        [outcome] = run_all(specs, 1, server=server, throttle=throttle)
    assert outcome.exit_code == 0  # the daemon thread does not hold the exit
    child, helper = (int(p) for p in pids.read_text().split())
    assert throttle.added == throttle.discarded == [child]
    assert _gone(helper)


FRESH_STATE = """
    import os
    from pathlib import Path

    import helper

    SEEN = []


    def test_state_is_fresh():
        assert SEEN == [] and helper.CALLS == []
        SEEN.append(1)
        helper.CALLS.append(1)
        out = Path(os.environ["OUT"]) / str(os.getpid())
        out.write_text(f"{os.getppid()} {hash('flakewarden')}")
"""


def _seen(out: Path) -> list[tuple[int, int, str]]:
    """(pid, parent pid, hash of a string) of each run, in the order they started."""
    rows = []
    for entry in sorted(out.iterdir(), key=lambda p: p.stat().st_mtime_ns):
        parent, hashed = entry.read_text().split()
        rows.append((int(entry.name), int(parent), hashed))
    return rows


def test_each_forked_child_imports_the_tests_afresh(tmp_path: Path, plugin: Path) -> None:
    files = {"test_it.py": FRESH_STATE, "helper.py": "CALLS = []\n"}
    project = make_project(tmp_path / "proj", files)
    out = tmp_path / "out"
    out.mkdir()
    specs = _specs(project, plugin, "fork", 6, base=_base_env(OUT=str(out)))
    with _server(project, plugin, specs[0]) as server:
        outcomes = run_all(specs, 2, server=server)
        assert server.forked == 6
    assert [o.exit_code for o in outcomes] == [0] * 6
    rows = _seen(out)
    assert len({pid for pid, _, _ in rows}) == 6
    assert len({parent for _, parent, _ in rows}) == 1  # all forked from one server
    for spec in specs:
        [test] = [r for r in _records(spec) if r["kind"] == "test"]
        assert test["iteration"] == 0 and test["phases"][1]["outcome"] == "passed"


def test_a_server_is_replaced_after_its_forks_so_hash_seeds_vary(
    tmp_path: Path, plugin: Path
) -> None:
    files = {"test_it.py": FRESH_STATE, "helper.py": "CALLS = []\n"}
    project = make_project(tmp_path / "proj", files)
    out = tmp_path / "out"
    out.mkdir()
    base = _base_env(OUT=str(out))
    base.pop("PYTHONHASHSEED", None)
    specs = _specs(project, plugin, "fork", 6, base=base)
    with _server(project, plugin, specs[0], forks_per_server=2) as server:
        outcomes = run_all(specs, 1, server=server)
        # A server retires after its 2nd fork; its successor starts at its 1st, so the
        # 5th fork started a 4th server, on standby for a 7th run. Before them, one server
        # refused per plugin that starts a thread (pytest-randomly, where it is installed).
        assert server.forked == 6 and server.servers == 4 + len(server.skipped)
    assert [o.exit_code for o in outcomes] == [0] * 6
    rows = _seen(out)
    parents = [parent for _, parent, _ in rows]
    assert parents[0] == parents[1] != parents[2] == parents[3] != parents[4] == parents[5]
    hashes = {parent: hashed for _, parent, hashed in rows}
    assert len(set(hashes.values())) == 3  # a string's hash: one seed per server


SEES = """
    import json
    import os
    import sys
    from pathlib import Path


    def test_sees():
        main = sys.modules["__main__"]
        seen = {
            "argv0": sys.argv[0],
            "path0": sys.path[0],
            "main": getattr(main, "__file__", None),
            "cwd": os.getcwd(),
            "stdin": os.readlink("/proc/self/fd/0"),
            "mark": os.environ.get("FLAKEWARDEN_MARK"),
        }
        Path(os.environ["OUT"]).write_text(json.dumps(seen))
"""


@pytest.mark.parametrize("way", ["module", "script"])
def test_a_child_sees_the_process_a_spawned_run_sees(
    tmp_path: Path, plugin: Path, way: str
) -> None:
    project = make_project(tmp_path / "proj", {"test_it.py": SEES})
    prefix = list(PREFIX)
    if way == "script":
        prefix = [str(pytest_script(tmp_path / "bin"))]
    seen = {}
    for name in ("spawn", "fork"):
        out = tmp_path / f"{name}.json"
        specs = _specs(project, plugin, name, 1, prefix=prefix, base=_base_env(OUT=str(out)))
        specs[0].env["FLAKEWARDEN_MARK"] = name  # a run's own variable: the server has none
        if name == "spawn":
            [outcome] = run_all(specs, 1)
        else:
            target = target_for(prefix, project, specs[0].env)
            assert target is not None and target.python == sys.executable
            script = plugin / FORK_SERVER_FILE
            with ForkServer(target, script, tmp_path, specs[0].env) as server:
                other = {**specs[0].env, "OTHER": "1"}
                assert server.args_for(specs[0].command, other) is None  # may differ at start-up
                [outcome] = run_all(specs, 1, server=server)
                assert server.forked == 1
        assert outcome.exit_code == 0, specs[0].log.read_text()
        seen[name] = json.loads(out.read_text())
    assert seen["fork"].pop("mark") == "fork" and seen["spawn"].pop("mark") == "spawn"
    assert seen["fork"] == seen["spawn"]
    assert seen["fork"]["cwd"] == str(project) and seen["fork"]["stdin"] == os.devnull


def test_warnings_as_errors_see_no_warning_from_the_server(tmp_path: Path, plugin: Path) -> None:
    project = make_project(tmp_path / "proj", {"test_it.py": PASSES_AND_FAILS})
    (project / "pytest.ini").write_text("[pytest]\nfilterwarnings = error\n", encoding="utf-8")
    specs = _specs(project, plugin, "fork", 1, test="test_it.py::test_passes")
    with _server(project, plugin, specs[0]) as server:
        [outcome] = run_all(specs, 1, server=server)
        assert server.forked == 1
    log = specs[0].log.read_text()
    assert outcome.exit_code == 0, log
    assert "warning" not in log.lower()


KILLS_ITS_SERVER = """
    import os
    import signal
    import time
    from pathlib import Path


    def test_kills_its_server():
        parent = Path(f"/proc/{os.getppid()}/cmdline").read_bytes()
        if b"flakewarden_fork_server" in parent:
            os.kill(os.getppid(), signal.SIGKILL)
            time.sleep(60)  # lost with its server: killed, and the run spawned anew
"""


def test_a_run_whose_server_dies_is_spawned_anew(tmp_path: Path, plugin: Path) -> None:
    project = make_project(tmp_path / "proj", {"test_it.py": KILLS_ITS_SERVER})
    specs = _specs(project, plugin, "fork", 2)
    throttle = Recording()
    with _server(project, plugin, specs[0]) as server:
        outcomes = run_all(specs, 1, server=server, throttle=throttle)
        assert not server.usable and server.forked == 1
        assert "died" in server.note and "spawned afresh" in server.note
    assert [o.exit_code for o in outcomes] == [0, 0]
    assert sorted(throttle.added) == sorted(throttle.discarded) and len(throttle.added) == 3
    configs = [r for r in _records(specs[0]) if r["kind"] == "config"]
    assert len(configs) == 1  # only the spawned run's records


HANGS = """
    import os
    import time
    from pathlib import Path


    def test_hangs():
        Path(os.environ["PIDS"]).write_text(str(os.getpid()))
        time.sleep(120)
"""
INTERRUPTED = """
import sys
from pathlib import Path
sys.path.insert(0, sys.argv[1])
from test_stress_fork import Target, ForkServer, FORK_SERVER_FILE, run_all, _specs

project, plugin = Path(sys.argv[2]), Path(sys.argv[3])
specs = _specs(project, plugin, "fork", 1)
target = Target(sys.executable, None, [sys.executable, "-m", "pytest"])
with ForkServer(target, plugin / FORK_SERVER_FILE, project, specs[0].env) as server:
    run_all(specs, 1, server=server)
"""


def test_ctrl_c_kills_a_forked_child(tmp_path: Path, plugin: Path) -> None:
    project = make_project(tmp_path / "proj", {"test_it.py": HANGS})
    pids = tmp_path / "pids"
    env = {**_base_env(PIDS=str(pids)), "PYTHONPATH": os.pathsep.join(sys.path)}
    here = str(Path(__file__).parent)
    parent = subprocess.Popen(
        [sys.executable, "-c", INTERRUPTED, here, str(project), str(plugin)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 60
    while not (pids.exists() and pids.read_text()) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert pids.exists() and pids.read_text(), "the forked test never started"
    child = int(pids.read_text())
    parent.send_signal(signal.SIGINT)
    _, err = parent.communicate(timeout=60)
    assert "Interrupted: SIGINT" in err
    assert _gone(child, timeout=0.5)  # stopped before the parent exited


THREAD_AT_IMPORT = """
    import threading
    import time

    threading.Thread(target=time.sleep, args=(120,), daemon=True).start()
"""


def test_a_thread_at_start_up_falls_back_to_spawning(tmp_path: Path, plugin: Path) -> None:
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(textwrap.dedent(THREAD_AT_IMPORT), encoding="utf-8")
    project = make_project(tmp_path / "proj", {"test_it.py": PASSES_AND_FAILS})
    base = _base_env(PYTHONPATH=os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")]))
    specs = _specs(project, plugin, "run", 3, test="test_it.py::test_passes", base=base)
    with Launcher() as launch:
        split = PytestCommand(list(PREFIX), [])
        server = launch.server_for(split, plugin, project, specs[0].env)
        assert server is not None
        outcomes = run_all(specs, 2, server=server)
        assert launch.mechanism == "spawn" and not server.usable
        assert "threads as soon as it started" in launch.note
        assert "every later process was spawned afresh" in launch.note
        assert launch.server_for(split, plugin, project, specs[0].env) is None
    assert [o.exit_code for o in outcomes] == [0, 0, 0]


def test_a_plugin_that_starts_a_thread_is_left_to_the_children(
    tmp_path: Path, plugin: Path
) -> None:
    site = tmp_path / "site"
    (site / "fw_thread_plugin-1.0.dist-info").mkdir(parents=True)
    info = site / "fw_thread_plugin-1.0.dist-info"
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: fw-thread-plugin\nVersion: 1.0\n", encoding="utf-8"
    )
    (info / "entry_points.txt").write_text(
        "[pytest11]\nfw_thread = fw_thread_plugin\n", encoding="utf-8"
    )
    (site / "fw_thread_plugin.py").write_text(textwrap.dedent(THREAD_AT_IMPORT), encoding="utf-8")
    project = make_project(tmp_path / "proj", {"test_it.py": PASSES_AND_FAILS})
    base = _base_env(PYTHONPATH=os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")]))
    specs = _specs(project, plugin, "run", 2, test="test_it.py::test_passes", base=base)
    with Launcher() as launch:
        server = launch.server_for(PytestCommand(list(PREFIX), []), plugin, project, specs[0].env)
        assert server is not None
        outcomes = run_all(specs, 1, server=server)
        assert launch.mechanism == "fork server" and server.forked == 2
        assert "fw_thread_plugin" in server.skipped
        assert "fw_thread_plugin" in launch.note and "for each child to import" in launch.note
    assert [o.exit_code for o in outcomes] == [0, 0]


def test_the_switch_forces_spawning(
    tmp_path: Path, plugin: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(FORK_ENV, "0")
    project = make_project(tmp_path / "proj", {"test_it.py": PASSES_AND_FAILS})
    specs = _specs(project, plugin, "run", 1, test="test_it.py::test_passes")
    with Launcher() as launch:
        assert launch.server_for(PytestCommand(list(PREFIX), []), plugin, project, {}) is None
        assert [o.exit_code for o in run_all(specs, 1)] == [0]
        assert launch.mechanism == "spawn"
        assert launch.note == f"{FORK_ENV}=0: every process was spawned afresh"


def test_only_commands_that_start_pytest_directly_are_forked(tmp_path: Path) -> None:
    env = {"PATH": os.path.dirname(sys.executable)}
    name = os.path.basename(sys.executable)
    assert target_for([name, "-m", "pytest"], tmp_path, env) == Target(
        sys.executable, None, [name, "-m", "pytest"]
    )
    assert target_for(["coverage", "run", "-m", "pytest"], tmp_path, env) is None
    assert target_for([name, "-X", "dev", "-m", "pytest"], tmp_path, env) is None
    assert target_for(["tox", "-e", "py"], tmp_path, env) is None
    script = tmp_path / "pytest"
    script.write_text("#!/bin/sh\n'''exec' \"/a b/python\" \"$0\" \"$@\"\n' '''\n")
    script.chmod(0o755)
    assert target_for([str(script)], tmp_path, env) is None  # pip's trampoline: not followed
    script.write_text(f"#!/usr/bin/env {name}\nimport pytest\n")
    assert target_for(["./pytest"], tmp_path, env) == Target(
        sys.executable, str(tmp_path / "pytest"), ["./pytest"]
    )


def test_a_runner_forks_its_processes_after_the_probe(tmp_path: Path) -> None:
    project = make_project(tmp_path / "proj", {"test_it.py": PASSES_AND_FAILS})
    options = StressOptions(
        test_id="test_it.py::test_passes",
        command=[*PREFIX, *ARGS],
        cwd=project,
        report_dir=tmp_path / "report",
    )
    with plugin_dir() as directory:
        stress = StressProcesses(options, directory)
        with stress.launching():
            probed = run_probe(options, stress, lambda line: None)
            assert probed.finding is None and probed.probe is not None
            assert stress.launcher == "spawn"  # the probe is always spawned
            job = Job("isolation", "baseline", [options.test_id])
            results = stress.run_jobs([job] * 3, 2, probe=probed.probe)
            assert stress.launcher == "fork server"
            assert "spawned" not in stress.launcher_note
        assert stress.launch is None
    assert [r.exit_code for r in results] == [0, 0, 0]
    assert all(len(r.records) == 1 and not r.records[0].outcome.is_failure for r in results)
    pids = {r.results.config["pid"] for r in results if r.results.config}
    assert len(pids) == 3


IMPORTED_BEFORE = """
    import os
    import sys

    SEEN = "hypothesis" in sys.modules  # as the test module is imported, before any use


    def test_it():
        with open(os.path.join(os.environ["OUT"], str(os.getpid())), "w") as out:
            out.write("yes" if SEEN else "no")
    """


@pytest.mark.skipif(
    not any(
        point.value == "_hypothesis_pytestplugin"
        for point in importlib.metadata.entry_points(group="pytest11")
    ),
    reason="needs hypothesis's pytest plugin installed (a test dependency)",
)
def test_a_plugins_own_distribution_is_imported_once_in_the_server(
    tmp_path: Path, plugin: Path
) -> None:
    # hypothesis's plugin imports hypothesis only in its hooks (its terminal summary, in
    # every run): a spawned run imports it at the end of each run, a forked child finds it.
    files = {"test_it.py": textwrap.dedent(IMPORTED_BEFORE)}
    project = make_project(tmp_path / "proj", files)
    out = tmp_path / "out"
    out.mkdir()
    env = _base_env(OUT=str(out))
    spawned = _specs(project, plugin, "spawn", 1, base=env)
    assert [o.exit_code for o in run_all(spawned, 1)] == [0]
    assert [p.read_text() for p in out.iterdir()] == ["no"]
    for path in out.iterdir():
        path.unlink()
    forked = _specs(project, plugin, "fork", 2, base=env)
    with _server(project, plugin, forked[0]) as server:
        outcomes = run_all(forked, 1, server=server)
        assert server.forked == 2
    assert [o.exit_code for o in outcomes] == [0, 0]
    assert [p.read_text() for p in out.iterdir()] == ["yes", "yes"]


def test_a_distributions_packages_are_its_top_level_names_less_tests() -> None:
    from flakewarden.inside.fork_child import _packages

    class Dist:
        def __init__(self, top: Optional[str], files: Sequence[str]) -> None:
            self.top, self.files = top, files

        def read_text(self, name: str) -> Optional[str]:
            assert name == "top_level.txt"
            return self.top

    assert _packages(Dist("hypothesis\n_hypothesis_pytestplugin\ntests\n", [])) == ["hypothesis"]
    files = ["xdist/__init__.py", "xdist/plugin.py", "tests/__init__.py", "x-1.0.dist-info/RECORD"]
    assert _packages(Dist(None, files)) == ["xdist"]
