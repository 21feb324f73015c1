"""CPU burners never outlive the stress run that started them."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from flakewarden.stress.pool import ChildSpec, burners, run_all

SCRIPT = """
import os, sys, time
from flakewarden.stress.pool import burners

with burners(2):
    print(os.getpid(), flush=True)
    time.sleep(60)  # killed outright long before this ends
"""


def _burners_of(parent: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if any(b"flakewarden burner" in a for a in argv) and str(parent).encode() in argv:
            found.append(int(entry.name))
    return found


def test_burners_stop_when_their_parent_is_killed_outright() -> None:
    child = subprocess.Popen([sys.executable, "-c", SCRIPT], stdout=subprocess.PIPE, text=True)
    assert child.stdout is not None
    parent = int(child.stdout.readline())
    # On a loaded machine one burner was once not yet listed when the block began: wait
    # for both, within a bound (a burner that never appears still fails the test).
    deadline = time.monotonic() + 30
    running = _burners_of(parent)
    while len(running) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
        running = _burners_of(parent)
    assert len(running) == 2
    child.kill()  # SIGKILL: no finally, no context manager exit
    child.wait(timeout=30)
    deadline = time.monotonic() + 30
    while _burners_of(parent) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _burners_of(parent) == []
    for pid in running:
        assert (
            not os.path.exists(f"/proc/{pid}/cmdline")
            or b"burner" not in Path(f"/proc/{pid}/cmdline").read_bytes()
        )


def _stat(pid: int) -> tuple[int, int]:
    """A process's (process group, session) from /proc, whoever its parent is."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[2]), int(fields[3])


CHILD = """
import os, sys, time
from pathlib import Path

parent = sys.argv[1].encode()
deadline = time.monotonic() + 30
while time.monotonic() < deadline:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\\0")
        except OSError:
            continue
        if any(b"flakewarden burner" in a for a in argv) and parent in argv:
            found.append(entry.name)
    if len(found) == 2:
        break
    time.sleep(0.05)
print(os.getpgid(0), os.getsid(0), *found)
"""


def test_tests_and_burners_share_our_session_in_groups_of_their_own(tmp_path: Path) -> None:
    # Linux's autogroup scheduler shares the CPU per session: burners in a session
    # apart from the test's would barely load it.
    log = tmp_path / "log"
    command = [sys.executable, "-c", CHILD, str(os.getpid())]
    with burners(2):
        (outcome,) = run_all([ChildSpec(command, tmp_path, dict(os.environ), log, 60)], 1)
        group, session, *found = (int(v) for v in log.read_text().split())
        assert len(found) == 2
        layout = {pid: _stat(pid) for pid in found}
    assert outcome.exit_code == 0
    ours = os.getsid(0)
    assert session == ours
    assert group not in (os.getpgid(0), *found)  # a group of its own: stopped whole, alone
    assert layout == {pid: (pid, ours) for pid in found}


INTERRUPTED = """
import os, sys
from pathlib import Path
from flakewarden.stress.pool import ChildSpec, burners, run_all

spec = ChildSpec(
    [sys.executable, "-c", "import os, time; print(os.getpid(), flush=True); time.sleep(60)"],
    Path.cwd(), dict(os.environ), Path(sys.argv[1]), 120,
)
print(os.getpid(), flush=True)
with burners(2):
    run_all([spec], parallel=1)
"""


def test_ctrl_c_stops_the_test_and_the_burners(tmp_path: Path) -> None:
    log = tmp_path / "child.log"
    parent = subprocess.Popen(
        [sys.executable, "-c", INTERRUPTED, str(log)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert parent.stdout is not None
    pid = int(parent.stdout.readline())
    # The burners start before the child's log exists: wait for both, each within a bound.
    deadline = time.monotonic() + 30
    while not (len(_burners_of(pid)) == 2 and log.exists() and log.read_text()):
        if time.monotonic() > deadline:
            break
        time.sleep(0.05)
    running = _burners_of(pid)
    assert len(running) == 2
    assert log.exists() and log.read_text(), "the child never started"
    child = int(log.read_text())
    parent.send_signal(signal.SIGINT)
    _, err = parent.communicate(timeout=30)
    assert "Interrupted: SIGINT" in err
    # Both were stopped before the parent exited, not only once they noticed it left.
    for gone in (*running, child):
        assert not os.path.exists(f"/proc/{gone}")
