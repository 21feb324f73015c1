"""What blame says about a failed test, in the words every writer shares.

Pure text from the model (``TestChange``, ``BaseCheck``, ``BlameRun``), unescaped:
each writer escapes for where it writes (a workflow command, Markdown, the console).
"""

from __future__ import annotations

from typing import NamedTuple, Optional

from flakewarden.model import RunReport, TestResult
from flakewarden.model.blame import BlameRun

WARN = "warn"
IGNORE_IN_GATE = "ignore-in-gate"
#: Why a test kept out of the gate does not block: the two facts that earn it.
NOT_BLOCKING = "it ran none of this pull request's changes and fails on the base too"


def phrases(test: TestResult) -> list[str]:
    """``["ran 3 changed lines in src/x.py", "fails on the base too"]``: what is known."""
    found = []
    if test.change is not None:
        found.append(test.change.shown())
    if test.base is not None:
        found.append(test.base.shown())
    return found


def phrase(test: TestResult) -> str:
    """The phrases joined on one line (``""`` when the test was not judged)."""
    return "; ".join(phrases(test))


def sentence(text: str) -> str:
    """``ran none of it`` as ``Ran none of it.``: a capital first letter and one full stop."""
    text = text.strip().rstrip(".")
    return f"{text[:1].upper()}{text[1:]}." if text else ""


def sentences(test: TestResult) -> str:
    """The phrases as sentences: ``Ran none of this pull request's changes. Fails on ...``."""
    return " ".join(sentence(p) for p in phrases(test))


def untouched_on_failing_base(test: TestResult) -> bool:
    """It ran none of the change and fails on the base too: the change cannot have broken it."""
    return (
        test.change is not None
        and test.change.verdict == "untouched"
        and test.base is not None
        and test.base.verdict == "fails"
    )


def ignored_in_gate(test: TestResult, blame: Optional[BlameRun]) -> bool:
    """``blame.untouched_failures: ignore-in-gate`` kept this test out of the gate."""
    return blame is not None and blame.policy == IGNORE_IN_GATE and test.id in blame.ignored


def only_warned(test: TestResult, blame: Optional[BlameRun]) -> bool:
    """``blame.untouched_failures: warn`` makes this failure's annotation a warning."""
    return blame is not None and blame.policy == WARN and untouched_on_failing_base(test)


class Counts(NamedTuple):
    """How the judged tests split: ran the change, did not, cannot tell."""

    touches: int
    untouched: int
    unknown: int


def counts(report: RunReport) -> Counts:
    """The change verdicts of the report's tests (only a failed first attempt has one)."""
    verdicts = [t.change.verdict for t in report.tests if t.change is not None]
    return Counts(verdicts.count("touches"), verdicts.count("untouched"), verdicts.count("unknown"))


def short_sha(sha: str) -> str:
    return sha[:12]
