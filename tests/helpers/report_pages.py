"""A real report directory for the page tests: ``flakewarden run`` on a small project.

The project has a flaky test, a test that fails every attempt, a quarantined failing
test, a skipped one, passing ones, and a test whose id, failure message and captured
output are hostile markup: a ``</script>`` to close the data block, an ``<img onerror>``,
the JavaScript line separators. It runs with coverage, so the page has per-file figures.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from .project import ISOLATED_INI, Project, flaky_module, make_project

HOSTILE = "<img src=x onerror=alert(1)></script><script>alert(2)</script>"
HOSTILE_ID = f"test_hostile.py::test_x[{HOSTILE}]"
HOSTILE_MESSAGE = "</script><img src=y onerror=alert(4)>\u2028<b>bold</b> & done"

FILES = {
    "pkg/__init__.py": "",
    "pkg/calc.py": """
        def add(a, b):
            return a + b

        def unused(x):
            if x:
                return 1
            return 2
        """,
    "test_calc.py": """
        import pytest
        from pkg.calc import add

        def test_add():
            assert add(1, 2) == 3

        @pytest.mark.skip(reason="not on this platform")
        def test_skipped():
            pass

        def test_broken():
            print("about to fail")
            assert add(2, 2) == 5, "arithmetic is broken"

        def test_quarantined():
            assert False, "known flake, quarantined"
        """,
    "test_flaky.py": flaky_module("flaky"),
    "test_hostile.py": f"""
        import pytest

        @pytest.mark.parametrize("v", [1], ids=[{HOSTILE!r}])
        def test_x(v):
            print("<script>alert(3)</script>")
            raise AssertionError({HOSTILE_MESSAGE!r})
        """,
}


def build_run(root: Path) -> Path:
    """Run the project once with coverage and a quarantined test; the report directory."""
    project = Project(make_project(root, FILES, ini=ISOLATED_INI))
    quarantined = root / "quarantined.json"
    quarantined.write_text(json.dumps(["test_calc.py::test_quarantined"]), encoding="utf-8")
    done = project.run("--coverage", "--quarantined-file", str(quarantined), report_dir="report")
    assert done.returncode == 1, done.stdout + done.stderr
    return done.report_dir


@pytest.fixture(scope="module")
def report_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_run(tmp_path_factory.mktemp("page") / "proj")


def report_of(directory: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((directory / "report.json").read_text(encoding="utf-8"))
    return data
