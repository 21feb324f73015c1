"""Quarantine under policy: no label without evidence, release by hysteresis, escalation.

A test is quarantined by the label ``quarantined`` on its open ``flaky-test``
issue, and only when every condition of the policy holds; a refusal lists every
unmet condition. A quarantined test still runs in every build, and the flake
issue step counts its runs and failures in the marker. ``reevaluate`` proposes
a release to the owner once the recent failure rate drops below
``exit_failure_rate`` (entry needs more: that gap is the hysteresis) and
escalates a quarantine older than ``max_days``. Nothing is released silently.
This module acts on GitHub (labels, markers, comments); the conditions and
counts it decides by are in ``quarantine_policy``.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Optional

from flakewarden.actions import runtime
from flakewarden.config import QuarantinePolicy
from flakewarden.errors import FlakewardenError
from flakewarden.issues.marker import read_marker
from flakewarden.issues.records import FlakeIssue, RunContext, iso
from flakewarden.issues.tracker import FlakeTracker
from flakewarden.model import ExitCode
from flakewarden.quarantine.policy import (
    Evidence,
    rate_text,
    unmet_conditions,
)
from flakewarden.quarantine.quarantined import QUARANTINED
from flakewarden.reports import markdown as md

QUARANTINED_COLOR = "fbca04"
QUARANTINED_DESCRIPTION = "Flaky test quarantined under policy: still runs, does not fail builds"
ESCALATED = "flake-escalated"
ESCALATED_COLOR = "b60205"
ESCALATED_DESCRIPTION = "Quarantined longer than the policy's max_days: needs a decision"
_LOGIN = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9]|-(?=[A-Za-z0-9])){0,38}")


class Refused(FlakewardenError):
    """A quarantine, release or lookup that cannot be done for this test (exit 1)."""

    exit_code = ExitCode.TESTS_FAILED


# -- GitHub ------------------------------------------------------------------------------


def label_names(issue: Mapping[str, Any]) -> list[str]:
    return [str(lb.get("name") if isinstance(lb, dict) else lb) for lb in issue.get("labels", [])]


def owner_line(issue: Mapping[str, Any]) -> str:
    """Who should decide: the assignees, mentioned; only well-formed logins are ever ``@``-ed."""
    people = issue.get("assignees") or ([issue["assignee"]] if issue.get("assignee") else [])
    logins = [str(p.get("login", "")) for p in people if isinstance(p, dict)]
    logins = [login for login in logins if _LOGIN.fullmatch(login)]
    if logins:
        return " ".join(f"@{login}" for login in logins) + ": please decide."
    return "This issue has no assignee: assign the test's owner so someone decides."


def read_quarantined_file(path: Path) -> frozenset[str]:
    """A JSON list of test ids, or text with one id per line (``#`` starts a comment)."""
    from flakewarden.errors import UsageError

    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"--quarantined-file {path}: {exc.strerror or exc}") from None
    if path.suffix == ".json" or text.lstrip().startswith(("[", "{")):
        try:
            data = json.loads(text)
        except ValueError as exc:
            raise UsageError(f"--quarantined-file {path}: malformed JSON: {exc}") from None
        if not isinstance(data, list) or not all(isinstance(x, str) for x in data):
            raise UsageError(f"--quarantined-file {path}: expected a JSON list of test ids")
        return frozenset(x.strip() for x in data if x.strip())
    ids = (line.split(" #", 1)[0].strip() for line in text.splitlines())
    return frozenset(i for i in ids if i and not i.startswith("#"))


def warn(message: str) -> None:
    runtime.warn(message, "flakewarden quarantine")


# -- actions -----------------------------------------------------------------------------


@dataclasses.dataclass
class Target:
    """One test's open flake issue, fresh: its marker, labels and raw data."""

    issue: FlakeIssue
    data: dict[str, Any]

    @property
    def labels(self) -> list[str]:
        return label_names(self.data)


def find_open_issue(tracker: FlakeTracker, test_id: str) -> Target:
    known = tracker.index().get(test_id, [])
    open_issues = [i for i in known if i.state == "open"]
    if not open_issues:
        if known:
            raise Refused(
                f"the flake issue for {test_id} (#{known[0].number}) is closed: a closed issue "
                "means it was fixed; reopen it if the test still flakes"
            )
        raise Refused(
            f"no flake issue for {test_id}; it is filed by `flakewarden issues` the first "
            "time the test flakes (check the test id)"
        )
    data = tracker.client.get_json(f"{tracker.base}/issues/{open_issues[0].number}")
    marker = {**open_issues[0].marker, **(read_marker(data.get("body")) or {})}
    return Target(FlakeIssue.from_api(data, marker), data)


def write(tracker: FlakeTracker, target: Target, marker: dict[str, Any], labels: list[str]) -> None:
    """One PATCH: the marker line and the label set (GitHub replaces labels as given)."""
    tracker.update(target.issue, marker, labels=labels)


def policy_days(policy_days: float) -> dt.timedelta:
    return dt.timedelta(days=policy_days)


