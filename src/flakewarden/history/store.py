"""``HistoryStore``: the SQLite file every ingested run is kept in, and the queries on it.

One file, the standard library's ``sqlite3``, no server: the digest workflow keeps it
in the Actions cache, and a lost cache is rebuilt from the retained artifacts. A file
that is not ours, is corrupt, or was written by a newer flakewarden is refused with one
line and never written to.
"""

from __future__ import annotations

import datetime
import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, Optional, Union

from flakewarden.errors import HistoryError, ReportError
from flakewarden.history import schema
from flakewarden.history.failures import write_failures
from flakewarden.history.rows import (
    RUN_COLUMNS,
    Decoded,
    chunks,
    encode_tests,
    history_run,
    marks,
    report_context,
    since_text,
)
from flakewarden.model import (
    HistoryEntry,
    HistoryRun,
    RunReport,
    run_key,
)

_SQLITE_HEADER = b"SQLite format 3\x00"
_PULL_REQUEST = "(pr_number IS NOT NULL OR event IN ('pull_request', 'pull_request_target'))"


def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


class HistoryStore:
    """An open history database. Use ``HistoryStore.open(path)``; close it (or use ``with``)."""

    def __init__(self, connection: sqlite3.Connection, path: Path) -> None:
        self._db = connection
        self.path = path
        self._test_ids: Optional[dict[str, int]] = None
        self._test_names: Optional[dict[int, str]] = None

    # -- opening -------------------------------------------------------------------

    @classmethod
    def open(cls, path: Union[str, Path], *, create: bool = True) -> HistoryStore:
        """Open ``path``, creating the database when the file is absent or empty.

        ``HistoryError`` (exit code 4) when it is not a SQLite file, is another
        application's database, is corrupt, or has a schema newer than this version;
        and, with ``create=False`` (a reader), when there is no file.
        """
        path = Path(path)
        try:
            with path.open("rb") as stream:
                header = stream.read(len(_SQLITE_HEADER))
        except FileNotFoundError:
            if not create:
                raise HistoryError(
                    f"no history at {path}: run flakewarden history ingest first, or pass its --db"
                ) from None
            header = b""
        except OSError as exc:
            raise HistoryError(f"cannot read the history database {path}: {exc.strerror}") from None
        if header and header != _SQLITE_HEADER:
            raise HistoryError(
                f"{path} is not a flakewarden history database (not a SQLite file); "
                "it was left untouched: pass another --db"
            )
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            connection = sqlite3.connect(str(path), isolation_level=None)
        except (OSError, sqlite3.Error) as exc:
            raise HistoryError(f"cannot open the history database {path}: {exc}") from None
        store = cls(connection, path)
        try:
            store._prepare()
        except sqlite3.DatabaseError as exc:
            connection.close()
            raise HistoryError(
                f"{path} is corrupt or not a history database ({exc}); it was left untouched: "
                "move it away to rebuild the history from the artifacts"
            ) from None
        except HistoryError:
            connection.close()
            raise
        return store

    def _prepare(self) -> None:
        db = self._db
        application = db.execute("PRAGMA application_id").fetchone()[0]
        version = db.execute("PRAGMA user_version").fetchone()[0]
        tables = db.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]
        if application == 0 and version == 0 and tables == 0:
            self._create()
        elif application != schema.APPLICATION_ID:
            raise HistoryError(
                f"{self.path} is a SQLite database of another application, not a flakewarden "
                "history; it was left untouched: pass another --db"
            )
        elif version > schema.SCHEMA_VERSION:
            raise HistoryError(
                f"{self.path} has history schema {version}, newer than {schema.SCHEMA_VERSION} "
                "that this flakewarden reads: upgrade flakewarden (the file was left untouched)"
            )
        elif version < schema.SCHEMA_VERSION:
            self._migrate(version)
        db.execute("PRAGMA journal_mode = WAL")
        db.execute("PRAGMA synchronous = NORMAL")
        db.execute("PRAGMA foreign_keys = ON")

    def _create(self) -> None:
        db = self._db
        db.execute("BEGIN IMMEDIATE")
        try:
            scripts = [schema.SCHEMA_V1, *(schema.MIGRATIONS[v] for v in sorted(schema.MIGRATIONS))]
            for statement in ";".join(scripts).split(";"):
                if statement.strip():
                    db.execute(statement)
            db.execute(f"PRAGMA application_id = {schema.APPLICATION_ID}")
            db.execute(f"PRAGMA user_version = {schema.SCHEMA_VERSION}")
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise

    def _migrate(self, version: int) -> None:
        db = self._db
        db.execute("BEGIN IMMEDIATE")
        try:
            while version < schema.SCHEMA_VERSION:
                if version not in schema.MIGRATIONS:
                    raise HistoryError(
                        f"{self.path} has history schema {version}, which this flakewarden "
                        "cannot migrate; it was left untouched"
                    )
                for statement in schema.MIGRATIONS[version].split(";"):
                    if statement.strip():
                        db.execute(statement)
                version += 1
                db.execute(f"PRAGMA user_version = {version}")
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> HistoryStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- writing -------------------------------------------------------------------

    def ingest(self, report: RunReport, source: str, claimed: str = "") -> bool:
        """Add one run; False (and nothing changed) when its run attempt/job is already in.

        ``claimed``: what the report said of its own run where the run it was downloaded
        from says otherwise (``history.claims``), kept as detail only.

        ``ReportError`` (nothing changed) when the report holds a value SQLite cannot keep.
        """
        try:
            return self._ingest(report, source, claimed)
        except OverflowError as exc:
            raise ReportError(
                f"{source} holds a number the history cannot keep ({exc}): refused"
            ) from None
        except sqlite3.DatabaseError as exc:
            raise HistoryError(f"cannot write to the history database {self.path}: {exc}") from None

    def _ingest(self, report: RunReport, source: str, claimed: str) -> bool:
        db = self._db
        context = report_context(report)
        key = run_key(context, report.command, report.rootdir)
        if db.execute("SELECT 1 FROM runs WHERE run_key = ?", (key,)).fetchone():
            return False  # the common case of a re-ingest costs one lookup
        encoded = encode_tests(report.tests)
        db.execute("BEGIN IMMEDIATE")
        try:
            cursor = db.execute(
                f"INSERT OR IGNORE INTO runs ({RUN_COLUMNS}) VALUES ({', '.join('?' * 25)})",
                (
                    key,
                    context.repository,
                    context.workflow,
                    context.run_id,
                    context.run_attempt,
                    context.job,
                    context.job_name,
                    context.event,
                    context.branch,
                    context.base_branch,
                    context.pr_number,
                    context.commit,
                    context.started_at or report.started_at,
                    context.os,
                    context.python,
                    context.flakewarden_version or report.version,
                    len(report.tests),
                    encoded.first_attempt_failures,
                    encoded.hard_failures,
                    encoded.flaky,
                    int(report.cutoff),
                    int(report.interrupted),
                    source,
                    _now(),
                    claimed,
                ),
            )
            if cursor.rowcount == 0:  # another process added it since the lookup
                db.execute("ROLLBACK")
                return False
            run = cursor.lastrowid
            ids = self._ids_for([test.id for test in report.tests])
            rows = sorted(
                [
                    (run, ids[test.id], outcome, word, duration)
                    for test, outcome, word, duration in zip(
                        report.tests, encoded.outcomes, encoded.words, encoded.durations_ms
                    )
                ]
            )
            db.executemany("INSERT OR IGNORE INTO entries VALUES (?, ?, ?, ?, ?)", rows)
            write_failures(db, run, ids, report)
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            self._test_ids = self._test_names = None  # may hold ids rolled back
            raise
        return True

    def _ids_for(self, test_ids: list[str]) -> dict[str, int]:
        """Every test's integer id, adding the tests never seen before (inside the caller's
        transaction)."""
        known = self._known_ids()
        new = list(dict.fromkeys(name for name in test_ids if name not in known))
        if new:
            self._db.executemany(
                "INSERT OR IGNORE INTO tests (test_id) VALUES (?)", [(n,) for n in new]
            )
            for chunk in chunks(new):
                query = f"SELECT test_id, id FROM tests WHERE test_id IN ({marks(chunk)})"
                for name, number in self._db.execute(query, chunk):
                    known[name] = number
                    if self._test_names is not None:
                        self._test_names[number] = name
        return known

    def _known_ids(self) -> dict[str, int]:
        if self._test_ids is None:
            self._test_ids = dict(self._db.execute("SELECT test_id, id FROM tests"))
        return self._test_ids

    def mark_github_run(
        self,
        repository: str,
        workflow: str,
        branch: str,
        run_id: int,
        run_attempt: int,
        result: str,
    ) -> None:
        """Remember a GitHub workflow run was looked at (ingested, expired, no report, ...),
        so an incremental ingest never downloads it again."""
        try:
            self._db.execute(
                "INSERT OR REPLACE INTO github_runs VALUES (?, ?, ?, ?, ?, ?, ?)",
                (repository, workflow, branch, run_id, run_attempt, result, _now()),
            )
        except sqlite3.DatabaseError as exc:
            raise HistoryError(f"cannot write to the history database {self.path}: {exc}") from None

    def artifact_tries(self, repository: str, artifact_id: int) -> int:
        """How many ingests already failed to download that artifact (0: none)."""
        rows = self._read(
            "SELECT tries FROM github_artifacts WHERE repository = ? AND artifact_id = ?",
            [repository, artifact_id],
        )
        return int(rows[0][0]) if rows else 0

    def record_artifact(
        self,
        repository: str,
        artifact_id: int,
        run_id: int,
        run_attempt: int,
        name: str,
        result: str,
        why: str,
    ) -> int:
        """Record one artifact skipped (``result`` ``skipped``) or whose download failed
        (``failed``), with why; the number of tries it has now had."""
        tries = self.artifact_tries(repository, artifact_id) + 1
        try:
            self._db.execute(
                "INSERT OR REPLACE INTO github_artifacts VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    repository,
                    artifact_id,
                    run_id,
                    run_attempt,
                    name,
                    result,
                    why[:2000],
                    tries,
                    _now(),
                ),
            )
        except sqlite3.DatabaseError as exc:
            raise HistoryError(f"cannot write to the history database {self.path}: {exc}") from None
        return tries

    def forget_artifact(self, repository: str, artifact_id: int) -> None:
        """Drop an artifact's failed tries once it was downloaded."""
        try:
            self._db.execute(
                "DELETE FROM github_artifacts WHERE repository = ? AND artifact_id = ?",
                (repository, artifact_id),
            )
        except sqlite3.DatabaseError as exc:
            raise HistoryError(f"cannot write to the history database {self.path}: {exc}") from None

    def skipped_artifacts(self, repository: str) -> list[tuple[int, int, str, str, str]]:
        """The artifacts recorded for ``repository``: (run id, artifact id, name, result, why)."""
        return [
            (int(run), int(artifact), name, result, why)
            for run, artifact, name, result, why in self._read(
                "SELECT run_id, artifact_id, name, result, why FROM github_artifacts"
                " WHERE repository = ? ORDER BY run_id, artifact_id",
                [repository],
            )
        ]

    # -- reading -------------------------------------------------------------------

    def runs(
        self,
        *,
        branch: Optional[str] = None,
        events: Optional[Sequence[str]] = None,
        since: Union[str, datetime.datetime, None] = None,
        limit: Optional[int] = None,
        pull_requests: Optional[bool] = None,
    ) -> list[HistoryRun]:
        """The ingested runs, newest first (by start time), filtered as asked.

        ``pull_requests`` False keeps only runs that were not for a pull request (a
        pull request's ``branch`` is its head branch, which may share the default
        branch's name), True only those that were.
        """
        where: list[str] = []
        params: list[Any] = []
        if pull_requests is not None:
            where.append(_PULL_REQUEST if pull_requests else f"NOT {_PULL_REQUEST}")
        if branch is not None:
            where.append("branch = ?")
            params.append(branch)
        if events is not None:
            events = list(events)
            if not events:
                return []
            where.append(f"event IN ({marks(events)})")
            params.extend(events)
        start = since_text(since)
        if start is not None:
            where.append("started_at >= ?")
            params.append(start)
        query = f"SELECT {RUN_COLUMNS} FROM runs"
        if where:
            query += " WHERE " + " AND ".join(where)
        query += " ORDER BY started_at DESC, id DESC"
        if limit is not None:
            query += " LIMIT ?"
            params.append(max(0, int(limit)))
        return [history_run(row) for row in self._read(query, params)]

    def entries(self, run_keys: Iterable[str]) -> Iterator[HistoryEntry]:
        """Every test's entry in each of the given runs, run by run in the order given."""
        keys = list(dict.fromkeys(run_keys))
        numbers: dict[str, int] = {}
        for chunk in chunks(keys):
            query = f"SELECT run_key, id FROM runs WHERE run_key IN ({marks(chunk)})"
            numbers.update(self._read(query, chunk))
        names = self._names()
        outcomes = schema.OUTCOMES_BY_CODE
        decoded = Decoded()
        for key in keys:
            if key not in numbers:
                continue
            rows = self._read(
                "SELECT test, outcome, attempts, duration_ms FROM entries WHERE run = ?",
                [numbers[key]],
            )
            for test, outcome, word, duration in rows:
                first_failed, attempts, failures = decoded[word]
                yield HistoryEntry(
                    names[test],
                    key,
                    outcomes[outcome],
                    first_failed,
                    attempts,
                    failures,
                    duration / 1000,
                    word,
                )

    def last_github_run_id(
        self, repository: str, workflow: str, branch: Optional[str] = None
    ) -> Optional[int]:
        """The newest GitHub run id ``ingest --from-github`` looked at with this workflow
        filter (and branch filter, when given; "" for none): it asks only for newer runs."""
        query = "SELECT max(run_id) FROM github_runs WHERE repository = ? AND workflow = ?"
        params: list[Any] = [repository, workflow]
        if branch is not None:
            query += " AND branch = ?"
            params.append(branch)
        value = self._read(query, params)[0][0]
        return None if value is None else int(value)

    def github_run_seen(self, repository: str, workflow: str, run_id: int, attempt: int) -> bool:
        """True when the ingest already looked at that run attempt (whatever it held).

        Only the ingest's own record counts, never a stored report's context: a pull
        request's artifact may claim any run's identity, and must not keep that run out. A
        run whose reports are already in (ingested from a directory) is downloaded again
        once, and its reports are known by their run keys.
        """
        rows = self._read(
            "SELECT 1 FROM github_runs WHERE repository = ? AND workflow = ? AND run_id = ?"
            " AND run_attempt = ? LIMIT 1",
            [repository, workflow, run_id, attempt],
        )
        return bool(rows)

    def counts(self) -> tuple[int, int, int]:
        """How many runs, tests and entries the database holds."""
        return (
            self._read("SELECT count(*) FROM runs", [])[0][0],
            self._read("SELECT count(*) FROM tests", [])[0][0],
            self._read("SELECT count(*) FROM entries", [])[0][0],
        )

    def _names(self) -> dict[int, str]:
        if self._test_names is None:
            self._test_names = {n: name for name, n in self._known_ids().items()}
        return self._test_names

    def read(self, query: str, params: Sequence[Any] = ()) -> list[Any]:
        """The rows of a read-only query: for the history's own modules (the scores' tally)."""
        return self._read(query, params)

    def _read(self, query: str, params: Sequence[Any]) -> list[Any]:
        try:
            return self._db.execute(query, params).fetchall()
        except sqlite3.DatabaseError as exc:
            raise HistoryError(f"cannot read the history database {self.path}: {exc}") from None
