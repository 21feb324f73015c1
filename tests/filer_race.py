"""N real ``flakewarden issues`` processes filing one new flake at the same moment.

Shared by the concurrency tests and ``benchmarks/bench_concurrent_filers.py``.
Every process lists the issues before any of them creates one (a barrier in
the emulator holds each listing until all N have arrived), so each opens its
own issue and the duplicates must be reconciled; writes are held back a
random few milliseconds so their order varies from trial to trial.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import random
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Optional

from github_emulator import GitHubEmulator, LoggedRequest
from github_fixtures import flaky, write_report

from flakewarden.github.marker import read_marker

TEST_ID = "tests/test_race.py::test_shared_state"


@dataclasses.dataclass
class RaceOutcome:
    filers: int
    exit_codes: list[int]
    open_numbers: list[int]
    hits: int  # of the one open issue (-1 when there is not exactly one)
    merged: list[int]
    closed_duplicates: list[int]
    claims: int  # closed duplicates whose comment says their hits were added
    stderr: list[str]

    @property
    def exact(self) -> bool:
        """One open issue holding every filer's hit, each duplicate merged exactly once."""
        return (
            self.exit_codes == [0] * self.filers
            and len(self.open_numbers) == 1
            and self.hits == self.filers
            and sorted(self.merged) == sorted(self.closed_duplicates)
            and len(self.merged) == len(set(self.merged)) == self.filers - 1
        )


def race(
    tmp: Path,
    filers: int,
    seed: int,
    jitter: float = 0.03,
    pythonpath: Optional[str] = None,
) -> RaceOutcome:
    """Run one trial and read back what the repository holds afterwards."""
    report = write_report(tmp / f"rep-{filers}-{seed}", [flaky(TEST_ID)])
    rng = random.Random(seed)
    listed = threading.Barrier(filers, timeout=120)
    lock = threading.Lock()

    def hold(request: LoggedRequest) -> None:
        if request.method == "GET" and request.query.get("state") == ["all"]:
            with contextlib.suppress(threading.BrokenBarrierError):
                listed.wait()  # the first listing of every filer, before any creates
        elif request.is_write:
            with lock:
                pause = rng.uniform(0, jitter)
            time.sleep(pause)

    with GitHubEmulator(validate=False) as emu:
        emu.before = hold
        env = {
            **{k: v for k, v in os.environ.items() if not k.startswith("GITHUB_")},
            "GITHUB_API_URL": emu.url,
            "GITHUB_TOKEN": emu.token,
            "GITHUB_REPOSITORY": emu.full_name,
            "GITHUB_RUN_ID": str(seed),
        }
        if pythonpath:
            env["PYTHONPATH"] = pythonpath
        procs = [
            subprocess.Popen(
                [sys.executable, "-m", "flakewarden", "issues", "--report-dir", str(report)],
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for _ in range(filers)
        ]
        results = [p.communicate(timeout=300) for p in procs]
        emu.before = None
        return _outcome(emu, filers, [p.returncode for p in procs], [e for _, e in results])


def _outcome(emu: GitHubEmulator, filers: int, codes: list[int], stderr: list[str]) -> RaceOutcome:
    mine: list[dict[str, Any]] = [
        i for i in emu.issues.values() if (read_marker(i["body"]) or {}).get("id") == TEST_ID
    ]
    open_issues = [i for i in mine if i["state"] == "open"]
    closed = [i for i in mine if i["state"] == "closed"]
    marker = read_marker(open_issues[0]["body"]) if len(open_issues) == 1 else None
    claims = sum(
        1
        for i in closed
        if any("Hits were added there" in c["body"] for c in emu.comments.get(i["number"], []))
    )
    return RaceOutcome(
        filers=filers,
        exit_codes=codes,
        open_numbers=[i["number"] for i in open_issues],
        hits=int(marker["hits"]) if marker else -1,
        merged=list(marker.get("merged", [])) if marker else [],
        closed_duplicates=[i["number"] for i in closed],
        claims=claims,
        stderr=stderr,
    )
