"""The shared vocabulary: every stage reads and writes these types.

A writer never re-parses another writer's output; it reads a ``RunReport``.
``report.json`` is the serialised ``RunReport`` (``schema`` 1) and the only
file other commands (issues, stress, quarantine) read back.

The types live in modules of their own (outcomes, records, results, attempts, run,
coverage, subtests); this package is the one place the rest of flakewarden imports them from.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # what type checkers see; at run time each comes from __getattr__
    from flakewarden.model.attempts import Attempt, Continuation
    from flakewarden.model.blame import BaseCheck, BlameRun, TestChange
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
    from flakewarden.model.raised import InTestRetry, Raised
    from flakewarden.model.records import PhaseRecord, TestRecord
    from flakewarden.model.rerun_policy import RerunPolicy
    from flakewarden.model.results import AttemptResult, TestResult
    from flakewarden.model.run import RunReport, Totals
    from flakewarden.model.subtests import Subtest

#: Each name, and the module it lives in.
_HOME = {
    "CoverageSummary": "coverage",
    "BaseCheck": "blame",
    "TestChange": "blame",
    "BlameRun": "blame",
    "first_line": "failure_lines",
    "HistoryEntry": "history",
    "HistoryRun": "history",
    "RunContext": "history",
    "run_key": "history",
    "LONG_ID_LIMIT": "outcomes",
    "SCHEMA_VERSION": "outcomes",
    "AttemptOutcome": "outcomes",
    "ExitCode": "outcomes",
    "Outcome": "outcomes",
    "id_key": "outcomes",
    "PhaseRecord": "records",
    "TestRecord": "records",
    "AttemptResult": "results",
    "TestResult": "results",
    "Attempt": "attempts",
    "Continuation": "attempts",
    "RunReport": "run",
    "Totals": "run",
    "Subtest": "subtests",
    "Raised": "raised",
    "InTestRetry": "raised",
    "RerunPolicy": "rerun_policy",
}


def __getattr__(name: str) -> object:
    """Import a name's module when the name is first asked for.

    A command imports only the vocabulary it uses: ``flakewarden run`` starts the
    tests before it needs the report's types, and importing them all up front (their
    dataclasses are built at import) would delay every run's first test.
    """
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{home}"), name)
    globals()[name] = value
    return value


__all__ = [
    "LONG_ID_LIMIT",
    "SCHEMA_VERSION",
    "Attempt",
    "AttemptOutcome",
    "AttemptResult",
    "BaseCheck",
    "BlameRun",
    "Continuation",
    "CoverageSummary",
    "ExitCode",
    "HistoryEntry",
    "HistoryRun",
    "InTestRetry",
    "Outcome",
    "PhaseRecord",
    "Raised",
    "RerunPolicy",
    "RunContext",
    "RunReport",
    "Subtest",
    "TestChange",
    "TestRecord",
    "TestResult",
    "Totals",
    "first_line",
    "id_key",
    "run_key",
]
