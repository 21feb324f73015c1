"""Reading the plugin's records: batched decoding keeps every line-by-line answer."""

from __future__ import annotations

import json
from pathlib import Path

from flakewarden.runner.process_results import BATCH_LINES, read_results


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
