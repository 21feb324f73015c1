"""The merged coverage of a run, as report.json keeps it."""

from __future__ import annotations

import dataclasses
from typing import Any, Optional

from flakewarden.model.coverage_figures import display_percent, fail_under_message, fails_under


@dataclasses.dataclass
class CoverageSummary:
    """The merged coverage of every attempt.

    ``percent`` is coverage.py's unrounded total and ``precision`` the project's ``[report]
    precision``: every place that shows the total shows ``percent_display``, what ``coverage
    report`` prints. A report.json written before the precision was kept has ``precision``
    None and a ``percent`` already rounded; it is shown with the digits it has.
    """

    percent: Optional[float]
    data_file: str = ""  # relative to the report dir
    xml_file: str = ""
    branch: bool = False
    files_combined: int = 0
    fail_under: Optional[float] = None
    errors: list[str] = dataclasses.field(default_factory=list)
    precision: Optional[int] = 0

    @property
    def percent_display(self) -> str:
        """The total as ``coverage report`` shows it (no ``%``), or "" when not measured."""
        if self.percent is None:
            return ""
        if self.precision is None:
            return f"{self.percent:g}"
        return display_percent(self.percent, self.precision)

    @property
    def below_threshold(self) -> bool:
        if self.fail_under is None or self.percent is None:
            return False
        if self.precision is None:
            return self.percent + 1e-9 < self.fail_under
        return fails_under(self.percent, self.fail_under, self.precision)

    @property
    def gate_message(self) -> str:
        """Why the gate failed, in coverage.py's words and digits; "" when it did not."""
        if not self.below_threshold or self.precision is None:
            return ""
        assert self.percent is not None and self.fail_under is not None
        return fail_under_message(self.percent, self.fail_under, self.precision)

    def to_json(self) -> dict[str, Any]:
        return {
            "percent": self.percent,
            "percent_display": self.percent_display or None,
            "precision": self.precision,
            "data_file": self.data_file,
            "xml_file": self.xml_file,
            "branch": self.branch,
            "files_combined": self.files_combined,
            "fail_under": self.fail_under,
            "errors": self.errors,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> CoverageSummary:
        percent = data.get("percent")
        precision = data.get("precision")
        fail_under = data.get("fail_under")
        return cls(
            percent=None if percent is None else float(percent),
            data_file=str(data.get("data_file") or ""),
            xml_file=str(data.get("xml_file") or ""),
            branch=bool(data.get("branch", False)),
            files_combined=int(data.get("files_combined", 0)),
            fail_under=None if fail_under is None else float(fail_under),
            errors=[str(e) for e in data.get("errors", [])],
            precision=None if precision is None else int(precision),
        )