def quarantine_comment(
    marker: Mapping[str, Any],
    policy: QuarantinePolicy,
    reason: str,
    ctx: RunContext,
    now: dt.datetime,
    history: Optional[Evidence] = None,
) -> str:
    verdict = marker.get("verdict")
    link = str(marker.get("verdict_url") or "")
    evidence = (
        f"stress verdict {md.code(str(verdict))} of {md.escape(str(marker.get('verdict_at'))[:10])}"
        + (f" ({md.link('evidence', link)})" if link.startswith("https://") else "")
        if verdict
        else "no stress verdict (the policy does not require one)"
    )
    if history is not None and history.score is not None:
        counted = (
            f"a failure rate of {rate_text(history.score)} in the flake history "
            f"(at least {policy.enter_failure_rate:.0%} over {policy.min_runs} runs needed; "
            f"{md.escape(history.window)})"
        )
    else:
        counted = f"{int(marker.get('hits') or 0)} hits (at least {policy.min_failures} needed)"
    lines = [
        "**Quarantined under policy.**",
        "",
        f"- Evidence: {counted}; {evidence}.",
        "- Not listed in the known-race-patterns file.",
    ]
    if reason:
        lines.append(f"- Reason given: {md.escape(md.clip(reason, 500))}")
    lines += [
        f"- Requested from {ctx.describe()}." if ctx.run_url else "- Requested from the CLI.",
        "",
        "The test still runs in every build; when it fails after its reruns it is reported as "
        "`quarantined` and does not fail the job. Release is proposed once its failure rate is "
        f"below {policy.exit_failure_rate:.0%} over at least {policy.min_runs_to_release} runs; "
        f"past {iso(now + policy_days(policy.max_days))[:10]} the quarantine is escalated.",
    ]
    return "\n".join(lines) + "\n"


def quarantine(
    tracker: FlakeTracker,
    test_id: str,
    policy: QuarantinePolicy,
    races: Mapping[str, str],
    race_problem: Optional[str],
    reason: str,
    ctx: RunContext,
    now: dt.datetime,
    race_file: str,
    history: Optional[Evidence] = None,
) -> tuple[Target, list[str]]:
    """Label the test's issue when every condition holds; else comment the refusal.

    With ``history`` the rate and sample of the window decide instead of the hits.
    Returns the issue and the unmet conditions (empty: quarantined, or it already was).
    """
    target = find_open_issue(tracker, test_id)
    if QUARANTINED in target.labels:
        return target, []
    marker = dict(target.issue.marker)
    unmet = unmet_conditions(test_id, marker, policy, races, now, race_file, history)
    if race_problem:
        unmet.append(race_problem)
    if unmet:
        source = "the flake history" if history is not None else "the issue's counters"
        body = [f"**Quarantine refused.** Unmet conditions (evidence from {source}):", ""]
        for condition in unmet:
            head, _, detail = condition.partition("\n")
            body.append(f"- {md.escape(head)}")
            if detail:
                body += ["", md.code_block(detail, "yaml"), ""]
        if reason:
            body += ["", f"Reason given: {md.escape(md.clip(reason, 500))}"]
        tracker.comment(target.issue.number, "\n".join(body) + "\n")
        return target, unmet
    tracker.ensure_label(QUARANTINED, QUARANTINED_COLOR, QUARANTINED_DESCRIPTION)
    for key in ("release_proposed_at", "escalated_at", "released_at", "release_reason"):
        marker.pop(key, None)
    marker.update(quarantined_at=iso(now), runs=0, failures=0, recent="")
    if reason:
        marker["quarantine_reason"] = md.clip(reason, 200)
    else:
        marker.pop("quarantine_reason", None)
    marker.pop("rate_rose_at", None)
    if history is not None and history.score is not None:
        marker["quarantine_rate"] = round(history.score.rate, 4)
    else:
        marker.pop("quarantine_rate", None)
    write(tracker, target, marker, [*target.labels, QUARANTINED])
    comment = quarantine_comment(marker, policy, reason, ctx, now, history)
    tracker.comment(target.issue.number, comment)
    return target, []


def release(
    tracker: FlakeTracker, test_id: str, reason: str, ctx: RunContext, now: dt.datetime
) -> Target:
    """Remove ``quarantined`` (and ``flake-escalated``) with a comment; record ``released_at``."""
    target = find_open_issue(tracker, test_id)
    if QUARANTINED not in target.labels:
        raise Refused(f"{test_id} is not quarantined (#{target.issue.number} has no label)")
    marker = dict(target.issue.marker)
    since = str(marker.pop("quarantined_at", "") or "")
    runs, failures = int(marker.get("runs") or 0), int(marker.get("failures") or 0)
    for key in ("release_proposed_at", "escalated_at", "quarantine_reason"):
        marker.pop(key, None)
    marker["released_at"] = iso(now)
    if reason:
        marker["release_reason"] = md.clip(reason, 200)
    labels = [name for name in target.labels if name not in (QUARANTINED, ESCALATED)]
    write(tracker, target, marker, labels)
    lines = [
        "**Released from quarantine.** A failure after its reruns fails the build again.",
        "",
        f"- Quarantined since {md.escape(since[:10]) or 'an unknown date'}; "
        f"{failures} failures in {runs} counted runs.",
    ]
    if reason:
        lines.append(f"- Reason given: {md.escape(md.clip(reason, 500))}")
    if ctx.run_url:
        lines.append(f"- Released from {ctx.describe()}.")
    tracker.comment(target.issue.number, "\n".join(lines) + "\n")
    return target
