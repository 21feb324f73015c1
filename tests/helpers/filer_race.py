"""N real ``flakewarden issues`` processes filing one flake at the same moment.

Shared by the concurrency tests and ``benchmarks/bench_concurrent_filers.py``.
Every process lists the issues before any of them writes (a barrier in the
emulator holds each listing until all N have arrived): for a new flake each
opens its own issue and the duplicates must be reconciled, for an existing one
all N record on it at once. Writes are held back a random few milliseconds so
their order varies from trial to trial. Each process publishes the report of a
run of its own, as N shard or matrix jobs do; ``same_report`` has all of them
publish one report, as re-run jobs do, which must count once.
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

from flakewarden.issues.hit_ledger import Checkpoint, records_of
from flakewarden.issues.marker import read_marker
from flakewarden.issues.records import FlakeIssue

from .github_emulator import GitHubEmulator, LoggedRequest
from .github_fixtures import flaky, write_report

TEST_ID = "tests/test_race.py::test_shared_state"


@dataclasses.dataclass
class RaceOutcome:
    filers: int
    expected: int  # the hits there must be
    exit_codes: list[int]
    open_numbers: list[int]
    hits: int  # in the one open issue's marker (-1 when there is not exactly one)
    recounted: int  # from its records (-1 likewise)
    duplicates_of: list[Any]  # what each closed duplicate names as its winner
    claims: int  # closed duplicates whose comment says their hits were added
    requests: int
    stderr: list[str]

    @property
    def exact(self) -> bool:
        """One open issue whose records and marker both hold every hit, once."""
        return (
            self.exit_codes == [0] * self.filers
            and len(self.open_numbers) == 1
            and self.hits == self.recounted == self.expected
            and all(d == self.open_numbers[0] for d in self.duplicates_of)
        )


def race(
    tmp: Path,
    filers: int,
    seed: int,
    jitter: float = 0.03,
    pythonpath: Optional[str] = None,
    existing: bool = False,
    same_report: bool = False,
) -> RaceOutcome:
    """Run one trial and read back what the repository holds afterwards."""
    base = tmp / f"rep-{filers}-{seed}-{int(existing)}{int(same_report)}"
    reports = [
        write_report(base / f"job-{i}", [flaky(TEST_ID)], uid=f"s{seed}-job{i}")
        for i in range(1 if same_report else filers)
    ]
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
        env = {
            **{k: v for k, v in os.environ.items() if not k.startswith("GITHUB_")},
            "GITHUB_API_URL": emu.url,
            "GITHUB_TOKEN": emu.token,
            "GITHUB_REPOSITORY": emu.full_name,
            "GITHUB_RUN_ID": str(seed),
        }
        if pythonpath:
            env["PYTHONPATH"] = pythonpath
        before = 0
        if existing:  # an earlier run opened the issue
            earlier = write_report(base / "earlier", [flaky(TEST_ID)], uid=f"s{seed}-earlier")
            subprocess.run(_command(earlier), env=env, check=True, capture_output=True)
            before = 1
        logged = len(emu.log)
        emu.before = hold
        procs = [
            subprocess.Popen(
                _command(reports[i % len(reports)]),
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for i in range(filers)
        ]
        results = [p.communicate(timeout=300) for p in procs]
        emu.before = None
        expected = before + len(reports)
        return _outcome(
            emu,
            filers,
            expected,
            [p.returncode for p in procs],
            [e for _, e in results],
            len(emu.log) - logged,
        )


def _command(report: Path) -> list[str]:
    return [sys.executable, "-m", "flakewarden", "issues", "--report-dir", str(report)]


def recount(emu: GitHubEmulator, issue: dict[str, Any]) -> int:
    """The hits an issue's records hold, counted as flakewarden counts them."""
    marker = read_marker(issue["body"]) or {}
    flake = FlakeIssue.from_api(issue, marker)
    return Checkpoint.of(marker).hits(records_of(flake, emu.comments.get(issue["number"], [])))


def _outcome(
    emu: GitHubEmulator,
    filers: int,
    expected: int,
    codes: list[int],
    stderr: list[str],
    requests: int,
) -> RaceOutcome:
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
        expected=expected,
        exit_codes=codes,
        open_numbers=[i["number"] for i in open_issues],
        hits=int(marker["hits"]) if marker else -1,
        recounted=recount(emu, open_issues[0]) if len(open_issues) == 1 else -1,
        duplicates_of=[(read_marker(i["body"]) or {}).get("duplicate_of") for i in closed],
        claims=claims,
        requests=requests,
        stderr=stderr,
    )
