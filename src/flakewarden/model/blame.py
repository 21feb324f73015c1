"""Blame: whether a failed test ran the change under review, and whether the base fails too.

``TestChange`` is what ``report.json`` holds per test whose first attempt failed, under
``"change"``: ``verdict`` (``touches``: it executed a changed line; ``untouched``: it ran
none, and nothing coverage cannot see could have reached it; ``unknown``: coverage cannot
tell), the changed lines it ran per file as ``[first, last]`` ranges, and ``why`` in a
sentence. ``BaseCheck`` is the test run again on the merge base, under ``"base"``.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Optional

from flakewarden.model.verdicts import (
    BASE_VERDICTS,
    CHANGE_VERDICTS,
    UNTOUCHED_POLICIES,
    BaseVerdict,
    ChangeVerdict,
)


@dataclasses.dataclass
class TestChange:
    """Whether one failed test executed the change (see the module's docstring)."""

    __test__ = False

    verdict: ChangeVerdict
    lines: dict[str, list[tuple[int, int]]] = dataclasses.field(default_factory=dict)
    why: str = ""

    @property
    def line_count(self) -> int:
        return sum(last - first + 1 for ranges in self.lines.values() for first, last in ranges)

    def shown(self) -> str:
        """The phrase reports show: ``ran 3 changed lines in src/shop/cart.py``."""
        if self.verdict == "touches":
            count = self.line_count
            files = sorted(self.lines)
            where = files[0] if len(files) == 1 else f"{len(files)} files ({', '.join(files[:3])})"
            return f"ran {count} changed line{'s' if count != 1 else ''} in {where}"
        if self.verdict == "untouched":
            return "ran none of this pull request's changes"
        return (
            f"cannot tell whether it ran the change: {self.why}"
            if self.why
            else ("cannot tell whether it ran the change")
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "verdict": self.verdict,
            "lines": {path: [list(r) for r in ranges] for path, ranges in self.lines.items()},
            "why": self.why,
        }

    @classmethod
    def from_json(cls, data: Any) -> Optional[TestChange]:
        """The value ``to_json`` wrote; None for anything else (an older or a foreign file)."""
        if not isinstance(data, dict) or data.get("verdict") not in CHANGE_VERDICTS:
            return None
        lines: dict[str, list[tuple[int, int]]] = {}
        raw = data.get("lines")
        for path, ranges in raw.items() if isinstance(raw, dict) else ():
            if not isinstance(path, str) or not isinstance(ranges, list):
                continue
            kept = [
                (r[0], r[1])
                for r in ranges
                if isinstance(r, list) and len(r) == 2 and all(type(n) is int for n in r)
            ]
            if kept:
                lines[path] = kept
        return cls(data["verdict"], lines, str(data.get("why") or ""))


@dataclasses.dataclass
class BaseCheck:
    """The test run on a worktree of the merge base: ``fails``, ``passes`` or ``error``."""

    verdict: BaseVerdict
    commit: str = ""  # the merge base it ran on
    why: str = ""  # for ``error``: what went wrong; else what it did there

    def shown(self) -> str:
        if self.verdict == "fails":
            return "fails on the base too"
        if self.verdict == "passes":
            return "passes on the base"
        return (
            f"could not be run on the base: {self.why}"
            if self.why
            else ("could not be run on the base")
        )

    def to_json(self) -> dict[str, Any]:
        return {"verdict": self.verdict, "commit": self.commit, "why": self.why}

    @classmethod
    def from_json(cls, data: Any) -> Optional[BaseCheck]:
        if not isinstance(data, dict) or data.get("verdict") not in BASE_VERDICTS:
            return None
        return cls(data["verdict"], str(data.get("commit") or ""), str(data.get("why") or ""))


@dataclasses.dataclass
class BlameRun:
    """The change a run was judged against, under ``report.json``'s ``"blame"``.

    ``unavailable`` says why no test was judged (a shallow clone, a missing base), and what
    to fetch; ``policy`` is ``blame.untouched_failures``; ``ignored`` the failed tests that
    policy kept out of the gate (untouched, and failing on the base too).
    """

    base: str
    merge_base: str = ""
    head: str = ""
    files: list[str] = dataclasses.field(default_factory=list)  # changed, new-tree paths
    changed_lines: int = 0
    unavailable: str = ""
    policy: str = "report"
    ignored: list[str] = dataclasses.field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, data: Any) -> Optional[BlameRun]:
        if not isinstance(data, dict) or not isinstance(data.get("base"), str):
            return None
        policy = data.get("policy")
        return cls(
            base=data["base"],
            merge_base=str(data.get("merge_base") or ""),
            head=str(data.get("head") or ""),
            files=[str(f) for f in data.get("files") or [] if isinstance(f, str)],
            changed_lines=int(data.get("changed_lines") or 0),
            unavailable=str(data.get("unavailable") or ""),
            policy=policy if policy in UNTOUCHED_POLICIES else "report",
            ignored=[str(i) for i in data.get("ignored") or [] if isinstance(i, str)],
        )
