"""Orphans an attempt adopts: reaped as soon as they exit, as init would.

flakewarden makes itself the subreaper of what it runs (Linux). An orphan that exits
while the tests still run must not linger as a zombie: a test that waits for a process
it detached to be gone would fail under flakewarden and pass without it.
"""

from __future__ import annotations

import sys

import pytest
from helpers.project import Project

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="subreaper: Linux")

# The test detaches a grandchild (a new session, its parent gone at once) that exits
# after 0.2 s, then waits for it to be gone from /proc: a zombie still has an entry.
DETACHES = """
    import os
    import time
    from pathlib import Path


    def _detach_short_lived():
        read, write = os.pipe()
        if os.fork() == 0:
            os.setsid()
            pid = os.fork()
            if pid == 0:
                time.sleep(0.2)
                os._exit(0)
            os.write(write, str(pid).encode())
            os._exit(0)
        os.close(write)
        pid = int(os.read(read, 32))
        os.wait()
        return pid


    def test_a_detached_process_that_exits_is_gone():
        pid = _detach_short_lived()
        deadline = time.monotonic() + 20
        while Path(f"/proc/{pid}").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not Path(f"/proc/{pid}").exists(), f"{pid} is still there (a zombie)"
    """


def test_an_orphan_that_exits_during_the_attempt_is_reaped(project: Project) -> None:
    project.write("tests/test_detach.py", DETACHES)
    result = project.run("--reruns", "0")
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.outcomes == {
        "tests/test_detach.py::test_a_detached_process_that_exits_is_gone": "passed"
    }
    # It was reaped while the tests ran: nothing was left for the end of the attempt.
    log = (result.report_dir / "attempts" / "1" / "output.log").read_text(encoding="utf-8")
    assert "the command left running" not in log


def test_only_adopted_orphans_are_reaped_never_our_own_children(project: Project) -> None:
    """A child flakewarden waits for itself keeps its exit status, zombie or not."""
    seen = project.drive(
        """
        import json, os, subprocess, sys, time
        from flakewarden.runner import leftovers
        from flakewarden.runner.process import spawn

        assert leftovers.adopt_orphans()

        def zombie(pid):
            deadline = time.monotonic() + 20
            while time.monotonic() < deadline:
                with open(f"/proc/{pid}/stat") as stream:
                    if stream.read().rsplit(")", 1)[1].split()[0] == "Z":
                        return
                time.sleep(0.01)
            raise AssertionError(f"{pid} never exited")

        same_group = subprocess.Popen(["sh", "-c", "exit 3"])
        spawned = spawn(["sh", "-c", "exit 4"], cwd=".", env=os.environ, stdout=None)
        # An orphan: its parent (sh) exits at once, so it is re-parented to us.
        orphan_parent = subprocess.Popen(
            ["sh", "-c", "setsid sh -c 'echo $$; exec sleep 0.2' &"],
            stdout=subprocess.PIPE, text=True,
        )
        orphan = int(orphan_parent.stdout.readline())
        orphan_parent.wait()
        for pid in (same_group.pid, spawned.pid, orphan):
            zombie(pid)
        reaped = leftovers.reap_exited_orphans()
        print(json.dumps({
            "reaped": reaped,
            "orphan_gone": not os.path.exists(f"/proc/{orphan}"),
            "codes": [same_group.wait(), spawned.wait()],
        }))
        """
    )
    assert seen == {"reaped": 1, "orphan_gone": True, "codes": [3, 4]}


def test_after_an_attempt_an_orphan_goes_to_its_usual_reaper(project: Project) -> None:
    """flakewarden adopts orphans only while an attempt runs: one left by a process it
    starts afterwards (a stress run's forked child) is not parented to it, a zombie
    nobody reaps, but to whoever adopts it outside, which reaps it."""
    seen = project.drive(
        """
        import ctypes, json, os, subprocess, sys, time
        from pathlib import Path
        from flakewarden.runner import leftovers
        from flakewarden.runner.process import run_child

        def subreaper():
            flag = ctypes.c_int(-1)
            ctypes.CDLL(None).prctl(37, ctypes.byref(flag), 0, 0, 0)  # PR_GET_CHILD_SUBREAPER
            return flag.value

        child = run_child(["sh", "-c", "exit 0"], cwd=Path("."), env=dict(os.environ),
                          log=Path("attempt.log"))
        orphan_parent = subprocess.Popen(
            ["sh", "-c", "setsid sh -c 'echo $$; exec sleep 0.3' &"],
            stdout=subprocess.PIPE, text=True,
        )
        orphan = int(orphan_parent.stdout.readline())
        orphan_parent.wait()
        with open(f"/proc/{orphan}/stat") as stream:
            parent = int(stream.read().rsplit(")", 1)[1].split()[1])
        deadline = time.monotonic() + 20
        while os.path.exists(f"/proc/{orphan}") and time.monotonic() < deadline:
            time.sleep(0.05)
        print(json.dumps({
            "code": child.exit_code,
            "subreaper": subreaper(),
            "ours": parent == os.getpid(),
            "gone": not os.path.exists(f"/proc/{orphan}"),
        }))
        """
    )
    assert seen == {"code": 0, "subreaper": 0, "ours": False, "gone": True}


def test_a_helper_started_while_an_attempt_ends_is_not_taken_for_its_leftover(
    project: Project,
) -> None:
    """A fork server is started from the thread reading an attempt's records; the attempt may
    end meanwhile. Between the server's start and its naming (``keep``) it is a child of ours
    like any leftover: ``starting`` keeps the attempt's end from ending it there."""
    seen = project.drive(
        """
        import json, subprocess, threading, time
        from flakewarden.runner import leftovers

        assert leftovers.adopt_orphans()
        started, named = threading.Event(), threading.Event()
        helper = []

        def start_helper():
            with leftovers.starting():
                helper.append(subprocess.Popen(["sleep", "30"]))
                started.set()
                time.sleep(0.5)  # the attempt ends here, before the helper is named
                leftovers.keep(helper[0].pid)
            named.set()

        thread = threading.Thread(target=start_helper)
        thread.start()
        started.wait(20)
        ended = leftovers.end_orphans()  # the attempt's end, as ``run_child`` ends it
        thread.join()
        alive = helper[0].poll() is None
        helper[0].kill()
        print(json.dumps({"ended": ended, "alive": alive, "named": named.is_set()}))
        """
    )
    assert seen == {"ended": 0, "alive": True, "named": True}
