"""The real-world corpus: which projects, at which pinned version, run how.

Each entry names a PyPI source distribution, the packages its suite needs, and the
pytest arguments its own configuration (tox.ini, CI) runs it with. The suites are
downloaded at run time by ``sdist.fetch``; nothing of them lives in this repository.
"""

from __future__ import annotations

from typing import NamedTuple

# The tools every project's venv gets, pinned so two corpus runs measure the same thing.
TOOLS = (
    "pytest==9.2.0",
    "pytest-xdist==3.8.0",
    "pytest-randomly==5.1.0",
    "pytest-cov==7.1.0",
    "coverage==7.17.5",
)


class Project(NamedTuple):
    """One suite of the corpus."""

    name: str
    version: str
    shape: str  # what this project brings that the others do not
    deps: tuple[str, ...] = ()  # what its test suite needs besides the tools
    install: bool = True  # pip install -e the project itself (src layouts need it)
    args: tuple[str, ...] = ()  # pytest arguments its own configuration runs it with
    flaky: str = ""  # prefer a test whose id contains this for the injected failure
    ci: tuple[str, ...] = ()  # the scenarios tests/test_realworld.py runs on it in CI


PROJECTS: tuple[Project, ...] = (
    Project(
        "six",
        "1.17.0",
        "one module beside one test file, no coverage config, no install",
        install=False,
        flaky="test_move_items[",
        ci=("counts", "xdist", "randomly", "coverage", "pytest-cov", "flaky"),
    ),
    Project(
        "packaging",
        "24.2",
        "src layout, heavy parametrization (thousands of ids), own coverage config (branch)",
        deps=("pretend",),
        args=("tests",),
        flaky="[",
    ),
    Project(
        "idna",
        "3.10",
        "unittest.TestCase classes, no coverage config",
        args=("tests",),
        flaky="::",
    ),
    Project(
        "more-itertools",
        "10.5.0",
        "unittest classes plus doctests (--doctest-modules over the package and tests; "
        "one docstring in tests/ is not meant as a doctest and is deselected by id)",
        args=(
            "--doctest-modules",
            "more_itertools",
            "tests",
            "--deselect",
            "tests/test_more.py::tests.test_more.IterOnlyRange",
        ),
        flaky="more_itertools/more.py::",
    ),
    Project(
        "toolz",
        "1.0.0",
        "doctests over the package, tests inside the package, coverage config with "
        "source and omit in setup.cfg",
        args=("--doctest-modules", "toolz"),
        flaky="toolz/itertoolz.py::",
        ci=("counts", "coverage", "pytest-cov", "flaky"),
    ),
    Project(
        "cachetools",
        "5.5.0",
        "src layout, unittest mixin classes, no coverage config",
        args=("tests",),
        flaky="::",
        ci=("counts", "xdist", "coverage", "flaky"),
    ),
    Project(
        "itsdangerous",
        "2.2.0",
        "src layout, test classes with fixtures and parametrization, freezegun",
        deps=("freezegun",),
        flaky="[",
    ),
    Project(
        "pluggy",
        "1.6.0",
        "src layout, conftest fixtures used across modules, filterwarnings=error, "
        ".coveragerc with include and [paths]",
        flaky="[",
    ),
    Project(
        "attrs",
        "24.2.0",
        "runs under pytest-xdist (its tox: -n auto), root conftest, hypothesis, "
        "xfail_strict, coverage config with parallel and source_pkgs",
        deps=("hypothesis", "pympler", "cloudpickle"),
        args=("-n", "2", "--dist", "loadfile"),
        flaky="[",
    ),
    Project(
        "apig-wsgi",
        "2.19.0",
        "pytest-randomly in its dev requirements, src layout, --strict-config, "
        "coverage config with branch, parallel and source",
        flaky="::",
    ),
)


