"""Fail-open worst case: how long an outage holds a job in GitHub bookkeeping, per fault kind.

For each fault the loopback GitHub emulator answers every request with it, and the real
commands run against it: ``flakewarden issues`` with 1 and 6 flaky tests (default deadline
60 s) and the reading of the quarantined set (15 s). A job's cost is the real time spent in
requests plus every wait the client planned; the waits are recorded instead of slept (the
client's clock moves by them), so the figure is the time a job would really lose, measured
in seconds without waiting through 900 s retry-afters. A hung API is waited for for real.

    python benchmarks/bench_fail_open.py [--kinds hang 5xx ...]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, Optional

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from helpers.github_emulator import (
    UNRESOLVABLE_URL,
    Fault,
    GitHubEmulator,
    closed_port_url,
    primary_rate_limit,
    secondary_rate_limit,
)
from helpers.github_fixtures import FakeClock, flaky, write_report

from flakewarden.cli import main
from flakewarden.errors import GitHubError
from flakewarden.github.api import GitHubClient
from flakewarden.quarantine.quarantined import fetch_quarantined_set

REPO = "octo-org/octo-repo"


def _faults(kind: str) -> tuple[list[Fault], Optional[str]]:
    """The emulator's faults for ``kind``, or the URL that stands for it."""
    if kind == "hang":
        return [Fault(hang=True, times=10_000)], None
    if kind == "5xx":
        return [Fault(503, times=10_000)], None
    if kind == "retry-after-900":
        return [secondary_rate_limit(retry_after=900, times=10_000)], None
    if kind == "403-primary":  # the hourly limit spent, reset in an hour
        return [primary_rate_limit(time.time() + 3600, times=10_000)], None
    if kind == "403-secondary":  # no retry-after: back off from a minute
        fault = secondary_rate_limit(times=10_000)
        fault.headers = {}
        return [fault], None
    if kind == "refused":
        return [], closed_port_url()
    if kind == "dns":
        return [], UNRESOLVABLE_URL
    raise ValueError(kind)


KINDS = ["hang", "5xx", "retry-after-900", "403-primary", "403-secondary", "refused", "dns"]


def measure(kind: str, job: Callable[[], Any]) -> tuple[float, int, int, str]:
    """Seconds a job would lose, requests sent, waits planned, and what it said."""
    faults, url = _faults(kind)
    clock = FakeClock()
    real = GitHubClient.from_env
    with GitHubEmulator(validate=False) as emu:
        emu.faults.extend(faults)
        env = {"GITHUB_API_URL": url or emu.url, "GITHUB_TOKEN": emu.token}
        env["GITHUB_REPOSITORY"] = REPO
        saved = {k: os.environ.get(k) for k in env}
        os.environ.update(env)
        GitHubClient.from_env = (  # type: ignore[method-assign]
            lambda token=None, env=None, **kw: real(
                token, env, **{**kw, "sleep": clock, "clock": clock.now}
            )
        )
        err = io.StringIO()
        start = time.monotonic()
        try:
            with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
                job()
        finally:
            elapsed = time.monotonic() - start
            GitHubClient.from_env = real  # type: ignore[method-assign]
            for key, value in saved.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value
        return elapsed + sum(clock.calls), len(emu.log), len(clock.calls), err.getvalue()


def issues_job(report: Path) -> Callable[[], Any]:
    def job() -> None:
        code = main(["issues", "--report-dir", str(report)])
        assert code == 0, code

    return job


def quarantine_job() -> None:
    try:
        fetch_quarantined_set(REPO)
    except GitHubError as exc:
        sys.stderr.write(f"warning: {exc}\n")


def main_() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kinds", nargs="*", default=KINDS, choices=KINDS)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-fail-open-"))
    reports = {
        n: write_report(work / f"rep{n}", [flaky(f"tests/t.py::test_{i}") for i in range(n)])
        for n in (1, 6)
    }
    print(f"{'fault':<16} {'job':<22} {'seconds':>8} {'requests':>9} {'waits':>6}  warnings")
    for kind in args.kinds:
        jobs: list[tuple[str, Callable[[], Any]]] = [
            ("issues, 1 flaky test", issues_job(reports[1])),
            ("issues, 6 flaky tests", issues_job(reports[6])),
            ("quarantined set", quarantine_job),
        ]
        for name, job in jobs:
            seconds, sent, waits, err = measure(kind, job)
            warnings = sum(1 for line in err.splitlines() if "warning" in line)
            print(f"{kind:<16} {name:<22} {seconds:8.1f} {sent:9d} {waits:6d}  {warnings}")
            sys.stdout.flush()


if __name__ == "__main__":
    main_()
