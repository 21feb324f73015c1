"""Which Python definitions a change touched: new, changed or only renamed.

A file's definitions (``definitions_in``) are its module-level functions and classes and,
in classes, their methods and nested classes, named as pytest names them (``Class::method``),
each with its lines, decorators included. A function decorated with ``pytest.fixture`` or
``fixture`` (called or not) carries its fixture name, ``name=`` honoured.

``compare`` sets the new side against the old (the file at the merge base, under its old
path when renamed):

- **changed**: a changed line falls in its lines and its normalised form differs from the
  old definition of the same name. The normalised form is the ``ast`` of the definition,
  decorators and arguments included, without its name, line numbers and comments, so
  moving or re-indenting a definition, or editing only its comments, changes nothing.
- **new**: no old definition has its name, and none that is gone has its normalised form.
- **renamed**: no old definition has its name, but one whose name is gone has the same
  normalised form: the same code under another name, not a new test.

A class's own part (decorators, bases, and every statement of its body that is not a
function or class) is compared on its own, so editing one method does not change its class.
"""

from __future__ import annotations

import ast
import copy
import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal, Optional, Union

from .diff import Diff, FileChange, Unavailable
from .git import GitUnusable, read_blob

Kind = Literal["function", "class"]
Touch = Literal["new", "changed", "renamed"]
_Defined = Union[ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef]


@dataclass(frozen=True)
class Definition:
    """A function or class of a file, ``qualname`` as in a node id (``Outer::Inner::test``)."""

    qualname: str
    kind: Kind
    start: int  # its first line, the first decorator's, counted from 1
    end: int  # its last line
    fixture: Optional[str]  # the fixture name, for a fixture
    form: str  # normalised: the ast without name and positions
    own: str  # a class's own part (for a function: ``form``)

    @property
    def parent(self) -> Optional[str]:
        """The enclosing class's qualname; None at module level."""
        head, _, _ = self.qualname.rpartition("::")
        return head or None

    @property
    def name(self) -> str:
        return self.qualname.rpartition("::")[2]


@dataclass(frozen=True)
class Touched:
    """A definition of the new side that the change made new, changed or renamed."""

    definition: Definition
    touch: Touch
    renamed_from: Optional[str] = None  # the old qualname, for ``renamed``


@dataclass(frozen=True)
class FileDefinitions:
    """What a change did to one Python file's definitions."""

    path: str
    definitions: tuple[Definition, ...]  # the new side's, in source order
    touched: tuple[Touched, ...]
    removed: tuple[str, ...]  # old qualnames neither kept nor renamed
    # Its module-level statements other than definitions (imports, constants, hook calls)
    # differ from the old side's.
    module_changed: bool = False

    def touch_of(self, qualname: str) -> Optional[Touched]:
        return next((t for t in self.touched if t.definition.qualname == qualname), None)


def _fixture_name(node: _Defined) -> Optional[str]:
    if isinstance(node, ast.ClassDef):
        return None
    for decorator in node.decorator_list:
        call = decorator if isinstance(decorator, ast.Call) else None
        target = call.func if call is not None else decorator
        named = (isinstance(target, ast.Name) and target.id == "fixture") or (
            isinstance(target, ast.Attribute) and target.attr == "fixture"
        )
        if not named:
            continue
        for keyword in call.keywords if call is not None else ():
            value = keyword.value
            named_by = value.value if isinstance(value, ast.Constant) else None
            if keyword.arg == "name" and isinstance(named_by, str):
                return named_by
        return node.name
    return None


def _normalised(node: _Defined, *, own: bool = False) -> str:
    """``node`` as ``ast.dump`` without its name (and, for ``own``, without nested defs)."""
    bare = copy.copy(node)
    bare.name = ""
    if own and isinstance(bare, ast.ClassDef):
        bare.body = [s for s in bare.body if not isinstance(s, _DEFS)]
    return ast.dump(bare, include_attributes=False)