# Tried and replaced, with the reason; the results table names them.
REPLACED: tuple[tuple[str, str], ...] = (
    (
        "boltons 24.1.0 (and 25.0.0)",
        "its tests/conftest.py declares pytest_ignore_collect(path, config); pytest 9 removed "
        "the path argument, so plain pytest stops with a PluginValidationError before "
        "collecting. Its replacement click failed the same way (below); the doctest shape it "
        "brought is covered by more-itertools and toolz, and the corpus keeps 10 projects",
    ),
    (
        "click 8.1.8 and 8.2.1",
        "its filterwarnings=error turns pytest 9's PytestRemovedIn10Warning (a non-Collection "
        "iterable given to parametrize in tests/test_basic.py) into a collection error in "
        "plain pytest ('1 error'; flakewarden agrees and exits 2)",
    ),
    (
        "pluggy 1.5.0",
        "pytest 9.2.0 needs pluggy>=1.6, so pip cannot install both: replaced by pluggy 1.6.0",
    ),
    (
        "iniconfig 2.1.0, tomli 2.2.1, sortedcontainers 2.4.0",
        "their sdists ship no tests: the doctest and unittest shapes are covered by "
        "more-itertools, toolz, idna and cachetools",
    ),
)


# Differences the corpus found in flakewarden, and how each was fixed: the table above is
# the run after the fixes.
KNOWN_DIFFERENCES: tuple[tuple[str, str], ...] = (
    (
        "coverage without a configured source (fixed)",
        "six, idna, cachetools, more-itertools, packaging (its config sets only branch): "
        "`flakewarden run --coverage` and "
        "`flakewarden run -- pytest --cov` exit 3 with 'cannot combine or report coverage: No "
        "source for code: /tmp/flakewarden-plugin-*/flakewarden_pytest_plugin.py' while "
        "`coverage run -m pytest` / `pytest --cov` exit 0 (six 78.37%, idna 87.85%, "
        "cachetools 99.22%, more-itertools 99.55%, packaging 99.26%): flakewarden's "
        "injected plugin is "
        "measured and its folder is gone before the report. Fixed: the plugin runs under a "
        "file name coverage.py never traces, and anything measured in a plugin folder is "
        "dropped before combining",
    ),
    (
        "merged total rounded before it is stored (fixed)",
        "toolz: report.json 99.0 against coverage.py 98.90; itsdangerous: 97.0 against "
        "97.01 (both `--coverage` and `--cov`); pluggy: 99.0 against 99.85 (`--coverage`; "
        "coverage displays 99.85 as 99 at precision 0) and 92.0 against 91.58 (`--cov`): the "
        "total is rounded to coverage's display precision (0), then stored and shown with "
        "two decimals. The merged data files themselves give coverage.py's exact totals "
        "(pluggy: 99.85% from report-dir/.coverage). Also apig-wsgi ([run] parallel, "
        "branch, source; the parallel files are found and combined): 98.0 against 98.34 "
        "both ways; attrs: 45.0 against 45.25 (`coverage run` of its `-n 2` command measures "
        "the controller only, on both sides) and 99.0 against 99.52 (`--cov`). Fixed: "
        "report.json keeps the unrounded total and its precision; the corpus now requires "
        "it to equal coverage.py's exactly",
    ),
    (
        "subtest reports in the records (fixed)",
        "more-itertools (`self.subTest`, pytest 9's built-in subtests): pytest prints "
        "'815 passed ... 2332 subtests passed'; attempt 1's records hold 2332 more call "
        "reports, not marked as subtests, so counted as pytest counts reports they read "
        "3147 passed. report.json's per-test totals are right (815 passed); a failing "
        "subtest could not be told from a passing one. Fixed: subtest reports are recorded "
        "as subtests, and a failed one fails its test's attempt",
    ),
)


def by_name(names: list[str]) -> list[Project]:
    """The projects called ``names``, in the order given; an unknown name is an error."""
    known = {p.name: p for p in PROJECTS}
    unknown = [n for n in names if n not in known]
    if unknown:
        raise SystemExit(
            f"corpus: unknown project(s) {', '.join(unknown)}; known: {', '.join(known)}"
        )
    return [known[n] for n in names]
