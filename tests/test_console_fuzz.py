"""Fuzzing the console and annotation path: hostile ids and messages never form a command.

Generated test ids and failure messages (``::``, ``##[``, CR, LF, NUL, U+2028,
U+2029, NEL, percent escapes, random bytes, very long lines) go through
``run`` and ``stress`` (real pytest subprocesses, the ids given by parametrize),
``issues`` (against the GitHub emulator over loopback) and ``publish``. Their
output is read the way the runner reads it (``workflow_commands``): it must
hold flakewarden's own commands only, and every annotation must carry its
test's id exactly. The number of examples is bounded so this stays fast.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.github_emulator import GitHubEmulator
from helpers.github_fixtures import emulator_env, flaky, write_report
from helpers.project import PYTEST, PYTHON, make_project
from helpers.workflow_commands import command_stream, dotnet_trim, only_ours
from hypothesis import HealthCheck, Phase, example, given, settings
from hypothesis import strategies as st

from flakewarden import cli
from flakewarden.console import json_line, one_line
from flakewarden.model import AttemptOutcome, AttemptResult, Outcome, TestResult

# A failing example is 20,000 characters long; Hypothesis warns while printing it.
pytestmark = pytest.mark.filterwarnings("ignore::hypothesis.errors.HypothesisWarning")

# Ordered, cache-less, and the ids exactly as written: hostile text must reach the output.
FUZZ_INI = (
    "[pytest]\naddopts = -p no:randomly -p no:cacheprovider\n"
    "disable_test_id_escaping_and_forfeit_all_rights_to_community_support = true\n"
)

FRAGMENTS = [
    "::",
    "##[",
    "]",
    "\r",
    "\n",
    "\r\n",
    "\x00",
    "\u2028",
    "\u2029",
    "\x85",
    "\u3000",
    "\u00ad",
    "\u200b",
    "%0A",
    "%0D",
    "%25",
    "%3A",
    "%2C",
    "%3B",
    "%5D",
    "::error::X",
    "::ERROR file=a.py::X",
    "##[error]X",
    "##[ERROR]X",
    "##[stop-commands]hide",
    "::stop-commands::hide",
    "::hide::",
    "##[add-mask]X",
    "::set-output name=outcome::passed",
    "#\u00ad#[error]X",
    " ::warning::X",
    "=",
    ",",
    ";",
]


def fuzz(examples: int) -> settings:
    """Bounded, reproducible, no example database, no shrinking (a failure prints its input)."""
    return settings(
        max_examples=examples,
        deadline=None,
        derandomize=True,
        database=None,
        phases=[Phase.explicit, Phase.generate],
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    )


def hostile_text(*, nul: bool = True, long: bool = True) -> st.SearchStrategy[str]:
    """Text made of command fragments, arbitrary Unicode and decoded random bytes."""
    fragments = [f for f in FRAGMENTS if nul or "\x00" not in f]
    pieces = st.one_of(
        st.sampled_from(fragments),
        st.text(max_size=8),
        st.binary(max_size=12).map(lambda b: b.decode("utf-8", "replace")),
    )
    text = st.lists(pieces, min_size=1, max_size=10).map("".join)
    if not nul:
        text = text.map(lambda t: t.replace("\x00", ""))
    if long:
        text = st.one_of(text, text.map(lambda t: "y" * 20_000 + t + "##[error]LONG"))
    return text


def ids_for_pytest() -> st.SearchStrategy[str]:
    # A command line cannot hold NUL (reruns select by id), nor can a pytest id be empty.
    return hostile_text(nul=False, long=False).filter(lambda t: t.strip() != "")


def expected_titles(report: dict[str, object]) -> list[tuple[str, str]]:
    lead = {"failed": ("error", "Failed test"), "flaky": ("warning", "Flaky test")}
    tests = report["tests"]
    assert isinstance(tests, list)
    found = [(lead[t["outcome"]], t["id"]) for t in tests if t["outcome"] in lead]
    return sorted((kind, f"{title}: {tid}") for (kind, title), tid in found)


@fuzz(2)
@example(
    cases=[
        ("x##[stop-commands]hide", "##[error]M\u2028::error::M", True),
        ("\u3000::error::X", "%0A::warning::M\r\nN", False),
    ]
)
@given(
    cases=st.lists(
        st.tuples(ids_for_pytest(), hostile_text(), st.booleans()),
        min_size=1,
        max_size=3,
        unique_by=lambda c: c[0],
    )
)
def test_run_emits_only_its_own_commands(
    tmp_path_factory: pytest.TempPathFactory, cases: list[tuple[str, str, bool]]
) -> None:
    test_fuzz = (
        "import json, pytest\nfrom pathlib import Path\n\n"
        "HERE = Path(__file__).parent\n"
        "CASES = json.loads((HERE / 'cases.json').read_text())\n\n"
        "@pytest.mark.parametrize('i', range(len(CASES)), ids=[c[0] for c in CASES])\n"
        "def test_case(i):\n"
        "    _, message, is_flaky = CASES[i]\n"
        "    seen = HERE / f'.seen-{i}'\n"
        "    if is_flaky and seen.exists():\n"
        "        return\n"
        "    seen.write_text('x')\n"
        "    print(message)\n"
        "    raise AssertionError(message)\n"
    )
    files = {"cases.json": json.dumps([list(c) for c in cases]), "test_fuzz.py": test_fuzz}
    root = make_project(tmp_path_factory.mktemp("fuzz-run"), files, ini=FUZZ_INI, verbatim=True)
    env = {
        "GITHUB_ACTIONS": "true",
        "GITHUB_OUTPUT": str(root / "outputs"),
        "GITHUB_STEP_SUMMARY": str(root / "summary"),
        "GITHUB_WORKSPACE": str(root),
        "PATH": str(Path(PYTHON).parent) + ":/usr/bin:/bin",
        "PYTHONIOENCODING": "utf-8",
    }
    done = subprocess.run(
        [PYTHON, "-m", "flakewarden", "run", "--report-dir", "report", "--", *PYTEST, "-s"],
        cwd=root,
        env=env,
        capture_output=True,
        timeout=120,
    )
    out = done.stdout.decode("utf-8", "replace") + "\n" + done.stderr.decode("utf-8", "replace")
    # A case that fails every time fails the run; flaky ones alone do not (the default).
    assert done.returncode == (0 if all(c[2] for c in cases) else 1), out[-2000:]
    annotations = only_ours(command_stream(out))
    report = json.loads((root / "report" / "report.json").read_text(encoding="utf-8"))
    got = sorted((c.name, c.properties["title"]) for c in annotations)
    assert got == expected_titles(report)
    outcomes = {t["id"].split("[", 1)[1][:-1]: t["outcome"] for t in report["tests"]}
    assert outcomes == {c[0]: "flaky" if c[2] else "failed" for c in cases}


def as_last_property(value: str) -> str:
    """The runner trims the escaped property text: white space but CR and LF (escaped) goes."""
    end = len(value)
    while end > 0 and value[end - 1] not in "\r\n" and dotnet_trim(value[end - 1]) == "":
        end -= 1
    return value[:end]


def hostile_report(ids: list[str], messages: list[str]) -> list[TestResult]:
    tests = [flaky(i, message=m, longrepr=m + "\n" + m) for i, m in zip(ids, messages)]
    tests.append(
        TestResult(
            id=ids[0] + "::failed",
            file="tests/test_x.py",
            line=1,
            outcome=Outcome.FAILED,
            attempts=[
                AttemptResult(
                    attempt=1,
                    outcome=AttemptOutcome.FAILED,
                    duration=0.1,
                    message=messages[0],
                    longrepr="x",
                )
            ],
        )
    )
    return tests


@fuzz(25)
@given(
    ids=st.lists(hostile_text(), min_size=1, max_size=4, unique=True),
    messages=st.lists(hostile_text(), min_size=4, max_size=4),
)
def test_publish_emits_exact_annotations_and_nothing_else(
    tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    ids: list[str],
    messages: list[str],
) -> None:
    report_dir = write_report(tmp_path_factory.mktemp("pub"), hostile_report(ids, messages))
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.delenv("GITHUB_WORKSPACE", raising=False)
    monkeypatch.delenv("GITHUB_OUTPUT", raising=False)
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    capsys.readouterr()
    assert cli.main(["publish", "--report-dir", str(report_dir)]) == 0
    out = capsys.readouterr()
    annotations = only_ours(command_stream(out.out + "\n" + out.err))
    titles = sorted((c.name, c.properties["title"]) for c in annotations)
    wanted = sorted(
        [("warning", f"Flaky test: {i}") for i in ids]
        + [("error", f"Failed test: {ids[0]}::failed")]
    )
    assert titles == sorted((kind, as_last_property(title)) for kind, title in wanted)


@fuzz(15)
@given(
    ids=st.lists(hostile_text(), min_size=1, max_size=4, unique=True),
    messages=st.lists(hostile_text(), min_size=4, max_size=4),
)
def test_issues_prints_only_inert_lines(
    tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    ids: list[str],
    messages: list[str],
) -> None:
    report_dir = write_report(tmp_path_factory.mktemp("iss"), hostile_report(ids, messages))
    with GitHubEmulator() as emu:
        emulator_env(monkeypatch, emu)
        monkeypatch.setenv("GITHUB_ACTIONS", "true")
        capsys.readouterr()
        assert cli.main(["issues", "--report-dir", str(report_dir)]) == 0
        out = capsys.readouterr()
    stream = only_ours(command_stream(out.out + "\n" + out.err))
    # Only flakewarden's own fail-open warning may appear; here GitHub answered.
    assert stream == [], stream
    assert out.out.count("FLAKY-TEST-DETECTED: ") == len(ids)
    for test_id in ids:
        assert f"FLAKY-TEST-DETECTED: {one_line(test_id)} (1/2" in out.out


STRESS_ARGS = ["--runs", "1", "--budget-seconds", "1"]


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX command line")
@fuzz(1)
@example(test_id="a##[stop-commands]hide ::error::X\u2028##[error]Y")
@given(test_id=ids_for_pytest())
def test_stress_prints_only_inert_lines(
    tmp_path_factory: pytest.TempPathFactory, test_id: str
) -> None:
    test_fuzz = (
        "import json, pytest\nfrom pathlib import Path\n\n"
        "IDS = json.loads((Path(__file__).parent / 'ids.json').read_text())\n\n"
        "@pytest.mark.parametrize('i', [0], ids=IDS)\n"
        "def test_case(i):\n"
        "    print(IDS[0])\n"
    )
    files = {"ids.json": json.dumps([test_id]), "test_fuzz.py": test_fuzz}
    root = make_project(tmp_path_factory.mktemp("fuzz-stress"), files, ini=FUZZ_INI, verbatim=True)
    node_id = f"test_fuzz.py::test_case[{test_id}]"
    env = {"GITHUB_ACTIONS": "true", "PATH": str(Path(PYTHON).parent) + ":/usr/bin:/bin"}
    done = subprocess.run(
        [PYTHON, "-m", "flakewarden", "stress", node_id, *STRESS_ARGS, "--", *PYTEST],
        cwd=root,
        env=env,
        capture_output=True,
        timeout=120,
    )
    out = done.stdout.decode("utf-8", "replace") + "\n" + done.stderr.decode("utf-8", "replace")
    assert done.returncode == 0, out[-2000:]
    assert only_ours(command_stream(out)) == []
    assert json.loads((root / "flakewarden-stress" / "verdict.json").read_text())["test_id"] == (
        node_id
    )


@fuzz(200)
@given(values=st.lists(hostile_text(nul=True, long=False), min_size=1, max_size=4))
def test_json_line_keeps_the_value_and_forms_no_command(values: list[str]) -> None:
    document = {"tests": [{"id": value, "tags": [value, "#"]} for value in values]}
    line = json_line(document)
    assert "\n" not in line and "\r" not in line
    assert command_stream(line + "\n") == []
    assert json.loads(line) == document
