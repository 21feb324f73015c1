"""Reading the plugin's records: batched decoding keeps every line-by-line answer."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import pytest
from helpers.project import Project
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from flakewarden.runner import process_results
from flakewarden.runner.process_results import BATCH_LINES, RecordReader, read_results
from flakewarden.runner.sessions import judge_session


def _test_line(index: int, stdout: str = "") -> str:
    record = {
        "kind": "test",
        "id": f"t.py::test_{index}",
        "file": "t.py",
        "line": index,
        "index": index,
        "phases": [{"when": "call", "outcome": "passed", "duration": 0.001}],
        "stdout": stdout,
    }
    return json.dumps(record, ensure_ascii=False)


def test_a_bad_line_in_a_batch_costs_only_itself(tmp_path: Path) -> None:
    # U+2028, U+0085 and a form feed are line breaks to str.splitlines, not to JSON lines.
    odd = "a\u2028b\x85c\x0cd"
    lines = [json.dumps({"kind": "config", "rootdir": str(tmp_path), "pid": 1})]
    lines += [_test_line(i, odd if i == 7 else "") for i in range(BATCH_LINES + 50)]
    lines.insert(300, _test_line(9999)[:40])  # cut short, as by a kill mid-write
    lines.insert(400, '{"kind": "start", "id": "x"}, {"kind": "start", "id": "y"}')
    lines.insert(500, "")
    lines.append('{"kind": "session", "exitstatus": 1, "testscollected": 3}')
    lines.append(json.dumps({"kind": "start", "id": "t.py::last", "file": "t.py", "line": 2}))
    path = tmp_path / "results.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")

    results = read_results(path)

    assert results.corrupt_lines == 2
    assert results.refused is None  # a line cut short or malformed is no refusal
    assert [r.id for r in results.tests] == [f"t.py::test_{i}" for i in range(BATCH_LINES + 50)]
    assert results.tests[7].stdout == odd
    assert results.exitstatus == 1 and results.testscollected == 3
    assert results.config is not None and results.config["pid"] == 1
    assert [start.id for start in results.running] == ["t.py::last"]


def test_a_results_file_cut_short_at_its_end(tmp_path: Path) -> None:
    path = tmp_path / "results.jsonl"
    path.write_text(_test_line(0) + "\n" + _test_line(1)[:-5], encoding="utf-8")
    results = read_results(path)
    assert [r.id for r in results.tests] == ["t.py::test_0"]
    assert results.corrupt_lines == 1
    assert not read_results(tmp_path / "missing.jsonl").started


def _config(tmp_path: Path) -> str:
    return json.dumps({"kind": "config", "rootdir": str(tmp_path), "pid": 1})


def test_records_out_of_the_limits_are_refused_beside_valid_ones(tmp_path: Path) -> None:
    hostile = [
        _test_line(9001).replace('"duration": 0.001', '"duration": NaN'),
        _test_line(9002).replace('"line": 9002', '"line": Infinity'),
        _test_line(9003).replace('"line": 9003', f'"line": {10**30}'),
        '{"kind": "test", "id": "deep", "x": ' + "[" * 100_000 + "]" * 100_000 + "}",
    ]
    lines = [_config(tmp_path)]
    for i in range(40):
        lines.append(_test_line(i))
        if i % 10 == 5:
            lines.append(hostile[i // 10])
    path = tmp_path / "results.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")

    results = read_results(path)

    assert [r.id for r in results.tests] == [f"t.py::test_{i}" for i in range(40)]
    assert results.corrupt_lines == 4
    assert results.refused is not None
    assert "NaN is not a number JSON allows; the record was refused" in results.refused
    assert "\n" not in results.refused
    [problem] = judge_session(results, 1).problems
    assert problem == f"attempt 1: {results.refused}"
    # Alone, the deep record is named too.
    deep = tmp_path / "deep.jsonl"
    deep.write_text(_config(tmp_path) + "\n" + hostile[3] + "\n", encoding="utf-8")
    assert "nested deeper than 64 levels" in str(read_results(deep).refused)


def test_tests_whose_records_were_refused_are_not_said_never_to_have_run(tmp_path: Path) -> None:
    """pytest counted 3 tests; one record of 3 was refused: its test ran, its record is
    what is missing, and the run is not green."""
    refused = _test_line(2).replace('"duration": 0.001', '"duration": NaN')
    session = {"kind": "session", "exitstatus": 0, "testscollected": 3}
    lines = [_config(tmp_path), _test_line(0), _test_line(1), refused, json.dumps(session)]
    path = tmp_path / "results.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    verdict = judge_session(read_results(path), 1)
    assert verdict.not_green
    assert verdict.problems[1] == (
        "attempt 1: 1 of 3 tests have no record (1 record(s) could not be read or were "
        "refused), so the run cannot be green"
    )
    assert not any("never ran" in problem for problem in verdict.problems)


def test_a_line_past_the_limit_is_dropped_to_its_end_as_it_is_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(process_results, "MAX_RECORD_LINE", 2_000)
    path = tmp_path / "results.jsonl"
    reader = RecordReader(path)
    with path.open("w", encoding="utf-8") as stream:
        stream.write(_config(tmp_path) + "\n" + _test_line(0) + "\n")
        stream.write('{"kind": "test", "id": "big", "stdout": "' + "x" * 3_000)
        stream.flush()
        reader.read_available()  # the long line's start: past the limit, never held whole
        stream.write("x" * 3_000 + '"}\n' + _test_line(1) + "\n")
        stream.write(_test_line(2, stdout="y" * 2_500) + "\n")  # past it, in one piece
        stream.write(_test_line(3) + "\n")
    results = reader.finish()
    assert [r.id for r in results.tests] == ["t.py::test_0", "t.py::test_1", "t.py::test_3"]
    assert results.corrupt_lines == 2
    assert results.refused == f"a record in {path} of over 2,000 bytes was refused"


def test_a_file_past_the_limit_keeps_the_records_before_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lines = [_config(tmp_path)] + [_test_line(i) for i in range(100)]
    kept = len("\n".join(lines[:51])) + 1  # the config and 50 tests, with their line breaks
    monkeypatch.setattr(process_results, "MAX_RECORD_BYTES", kept + 10)
    path = tmp_path / "results.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    results = read_results(path)
    # The 51st test's line is cut at the limit: it is counted, not read.
    assert [r.id for r in results.tests] == [f"t.py::test_{i}" for i in range(50)]
    assert results.refused == (f"{path} holds more than {kept + 10:,} bytes: the rest was refused")


def test_a_fifo_or_a_link_out_is_refused_at_once(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo" / "results.jsonl"
    fifo.parent.mkdir()
    os.mkfifo(fifo)
    started = time.monotonic()
    results = read_results(fifo)
    assert time.monotonic() - started < 5  # never waits for a writer
    assert results.refused == f"{fifo} is not a regular file (a FIFO): refused"
    outside = tmp_path / "outside.jsonl"
    outside.write_text(_config(tmp_path) + "\n" + _test_line(0) + "\n", encoding="utf-8")
    link = tmp_path / "link" / "results.jsonl"
    link.parent.mkdir()
    link.symlink_to(outside)
    linked = read_results(link)
    assert linked.tests == [] and linked.refused is not None and "(a link)" in linked.refused


_JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**80), max_value=2**80)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(
            st.sampled_from(["kind", "id", "line", "phases", "x"]), children, max_size=4
        )
    ),
    max_leaves=20,
)


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.lists(_JSON, max_size=6))
def test_any_json_value_as_a_record_never_stops_the_reader(
    tmp_path: Path, values: list[Any]
) -> None:
    lines = [_config(tmp_path), _test_line(0)]
    lines += [json.dumps(v, allow_nan=True) for v in values]
    lines.append(_test_line(1))
    path = tmp_path / "results.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    results = read_results(path)  # no exception: each value is read, counted or refused
    assert [r.id for r in results.tests][:1] == ["t.py::test_0"]
    assert results.tests[-1].id == "t.py::test_1"


def test_a_run_says_the_record_its_tests_forged_and_keeps_the_rest(project: Project) -> None:
    project.write(
        "tests/test_f.py",
        """
