"""Exit codes, test outcomes and attempt outcomes: the words every stage uses."""

from __future__ import annotations

import enum

SCHEMA_VERSION = 1

#: Test ids longer than this are known by a digest wherever a whole id cannot be stored
#: (an issue's marker, the quarantined set read from it).
LONG_ID_LIMIT = 1_000


def id_key(test_id: str) -> str:
    """The key a test is known by across runs: its id, or ``sha256:<hex>`` of a long id."""
    if len(test_id) <= LONG_ID_LIMIT:
        return test_id
    import hashlib  # here: only long ids need it, and importing it costs a run's start-up

    return "sha256:" + hashlib.sha256(test_id.encode("utf-8", "surrogatepass")).hexdigest()


class ExitCode(enum.IntEnum):
    """Exit codes mirror pytest's so CI scripts need no translation."""

    OK = 0
    TESTS_FAILED = 1
    INTERRUPTED = 2
    INTERNAL_ERROR = 3
    USAGE_ERROR = 4
    NO_TESTS_COLLECTED = 5


class Outcome(str, enum.Enum):
    """The final outcome of one test across all attempts."""

    PASSED = "passed"
    FLAKY = "flaky"
    FAILED = "failed"
    QUARANTINED = "quarantined"
    SKIPPED = "skipped"
    ERROR = "error"

    def __str__(self) -> str:
        return self.value


class AttemptOutcome(str, enum.Enum):
    """The outcome of one test in one attempt (one process)."""

    PASSED = "passed"
    FAILED = "failed"  # the test body failed
    ERROR = "error"  # setup or teardown failed
    SKIPPED = "skipped"
    CRASHED = "crashed"  # the test process died (or timed out) while this test ran

    def __str__(self) -> str:
        return self.value

    @property
    def is_failure(self) -> bool:
        # By value: a tuple of str is searched in C, a tuple of members through Enum's ==.
        return self._value_ in _FAILURE_VALUES


_FAILURE_VALUES = tuple(
    outcome.value
    for outcome in (AttemptOutcome.FAILED, AttemptOutcome.ERROR, AttemptOutcome.CRASHED)
)
