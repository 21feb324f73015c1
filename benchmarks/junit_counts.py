"""What flakewarden makes of every JUnit XML file in a folder: counts per file, to compare
with other readers (junitparser's count of testcase rows is shown beside, when installed).

Run:  python benchmarks/junit_counts.py FOLDER [FOLDER ...]

One row per file (path relative to its folder): the tests flakewarden finds (a test listed
more than once, as gotestsum and pytest-rerunfailures write reruns, is one test), their
outcomes, and the attempts in all. A file flakewarden refuses gets one line saying why.
The last row adds up the files read.
"""

from __future__ import annotations

import collections
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "src"))

from flakewarden.errors import ReportError  # noqa: E402
from flakewarden.reports.junit_import import fold_cases, read_cases  # noqa: E402

COLUMNS = ("tests", "passed", "flaky", "failed", "error", "skipped", "attempts")


def junitparser_rows(path: Path) -> str:
    try:
        from junitparser import JUnitXml
    except ImportError:
        return "-"
    try:
        xml = JUnitXml.fromfile(str(path))
        suites = [xml] if xml._tag == "testsuite" else list(xml)
        return str(sum(1 for suite in suites for _ in suite))
    except Exception as exc:  # another reader's failure is a figure too
        return f"error ({type(exc).__name__})"


def counts(path: Path) -> dict[str, int]:
    grouped = read_cases([path], [])
    tests = [fold_cases(test, rows, frozenset()) for test, rows in grouped.items()]
    outcome = collections.Counter(t.outcome.value for t in tests)
    row = {"tests": len(tests), "attempts": sum(len(t.attempts) for t in tests)}
    row.update({key: outcome[key] for key in COLUMNS[1:-1]})
    row["skipped"] += outcome["quarantined"]
    return row


def main(folders: list[str]) -> int:
    if not folders:
        print(__doc__)
        return 2
    print(f"{'file':<52}" + "".join(f"{c:>9}" for c in COLUMNS) + f"{'junitparser rows':>18}")
    total: collections.Counter[str] = collections.Counter()
    for folder in map(Path, folders):
        for path in sorted(folder.rglob("*.xml")):
            name = path.relative_to(folder).as_posix()
            try:
                row = counts(path)
            except ReportError as exc:
                print(f"{name}: {str(exc).partition(': ')[2]}")
                continue
            total.update(row)
            cells = "".join(f"{row[c]:>9}" for c in COLUMNS)
            print(f"{name:<52}{cells}{junitparser_rows(path):>18}")
    print(f"{'(all files read)':<52}" + "".join(f"{total[c]:>9}" for c in COLUMNS))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
