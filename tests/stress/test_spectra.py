"""Line spectra, cues and suspects: the localisation's pure parts, on hand-made runs and code."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from flakewarden.model.signatures import project_frames
from flakewarden.model.suspects import Suspect
from flakewarden.stress import cues
from flakewarden.stress.cues import Source, read_source
from flakewarden.stress.spectra import ochiai, score_lines


def test_a_branch_only_failing_runs_take_scores_one_and_shared_lines_score_nothing() -> None:
    # Every run runs lines 1-2; failing runs take line 5, passing runs line 7.
    failing = [{"m.py": {1: 1, 2: 1, 5: 1}}] * 4
    passing = [{"m.py": {1: 1, 2: 1, 7: 1}}] * 6
    scores = {s.line: s for s in score_lines(failing, passing)}
    assert scores[5].score == 1.0 and scores[5].exclusive
    assert scores[1].score == scores[2].score == 0.0  # every run ran them: no evidence
    assert 7 not in scores  # no failing run ran it
    assert scores[5].says() == "ran in 4/4 failing runs and 0/6 passing runs"


def test_a_line_run_more_often_in_failing_runs_scores_by_how_many_did() -> None:
    # A check-then-act race: the build runs twice when it loses, once when it does not.
    failing = [{"c.py": {3: 8, 4: 2}}, {"c.py": {3: 8, 4: 2}}, {"c.py": {3: 8, 4: 1}}]
    passing = [{"c.py": {3: 8, 4: 1}}] * 5
    scores = {s.line: s for s in score_lines(failing, passing)}
    assert scores[3].score == 0.0
    assert scores[4].more == 2 and scores[4].score == pytest.approx((2 / 3) ** 0.5)
    assert "more often than in any passing run (at most 1x) in 2/3 failing runs" in (
        scores[4].says()
    )


@pytest.mark.parametrize(
    ("ef", "ep", "failing", "expected"),
    [(4, 0, 4, 1.0), (0, 3, 4, 0.0), (2, 2, 4, 2 / (4 * 4) ** 0.5), (1, 0, 0, 0.0)],
)
def test_ochiai(ef: int, ep: int, failing: int, expected: float) -> None:
    assert ochiai(ef, ep, failing) == pytest.approx(expected)


CODE = """
import asyncio
import random
import threading
import time

TIMEOUT = 0.25


class Box:
    def __init__(self):
        self.items = {}

    def put(self, key):
        self.items[key] = random.random()
        self.count += 1

    def names(self, names):
        return ",".join({n.lower() for n in names})

    async def fetch(self):
        await asyncio.sleep(0)

    def wait(self, worker):
        worker.join(timeout=TIMEOUT)
        time.sleep(0.1)
"""


def test_cues_name_what_each_kind_of_flakiness_needs() -> None:
    source = Source(CODE.lstrip("\n"))
    line = {text.strip(): n for n, text in enumerate(CODE.lstrip("\n").splitlines(), 1)}
    assert cues.WRITE in source.cues[line["self.items[key] = random.random()"]]
    assert cues.DRAW in source.cues[line["self.items[key] = random.random()"]]
    assert cues.WRITE in source.cues[line["self.count += 1"]]
    assert cues.SET in source.cues[line['return ",".join({n.lower() for n in names})']]
    assert cues.AWAIT in source.cues[line["await asyncio.sleep(0)"]]
    waits = line["worker.join(timeout=TIMEOUT)"]
    assert cues.DEADLINE in source.cues[waits]
    assert source.deadline(waits) == "TIMEOUT (= 0.25)"  # a named constant's value too
    assert source.deadline(line["time.sleep(0.1)"]) == "0.1"
    assert source.function_of(line["self.count += 1"]) == (line["def put(self, key):"], 15)


def test_a_file_outside_the_rootdir_or_unparsable_gives_no_cue(tmp_path: Path) -> None:
    (tmp_path / "root").mkdir()
    (tmp_path / "outside.py").write_text("x = {1}\n", encoding="utf-8")
    (tmp_path / "root" / "broken.py").write_text("def (:\n", encoding="utf-8")
    assert read_source(tmp_path / "root", "../outside.py").lines == []
    broken = read_source(tmp_path / "root", "broken.py")
    assert broken.cues == {} and broken.text(1) == "def (:"


def test_the_project_frames_of_a_long_traceback_innermost_last() -> None:
    text = "\n".join(
        [
            "    def test_total():",
            ">       assert shop.total(5) == 4",
            "",
            "test_shop.py:7: ",
            "    def total(cents):",
            ">       raise ValueError(cents)",
            "E       ValueError: 5",
            "",
            "shop.py:3: ValueError",
            "/usr/lib/python3/site-packages/x.py:9: in call",
        ]
    )
    assert project_frames(text) == [("test_shop.py", 7), ("shop.py", 3)]


def test_a_suspect_survives_json_and_hostile_text_stays_text() -> None:
    hostile = "x = 1  # ::error::pwned <script>alert(1)</script> | `tick`"
    suspect = Suspect("a b/`m`.py", 3, hostile, 0.9, "ran in 3/3 failing runs", {"spectrum": 0.9})
    again = Suspect.from_json(json.loads(json.dumps(suspect.to_json())))
    assert again == suspect
    assert again.location == "a b/`m`.py:3"


def test_a_deadline_is_named_from_what_the_runs_show() -> None:
    from flakewarden.stress.interleaving import _as_deadline
    from flakewarden.stress.phase import Finding

    race = Finding("race", "the failure rate climbs under cpu-load", "rule", knob="cpu-load")
    timing = {"kind": "deadline", "by": "the cpu-load knob only slows the test"}
    ran = {
        "file": "report.py",
        "line": 33,
        "text": "worker.join(timeout=DEADLINE)",
        "value": "DEADLINE (= 0.25)",
        "raised": False,
        "others": ["report.py:40 (0.5)"],
        "failing_runs": 14,
    }
    named = _as_deadline(race, timing, ran)
    assert named.verdict == "race" and named.timing["deadline"] == ran
    assert "every failing run waited with a deadline at report.py:33 (and at report.py:40" in (
        named.reason
    )
    assert "worker.join" not in named.reason  # the source line is in where, not the reason
    first = Suspect.from_json(named.where["suspects"][0])
    assert (first.file, first.line, first.parts) == ("report.py", 33, {"deadline": 1.0})
    assert "each of the 14 failing runs ran" in first.evidence
    raised = _as_deadline(race, timing, {**ran, "raised": True, "others": []})
    assert "the wait that expired, in the failure's traceback, is at report.py:33" in (
        raised.reason
    )
    unnamed = _as_deadline(race, timing, None)
    assert "no wait with a deadline ran in every failing run" in unnamed.reason
    assert "deadline" not in unnamed.timing
