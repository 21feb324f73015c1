"""The supported Pythons are stated once and agree everywhere (docs/pythons.md).

The command-line tool's range is ``requires-python``; what runs inside the tests' own
interpreter (the injected plugin, the fork server's child, ``flakewarden.retry``, the loader
stub) keeps an older floor, stated as ruff's per-file target version. The classifiers, CI's
matrix, mypy, ruff, the action's choice of interpreter and the docs follow from those two.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import parso
import pytest
import yaml
from helpers.pythons import REPO, cli_floor, dotted, inside_files, plugin_floor, pyproject

from flakewarden.runner import process

CI = REPO / ".github" / "workflows" / "ci.yml"
CLASSIFIER = re.compile(r"^Programming Language :: Python :: (3\.\d+)$")


def _version(text: str) -> tuple[int, int]:
    major, minor = text.removesuffix("t").split(".")
    return int(major), int(minor)


def _classified() -> list[tuple[int, int]]:
    found = [CLASSIFIER.match(c) for c in pyproject()["project"]["classifiers"]]
    return sorted(_version(m[1]) for m in found if m)


def _matrix() -> list[str]:
    jobs = yaml.safe_load(CI.read_text(encoding="utf-8"))["jobs"]
    return [str(v) for v in jobs["test"]["strategy"]["matrix"]["python-version"]]


def test_the_classifiers_name_every_version_from_requires_python_to_the_newest() -> None:
    versions = _classified()
    assert versions[0] == cli_floor(), "the oldest classifier is requires-python's"
    newest = max(_version(v) for v in _matrix())
    assert versions == [(3, minor) for minor in range(cli_floor()[1], newest[1] + 1)]


def test_ci_tests_the_oldest_supported_and_every_release_since_3_12() -> None:
    matrix = _matrix()
    assert matrix[0] == dotted(cli_floor()), "CI's first entry is the oldest supported Python"
    assert all(_version(v) >= cli_floor() for v in matrix)
    classified = _classified()
    assert {_version(v) for v in matrix} == {cli_floor()} | {v for v in classified if v >= (3, 12)}
    # The free-threaded build: tested in CI if and only if the classifiers claim it.
    free_threaded = [v for v in matrix if v.endswith("t")]
    claims = [c for c in pyproject()["project"]["classifiers"] if ":: Free Threading" in c]
    assert free_threaded == ["3.14t"] and len(claims) == 1


def test_ci_runs_the_serial_stress_tests_on_every_matrix_entry() -> None:
    steps = yaml.safe_load(CI.read_text(encoding="utf-8"))["jobs"]["test"]["steps"]
    serial = [s for s in steps if s.get("id") == "flakewarden-serial"]
    assert len(serial) == 1 and serial[0]["with"]["command"] == "python -m pytest -m serial"
    assert "matrix" not in serial[0].get("if", ""), "no matrix entry may skip the stress tests"


def test_ci_runs_the_plugin_under_its_oldest_python() -> None:
    job = yaml.safe_load(CI.read_text(encoding="utf-8"))["jobs"]["plugin"]
    assert plugin_floor() < cli_floor()
    assert job["strategy"]["matrix"]["tests-python"] == [dotted(plugin_floor())]
    assert any("bash .ci/plugin-python" in s.get("run", "") for s in job["steps"])


def test_the_tools_check_the_code_against_the_same_floors() -> None:
    tool = pyproject()["tool"]
    assert tool["ruff"]["target-version"] == f"py3{cli_floor()[1]}"
    assert tool["mypy"]["python_version"] == dotted(cli_floor())
    # The action refuses to host flakewarden on an interpreter below the floor.
    action = (REPO / "action.yml").read_text(encoding="utf-8")
    assert f"sys.version_info < (3, {cli_floor()[1]})" in action


def test_the_docs_state_both_ranges() -> None:
    text = (REPO / "docs" / "pythons.md").read_text(encoding="utf-8")
    newest = dotted(_classified()[-1])
    assert f"CPython {dotted(cli_floor())} to {newest}" in text
    assert f"CPython {dotted(plugin_floor())} to {newest}" in text


def _errors(source: str, version: tuple[int, int]) -> list[tuple[tuple[int, int], str]]:
    # parso's grammars are the real ones (ast.parse's feature_version is best-effort).
    grammar = parso.load_grammar(version=dotted(version))
    return [(e.start_pos, e.message) for e in grammar.iter_errors(grammar.parse(source))]


def _relative(path: Path) -> str:
    return path.relative_to(REPO).as_posix()


@pytest.mark.parametrize("path", inside_files(), ids=_relative)
def test_what_runs_in_the_tests_interpreter_parses_on_the_plugins_oldest_python(
    path: Path,
) -> None:
    assert _errors(path.read_text(encoding="utf-8"), plugin_floor()) == []


def test_the_plugins_loader_stub_parses_on_the_plugins_oldest_python() -> None:
    """The few lines written beside the plugin and imported first by the tests' interpreter."""
    assert _errors(process._PLUGIN_STUB, plugin_floor()) == []


def test_inside_files_cover_the_plugin_the_fork_server_and_retry() -> None:
    names = {_relative(p) for p in inside_files()}
    assert {
        "src/flakewarden/inside/fork_child.py",
        "src/flakewarden/inside/plugin/__init__.py",
        "src/flakewarden/retry.py",
    } <= names


def _ast_errors(source: str, version: tuple[int, int]) -> list[str]:
    # ast's feature_version takes everything up to the version and refuses what came after it
    # (except*, type parameters, ...): parso's grammars know none of 3.10's newer syntax.
    try:
        ast.parse(source, feature_version=version)
    except SyntaxError as error:
        return [f"{error.lineno}: {error.msg}"]
    return []


def test_the_package_parses_on_the_clis_oldest_python() -> None:
    failures = {
        _relative(path): errors
        for path in sorted((REPO / "src" / "flakewarden").rglob("*.py"))
        if (errors := _ast_errors(path.read_text(encoding="utf-8"), cli_floor()))
    }
    assert failures == {}


def test_an_older_grammar_refuses_newer_syntax() -> None:
    """The checks are live: 3.10's match under 3.9, 3.11's except* and 3.12's generics under
    3.10, while what 3.10 does have passes."""
    match = "match x:\n    case 1:\n        pass\n"
    assert _errors(match, (3, 9))
    assert _ast_errors(match, (3, 10)) == []
    assert _ast_errors("try:\n    pass\nexcept* ValueError:\n    pass\n", (3, 10))
    assert _ast_errors("def f[T](x: T) -> T:\n    return x\n", (3, 10))


def test_every_classifier_is_one_pypi_accepts() -> None:
    from trove_classifiers import classifiers

    unknown = [c for c in pyproject()["project"]["classifiers"] if c not in classifiers]
    assert unknown == []
