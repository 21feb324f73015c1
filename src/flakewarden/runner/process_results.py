"""Reading what the plugin recorded in one process (a JSON-lines file).

The file is written inside the tested interpreter, where the code under test can write
anything to it, so it is read as outside JSON (``outside_json``): confined to its
directory, regular files only, each record within the depth, number and size limits,
and the file bounded. A record refused is counted and the first refusal said in one
line; every valid record beside it is kept.
"""

from __future__ import annotations

import contextlib
import gc
import itertools
import json
import os
import threading
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, NamedTuple, Optional

from flakewarden.outside_json import MAX_BYTES, Refused, open_confined, parse_json, read_bounded

if TYPE_CHECKING:
    from flakewarden.model import TestRecord

# xdist reports a test whose worker died as a failure in this made-up phase.
XDIST_CRASH_PHASE = "???"
#: The most bytes of one process's records read; the rest is refused in one line. A
#: passing test's records take about 300 bytes, a failure's text is clipped by the plugin.
MAX_RECORD_BYTES = 4 * MAX_BYTES
#: The longest record line: one record is one document, as a report is.
MAX_RECORD_LINE = MAX_BYTES


class Start(NamedTuple):
    """A test the plugin saw start (flushed before its body ran)."""

    id: str
    file: str
    line: Optional[int]
    time: float


class ProcessResults:
    """The plugin's records of one process, in the order they were written.

    (A plain class, made before the tests start: see ``loop_state``.)
    """

    def __init__(
        self,
        config: Optional[dict[str, Any]] = None,
        collected: Optional[list[str]] = None,  # the tests the session was to run, in order
        testscollected: int = 0,  # as pytest counted them, after deselection
    ) -> None:
        self.config = config
        self.tests: list[TestRecord] = []
        self.collect_errors: list[tuple[str, str]] = []
        self.exitstatus: Optional[int] = None  # None: the session never finished
        self.testscollected = testscollected
        self.corrupt_lines = 0
        self.refused: Optional[str] = None  # the first record (or byte past the limit) refused
        self.pytest_stats: Optional[dict[str, Any]] = None  # pytest's own counts (consistency)
        self.collected = collected
        # With FLAKEWARDEN_RECORD_FIXTURES=1 (burn-in): per collected node id, the fixtures
        # it uses and its (file, line) as pytest's ``item.location``; None when not recorded.
        self.collected_fixtures: Optional[dict[str, list[str]]] = None
        self.collected_locations: Optional[dict[str, tuple[str, Optional[int]]]] = None
        # The test modules collected (rootdir-relative), selected or not: what the session
        # imported. From the plugin's collect reports, else (an xdist controller sees none)
        # the files of the collected ids; None when no ``collected`` record was read.
        self.collected_files: Optional[list[str]] = None
        self.running: list[Start] = []  # started, never finished

    @property
    def started(self) -> bool:
        """True when pytest got as far as loading the plugin."""
        return self.config is not None

    @property
    def rootdir(self) -> Optional[str]:
        return None if self.config is None else str(self.config.get("rootdir"))

    @property
    def order(self) -> list[str]:
        seen: dict[str, None] = {}
        for record in self.tests:
            seen.setdefault(record.id, None)
        return list(seen)

    def by_id(self) -> dict[str, list[TestRecord]]:
        grouped: dict[str, list[TestRecord]] = {}
        for record in self.tests:
            grouped.setdefault(record.id, []).append(record)
        return grouped


def read_results(path: Path) -> ProcessResults:
    """Read a results file; a missing file means pytest never loaded the plugin.

    A line cut short (the process was killed mid-write) is counted, not fatal.
    """
    return RecordReader(path).finish()


#: Called with the results so far and the test records just added to them.
OnRecords = Callable[[ProcessResults, Sequence["TestRecord"]], None]


class RecordFollower:
    """Reads one process's records in a thread while it runs; ``stop`` returns them all.

    The tests' process writes its records as they run; reading them meanwhile (on a
    core pytest does not use) leaves only the last few to read once it exits, instead
    of the whole file. ``on_records`` gets each batch of test records as it is read,
    in that thread (the last ones in the caller's, from ``stop``). A follower that
    failed, or a file deleted meanwhile, falls back to reading the file once at the
    end, as if nothing had been read before; the results it returns are then new
    objects, which is how counts kept by ``on_records`` can tell.
    """

    INTERVAL = 0.05  # seconds between reads

    def __init__(self, path: Path, on_records: Optional[OnRecords] = None) -> None:
        self._reader = RecordReader(path, on_records)
        self._stop = threading.Event()
        self._failed = False
        self._thread = threading.Thread(target=self._follow, name="flakewarden-records")
        self._thread.daemon = True
        self._thread.start()

    def _follow(self) -> None:
        try:
            while not self._stop.wait(self.INTERVAL):
                self._reader.read_available()
        except Exception:  # read again at the end, where an error is reported
            self._failed = True

    def stop(self) -> ProcessResults:
        self._stop.set()
        self._thread.join()
        path = self._reader.path
        if not self._failed and path.exists():
            with contextlib.suppress(Exception):  # an error resurfaces in the reading below
                return self._reader.finish()
        return read_results(path)


