"""A change one run made to state the tests of a process share (``FLAKEWARDEN_STATE``).

The plugin compares the state right before a run's setup with the state right after its
teardown; an order-dependent test's polluter is found by what it leaves behind, and the
localisation names the line that wrote it. Values are bounded ``repr`` text, as recorded.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple, Optional

GLOBAL = "global"  # a module-level name of the project's: ``depot.settings.CURRENCY``
CLASS = "class"  # a class attribute: ``depot.models.Order.discount``
ENV = "env"  # an environment variable
CWD = "cwd"  # the working directory (no name)
FILE = "file"  # a file under the rootdir, by its path relative to it
MODULE = "module"  # a module imported (in ``sys.modules``), by its dotted name
KINDS = (GLOBAL, CLASS, ENV, CWD, FILE, MODULE)
MAX_TEXT = 200  # characters kept of a value or a name read back


class StateChange(NamedTuple):
    kind: str
    name: str
    before: str
    after: str

    @property
    def short_name(self) -> str:
        """The name code writes to: the last part of a dotted global or attribute."""
        return self.name.rsplit(".", 1)[-1] if self.kind in (GLOBAL, CLASS) else self.name

    def describe(self) -> str:
        """``depot.settings.CURRENCY: 'EUR' → 'USD'``, in words for each kind."""
        if self.kind == CWD:
            return f"the working directory: {self.before} → {self.after}"
        if self.kind == MODULE:
            done = "imported" if self.before == "<absent>" else "unloaded"
            return f"the module {self.name} was {done}"
        if self.kind == FILE:
            if self.before == "<absent>":
                return f"the file {self.name} was created"
            if self.after == "<absent>":
                return f"the file {self.name} was deleted"
            return f"the file {self.name} was modified"
        what = {ENV: "the environment variable ", CLASS: "the class attribute "}.get(self.kind, "")
        return f"{what}{self.name}: {self.before} → {self.after}"

    def to_json(self) -> dict[str, str]:
        return {"kind": self.kind, "name": self.name, "before": self.before, "after": self.after}

    @classmethod
    def from_json(cls, data: Any) -> Optional[StateChange]:
        if not isinstance(data, Mapping) or data.get("kind") not in KINDS:
            return None
        fields = [data.get(key) for key in ("name", "before", "after")]
        if not all(isinstance(field, str) for field in fields):
            return None
        name, before, after = (str(field)[:MAX_TEXT] for field in fields)
        return cls(str(data["kind"]), name, before, after)
