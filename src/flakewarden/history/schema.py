"""The history database's schema, version by version; docs/history.md describes it.

Kept compact on purpose: a year of a large suite is ten million entries, so an
entry is two small integer keys, an outcome code, one letter per attempt and a
duration in milliseconds (about 20 bytes on disk).
"""

from __future__ import annotations

from flakewarden.model import AttemptOutcome, Outcome

#: ``PRAGMA application_id``: "FlkW". Tells our database from any other SQLite file.
APPLICATION_ID = 0x466C6B57
#: ``PRAGMA user_version``: the schema version this flakewarden writes.
SCHEMA_VERSION = 4

#: The final outcome, stored as a small integer (0 and 1 take no bytes at all).
OUTCOME_CODES: dict[Outcome, int] = {
    Outcome.PASSED: 0,
    Outcome.FLAKY: 1,
    Outcome.FAILED: 2,
    Outcome.QUARANTINED: 3,
    Outcome.SKIPPED: 4,
    Outcome.ERROR: 5,
}
OUTCOMES_BY_CODE: dict[int, Outcome] = {code: outcome for outcome, code in OUTCOME_CODES.items()}

#: One letter per attempt, in order: "fp" is failed then passed.
ATTEMPT_LETTERS: dict[AttemptOutcome, str] = {
    AttemptOutcome.PASSED: "p",
    AttemptOutcome.FAILED: "f",
    AttemptOutcome.ERROR: "e",
    AttemptOutcome.SKIPPED: "s",
    AttemptOutcome.CRASHED: "c",
}
FAILURE_LETTERS = frozenset("fec")

SCHEMA_V1 = """
CREATE TABLE runs (
    id INTEGER PRIMARY KEY,
    run_key TEXT NOT NULL UNIQUE,
    repository TEXT NOT NULL,
    workflow TEXT NOT NULL,
    run_id INTEGER,
    run_attempt INTEGER,
    job TEXT NOT NULL,
    job_name TEXT NOT NULL,
    event TEXT NOT NULL,
    branch TEXT NOT NULL,
    base_branch TEXT NOT NULL,
    pr_number INTEGER,
    commit_sha TEXT NOT NULL,
    started_at TEXT NOT NULL,
    os TEXT NOT NULL,
    python TEXT NOT NULL,
    flakewarden_version TEXT NOT NULL,
    tests INTEGER NOT NULL,
    first_attempt_failures INTEGER NOT NULL,
    hard_failures INTEGER NOT NULL,
    flaky INTEGER NOT NULL,
    cutoff INTEGER NOT NULL,
    interrupted INTEGER NOT NULL,
    source TEXT NOT NULL,
    ingested_at TEXT NOT NULL
);
CREATE INDEX runs_by_time ON runs (started_at, id);
CREATE INDEX runs_by_github_run ON runs (repository, workflow, branch, run_id);
CREATE TABLE tests (
    id INTEGER PRIMARY KEY,
    test_id TEXT NOT NULL UNIQUE
);
CREATE TABLE entries (
    run INTEGER NOT NULL REFERENCES runs (id),
    test INTEGER NOT NULL REFERENCES tests (id),
    outcome INTEGER NOT NULL,
    attempts TEXT NOT NULL,
    duration_ms INTEGER NOT NULL,
    PRIMARY KEY (run, test)
) WITHOUT ROWID;
CREATE TABLE github_runs (
    repository TEXT NOT NULL,
    workflow TEXT NOT NULL,
    branch TEXT NOT NULL,
    run_id INTEGER NOT NULL,
    run_attempt INTEGER NOT NULL,
    result TEXT NOT NULL,
    checked_at TEXT NOT NULL,
    PRIMARY KEY (repository, workflow, run_id, run_attempt)
);
"""

#: Version 2: what each failed attempt raised, by signature (``model/signatures.py``), and
#: the quarantined set each run ran with. A signature keeps one example traceback (the
#: first ingested, clipped), each failure its own first line: a broken test failing every
#: run adds a short row per attempt, not a traceback. Runs ingested before version 2 have
#: neither; nothing else changes, so an old database opens and migrates in place.
SCHEMA_V2 = """
CREATE TABLE signatures (
    id INTEGER PRIMARY KEY,
    signature TEXT NOT NULL UNIQUE,
    exception TEXT NOT NULL,
    message TEXT NOT NULL,
    frame TEXT NOT NULL,
    example TEXT NOT NULL
);
CREATE TABLE failures (
    run INTEGER NOT NULL REFERENCES runs (id),
    test INTEGER NOT NULL REFERENCES tests (id),
    attempt INTEGER NOT NULL,
    signature INTEGER NOT NULL REFERENCES signatures (id),
    message TEXT NOT NULL,
    PRIMARY KEY (run, test, attempt)
) WITHOUT ROWID;
CREATE INDEX failures_by_signature ON failures (signature);
CREATE TABLE quarantined (
    run INTEGER NOT NULL REFERENCES runs (id),
    test_key TEXT NOT NULL,
    PRIMARY KEY (run, test_key)
) WITHOUT ROWID;
"""

#: Version 3: the report artifacts ``ingest --from-github`` skipped, and why. One that
#: cannot be read (too big, not a zip, a report refused) is skipped at once; one whose download
#: failed is tried again by the next ingests, at most ``MAX_ARTIFACT_TRIES`` times in all, so
#: no artifact holds the ingest at its run for good.
SCHEMA_V3 = """
CREATE TABLE github_artifacts (
    repository TEXT NOT NULL,
    artifact_id INTEGER NOT NULL,
    run_id INTEGER NOT NULL,
    run_attempt INTEGER NOT NULL,
    name TEXT NOT NULL,
    result TEXT NOT NULL,
    why TEXT NOT NULL,
    tries INTEGER NOT NULL,
    checked_at TEXT NOT NULL,
    PRIMARY KEY (repository, artifact_id)
);
"""

#: Version 4: what a report downloaded by ``ingest --from-github`` claimed of its own run
#: (run id, branch, commit, event, workflow) where that differs from the run GitHub listed
#: it under. The run is stored under the listed run; the claim is kept only as detail.
SCHEMA_V4 = """
ALTER TABLE runs ADD COLUMN claimed TEXT NOT NULL DEFAULT ''
"""

#: How to bring a database of version N up to N + 1; a new database runs them all in turn.
MIGRATIONS: dict[int, str] = {1: SCHEMA_V2, 2: SCHEMA_V3, 3: SCHEMA_V4}