class RecordReader:
    """Reads a results file as it grows, so a run can read records while its tests run.

    The plugin only appends whole lines, so everything up to the last line break is
    read as it arrives and the rest waits for more; ``finish`` reads what is left,
    including a last line cut short. Reading in pieces gives exactly what reading the
    whole file at the end gives.
    """

    def __init__(self, path: Path, on_records: Optional[OnRecords] = None) -> None:
        self.path = path
        self.results = ProcessResults()
        self._on_records = on_records
        self._running: dict[str, Start] = {}
        self._offset = 0
        self._pending = b""
        self._skipping = False  # inside a line past MAX_RECORD_LINE, dropped to its end
        self._full = False  # MAX_RECORD_BYTES read: nothing more is

    def read_available(self) -> None:
        """Take in every whole line written since the last call."""
        if self._full:
            return
        room = MAX_RECORD_BYTES - self._offset
        try:
            handle = open_confined(self.path)
        except FileNotFoundError:
            return
        except Refused as exc:  # a link, a FIFO: nothing the plugin writes
            self._full = True
            self._refuse(str(exc))  # says "refused" itself
            return
        try:
            os.lseek(handle, self._offset, os.SEEK_SET)
            data = bytes(read_bounded(handle, self.path, room))
        finally:
            os.close(handle)
        if len(data) > room:
            data = data[:room]
            self._full = True
            self._refuse(
                f"{self.path} holds more than {MAX_RECORD_BYTES:,} bytes: the rest was refused"
            )
        self._offset += len(data)
        data = self._pending + data
        if self._skipping:
            end = data.find(b"\n")
            self._skipping = end < 0
            data = b"" if end < 0 else data[end + 1 :]
        cut = data.rfind(b"\n") + 1
        self._pending = data[cut:]
        if len(self._pending) > MAX_RECORD_LINE:
            self._pending, self._skipping = b"", True
            self.results.corrupt_lines += 1
            self._refuse(f"a record in {self.path} of over {MAX_RECORD_LINE:,} bytes was refused")
        if cut:
            self._take(data[:cut])

    def _refuse(self, line: str) -> None:
        if self.results.refused is None:
            self.results.refused = line

    def finish(self) -> ProcessResults:
        """Everything the file holds, read to its end."""
        self.read_available()
        if self._pending:
            self._take(self._pending)
            self._pending = b""
        self.results.running = list(self._running.values())
        return self.results

    def _take(self, data: bytes) -> None:
        # Split at line feeds only: U+2028 and friends are line breaks to splitlines,
        # and the plugin writes them unescaped inside strings.
        # The records' types are imported with the first records, not before the tests.
        from flakewarden.model import TestRecord

        lines = data.decode("utf-8", errors="replace").split("\n")
        results, running = self.results, self._running
        before = len(results.tests)
        with gc_paused():
            for data_ in _decode(lines, results, str(self.path)):
                _add(data_, results, running, TestRecord.from_json)
            if self._on_records is not None and len(results.tests) > before:
                self._on_records(results, results.tests[before:])


def _add(
    data: Any,
    results: ProcessResults,
    running: dict[str, Start],
    test_record: Callable[[dict[str, Any]], TestRecord],
) -> None:
    """One decoded record into ``results``; a record of the wrong shape is counted."""
    try:
        kind = data["kind"]
        if kind == "start":
            start = _start(data)
            running.pop(start.id, None)  # keep them in the order they started
            running[start.id] = start
        elif kind == "test":
            record = _worker_crash(test_record(data))
            if not record.unfinished:
                # A test the session wrote as unfinished (it ended mid-test) is still
                # the one that was running, should the process turn out stopped.
                running.pop(record.id, None)
            results.tests.append(record)
        elif kind == "config":
            results.config = data
        elif kind == "collected":
            results.collected = [str(i) for i in data["ids"]]
            _collected_details(results, data)
        elif kind == "collect_error":
            results.collect_errors.append((str(data["id"]), str(data["longrepr"])))
        elif kind == "pytest_stats":
            results.pytest_stats = data
        elif kind == "session":
            results.exitstatus = int(data["exitstatus"])
            results.testscollected = int(data.get("testscollected") or 0)
    except (ValueError, KeyError, TypeError):
        results.corrupt_lines += 1


