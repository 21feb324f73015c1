"""The duty-cycle throttle on real processes: it stops and continues their groups.

The slowdown is the point of the knob, so one test measures it as a ratio of
the child's own wall-clock time to its CPU time, against a floor far below
what the duty cycle gives by construction (4x at a 25% run share): a loaded
machine only raises the ratio.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from flakewarden.runner.process import new_group
from flakewarden.stress.throttle import DutyThrottle, period_for, throttled

CPU_LOOP = """
import sys, time
wall, cpu = time.monotonic(), time.process_time()
n = 0
while time.process_time() - cpu < 0.3:
    n += 1
print(time.monotonic() - wall, time.process_time() - cpu)
"""


def _child(code: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, **new_group()
    )


def _state(pid: int) -> str:
    with open(f"/proc/{pid}/stat", encoding="ascii") as stream:
        return stream.read().rsplit(")", 1)[1].split()[0]


def test_a_throttled_process_runs_about_its_share_of_the_time() -> None:
    proc = _child(CPU_LOOP)
    with throttled(0.25, 0.02) as throttle:
        throttle.add(proc.pid)
        out, _ = proc.communicate(timeout=60)
        throttle.discard(proc.pid)
    wall, cpu = (float(v) for v in out.split())
    assert throttle.cycles > 0
    # 0.3 s of CPU at a 25% share takes ~1.2 s by the clock; alone it takes ~0.3 s.
    assert wall / cpu > 2.0, (wall, cpu)


def test_a_group_is_continued_when_discarded_and_when_the_throttle_ends() -> None:
    proc = _child("import time\nwhile True: time.sleep(0.001)\n")
    try:
        throttle = DutyThrottle(0.01, 0.1)  # stopped 99 ms of every 100 ms
        throttle.add(proc.pid)
        throttle.start()
        deadline = time.monotonic() + 10
        while _state(proc.pid) != "T" and time.monotonic() < deadline:
            time.sleep(0.005)
        assert _state(proc.pid) == "T"
        throttle.discard(proc.pid)
        assert _state(proc.pid) != "T"
        throttle.add(proc.pid)
        while _state(proc.pid) != "T" and time.monotonic() < deadline:
            time.sleep(0.005)
        assert _state(proc.pid) == "T"
        throttle.stop()
        assert _state(proc.pid) != "T"
    finally:
        proc.kill()
        proc.wait()


def test_a_gated_group_is_throttled_only_while_its_test_runs(tmp_path: Path) -> None:
    results = tmp_path / "results.jsonl"
    results.write_text('{"kind": "config"}\n', encoding="utf-8")
    proc = _child("import time\nwhile True: time.sleep(0.001)\n")
    try:
        with throttled(0.5, 0.004) as throttle:
            throttle.add(proc.pid, results)
            deadline = time.monotonic() + 10
            while throttle.cycles < 5 and time.monotonic() < deadline:
                time.sleep(0.005)
            assert throttle.cycles >= 5
            assert proc.pid in throttle._waiting and proc.pid not in throttle._groups
            with open(results, "a", encoding="utf-8") as stream:
                stream.write('{"kind": "start", "id": "t.py::t"}\n')
            while proc.pid not in throttle._groups and time.monotonic() < deadline:
                time.sleep(0.005)
            assert proc.pid in throttle._groups and proc.pid not in throttle._waiting
            # The session's end releases it: its exit is not what the knob is about.
            with open(results, "a", encoding="utf-8") as stream:
                stream.write('{"kind": "session", "exitstatus": 0}\n')
            while proc.pid in throttle._groups and time.monotonic() < deadline:
                time.sleep(0.005)
            assert proc.pid not in throttle._groups
            time.sleep(0.02)
            assert _state(proc.pid) != "T"
    finally:
        proc.kill()
        proc.wait()


def test_the_period_follows_a_short_test() -> None:
    assert period_for(1.0) == 0.02
    assert period_for(0.01) == 0.01
    assert period_for(0.0001) == 0.004
