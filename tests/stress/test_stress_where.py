"""Where a race fails, and why: real ``flakewarden stress`` runs on the localisation corpus.

A lost update from six threads (``self.total += cents``, beside a locked audit trail that
every run executes the same way): a race under ``yield``, whose pauses limited to the
racy line fail it where as many pauses elsewhere do not, so the line is named first and
the race is explained as an interleaving there. (Every case of the corpus, with top-1/3/10
rates and the time added: ``benchmarks/bench_where.py``.)
"""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.project import make_project
from helpers.stress_runs import arm, stress
from helpers.where_corpus import LEDGER


@pytest.mark.usefixtures("one_stress_at_a_time")
def test_a_lost_update_is_an_interleaving_at_the_line_its_fix_changes(tmp_path: Path) -> None:
    project = make_project(tmp_path / "ledger", LEDGER.files)
    result, data = stress(project, LEDGER.test)
    assert result.returncode == 0, result.stderr
    assert (data["verdict"], data["knob"]) == ("race", "yield"), data["reason"]
    timing = data["timing"]
    assert timing["kind"] == "interleaving", timing
    assert timing["lines"] == ["ledger.py:13"]
    at, elsewhere = arm(data, "interleaving", "at-suspects"), arm(data, "interleaving", "elsewhere")
    assert at["failures"] > elsewhere["failures"]
    assert "pauses at ledger.py:13 alone failed it" in data["reason"]
    first = data["where"]["suspects"][0]
    assert (first["file"], first["line"]) in LEDGER.fix_lines()
    assert first["parts"]["replay"] == 1.0
    assert "where: ledger.py:13" in result.stdout
