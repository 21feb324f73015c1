"""The names each line of code writes: what a polluter's line may have changed.

An order-dependent test's polluter leaves state behind (``model.state``); among the lines
the polluter's run executed, the one that wrote it is the line to open. Read from the
syntax alone, a line writes a name when it assigns it (``NAME = ...``, ``obj.NAME = ...``,
``NAME += ...``), mutates it in place (``NAME.append(...)``, ``NAME[key] = ...``), sets it
by string (``setattr(obj, "NAME", ...)``, ``monkeypatch.setattr("pkg.mod.NAME", ...)``),
sets an environment variable (``os.environ["KEY"] = ...``, ``setenv("KEY", ...)``,
``putenv``), changes the working directory (``chdir``), writes a file (``open`` for
writing, ``write_text``, ``touch``, ``unlink`` and the like) or imports a module. A
``setattr`` or ``delattr`` by a computed name, or an import by a computed name, is marked
as such: it may have written any attribute or module.
"""

from __future__ import annotations

import ast

CWD = "<cwd>"  # a line that changes the working directory
FILE = "<file>"  # a line that writes, creates or removes a file
BY_NAME = "<by name>"  # sets or deletes an attribute whose name is computed
IMPORT = "<import>"  # imports a module whose name is computed
MUTATORS = {
    "append",
    "extend",
    "insert",
    "add",
    "update",
    "setdefault",
    "pop",
    "popitem",
    "remove",
    "discard",
    "clear",
    "sort",
    "reverse",
}
_ENV_SETTERS = {"setenv", "putenv", "delenv", "unsetenv"}
_FILE_CALLS = {
    "write_text",
    "write_bytes",
    "touch",
    "mkdir",
    "makedirs",
    "unlink",
    "remove",
    "rmdir",
    "rmtree",
    "rename",
    "replace",
    "copy",
    "copyfile",
    "copytree",
    "move",
}


def _target_names(node: ast.AST) -> set[str]:
    """The names an assignment target writes: the name, the attribute, a string key."""
    if isinstance(node, ast.Name):
        return {node.id}
    if isinstance(node, ast.Attribute):
        # obj.settings.PORT = ...: PORT is written, and the objects it hangs from change too
        return {node.attr} | _target_names(node.value)
    if isinstance(node, ast.Subscript):
        names = _target_names(node.value)
        key = node.slice
        if isinstance(key, ast.Constant) and isinstance(key.value, str):
            names.add(key.value)  # os.environ["KEY"] = ...: the variable's name
        return names
    if isinstance(node, (ast.Tuple, ast.List)):
        return set().union(*(_target_names(e) for e in node.elts)) if node.elts else set()
    if isinstance(node, ast.Starred):
        return _target_names(node.value)
    return set()


def _string(node: ast.AST) -> str:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else ""


def _call_names(node: ast.Call) -> set[str]:
    func = node.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    found: set[str] = set()
    if name == "setattr" or name == "delattr":
        # setattr(obj, "NAME", v); monkeypatch.setattr(obj, "NAME", v) or ("pkg.mod.NAME", v)
        for arg in node.args[:2]:
            text = _string(arg)
            if text:
                found.add(text.rsplit(".", 1)[-1])
        if not found:
            found.add(BY_NAME)
    elif name in ("__import__", "import_module"):
        text = _string(node.args[0]) if node.args else ""
        found.add(text or IMPORT)
    elif name in _ENV_SETTERS or name == "setitem":
        found.update(_string(arg) for arg in node.args[:2] if _string(arg))
    elif name == "chdir":
        found.add(CWD)
    elif name in MUTATORS and isinstance(func, ast.Attribute):
        found.update(_target_names(func.value))
        if name == "update":
            found.update(k.arg for k in node.keywords if k.arg)  # environ.update(KEY=...)
    if name in _FILE_CALLS or (name == "open" and _writes_file(node)):
        found.add(FILE)
    return found


def _writes_file(node: ast.Call) -> bool:
    modes = [k.value for k in node.keywords if k.arg == "mode"]
    modes += node.args[1:2]
    return any(set(_string(mode)) & set("wax+") for mode in modes)


def written(tree: ast.AST) -> dict[int, set[str]]:
    """Per line number, the names its statements or calls write."""
    lines: dict[int, set[str]] = {}
    for node in ast.walk(tree):
        names: set[str] = set()
        if isinstance(node, ast.Assign):
            for target in node.targets:
                names |= _target_names(target)
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)) and (
            not isinstance(node, ast.AnnAssign) or node.value is not None
        ):
            names = _target_names(node.target)
        elif isinstance(node, ast.Delete):
            for target in node.targets:
                names |= _target_names(target)
        elif isinstance(node, ast.Call):
            names = _call_names(node)
        elif isinstance(node, ast.Import):
            names = {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names = {node.module} | {f"{node.module}.{alias.name}" for alias in node.names}
        if names:
            lines.setdefault(getattr(node, "lineno", 0), set()).update(names)
    return lines
