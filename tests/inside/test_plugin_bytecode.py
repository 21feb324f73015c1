"""The plugin's parts load from their installed bytecode in every pytest process, compiled
from the source as it is, named as the source is (``<flakewarden_pytest_plugin/...>``), and
compiled from source wherever that bytecode is stale or another Python's."""

from __future__ import annotations

import json
import marshal
import os
import py_compile
import subprocess
import sys
import time
from pathlib import Path

from flakewarden.runner.process import PLUGIN_PACK, bytecode_of, plugin_dir, plugin_env
from flakewarden.runner.process_results import read_results

# Imports the plugin as pytest would, counting what it compiles, and names the files of
# every code object of its functions.
PROBE = r"""
import builtins, json, sys, types
compiled = []
real = builtins.compile
def counting(source, filename, *args, **kwargs):
    if str(filename).startswith("<flakewarden_pytest_plugin/"):
        compiled.append(str(filename))
    return real(source, filename, *args, **kwargs)
builtins.compile = counting
import flakewarden_pytest_plugin
from flakewarden_pytest_plugin import recorder, evidence
names = set()
def walk(code):
    names.add(code.co_filename)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            walk(const)
for module in (flakewarden_pytest_plugin, recorder, evidence):
    for value in vars(module).values():
        if isinstance(value, types.FunctionType) and value.__module__ == module.__name__:
            walk(value.__code__)
        if isinstance(value, type) and value.__module__ == module.__name__:
            for member in vars(value).values():
                if isinstance(member, types.FunctionType):
                    walk(member.__code__)
import linecache
source = linecache.getline("<flakewarden_pytest_plugin/recorder.py>", 1)
print(json.dumps({"compiled": compiled, "names": sorted(names), "first_line": source}))
"""


def _probe(directory: Path) -> dict[str, object]:
    """What importing the plugin compiled, and the files its code is named by (the stub's
    own few functions, which load the parts, are left out: they are a real file)."""
    env = {**os.environ, "PYTHONPATH": str(directory)}
    done = subprocess.run(
        [sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, check=True
    )
    seen: dict[str, object] = json.loads(done.stdout)
    stub = str(directory / "flakewarden_pytest_plugin.py")
    seen["names"] = [name for name in seen["names"] if name != stub]  # type: ignore[attr-defined]
    return seen


def _pack(directory: Path) -> dict[str, object]:
    packed: dict[str, object] = marshal.loads((directory / PLUGIN_PACK).read_bytes())
    return packed


def test_a_process_loads_the_plugin_from_its_bytecode_under_the_sources_names() -> None:
    with plugin_dir() as directory:
        pack = _pack(directory)
        assert pack["tag"] == sys.implementation.cache_tag
        parts = pack["parts"]
        assert isinstance(parts, dict) and parts["recorder"][1], "no bytecode packed"
        seen = _probe(directory)
    assert seen["compiled"] == []
    names = seen["names"]
    assert isinstance(names, list) and names
    assert all(name.startswith("<flakewarden_pytest_plugin/") for name in names), names
    assert "<flakewarden_pytest_plugin/recorder.py>" in names
    assert seen["first_line"].startswith('"""')  # linecache holds the source, for tracebacks


def test_another_pythons_bytecode_is_compiled_from_source_and_the_run_records(
    tmp_path: Path,
) -> None:
    (tmp_path / "test_one.py").write_text("def test_one():\n    pass\n", encoding="utf-8")
    with plugin_dir() as directory:
        pack = _pack(directory)
        parts = pack["parts"]
        assert isinstance(parts, dict)
        for name, (source, data) in list(parts.items()):
            parts[name] = (source, b"\0\0\0\0" + data[4:])  # another Python's magic number
        (directory / PLUGIN_PACK).write_bytes(marshal.dumps(pack, 4))
        seen = _probe(directory)
        results = tmp_path / "results.jsonl"
        env = plugin_env(directory, results)
        env.pop("PYTEST_XDIST_WORKER", None)
        subprocess.run(
            [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "test_one.py"],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            check=False,
        )
    compiled = seen["compiled"]
    assert isinstance(compiled, list)
    assert "<flakewarden_pytest_plugin/__init__.py>" in compiled
    assert "<flakewarden_pytest_plugin/recorder.py>" in compiled
    assert all(name.startswith("<flakewarden_pytest_plugin/") for name in seen["names"])
    assert [t.id for t in read_results(results).tests] == ["test_one.py::test_one"]


def test_bytecode_is_packed_only_when_compiled_from_the_source_as_it_is(tmp_path: Path) -> None:
    source = tmp_path / "part.py"
    source.write_text("VALUE = 1\n", encoding="utf-8")
    py_compile.compile(str(source))
    assert bytecode_of(source)[16:] and marshal.loads(bytecode_of(source)[16:]).co_names
    time.sleep(0.01)
    source.write_text("VALUE = 22\n", encoding="utf-8")  # edited since: another size
    assert bytecode_of(source) == b""
    assert bytecode_of(tmp_path / "never_compiled.py") == b""
