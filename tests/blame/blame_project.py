"""A project in a real git repository: a base on ``main``, and a ``topic`` branch that
changes it, for blame's tests."""

from __future__ import annotations

from pathlib import Path

from helpers.git_repo import Repo, base_and_branch
from helpers.project import Project

INI = """
[pytest]
pythonpath = src
addopts = -p no:randomly -p no:cacheprovider
"""

CART = """
TAX = 0


def total(items):
    return sum(items) + TAX


def describe(items):
    return f"{len(items)} items"
"""

#: ``total`` broken on line 5: test_total fails, having run the change.
BROKEN_TOTAL = CART.replace(" + TAX\n", " + TAX + 1\n")
#: ``describe`` broken on line 9: test_describe fails, having run the change.
BROKEN_DESCRIBE = CART.replace('items"', 'item(s)"')
#: ``describe`` rewritten, same result: the failures left are the base's own.
HARMLESS = CART.replace(
    '    return f"{len(items)} items"', '    count = len(items)\n    return f"{count} items"'
)

TESTS = {
    "pytest.ini": INI,
    "src/shop/__init__.py": "",
    "src/shop/cart.py": CART,
    "tests/test_cart.py": """
        from shop.cart import describe, total


        def test_total():
            assert total([1, 2]) == 3


        def test_describe():
            assert describe([1]) == "1 items"
        """,
    # Fails its first attempt, passes its rerun; never calls the changed code.
    "tests/test_flaky.py": """
        from pathlib import Path

        import shop.cart

        COUNTER = Path(__file__).with_name("flaky.count")


        def test_flaky():
            runs = int(COUNTER.read_text()) + 1 if COUNTER.exists() else 1
            COUNTER.write_text(str(runs))
            assert runs > 1, "flaked"
        """,
    # Broken on main already, and on the branch; it runs nothing of the change.
    "tests/test_broken.py": """
        def test_broken():
            assert 1 + 1 == 3, "broken on main too"
        """,
    "tests/sub/__init__.py": "",
    "tests/sub/conftest.py": """
        import pytest


        @pytest.fixture
        def limit():
            return 3
        """,
    "tests/sub/test_limit.py": """
        def test_limit(limit):
            assert limit == 2
        """,
}


def blame_repo(root: Path) -> Repo:
    """The base on ``main``; the caller's changes go on ``topic``, then commit."""
    return base_and_branch(root, TESTS)


def run_blame(repo: Repo, *args: str) -> tuple[Project, dict[str, dict[str, object]]]:
    """``flakewarden run --base main ARGS -- pytest`` in the repository: each test's entry."""
    project = Project(repo.root)
    result = project.run("--reruns", "1", "--base", "main", *args, env=repo.env())
    assert result.returncode in (0, 1), result.stdout + result.stderr
    return project, {test["id"]: test for test in result.report["tests"]}
