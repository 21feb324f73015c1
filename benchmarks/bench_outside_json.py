"""Peak memory of reading one report at the per-file limit, whatever its shape.

Each shape is a ``report.json`` as close to ``outside_json.MAX_BYTES`` as it fits, put in
an artifact zip and read by ``history.artifact_zip.reports_in_zip`` (inflate, parse, refuse
or build the report) in a fresh interpreter; the figure is that process's peak RSS
(``VmHWM``) less the peak of an interpreter that only imported the same modules. The
shapes are the worst cases per byte of text: whitespace (the issue's 511 MiB artifact);
empty objects, two-character strings, floats and integers, each with as many items as the
value and container limits let through (the most memory a document that is read can
take); and a real-looking report with as many tests as fit in the bytes, which the value
limit refuses before it is parsed.

    python benchmarks/bench_outside_json.py [--mib 64] [--repeat 3]
"""

from __future__ import annotations

import argparse
import io
import json
import random
import statistics
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

# VmHWM, not ru_maxrss: Linux carries ru_maxrss across exec, so a child of this (large)
# process would report this process's peak.
CHILD = """
import re, sys, time
from flakewarden.history.artifact_zip import reports_in_zip
data = open(sys.argv[1], "rb").read() if len(sys.argv) > 1 else b""
start = time.perf_counter()
found = reports_in_zip(data) if data else []
took = time.perf_counter() - start
why = found[0].error[:70] if found and found[0].error else ("read" if found else "")
status = open("/proc/self/status").read()
peak = int(re.search(r"VmHWM:\\s+(\\d+) kB", status).group(1)) / 1024
print(peak, took, why, sep="\\t")
"""


def _report_head() -> str:
    return '{"schema": 1, "tests": [], "command": ["pytest"], "rootdir": "/r", "pad": '


def _shape(name: str, size: int) -> bytes:
    """About ``size`` bytes of report.json of the given shape."""
    rng = random.Random(1)
    head = _report_head()
    if name == "whitespace":
        # Mixed whitespace: compresses under the zip-bomb ratio, as the artifact did.
        body = "".join(rng.choice(" \t\n\r") for _ in range(1 << 16))
        text = head + "0" + body * ((size - len(head)) // len(body)) + "}"
    elif name in ("empty-objects", "short-strings", "floats", "integers"):
        # Each item drawn, so the member compresses under the zip-bomb ratio.
        letters = "abcdefghijklmnopqrstuvwxyz"
        draw = {
            "empty-objects": lambda: rng.choice(("{}", "[]", "{} ", " []")),
            "short-strings": lambda: f'"{rng.choice(letters)}{rng.choice(letters)}"',
            "floats": lambda: f"0.{rng.randrange(10)}",
            "integers": lambda: str(rng.randrange(1000, 10**6)),
        }[name]
        # As many items as the bytes, the values and the containers allow: the largest
        # document of this shape that is read, not refused.
        from flakewarden.outside_json import MAX_CONTAINERS, MAX_VALUES

        items = [draw() for _ in range(1 << 12)]
        block = ",".join(items)
        most = (MAX_CONTAINERS if name == "empty-objects" else MAX_VALUES) - 100
        count = min((size - len(head)) // (len(block) + 1), most // len(items))
        text = head + "[" + ",".join([block] * count) + "]}"
    else:  # a report: tests with two attempts each, one in ten failing
        tests = []
        n = 0
        used = 0
        while used < size - 4096:
            failed = n % 10 == 0
            attempt = {"attempt": 1, "outcome": "failed" if failed else "passed", "duration": 0.01}
            if failed:
                attempt["longrepr"] = "E   assert x == y\n" * 20
            item = json.dumps(
                {
                    "id": f"tests/test_m{n // 100}.py::test_{n}",
                    "file": f"tests/test_m{n // 100}.py",
                    "line": n % 400,
                    "outcome": "flaky" if failed else "passed",
                    "attempts": [attempt, {**attempt, "attempt": 2, "outcome": "passed"}],
                }
            )
            tests.append(item)
            used += len(item) + 2
            n += 1
        text = '{"schema": 1, "command": ["pytest"], "rootdir": "/r", "tests": [' + ", ".join(tests)
        text += "]}"
    return text.encode()


def _zip(data: bytes) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("report.json", data)
    return buffer.getvalue()


def _measure(path: str) -> tuple[float, float, str]:
    done = subprocess.run(
        [sys.executable, "-c", CHILD, *([path] if path else [])],
        capture_output=True,
        text=True,
        check=True,
    )
    peak, took, why = done.stdout.rstrip("\n").split("\t")
    return float(peak), float(took), why


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mib", type=float, default=None, help="size (default: the limit)")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    from flakewarden.outside_json import MAX_BYTES

    size = int(args.mib * 1024 * 1024) if args.mib else MAX_BYTES - 1024
    shapes = ["whitespace", "empty-objects", "short-strings", "floats", "integers", "report"]
    print(f"report.json of {size / 2**20:.1f} MiB per shape; python {sys.version.split()[0]}")
    base = statistics.median(_measure("")[0] for _ in range(args.repeat))
    print(f"interpreter with the reader imported: {base:.1f} MiB peak RSS\n")
    print(
        f"{'shape':<15}{'zip MiB':>9}{'peak MiB':>10}{'over interp.':>14}{'x text':>8}"
        f"{'time s':>8}  outcome"
    )
    with tempfile.TemporaryDirectory() as folder:
        for shape in shapes:
            data = _shape(shape, size)
            path = Path(folder) / f"{shape}.zip"
            path.write_bytes(_zip(data))
            runs = [_measure(str(path)) for _ in range(args.repeat)]
            peak = statistics.median(r[0] for r in runs)
            took = statistics.median(r[1] for r in runs)
            over = peak - base
            print(
                f"{shape:<15}{path.stat().st_size / 2**20:>9.1f}{peak:>10.1f}{over:>14.1f}"
                f"{over / (len(data) / 2**20):>8.2f}{took:>8.2f}  {runs[0][2]}"
            )
    print(f"\nmedians of {args.repeat}; 'x text' is the peak over the interpreter per MiB of text")


if __name__ == "__main__":
    main()