_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def _walk(body: Iterable[ast.stmt], prefix: str) -> Iterable[Definition]:
    for node in body:
        if not isinstance(node, _DEFS):
            continue
        qualname = f"{prefix}{node.name}"
        starts = [node.lineno, *(d.lineno for d in node.decorator_list)]
        end = node.end_lineno or node.lineno
        if isinstance(node, ast.ClassDef):
            own = _normalised(node, own=True)
            yield Definition(qualname, "class", min(starts), end, None, _normalised(node), own)
            yield from _walk(node.body, f"{qualname}::")
        else:
            form = _normalised(node)
            yield Definition(
                qualname, "function", min(starts), end, _fixture_name(node), form, form
            )


def definitions_in(source: Union[str, bytes], filename: str = "<file>") -> tuple[Definition, ...]:
    """The functions, classes and methods of ``source``; raises ``SyntaxError`` (or
    ``ValueError`` for a null byte) when it does not parse."""
    return _parse(source, filename)[0]


def _parse(source: Union[str, bytes], filename: str) -> tuple[tuple[Definition, ...], str]:
    """The definitions of ``source`` and its module-level statements, normalised."""
    tree = ast.parse(source, filename=filename)
    statements = [s for s in tree.body if not isinstance(s, _DEFS)]
    module = ast.dump(ast.Module(body=statements, type_ignores=[]), include_attributes=False)
    return tuple(_walk(tree.body, "")), module


def compare(
    path: str,
    new: tuple[Definition, ...],
    old: tuple[Definition, ...],
    change: FileChange,
) -> FileDefinitions:
    """What ``change`` did to the definitions ``new`` of ``path``, whose old side is ``old``."""
    old_by_name = {d.qualname: d for d in old}
    new_names = {d.qualname for d in new}
    gone = {d.qualname: d for d in old if d.qualname not in new_names}
    gone_by_form: dict[tuple[Kind, str], str] = {}
    for name, definition in gone.items():
        gone_by_form.setdefault((definition.kind, definition.form), name)
    touched: list[Touched] = []
    renamed: set[str] = set()
    for definition in new:
        before = old_by_name.get(definition.qualname)
        if before is None:
            was = gone_by_form.get((definition.kind, definition.form))
            if was is not None:
                del gone_by_form[(definition.kind, definition.form)]
                renamed.add(was)
                touched.append(Touched(definition, "renamed", was))
            else:
                touched.append(Touched(definition, "new"))
        elif change.touches(definition.start, definition.end) and definition.own != before.own:
            touched.append(Touched(definition, "changed"))
    removed = tuple(name for name in gone if name not in renamed)
    return FileDefinitions(path, new, tuple(touched), removed)


def _parsed(source: bytes, path: str) -> Optional[tuple[tuple[Definition, ...], str]]:
    try:
        return _parse(source, path)
    except (SyntaxError, ValueError):
        return None


def definitions_changed(diff: Diff, change: FileChange) -> Union[FileDefinitions, Unavailable]:
    """What ``change`` (a Python file of ``diff``) did to its definitions, read from git: the
    new side at HEAD, the old at the merge base under its old path. An old side that does
    not parse counts as empty (everything in the new side is new)."""
    try:
        new_source = read_blob(diff.root, diff.head, change.path)
        old_source = (
            None
            if change.old_path is None
            else read_blob(diff.root, diff.merge_base, change.old_path)
        )
    except GitUnusable as error:
        return Unavailable(str(error))
    if new_source is None:
        return Unavailable(f"{change.path} is not in HEAD")
    new = _parsed(new_source, change.path)
    if new is None:
        return Unavailable(f"{change.path} does not parse as Python")
    old = None if old_source is None else _parsed(old_source, change.old_path or "")
    found = compare(change.path, new[0], () if old is None else old[0], change)
    module_changed = new[1] != ("" if old is None else old[1])
    return dataclasses.replace(found, module_changed=module_changed)
