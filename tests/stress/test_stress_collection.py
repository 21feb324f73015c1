"""A suite in which another module cannot be collected still gets a verdict for the test.

Suites with optional test dependencies are common: ``python -m pytest
tests/test_a.py::test_x`` runs while collecting the whole suite stops at a module whose
import fails. ``stress`` narrows its collection to the test's module then, says so and
why, and keeps ``error`` for a test that cannot itself be collected. Each test here
runs a real ``flakewarden stress``.
"""

from __future__ import annotations

from pathlib import Path

from helpers.project import make_project
from helpers.stress_runs import stress

BROKEN = """
    import flakewarden_missing_optional_dependency


    def test_needs_it():
        assert flakewarden_missing_optional_dependency
    """

BROKEN_TOTAL = """
    def total(prices):
        return sum(prices) + 1


    def test_total():
        assert total([1, 2]) == 3
    """


def test_another_module_that_cannot_import_narrows_the_collection(tmp_path: Path) -> None:
    project = make_project(
        tmp_path / "p", {"test_broken.py": BROKEN, "test_total.py": BROKEN_TOTAL}
    )
    result, data = stress(project, "test_total.py::test_total")
    assert result.returncode == 0, result.stderr
    assert data["verdict"] == "deterministic", data["reason"]
    [narrowed] = [n for n in data["notes"] if n.startswith("collection narrowed")]
    assert "collection narrowed to test_total.py" in narrowed
    assert "fails in test_broken.py" in narrowed
    assert "ModuleNotFoundError" in narrowed
    assert "flakewarden_missing_optional_dependency" in narrowed
    assert "was skipped" in narrowed
    assert "probe: collecting test_broken.py failed; collecting only test_total.py" in result.stderr


def test_a_test_whose_own_module_cannot_import_is_an_error(tmp_path: Path) -> None:
    project = make_project(
        tmp_path / "p", {"test_broken.py": BROKEN, "test_total.py": BROKEN_TOTAL}
    )
    result, data = stress(project, "test_broken.py::test_needs_it")
    assert result.returncode == 3, result.stderr
    assert data["verdict"] == "error", data
    assert data["reason"].startswith("the test cannot be collected: ")
    assert "(in test_broken.py)" in data["reason"]
    assert not any(n.startswith("collection narrowed") for n in data["notes"])
