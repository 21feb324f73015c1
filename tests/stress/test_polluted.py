"""What a polluter leaves behind, tied to the line that wrote it: exact names and candidates."""

from __future__ import annotations

import textwrap

from flakewarden.model.records import TestRecord
from flakewarden.stress.cues import Source
from flakewarden.stress.polluted import localise

LAZY = textwrap.dedent(
    """
    class MovedModule:
        def __get__(self, obj, tp):
            result = self._resolve()
            setattr(obj, self.name, result)
            delattr(obj.__class__, self.name)
            return result
    """
).lstrip()
SETTINGS = 'settings.MODE = "debug"\n'
VICTIM = 'assert settings.MODE == "prod"\nassert "html_parser" not in moved.__dict__\n'
FILES = {"six.py": Source(LAZY), "test_config.py": Source(SETTINGS), "test_v.py": Source(VICTIM)}


def _record(*changes: tuple[str, str, str, str]) -> TestRecord:
    state = [{"kind": k, "name": n, "before": b, "after": a} for k, n, b, a in changes]
    return TestRecord.from_json({"kind": "test", "id": "p", "phases": [], "state": state})


def test_a_name_written_by_a_computed_attribute_is_only_a_candidate() -> None:
    moved = ("class", "six._MovedItems.html_parser", "<MovedModule object>", "<absent>")
    mode = ("global", "settings.MODE", "'prod'", "'debug'")
    runs = [[_record(moved, mode)], [_record(moved, mode)]]
    lines = {"six.py": {3: 1, 4: 1, 5: 1}, "test_config.py": {1: 1}}
    left, suspects = localise(runs, lines, {"test_v.py": {1: 1, 2: 1}}, FILES.__getitem__)
    by_name = {x.change.name: x for x in left}
    exact, candidate = by_name["settings.MODE"], by_name["six._MovedItems.html_parser"]
    assert exact.exact and exact.written_at == ("test_config.py", 1)
    assert "written at test_config.py:1 (the test reads it at test_v.py:1)" in exact.describe()
    assert not candidate.exact and candidate.written_at == ("six.py", 4)
    assert "possibly written at six.py:4" in candidate.describe()
    scores = {s.location: s.score for s in suspects}
    assert scores["test_config.py:1"] == 1.0 and scores["six.py:4"] < scores["test_config.py:1"]
    assert candidate.to_json()["written_exactly"] is False
