"""``FLAKEWARDEN_STATE``: what each run leaves behind in state the tests of a process share.

Real pytest processes with the injected plugin: a polluter that replaces a module global,
mutates a list in place, sets a class attribute and an environment variable, changes the
working directory and writes a file has each change recorded on its own ``test`` record;
a test that changes nothing records nothing; without the variable, nothing is taken.
The names and lines code writes are read from the syntax (``stress.writes``).
"""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

from helpers.plugin_runs import run_plugin
from helpers.project import make_project

from flakewarden.model.records import TestRecord
from flakewarden.stress.writes import BY_NAME, CWD, FILE, IMPORT, written

FILES = {
    "depot/__init__.py": "",
    "depot/extra.py": "LOADED = True\n",
    "depot/settings.py": """
        CURRENCY = "EUR"
        SEEN = []


        class Order:
            discount = 0


        class Config:
            __slots__ = ("port",)

            def __init__(self):
                self.port = 9090


        CONFIG = Config()
        """,
    "test_polluter.py": """
        import os
        import sys
        from pathlib import Path

        from depot import settings


        class Interceptor:
            # A stand-in in sys.modules whose every attribute raises, as compatibility
            # layers install: taking the state must not fail the test for it.
            def __getattr__(self, name):
                raise NotImplementedError(name)


        sys.modules["depot_interceptor"] = Interceptor()


        def test_pollutes(tmp_path):
            settings.CURRENCY = "USD"
            settings.SEEN.append("x")
            settings.Order.discount = 5
            settings.CONFIG.port = 12345
            os.environ["DEPOT_REGION"] = "eu"
            Path(__file__).with_name("cache.txt").write_text("warm")
            os.chdir(tmp_path)
            __import__("depot.extra")


        def test_clean():
            assert settings.CURRENCY
        """,
}


def _changes(test: dict[str, object]) -> dict[tuple[str, str], tuple[str, str]]:
    record = TestRecord.from_json(test)
    assert record.state is not None
    return {(c.kind, c.name): (c.before, c.after) for c in record.state}


def test_each_change_a_run_leaves_is_on_its_record(tmp_path: Path) -> None:
    project = make_project(tmp_path / "p", FILES)
    run = run_plugin(project, "-p", "no:randomly", extra={"FLAKEWARDEN_STATE": "1"})
    assert run.returncode == 0, run.stdout[-3000:]
    polluter, clean = run.tests
    changes = _changes(polluter)
    assert changes[("global", "depot.settings.CURRENCY")] == ("'EUR'", "'USD'")
    assert changes[("global", "depot.settings.SEEN")] == ("[]", "['x']")
    assert changes[("class", "depot.settings.Order.discount")] == ("0", "5")
    # an object whose repr names only its id, by each of its attributes (slots included)
    assert changes[("global", "depot.settings.CONFIG.port")] == ("9090", "12345")
    assert ("global", "depot.settings.CONFIG") not in changes  # the same object, in place
    assert changes[("env", "DEPOT_REGION")] == ("<absent>", "'eu'")
    assert changes[("file", "cache.txt")][0] == "<absent>"
    assert changes[("module", "depot.extra")] == ("<absent>", "imported")
    assert ("global", "depot.extra.LOADED") not in changes  # its import says it all
    assert not any(kind == "module" and name.startswith("_pytest") for kind, name in changes)
    [cwd] = [after for (kind, _), (_, after) in changes.items() if kind == "cwd"]
    assert "test_pollutes" in cwd
    assert not any(kind == "env" and name == "PYTEST_CURRENT_TEST" for kind, name in changes)
    assert _changes(clean) == {}  # it changed nothing: an empty list, taken
    untaken = run_plugin(project, "-p", "no:randomly")
    assert all("state" not in test for test in untaken.tests)


def test_the_names_a_line_writes_are_read_from_its_syntax() -> None:
    code = textwrap.dedent(
        """
        settings.CURRENCY = "USD"
        SEEN.append(1)
        os.environ["REGION"] = "eu"
        monkeypatch.setenv("TOKEN", "x")
        setattr(settings, "MODE", "debug")
        monkeypatch.setattr("depot.settings.LIMIT", 3)
        os.chdir(path)
        open(name, "w").write("x")
        open(name).read()
        total += 1
        value = settings.CURRENCY
        setattr(obj.__class__, self.name, result)
        import html.parser
        __import__(name)
        """
    )
    lines = written(ast.parse(code))
    assert lines[2] == {"CURRENCY", "settings"}  # the object it hangs from changes too
    assert "SEEN" in lines[3]
    assert {"environ", "REGION"} <= lines[4]
    assert "TOKEN" in lines[5]
    assert "MODE" in lines[6]
    assert "LIMIT" in lines[7]
    assert CWD in lines[8]
    assert FILE in lines[9]
    assert 10 not in lines  # read only
    assert "total" in lines[11]
    assert lines[12] == {"value"}  # the name assigned, not the one read
    assert lines[13] == {BY_NAME}  # a computed name: it may have written any attribute
    assert lines[14] == {"html.parser"}
    assert lines[15] == {IMPORT}
