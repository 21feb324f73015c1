"""Running code right after a module is imported, before anyone else can use it.

The asyncio knob patches ``asyncio.base_events`` and the random seed seeds ``numpy.random``
as each loads, when they are not loaded yet. ``OnImport`` sits first on ``sys.meta_path``,
finds the module as the other finders would, runs its loader, calls ``then(module)`` and
leaves. Standard library only.
"""

from __future__ import annotations

import sys
from typing import Any, Callable, Optional


class OnImport:
    """A finder for one module name: ``then(module)`` right after it executes, once."""

    def __init__(self, name: str, then: Callable[[Any], None]) -> None:
        self.name = name
        self.then = then

    def install(self) -> None:
        sys.meta_path.insert(0, self)

    def remove(self) -> None:
        if self in sys.meta_path:
            sys.meta_path.remove(self)

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        if name != self.name:
            return None
        for finder in list(sys.meta_path):
            find = getattr(finder, "find_spec", None)
            if finder is self or find is None:
                continue
            spec = find(name, path, target)
            if spec is not None:
                if spec.loader is not None and hasattr(spec.loader, "exec_module"):
                    spec.loader = _Then(spec.loader, self)
                return spec
        return None


class _Then:
    """Runs the module's own loader, then the finder's ``then``."""

    def __init__(self, loader: Any, owner: OnImport) -> None:
        self.loader = loader
        self.owner = owner

    def create_module(self, spec: Any) -> Optional[Any]:
        create = getattr(self.loader, "create_module", None)
        return create(spec) if create is not None else None

    def exec_module(self, module: Any) -> None:
        self.loader.exec_module(module)
        self.owner.remove()
        self.owner.then(module)

    def __getattr__(self, name: str) -> Any:  # get_source, is_package, resources, ...
        return getattr(self.loader, name)
