"""A verdict's ``where`` in every output: ``verdict.json``, ``verdict.md`` and the console.

The suspects' file names and code text come from the tested project (and, after a merge,
from a shard's artifact): hostile text stays text everywhere.
"""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

from helpers.workflow_commands import command_stream

from flakewarden.commands.stress import _show
from flakewarden.model.suspects import Suspect
from flakewarden.stress.verdict import Arm, Verdict, read_verdict
from flakewarden.stress.verdict_render import write_verdict

HOSTILE_TEXT = "::error::pwned | <script>alert(1)</script> `x` ##[warning]w"
HOSTILE_FILE = "a|b/<img src=x onerror=alert(1)>.py"


def _verdict(suspects: list[Suspect]) -> Verdict:
    return Verdict(
        "t.py::t",
        "race",
        "a knob raised the rate",
        "rule",
        arms=[Arm("timing", "baseline", runs=10, failures=0)],
        knob="yield",
        where={
            "suspects": [s.to_json() for s in suspects],
            "note": "4 suspect line(s) from 6 failing and 6 passing runs",
            "runs": {"failing": 6, "passing": 6},
        },
    )


def _suspects() -> list[Suspect]:
    return [
        Suspect(HOSTILE_FILE, n, HOSTILE_TEXT, 1.0 - n / 10, HOSTILE_TEXT, {"spectrum": 0.9})
        for n in range(1, 5)
    ]


def test_where_survives_the_file_and_the_first_three_lines_come_first(tmp_path: Path) -> None:
    verdict = _verdict(_suspects())
    write_verdict(verdict, tmp_path)
    again = read_verdict(tmp_path)
    assert again.suspects == verdict.suspects
    markdown = (tmp_path / "verdict.md").read_text(encoding="utf-8")
    where = markdown.index("## Where to look")
    assert where < markdown.index("## Failure rate by arm")
    head = markdown[where:].split("\n\n| line |")[0]
    assert head.count("\n- ") == 3  # the first three as a list, the rest in a table
    # Outside code spans (which GitHub shows as text), no HTML survives.
    prose = re.sub(r"(`+)(?!`).*?(?<!`)\1(?!`)", "", markdown)
    assert "<script>" not in prose and "<img" not in prose and "::error::" not in prose
    assert "&lt;script&gt;" in prose  # the evidence text, escaped
    # The fourth suspect's row keeps its four cells: no bare | splits it.
    row = next(line for line in markdown.splitlines() if line.startswith("| `a"))
    assert row.replace("\\|", "").count("|") == 5


def test_where_on_the_console_forms_no_workflow_command(tmp_path: Path) -> None:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        _show(_verdict(_suspects()), tmp_path)
    printed = out.getvalue()
    assert printed.count("  where: ") == 3
    assert command_stream(printed) == []