import os


def test_forges():
    with open(os.environ["FLAKEWARDEN_RESULTS"], "a", encoding="utf-8") as stream:
        stream.write('{"kind": "test", "id": "x", "phases": [], "duration": NaN}\\n')


def test_after():
    pass
""",
    )
    result = project.run()
    assert result.returncode == 0, result.stderr
    ids = [t["id"] for t in result.report["tests"]]
    assert ids == ["tests/test_f.py::test_forges", "tests/test_f.py::test_after"]
    [problem] = result.report["problems"]
    assert problem.startswith("attempt 1: cannot read ")
    assert problem.endswith("NaN is not a number JSON allows; the record was refused")


def test_a_test_id_of_a_million_brackets_is_a_record_kept(project: Project) -> None:
    """A parameter's text as its id (``ids=str``): a record whose id holds more brackets than
    a document may hold containers is one string, and neither refused nor lost."""
    project.write(
        "tests/test_f.py",
        """
import pytest


@pytest.mark.parametrize("text", ["[" + "{}," * 1_000_001 + "]", "0," * 4_000_001], ids=str)
def test_takes(text):
    assert text


def test_after():
    pass
""",
    )
    result = project.run()
    assert result.returncode == 0, result.stderr
    assert result.report["problems"] == []
    ids = [t["id"] for t in result.report["tests"]]
    assert len(ids) == 3 and ids[-1] == "tests/test_f.py::test_after"
    assert ids[0].count("{") == 1_000_001 and ids[1].count(",") == 4_000_001
    assert all(t["outcome"] == "passed" for t in result.report["tests"])


def test_a_rerun_that_crashes_after_its_tests_still_says_the_record_they_forged(
    project: Project,
) -> None:
    """The rerun's session never finishes (a hook ends its process after the tests), so no
    session check runs for it: the refused record is listed all the same."""
    project.write(
        "tests/conftest.py",
        """
import os


def pytest_sessionfinish(session):
    if os.path.exists("finished-once"):
        os._exit(1)  # the rerun's session ends here, after its tests
    open("finished-once", "w").close()
""",
    )
    project.write(
        "tests/test_f.py",
        """
import os


def test_forges_on_its_rerun():
    if not os.path.exists("failed-once"):
        open("failed-once", "w").close()
        assert False, "first attempt"
    with open(os.environ["FLAKEWARDEN_RESULTS"], "a", encoding="utf-8") as stream:
        stream.write('{"kind": "test", "id": "x", "phases": [], "duration": NaN}\\n')
""",
    )
    result = project.run()
    [test] = result.report["tests"]
    assert test["id"] == "tests/test_f.py::test_forges_on_its_rerun"
    assert [a["outcome"] for a in test["attempts"]] == ["failed", "passed"]
    refused = [p for p in result.report["problems"] if "the record was refused" in p]
    assert len(refused) == 1 and refused[0].startswith("attempt 2: cannot read "), result.report[
        "problems"
    ]