def _collected_details(results: ProcessResults, data: dict[str, Any]) -> None:
    """The ``collected`` record's files, fixtures and locations, when the plugin recorded them."""
    files = data.get("files")
    if not isinstance(files, list):
        files = [str(i).split("::", 1)[0] for i in data["ids"]]
    results.collected_files = list(dict.fromkeys(str(f) for f in files))
    fixtures = data.get("fixtures")
    if isinstance(fixtures, dict):
        results.collected_fixtures = {
            str(node): [str(name) for name in names]
            for node, names in fixtures.items()
            if isinstance(names, list)
        }
    locations = data.get("locations")
    if isinstance(locations, dict):
        found: dict[str, tuple[str, Optional[int]]] = {}
        for node, where in locations.items():
            if isinstance(where, list) and len(where) == 2 and isinstance(where[0], str):
                line = where[1]
                ok = isinstance(line, int) and not isinstance(line, bool) and line >= 0
                found[str(node)] = (where[0], line if ok else None)
        results.collected_locations = found


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """No cyclic garbage collection while records are read or folded.

    Both build tens of thousands of small objects without cycles, and each burst of
    allocations would start collections that walk every live object; reference counting
    frees them all the same. Pausing cut reading and folding 2,000 records by ~20%.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


#: Lines decoded per ``json.loads`` call: one call per batch instead of one per line.
BATCH_LINES = 512


def _decode(lines: Iterable[str], results: ProcessResults, where: str) -> Iterator[Any]:
    """Every non-blank line's JSON value, in order; undecodable lines are counted, and
    the first that is well-formed but out of the limits is named in ``results.refused``.

    A batch of lines joined into one JSON array decodes in a fraction of the time of a
    call per line. A batch holding a line that is not one whole object (cut short,
    corrupt, parsing into another number of values, or refused) is decoded again line
    by line.
    """
    batch: list[str] = []
    whole = True  # every line of the batch is one object: starts with { and ends with }
    for line in itertools.chain(lines, [""]):
        line = line.strip()
        if line:
            batch.append(line)
            whole = whole and line[0] == "{" and line[-1] == "}" and len(line) <= MAX_RECORD_LINE
            if len(batch) < BATCH_LINES:
                continue
        elif not batch:
            continue
        values = None
        if whole:
            with contextlib.suppress(ValueError):
                values = parse_json("[" + ",".join(batch) + "]", where)
        if isinstance(values, list) and len(values) == len(batch):
            yield from values
        else:
            for one in batch:
                if len(one) > MAX_RECORD_LINE:
                    results.corrupt_lines += 1
                    if results.refused is None:
                        results.refused = (
                            f"a record in {where} of over {MAX_RECORD_LINE:,} bytes was refused"
                        )
                    continue
                try:
                    value = parse_json(one, where)
                except ValueError as exc:
                    results.corrupt_lines += 1
                    if results.refused is None and _well_formed(one):
                        results.refused = f"{exc}; the record was refused"
                    continue
                yield value
        batch, whole = [], True


def _well_formed(line: str) -> bool:
    """Whether Python's own reader takes ``line`` (or gives up on its nesting): a refusal of
    the limits, not a line cut short by a process killed mid-write (common, and said
    elsewhere)."""
    try:
        json.loads(line)
    except RecursionError:
        return True
    except ValueError:
        return False
    return True


def _start(data: dict[str, Any]) -> Start:
    line = data.get("line")
    return Start(
        id=str(data["id"]),
        file=str(data.get("file") or ""),
        line=int(line) if line is not None else None,
        time=float(data.get("time") or 0.0),
    )


def _worker_crash(record: TestRecord) -> TestRecord:
    """An xdist worker that died mid-test: pytest names the test; that is a ``crashed`` run."""
    for phase in record.phases:
        if phase.when == XDIST_CRASH_PHASE and phase.outcome == "failed":
            lines = [line.strip() for line in phase.longrepr.splitlines() if line.strip()]
            named = [line for line in lines if "crashed while running" in line]
            record.crash = (named or lines or ["the xdist worker running this test crashed"])[0]
    return record
