"""Real pytest projects where one cause fails many tests at once, and some flake alone.

The storm: a database fixture whose server refuses connections during the first attempt
of each test (a different port every time), the way a slow service container does.
"""

from __future__ import annotations

from pathlib import Path

from .project import ISOLATED_INI, Project, make_project

CONFTEST = """
import socket
from pathlib import Path

import pytest


def bump(name):
    count = Path(__file__).with_name(".runs-" + name)
    runs = int(count.read_text()) + 1 if count.exists() else 1
    count.write_text(str(runs))
    return runs


def closed_port():
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()
    return port


class Database:
    def __init__(self, name):
        self.name = name

    def query(self):
        if bump(self.name) == 1:  # the server is still starting: it refuses the first time
            port = closed_port()
            try:
                socket.create_connection(("127.0.0.1", port), timeout=5).close()
            except ConnectionRefusedError as exc:
                raise ConnectionRefusedError(
                    exc.errno, f"Connection refused: could not connect to 127.0.0.1:{port}"
                ) from None
        return 42


@pytest.fixture
def db(request):
    return Database(request.node.name)
"""

DB_MODULE = """
def test_query_{n}(db):
    assert db.query() == 42
"""

LONER = """
from conftest import bump


def test_alone(request):
    assert bump(request.node.name) > 1, "the cache was not warm"
"""


def storm_project(root: Path, storm: int = 30, modules: int = 3, passing: int = 0) -> Project:
    """``storm`` tests that share the database's first-attempt refusal, spread over
    ``modules`` modules, one more that flakes alone on an assertion, and ``passing`` tests
    that always pass."""
    files = {"tests/conftest.py": CONFTEST, "tests/test_loner.py": LONER}
    if passing:
        files["tests/test_plain.py"] = "".join(
            f"def test_plain_{n}():\n    pass\n\n\n" for n in range(passing)
        )
    for m in range(modules):
        body = "".join(DB_MODULE.format(n=n) for n in range(storm) if n % modules == m)
        files[f"tests/test_db_{m}.py"] = body
    make_project(root, files, ini=ISOLATED_INI)
    return Project(root)


def reset(root: Path) -> None:
    """Forget every test's runs: the next run sees the storm again."""
    for count in root.glob("tests/.runs-*"):
        count.unlink()
