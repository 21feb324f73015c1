"""Cost per test of the injected plugin's records, measured in-process.

Run:  python benchmarks/bench_plugin_records.py [--tests 2000] [--repeats 30] [--plugin PATH]
                                                [--reader PATH]

The plugin's own hooks are driven as pytest drives them for a passing test (a start
record where the plugin writes one, three phase reports, the finished record), into a
real file in a temporary directory, ``--tests`` times per repeat; ``os.write`` is counted
to show how many system calls reach the OS per test. ``--plugin`` measures another copy
of the plugin, e.g. an older one:
``git show f984d73:src/flakewarden/pytest_plugin.py > /tmp/old_plugin.py``. A whole run
(``bench_run_overhead.py``) is dominated by pytest and by machine noise; this isolates
what the records cost.

The file written is then read back by the run's reader (``runner/process_results.py``),
in interleaved pairs with ``--reader``, another copy of it, e.g. the one before records
were read through ``outside_json``:
``git show 5fc36f6:src/flakewarden/runner/process_results.py > /tmp/old_reader.py``.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Any

DEFAULT_PLUGIN = (
    Path(__file__).resolve().parent.parent / "src/flakewarden/inside/plugin/recorder.py"
)
DEFAULT_READER = (
    Path(__file__).resolve().parent.parent / "src/flakewarden/runner/process_results.py"
)


def load(path: Path, name: str = "measured_plugin") -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _report(nodeid: str, when: str, location: tuple[str, int, str]) -> Any:
    return SimpleNamespace(
        nodeid=nodeid,
        when=when,
        outcome="passed",
        duration=0.0001,
        failed=False,
        skipped=False,
        longrepr=None,
        location=location,
    )


def one_repeat(plugin: ModuleType, tests: int, directory: Path) -> tuple[float, int]:
    """Seconds per test, and ``os.write`` calls in all."""
    path = directory / "results.jsonl"
    path.unlink(missing_ok=True)
    recorder = plugin.Recorder(str(path))
    has_start = hasattr(recorder, "start")
    calls = 0
    real_write = os.write

    def counting_write(fd: int, data: bytes) -> int:
        nonlocal calls
        calls += 1
        return real_write(fd, data)

    os.write = counting_write  # type: ignore[assignment]
    try:
        started = time.perf_counter()
        for i in range(tests):
            nodeid = f"tests/test_mod{i % 40:03d}.py::test_{i}"
            location = (f"tests/test_mod{i % 40:03d}.py", i, f"test_{i}")
            if has_start:
                recorder.start(nodeid, location)
            for when in ("setup", "call", "teardown"):
                recorder.add_report(_report(nodeid, when, location))
            recorder.finish(nodeid, location)
        recorder.close()  # what is still buffered reaches the file too
        elapsed = time.perf_counter() - started
    finally:
        os.write = real_write  # type: ignore[assignment]
    return elapsed / tests, calls


def read_pairs(
    readers: list[ModuleType], path: Path, tests: int, repeats: int
) -> list[list[float]]:
    """Seconds per test to read ``path`` with each reader, alternated ``repeats`` times."""
    times: list[list[float]] = [[] for _ in readers]
    for reader in readers:  # warm-up: the model's modules imported once
        assert len(reader.read_results(path).tests) == tests
    for repeat in range(repeats):
        order = list(enumerate(readers))
        for index, reader in order if repeat % 2 == 0 else order[::-1]:
            started = time.perf_counter()
            reader.read_results(path)
            times[index].append((time.perf_counter() - started) / tests)
    return times


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tests", type=int, default=2000, help="tests recorded per repeat")
    parser.add_argument("--repeats", type=int, default=30, help="repeats; the median is shown")
    parser.add_argument("--plugin", type=Path, default=DEFAULT_PLUGIN, help="plugin to measure")
    parser.add_argument("--reader", type=Path, help="another process_results.py to compare")
    options = parser.parse_args()
    plugin = load(options.plugin)
    times = []
    calls = 0
    with tempfile.TemporaryDirectory(prefix="flakewarden-bench-records-") as work:
        one_repeat(plugin, options.tests, Path(work))  # warm-up
        for _ in range(options.repeats):
            per_test, calls = one_repeat(plugin, options.tests, Path(work))
            times.append(per_test)
        readers = [load(DEFAULT_READER, "measured_reader")]
        if options.reader:
            readers.append(load(options.reader, "baseline_reader"))
        read = read_pairs(readers, Path(work) / "results.jsonl", options.tests, options.repeats)
    print(f"plugin: {options.plugin}")
    print(
        f"per test: median {statistics.median(times) * 1e6:.1f} us, "
        f"min {min(times) * 1e6:.1f} us over {options.repeats} repeats of {options.tests} tests"
    )
    # A buffered file object writes through FileIO, which this does not count.
    print(f"os.write calls per test: {calls / options.tests:.3f}")
    names = ["reader", f"baseline reader {options.reader}"]
    for name, seconds in zip(names, read):
        print(
            f"{name}: per test median {statistics.median(seconds) * 1e6:.2f} us, "
            f"min {min(seconds) * 1e6:.2f} us"
        )
    if options.reader:
        ratios = [new / old for new, old in zip(read[0], read[1])]
        print(
            f"reader / baseline: median of {len(ratios)} interleaved pairs "
            f"{statistics.median(ratios):.3f}x"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
