"""The shared vocabulary: every stage reads and writes these types.

A writer never re-parses another writer's output; it reads a ``RunReport``.
``report.json`` is the serialised ``RunReport`` (``schema`` 1) and the only
file other commands (issues, stress, quarantine) read back.

The types live in modules of their own (outcomes, records, results, run, coverage,
subtests); this package is the one place the rest of flakewarden imports them from.
"""

from __future__ import annotations

from flakewarden.model.coverage import CoverageSummary
from flakewarden.model.failure_lines import first_line
from flakewarden.model.history import HistoryEntry, HistoryRun, RunContext, run_key
from flakewarden.model.outcomes import (
    LONG_ID_LIMIT,
    SCHEMA_VERSION,
    AttemptOutcome,
    ExitCode,
    Outcome,
    id_key,
)
from flakewarden.model.records import PhaseRecord, TestRecord
from flakewarden.model.results import AttemptResult, TestResult
from flakewarden.model.run import Attempt, Continuation, RunReport, Totals
from flakewarden.model.subtests import Subtest

__all__ = [
    "LONG_ID_LIMIT",
    "SCHEMA_VERSION",
    "Attempt",
    "AttemptOutcome",
    "AttemptResult",
    "Continuation",
    "CoverageSummary",
    "ExitCode",
    "HistoryEntry",
    "HistoryRun",
    "Outcome",
    "PhaseRecord",
    "RunContext",
    "RunReport",
    "Subtest",
    "TestRecord",
    "TestResult",
    "Totals",
    "first_line",
    "id_key",
    "run_key",
]
