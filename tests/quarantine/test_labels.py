"""Quarantine under policy, over real HTTP against the loopback GitHub emulator."""

from __future__ import annotations

import datetime as dt
import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from helpers.github_emulator import Fault, GitHubEmulator
from helpers.github_fixtures import (
    emulator_env,
    flaky,
    passed,
    seed_issue,
    write_report,
)
from helpers.github_fixtures import issue_comments as _comments
from helpers.github_fixtures import issue_labels as _labels
from helpers.github_fixtures import issue_marker as _marker
from helpers.project import Project

from flakewarden.cli import main
from flakewarden.issues.hit_ledger import record_keys
from flakewarden.issues.marker import format_marker, id_fields
from flakewarden.issues.records import LABEL, iso, title_for
from flakewarden.model import AttemptOutcome, AttemptResult, Outcome, TestResult
from flakewarden.quarantine.known_races import parse_race_patterns, race_entry, race_entry_for
from flakewarden.quarantine.labels import ESCALATED
from flakewarden.quarantine.quarantined import QUARANTINED
from flakewarden.reports.junit_read import iter_junit_cases

TEST = "tests/test_cache.py::test_fill"
NOW = dt.datetime.now(dt.timezone.utc)


@pytest.fixture
def cwd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A working directory with an explicit (empty) config file and no race file."""
    (tmp_path / ".git").mkdir()  # stops the search for a default config here
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _seed(
    emu: GitHubEmulator,
    test_id: str = TEST,
    labels: tuple[str, ...] = (LABEL,),
    assignees: tuple[str, ...] = (),
    **marker: Any,
) -> int:
    data = {"id": test_id, "hits": 3, "first": "2024-05-01T12:00:00Z", **marker}
    notes = "### notes\nkept as written\n"
    return seed_issue(emu, data, labels=labels, assignees=assignees, notes=notes)


def _good(**extra: Any) -> dict[str, Any]:
    """A marker that meets every condition of the default policy."""
    return {
        "hits": 4,
        "verdict": "flaky",
        "verdict_at": iso(NOW - dt.timedelta(days=2)),
        "verdict_url": "https://github.com/octo-org/octo-repo/actions/runs/77",
        "verdict_bound": {"met": True, "max_increase": 0.004, "baseline_rate": 0.02},
        **extra,
    }


def _config(cwd: Path, text: str = "") -> str:
    path = cwd / "flakewarden.yml"
    path.write_text(text, encoding="utf-8")
    return str(path)


def _race_file(cwd: Path, *test_ids: str) -> None:
    entries = [race_entry(t, "switch-interval", "2024-06-01T00:00:00+00:00") for t in test_ids]
    (cwd / "known-race-patterns.md").write_text(
        "# Known race patterns\n\nTests that are races: never quarantined.\n\n" + "".join(entries),
        encoding="utf-8",
    )


# -- the known-race-patterns file -------------------------------------------------------------


def test_race_entries_round_trip_and_cover_parameters() -> None:
    text = (
        race_entry('tests/a.py::test_x[a "b"]', "throttle", "2024-06-01T10:00:00+00:00")
        + race_entry("tests/a.py::test_y", None, "2024-06-02")
        + "\n* `tests/b.py::test_z` found by hand, see #12\n"
        + "- some other list item\n"
    )
    entries = parse_race_patterns(text)
    assert sorted(entries) == [
        'tests/a.py::test_x[a "b"]',
        "tests/a.py::test_y",
        "tests/b.py::test_z",
    ]
    assert entries["tests/a.py::test_y"].splitlines()[1:3] == [
        "  date: 2024-06-02",
        "  knob: unknown",
    ]
    assert race_entry_for("tests/a.py::test_y[1]", entries) == entries["tests/a.py::test_y"]
    assert race_entry_for("tests/a.py::test_x[other]", entries) is None
    assert race_entry_for("tests/b.py::test_zz", entries) is None


# -- quarantine: refusals ---------------------------------------------------------------------

REFUSALS = {
    "hits": (dict(hits=2), "2 recorded hit(s); the policy needs at least 3"),
    "no verdict": (dict(verdict=None, verdict_at=None), "no stress verdict is recorded"),
    "old verdict": (
        dict(verdict_at=iso(NOW - dt.timedelta(days=20))),
        "stress verdict is 20 days old; the policy accepts at most 14",
    ),
    "verdict not allowed": (
        dict(verdict="order-dependent"),
        "stress verdict 'order-dependent' is not one the policy allows",
    ),
    "known race": ({}, "listed as a known race in known-race-patterns.md"),
    "no bound": (dict(verdict_bound=None), "records no bound on what the knobs could do"),
    "bound too wide": (
        dict(verdict_bound={"met": True, "max_increase": 0.012, "baseline_rate": 0.02}),
        "leave room for a knob raising the failure rate by 1.20 percentage points; the "
        "policy accepts at most 1.00",
    ),
    "inconclusive": (
        dict(verdict="inconclusive"),
        "its stress verdict is 'inconclusive': the runs ended before a knob's effect",
    ),
}


@pytest.mark.parametrize("case", sorted(REFUSALS))
def test_each_unmet_condition_refuses(
    case: str,
    emulator: GitHubEmulator,
    cwd: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    emulator_env(monkeypatch, emulator)
    changes, expected = REFUSALS[case]
    marker = {k: v for k, v in _good(**changes).items() if v is not None}
    number = _seed(emulator, **marker)
    if case == "known race":
        _race_file(cwd, TEST)
    code = main(["quarantine", TEST, "--config", _config(cwd), "--reason", "blocks merges"])
    out = capsys.readouterr().out
    assert code == 1
    unmet = [line for line in out.splitlines() if line.startswith("  - ")]
    assert len(unmet) == 1 and expected in unmet[0], out
    assert QUARANTINED not in _labels(emulator, number)
    assert "quarantined_at" not in _marker(emulator, number)
    [comment] = _comments(emulator, number)
    assert comment.startswith("**Quarantine refused.**")
    assert "blocks merges" in comment
    assert f"refusal is recorded on #{number}" in out


def test_every_unmet_condition_is_listed_at_once(
    emulator: GitHubEmulator,
    cwd: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    emulator_env(monkeypatch, emulator)
    number = _seed(
        emulator,
        **_good(hits=1, verdict="seed-dependent", verdict_at=iso(NOW - dt.timedelta(days=40))),
    )
    _race_file(cwd, TEST)
    assert main(["quarantine", TEST, "--config", _config(cwd)]) == 1
    unmet = [line for line in capsys.readouterr().out.splitlines() if line.startswith("  - ")]
    assert len(unmet) == 4
    assert [
        any(part in line for line in unmet)
        for part in ("hit(s)", "not one the policy", "days old", "known race")
    ] == [True] * 4
    bullets = [line for line in _comments(emulator, number)[0].splitlines() if line[:2] == "- "]
    assert len(bullets) == 5 and bullets[-1].startswith("- test: ")  # 4, and the entry's fence


def test_relaxing_the_verdict_never_admits_a_race(
    emulator: GitHubEmulator,
    cwd: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    emulator_env(monkeypatch, emulator)
    number = _seed(emulator, **_good(verdict="race"))
    config = _config(cwd, "quarantine_policy:\n  require_stress_verdict: false\n")
    assert main(["quarantine", TEST, "--config", config]) == 1
    out = capsys.readouterr().out
    assert "its stress verdict is 'race'" in out
    # The entry to record is the one `flakewarden stress` prints for a race.
    assert f"- test: {json.dumps(TEST)}" in out
    assert "```yaml" in _comments(emulator, number)[0]
    assert QUARANTINED not in _labels(emulator, number)


def test_missing_flake_issue_is_one_clear_line(
    emulator: GitHubEmulator,
    cwd: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    emulator_env(monkeypatch, emulator)
    assert main(["quarantine", "tests/x.py::nope", "--config", _config(cwd)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no flake issue for tests/x.py::nope" in err
    assert not [r for r in emulator.log if r.is_write]


@pytest.mark.parametrize(
    ("command", "text", "message"),
    [
        ("quarantine", "quarantine_policy:\n  min_failure: 3\n", "did you mean 'min_failures'"),
        ("quarantine", "quarantine_policy:\n  allowed_verdicts: [race]\n", "can never allow"),
        ("reevaluate", "quarantine_policy:\n  exit_failure_rate: 0.5\n", "must be below"),
    ],
)
def test_config_errors_exit_4_before_any_request(
    command: str,
    text: str,
    message: str,
    emulator: GitHubEmulator,
    cwd: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    emulator_env(monkeypatch, emulator)
    args = [command, TEST] if command == "quarantine" else [command]
    assert main([*args, "--config", _config(cwd, text)]) == 4
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1
    assert emulator.log == []


# -- quarantine: accepted, release ----------------------------------------------------------


def test_accepted_quarantine_labels_comments_and_records(
    emulator: GitHubEmulator,
    cwd: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    emulator_env(monkeypatch, emulator)
    number = _seed(emulator, **_good(runs=9, failures=9, escalated_at="2024-01-01T00:00:00Z"))
    _race_file(cwd, "tests/other.py::test_race")
    assert main(["quarantine", TEST, "--config", _config(cwd), "--reason", "@team it blocks"]) == 0
    assert f"quarantined {TEST}: #{number}" in capsys.readouterr().out
    assert _labels(emulator, number) == [LABEL, QUARANTINED]
    assert QUARANTINED in {lb["name"] for lb in emulator.labels.values()}
    marker = _marker(emulator, number)
    assert marker["quarantined_at"][:10] == iso(NOW)[:10]
    assert marker["quarantine_reason"] == "@team it blocks"
    assert (marker["runs"], marker["failures"], marker["recent"]) == (0, 0, "")
    assert "escalated_at" not in marker
    assert "kept as written" in emulator.issues[number]["body"]
    [comment] = _comments(emulator, number)
    assert comment.startswith("**Quarantined under policy.**")
    assert "4 hits" in comment and "`flaky`" in comment
    assert "(https://github.com/octo-org/octo-repo/actions/runs/77)" in comment
    assert "@team" not in comment  # the reason cannot ping anyone

    # Again: already quarantined, nothing written.
    writes = len([r for r in emulator.log if r.is_write])
    assert main(["quarantine", TEST, "--config", _config(cwd)]) == 0
    assert "already quarantined" in capsys.readouterr().out
    assert len([r for r in emulator.log if r.is_write]) == writes


def test_without_required_verdict_enough_hits_suffice(
    emulator: GitHubEmulator, cwd: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    emulator_env(monkeypatch, emulator)
    number = _seed(emulator, hits=5)
    config = _config(cwd, "quarantine_policy:\n  require_stress_verdict: false\n")
    assert main(["quarantine", TEST, "--config", config]) == 0
    assert QUARANTINED in _labels(emulator, number)
    assert "no stress verdict (the policy does not require one)" in _comments(emulator, number)[0]


def test_release_removes_the_labels_with_a_comment(
    emulator: GitHubEmulator,
    cwd: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    emulator_env(monkeypatch, emulator)
    number = _seed(
        emulator,
        labels=(LABEL, QUARANTINED, ESCALATED, "area/cache"),
        **_good(quarantined_at="2024-05-01T00:00:00Z", runs=60, failures=1, escalated_at="x"),
    )
    assert main(["release", TEST, "--reason", "fixed in #99"]) == 0
    assert _labels(emulator, number) == [LABEL, "area/cache"]
    marker = _marker(emulator, number)
    assert "quarantined_at" not in marker and "escalated_at" not in marker
    assert marker["released_at"][:10] == iso(NOW)[:10]
    assert marker["release_reason"] == "fixed in #99"
    [comment] = _comments(emulator, number)
    assert comment.startswith("**Released from quarantine.**")
    assert "1 failures in 60 counted runs" in comment
    assert main(["release", TEST]) == 1
    assert "is not quarantined" in capsys.readouterr().err


# -- reevaluate ------------------------------------------------------------------------------


def _quarantined(
    emu: GitHubEmulator, test_id: str, recent: str, days: float = 3, **extra: Any
) -> int:
    return _seed(
        emu,
        test_id,
        labels=(LABEL, QUARANTINED),
        **_good(
            quarantined_at=iso(NOW - dt.timedelta(days=days)),
            runs=len(recent),
            failures=recent.count("f"),
            recent=recent,
            **extra,
        ),
    )


def test_release_is_proposed_by_hysteresis_once(
    emulator: GitHubEmulator,
    cwd: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    emulator_env(monkeypatch, emulator)
    low = _quarantined(emulator, "t.py::low", "p" * 59 + "f", assignees=("alice", "bob"))
    unowned = _quarantined(emulator, "t.py::unowned", "p" * 50)
    few = _quarantined(emulator, "t.py::few", "p" * 49)  # below min_runs_to_release
    at_exit = _quarantined(emulator, "t.py::at_exit", "p" * 57 + "fff")  # 5%: not below
    config = _config(cwd)
    assert main(["reevaluate", "--config", config]) == 0
    out = capsys.readouterr().out
    assert "t.py::low (#1): 1 failures in 60 recent runs: release proposed" in out
    [comment] = _comments(emulator, low)
    assert comment.startswith("**Release proposed:** 1 failures in the last 60 runs (1.7%)")
    assert "@alice @bob: please decide." in comment
    assert "`flakewarden release t.py::low`" in comment
    assert "no assignee" in _comments(emulator, unowned)[0]
    assert _comments(emulator, few) == [] and _comments(emulator, at_exit) == []
    assert _marker(emulator, low)["release_proposed_at"][:10] == iso(NOW)[:10]
    assert QUARANTINED in _labels(emulator, low)  # proposed, never released silently
    # Idempotent: the next run proposes nothing again.
    writes = len([r for r in emulator.log if r.is_write])
    assert main(["reevaluate", "--config", config]) == 0
    assert len([r for r in emulator.log if r.is_write]) == writes
    assert len(_comments(emulator, low)) == 1


def test_proposal_is_withdrawn_only_above_the_entry_rate(
    emulator: GitHubEmulator, cwd: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    emulator_env(monkeypatch, emulator)
    between = _quarantined(emulator, "t.py::between", "p" * 45 + "f" * 5, release_proposed_at="x")
    above = _quarantined(emulator, "t.py::above", "p" * 40 + "f" * 10, release_proposed_at="x")
    assert main(["reevaluate", "--config", _config(cwd)]) == 0
    assert _comments(emulator, between) == []
    assert _marker(emulator, between)["release_proposed_at"] == "x"
    assert _comments(emulator, above)[0].startswith("**Release proposal withdrawn:**")
    assert "release_proposed_at" not in _marker(emulator, above)


def test_old_quarantine_escalates_once(
    emulator: GitHubEmulator, cwd: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    emulator_env(monkeypatch, emulator)
    old = _quarantined(emulator, "t.py::old", "pf" * 10, days=31, assignees=("carol",))
    young = _quarantined(emulator, "t.py::young", "pf" * 10, days=29)
    config = _config(cwd)
    assert main(["reevaluate", "--config", config]) == 0
    assert _labels(emulator, old) == [LABEL, QUARANTINED, ESCALATED]
    assert emulator.labels[ESCALATED]["color"] == "b60205"
    [comment] = _comments(emulator, old)
    assert comment.startswith("**Quarantine escalated:**") and "@carol" in comment
    assert _marker(emulator, old)["escalated_at"][:10] == iso(NOW)[:10]
    assert _comments(emulator, young) == [] and ESCALATED not in _labels(emulator, young)
    assert main(["reevaluate", "--config", config]) == 0
    assert len(_comments(emulator, old)) == 1


def test_hand_labelled_quarantine_starts_its_clock(
    emulator: GitHubEmulator, cwd: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    emulator_env(monkeypatch, emulator)
    number = _seed(emulator, labels=(LABEL, QUARANTINED))
    assert main(["reevaluate", "--config", _config(cwd)]) == 0
    assert _marker(emulator, number)["quarantined_at"][:10] == iso(NOW)[:10]
    assert "no record of quarantining it" in _comments(emulator, number)[0]


# -- counting the runs of quarantined tests ------------------------------------------------


def _quarantined_failure(test_id: str) -> TestResult:
    attempts = [
        AttemptResult(n, AttemptOutcome.FAILED, 0.1, phase="call", message="AssertionError")
        for n in (1, 2, 3)
    ]
    return TestResult(test_id, "t.py", 1, Outcome.QUARANTINED, attempts)


def test_issues_counts_quarantined_runs_passes_included(
    emulator: GitHubEmulator,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    emulator_env(monkeypatch, emulator)
    ok = _quarantined(emulator, "t.py::ok", "f")
    bad = _quarantined(emulator, "t.py::bad", "")
    flaked = _quarantined(emulator, "t.py::flaked", "p" * 200)
    report = write_report(
        tmp_path / "rep",
        [
            passed("t.py::ok"),
            _quarantined_failure("t.py::bad"),
            flaky("t.py::flaked"),
            flaky("t.py::new"),
            passed("t.py::plain"),
        ],
    )
    assert main(["issues", "--report-dir", str(report)]) == 0
    out, err = capsys.readouterr()
    assert err == "" and "counted this run of 3 quarantined test(s)" in out
    assert {k: _marker(emulator, ok)[k] for k in ("runs", "failures", "recent")} == {
        "runs": 2,
        "failures": 1,
        "recent": "fp",
    }
    assert (_marker(emulator, bad)["runs"], _marker(emulator, bad)["recent"]) == (1, "f")
    flaked_marker = _marker(emulator, flaked)
    assert flaked_marker["recent"] == "p" * 199 + "f"  # a bounded window
    assert (flaked_marker["runs"], flaked_marker["failures"], flaked_marker["hits"]) == (201, 1, 5)
    assert all(_comments(emulator, n) == [] for n in (ok, bad))
    # The flake is a hit, recorded in one line that names this run.
    (recorded,) = _comments(emulator, flaked)
    assert recorded.startswith("Flaked again while quarantined, in ")
    assert len(record_keys(recorded)) == 1
    # The flaky test that is not quarantined gets its issue, nothing else does.
    assert [i["title"] for i in emulator.open_issues(LABEL)][-1] == "flake: t.py::new"
    assert len(emulator.open_issues(LABEL)) == 4


def test_issues_counts_even_without_flaky_tests(
    emulator: GitHubEmulator, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    emulator_env(monkeypatch, emulator)
    number = _quarantined(emulator, "t.py::ok", "")
    report = write_report(tmp_path / "rep", [passed("t.py::ok")])
    assert main(["issues", "--report-dir", str(report)]) == 0
    assert _marker(emulator, number)["recent"] == "p"


# -- flakewarden run honours the quarantined set ----------------------------------------------

FAILING = "def test_broken():\n    assert False, 'known flake, quarantined'\n"
BROKEN = "tests/test_q.py::test_broken"


def _github(emu: GitHubEmulator) -> dict[str, str]:
    return {
        "GITHUB_API_URL": emu.url,
        "GITHUB_TOKEN": emu.token,
        "GITHUB_REPOSITORY": emu.full_name,
    }


def test_run_whose_only_failure_is_quarantined_is_green(
    emulator: GitHubEmulator, project: Project
) -> None:
    _seed(emulator, BROKEN, labels=(LABEL, QUARANTINED), quarantined_at=iso(NOW))
    _seed(emulator, "tests/test_q.py::test_ok", labels=(LABEL,))  # flaky, not quarantined
    project.write("tests/test_q.py", FAILING + "\n\ndef test_ok():\n    pass\n")
    result = project.run("--reruns", "1", env=_github(emulator))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 quarantined test(s)" in result.stdout
    assert f"QUARANTINED-TEST-FAILED: {BROKEN} (does not fail the job)" in result.stdout
    test = result.test(BROKEN)
    assert test["outcome"] == "quarantined"
    assert [a["outcome"] for a in test["attempts"]] == ["failed", "failed"]
    assert result.report["totals"]["quarantined"] == 1
    assert result.report["totals"]["passed"] == 1
    summary = (result.report_dir / "summary.md").read_text(encoding="utf-8")
    assert "### Quarantined tests" in summary and r"test\_broken | 2 of 2 failed" in summary
    [case] = [
        c
        for c in ET.parse(result.report_dir / "junit.xml").getroot().iter("testcase")
        if c.get("name") == "test_broken"
    ]
    skipped = case.find("skipped")
    # Surefire's schema has no "type" on <skipped>: the message says it, and reads back so.
    assert skipped is not None and skipped.attrib.keys() == {"message"}
    assert (skipped.get("message") or "").startswith("quarantined: AssertionError")
    [read] = [
        c for c in iter_junit_cases(result.report_dir / "junit.xml") if c.name == "test_broken"
    ]
    assert read.outcome is Outcome.QUARANTINED
    assert case.find("failure") is None
    assert "known flake, quarantined" in (case.findtext("system-out") or "")
    assert all(not r.is_write for r in emulator.log)  # run only reads


@pytest.mark.parametrize("fault", ["500", "401"])
def test_unreadable_quarantine_set_hides_nothing(
    fault: str, emulator: GitHubEmulator, project: Project
) -> None:
    _seed(emulator, BROKEN, labels=(LABEL, QUARANTINED))
    env = _github(emulator)
    if fault == "500":
        emulator.faults.append(Fault(status=500, times=10))
    else:
        env["GITHUB_TOKEN"] = "ghp_wrongTOKENvalue999"
    project.write("tests/test_q.py", FAILING)
    result = project.run("--reruns", "1", env=env)
    assert result.returncode == 1
    lines = [line for line in result.stderr.splitlines() if "quarantined tests" in line]
    assert len(lines) == 1, result.stderr
    assert "cannot read the quarantined tests from GitHub" in lines[0]
    assert "no test is treated as quarantined" in lines[0]
    assert fault in lines[0] and "ghp_wrongTOKENvalue999" not in result.stderr
    assert result.test(BROKEN)["outcome"] == "failed"


def test_quarantined_file_works_offline(project: Project) -> None:
    project.write("tests/test_q.py", FAILING)
    project.write("quarantined.json", json.dumps([BROKEN]))
    project.write("quarantined.txt", f"# quarantined by hand\n{BROKEN}  # see #12\n")
    for name in ("quarantined.json", "quarantined.txt"):
        result = project.run("--reruns", "0", "--quarantined-file", name)
        assert result.returncode == 0, result.stdout + result.stderr
        assert result.test(BROKEN)["outcome"] == "quarantined"
    project.write("bad.json", '{"not": "a list"}')
    bad = project.run("--quarantined-file", "bad.json")
    assert bad.returncode == 4 and "expected a JSON list of test ids" in bad.stderr


def test_a_quarantined_test_with_a_very_long_id_is_still_quarantined(
    emulator: GitHubEmulator, project: Project
) -> None:
    # An id over the marker's limit is stored as a clipped id and its digest; the run must
    # match the test by that digest, not by the clipped id.
    param = "x" * 1_200
    long_id = f"tests/test_q.py::test_long[{param}]"
    data = {"hits": 3, "first": "2024-05-01T12:00:00Z", "quarantined_at": iso(NOW)}
    data.update(id_fields(long_id))
    assert data["id"] != long_id
    emulator.add_issue(
        title_for(long_id), format_marker(data) + "\n### notes\n", (LABEL, QUARANTINED)
    )
    project.write(
        "tests/test_q.py",
        "import pytest\n\n\n"
        f"@pytest.mark.parametrize('p', [1], ids=[{param!r}])\n"
        "def test_long(p):\n    assert False, 'known flake, quarantined'\n",
    )
    result = project.run("--reruns", "0", env=_github(emulator))
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.test(long_id)["outcome"] == "quarantined"
