"""GitHub requests spent filing k flakes among 1,000 open flake issues, and on the digest.

Counts come from the loopback GitHub emulator the tests use (real HTTP, real client), so they
are exact and do not depend on the machine. The goal from the design: filing k flakes costs
10 list pages plus O(k) requests, whatever the flakes' hits (a flake with 1,000 recorded
hits reads its comments in full once, then only what came since its checkpoint); the digest
at most 12 reads (one of them the recently closed flakes, for unverified fixes) plus 1
write.

    python benchmarks/bench_github_requests.py [--open 1000] [--k 1 5 20]
"""

from __future__ import annotations

import argparse
import datetime as dt
import sys
import time
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from helpers.github_emulator import GitHubEmulator
from helpers.github_fixtures import FakeSleep, flaky

from flakewarden.github.api import GitHubClient
from flakewarden.issues.digest import ranking as digest
from flakewarden.issues.filing import file_flakes
from flakewarden.issues.hit_ledger import record_line
from flakewarden.issues.marker import format_marker
from flakewarden.issues.records import LABEL, RunContext

REPO = "octo-org/octo-repo"
# The emulator stamps writes with the real clock, so "now" is real too; the seeded issues
# were last touched ten days ago, as in a repository whose flakes are not all flaking today.
NOW = dt.datetime.now(dt.timezone.utc)
SEEDED_AT = time.time() - 10 * 86400
CTX = RunContext(REPO, "https://github.com", "1", "1", "0" * 40, "main")


def seeded(open_issues: int, closed: int = 0) -> GitHubEmulator:
    emu = GitHubEmulator(validate=False)
    emu.add_label(LABEL)
    emu.add_label(digest.LABEL)
    for n in range(open_issues + closed):
        tid = f"tests/test_{n}.py::test_it"
        marker = {
            "id": tid,
            "hits": n % 13 + 1,
            "first": "2024-05-01T00:00:00Z",
            "last": "2024-05-20T00:00:00Z",
        }
        state = "closed" if n >= open_issues else "open"
        emu.add_issue(f"flake: {tid}", format_marker(marker), (LABEL,), state, created_at=SEEDED_AT)
    return emu


def with_hits(emu: GitHubEmulator, test_id: str, hits: int) -> GitHubEmulator:
    """``emu`` with ``hits`` recorded recurrences of ``test_id``'s issue, over forty days.

    Its marker has no checkpoint yet, so the first filing counts every record (one full
    listing of its comments); the filings after it read only what came since.
    """
    (number,) = [n for n, i in emu.issues.items() if test_id in i["title"]]
    for k in range(hits):
        comment = emu.add_comment(number, f"Flaked again.\n\n{record_line({f'run-{k}': 1})}\n")
        moment = SEEDED_AT - 40 * 86400 + k * (40 * 86400 / hits)
        stamp = dt.datetime.fromtimestamp(moment, dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        comment["created_at"] = comment["updated_at"] = stamp
    marker = {"id": test_id, "hits": hits, "ledger": {"before": None, "count": 0, "edge": []}}
    emu.issues[number]["body"] = format_marker(marker)
    return emu


def measure(emu: GitHubEmulator, action: Callable[[GitHubClient], Any]) -> dict[str, float]:
    with emu:
        sleep = FakeSleep()
        client = GitHubClient(emu.token, api_url=emu.url, sleep=sleep)
        emu.log.clear()
        action(client)
        pages = [r for r in emu.log if r.method == "GET" and r.path.endswith("/issues")]
        return {
            "list pages": len(pages),
            "other reads": len([r for r in emu.log if r.method == "GET"]) - len(pages),
            "writes": len([r for r in emu.log if r.is_write]),
            "total": len(emu.log),
            "write spacing s": round(sum(sleep.calls), 1),
        }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--open", type=int, default=1000, help="open flaky-test issues in the repository"
    )
    parser.add_argument("--k", type=int, nargs="+", default=[1, 5, 20], help="flakes to file")
    args = parser.parse_args()
    n = args.open
    rows: list[tuple[str, dict[str, float]]] = []
    for k in args.k:
        new = [flaky(f"tests/new_{i}.py::test_new") for i in range(k)]
        rows.append(
            (
                f"file {k} new",
                measure(seeded(n), lambda c, t=new: file_flakes(c, REPO, t, CTX, NOW)),
            )
        )
        old = [flaky(f"tests/test_{i * 7}.py::test_it") for i in range(k)]
        rows.append(
            (
                f"file {k} recurring",
                measure(seeded(n), lambda c, t=old: file_flakes(c, REPO, t, CTX, NOW)),
            )
        )
        back = [flaky(f"tests/test_{n + i}.py::test_it") for i in range(k)]
        rows.append(
            (
                f"file {k} reopened",
                measure(seeded(n, closed=k), lambda c, t=back: file_flakes(c, REPO, t, CTX, NOW)),
            )
        )
    busy = with_hits(seeded(n), "tests/test_0.py::test_it", 1000)
    for label in ("1,000 hits, 1st", "1,000 hits, next"):
        test = [flaky("tests/test_0.py::test_it")]
        rows.append((label, measure(busy, lambda c, t=test: file_flakes(c, REPO, t, CTX, NOW))))
    first = seeded(n)
    rows.append(("digest, first run", measure(first, lambda c: digest.build_digest(c, REPO, NOW))))
    rows.append(("digest, next runs", measure(first, lambda c: digest.build_digest(c, REPO, NOW))))

    print(
        f"repository: {n:,} open flaky-test issues (100 per list page); "
        f"python {sys.version.split()[0]}"
    )
    print()
    columns = list(rows[0][1])
    print(f"{'scenario':<22}" + "".join(f"{c:>17}" for c in columns))
    print("-" * (22 + 17 * len(columns)))
    for name, figures in rows:
        print(f"{name:<22}" + "".join(f"{figures[c]:>17g}" for c in columns))
    return 0


if __name__ == "__main__":
    sys.exit(main())
