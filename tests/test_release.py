"""Releases: one source for the version, a changelog entry per release, and the workflow that
publishes them (.github/workflows/release.yml, .github/scripts/release.py, docs/releasing.md)."""

from __future__ import annotations

import importlib.util
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import yaml
from helpers.pythons import pyproject

from flakewarden import __version__

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / ".github" / "scripts" / "release.py"
WORKFLOW = REPO / ".github" / "workflows" / "release.yml"


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("release_script", SCRIPT)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules["release_script"] = module  # NamedTuple needs its module while it is built
    spec.loader.exec_module(module)
    return module


release = _script()


def _run(*args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
        cwd=REPO,
    )


# -- one source for the version -----------------------------------------------------


def test_the_version_has_one_source() -> None:
    project = pyproject()
    assert "version" not in project["project"], "pyproject.toml must not state a version"
    assert "version" in project["project"]["dynamic"]
    dynamic = project["tool"]["setuptools"]["dynamic"]["version"]
    assert dynamic == {"attr": "flakewarden.__version__"}
    assert release.read_version() == __version__


def test_the_command_line_says_that_version() -> None:
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "flakewarden", "--version"],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"flakewarden {__version__}\n"
    # The answer imports no subcommand (the action asks it of every venv it checks).
    imported = re.findall(r"\| +(flakewarden\.commands\.\w+)$", done.stderr, re.MULTILINE)
    assert imported == [], imported
    # Asked with a subcommand's help, the subcommands are registered as before.
    usage = subprocess.run(
        [sys.executable, "-m", "flakewarden", "--help"], capture_output=True, text=True
    )
    assert usage.returncode == 0 and "stress" in usage.stdout and "run" in usage.stdout


@pytest.mark.skipif(
    importlib.util.find_spec("setuptools") is None, reason="setuptools builds the wheel"
)
def test_the_built_wheel_carries_that_version(tmp_path: Path) -> None:
    """setuptools reads __version__ from the source tree: the wheel's metadata says it."""
    source = tmp_path / "source"
    shutil.copytree(
        REPO,
        source,
        ignore=shutil.ignore_patterns(
            ".git", "__pycache__", "*.egg-info", "build", "dist", "tests"
        ),
    )
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-w",
            str(tmp_path / "dist"),
            str(source),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    [wheel] = (tmp_path / "dist").glob("*.whl")
    assert wheel.name.startswith(f"flakewarden-{__version__}-py3-none-any")
    with zipfile.ZipFile(wheel) as archive:
        metadata = archive.read(f"flakewarden-{__version__}.dist-info/METADATA").decode()
    assert f"\nVersion: {__version__}\n" in metadata
    assert "\nRequires-Python: >=3.10\n" in metadata


# -- the changelog ------------------------------------------------------------------


def test_this_version_is_releasable_tag_changelog_and_version_agree() -> None:
    assert release.problems_with(f"v{__version__}") == []
    done = _run("check", f"v{__version__}")
    assert done.returncode == 0, done.stderr


def test_a_tag_that_is_not_the_version_fails_the_release() -> None:
    done = _run("check", "v99.0.0")
    assert done.returncode == 1
    assert done.stderr == (
        f"release: the tag v99.0.0 is not v + the package's version ({__version__}, "
        "src/flakewarden/__init__.py): tag the commit whose __version__ is the release's\n"
    )


def test_the_release_notes_are_the_changelog_entry_of_the_version() -> None:
    done = _run("notes", __version__)
    assert done.returncode == 0, done.stderr
    text = (REPO / "CHANGELOG.md").read_text(encoding="utf-8")
    start = text.index(f"## [{__version__}]")
    assert done.stdout.strip() in text[start:]
    assert "### Added" in done.stdout
    assert "## [" not in done.stdout  # not the next entry's heading
    assert not re.search(r"(?m)^\[[^\]]+\]: http", done.stdout)  # nor the link definitions


def test_the_changelog_keeps_an_unreleased_section_on_top() -> None:
    entries = release.entries((REPO / "CHANGELOG.md").read_text(encoding="utf-8"))
    assert [e.version for e in entries][:2] == ["Unreleased", __version__]


CHANGELOG = """# Changelog

## [Unreleased]

## [2.0.0] - {date}
{body}
## [1.0.0] - 2026-01-02

### Added

- everything

[2.0.0]: https://example.com/2.0.0
"""


@pytest.mark.parametrize(
    ("date", "body", "problem"),
    [
        ("2026-02-30", "\n### Fixed\n\n- a thing\n", "not dated YYYY-MM-DD: 2026-02-30"),
        ("TBD", "\n### Fixed\n\n- a thing\n", "not dated YYYY-MM-DD: TBD"),
        ("2026-03-01", "\n", "CHANGELOG.md's entry for 2.0.0 is empty"),
    ],
)
def test_an_undated_or_empty_entry_stops_the_release(
    tmp_path: Path, date: str, body: str, problem: str
) -> None:
    (tmp_path / "src" / "flakewarden").mkdir(parents=True)
    (tmp_path / "src" / "flakewarden" / "__init__.py").write_text('__version__ = "2.0.0"\n')
    (tmp_path / "CHANGELOG.md").write_text(CHANGELOG.format(date=date, body=body))
    problems = release.problems_with("v2.0.0", tmp_path)
    assert len(problems) == 1 and problems[0].endswith(problem), problems
    (tmp_path / "CHANGELOG.md").write_text("# Changelog\n\n## [1.0.0] - 2026-01-02\n\n- x\n")
    assert release.problems_with("v2.0.0", tmp_path) == [
        "CHANGELOG.md has no entry '## [2.0.0] - YYYY-MM-DD'"
    ]


@pytest.mark.parametrize(
    ("version", "tags", "moves"),
    [
        ("1.0.0", ["v1.0.0"], "v1"),
        ("1.2.0", ["v1", "v1.0.0", "v1.1.5", "v1.2.0"], "v1"),
        ("1.1.6", ["v1", "v1.1.5", "v1.2.0", "v1.1.6"], ""),  # a fix to an older minor
        ("1.3.0rc1", ["v1", "v1.2.0", "v1.3.0rc1"], ""),  # a pre-release
        ("1.3.0", ["v1", "v1.3.0rc1", "v1.3.0"], "v1"),  # final after its pre-release
        ("2.0.0", ["v1", "v1.9.0", "v2.0.0", "refs/tags/v10.0.0"], "v2"),  # other majors
        ("1.0.1", ["v1.0.1", "not-a-release", "v1.x"], "v1"),
    ],
)
def test_the_major_tag_moves_only_to_the_newest_final_release_of_its_major(
    version: str, tags: list[str], moves: str
) -> None:
    assert release.major_tag(version, tags) == moves
    done = _run("major-tag", version, stdin="\n".join(tags) + "\n")
    assert done.stdout == moves + "\n"


# -- the workflow -------------------------------------------------------------------


def _workflow() -> dict[str, Any]:
    document: dict[str, Any] = yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))
    return document


def _run_text(job: dict[str, Any]) -> str:
    return "\n".join(step.get("run", "") for step in job["steps"])


def test_the_workflow_runs_on_version_tags_with_no_permission_by_default() -> None:
    document = _workflow()
    assert document[True] == {"push": {"tags": ["v*.*.*"]}}  # YAML reads `on` as true
    assert document["permissions"] == {}
    jobs = document["jobs"]
    assert {name: job["permissions"] for name, job in jobs.items()} == {
        "build": {"contents": "read"},
        "publish": {"id-token": "write"},
        "github-release": {"contents": "write"},
    }
    assert jobs["publish"]["needs"] == "build"
    assert jobs["github-release"]["needs"] == ["build", "publish"]


def test_the_build_checks_the_tag_and_the_distributions_before_anything_is_published() -> None:
    build = _run_text(_workflow()["jobs"]["build"])
    order = [
        'python .github/scripts/release.py check "$TAG"',
        "python -m build",
        "python -m twine check --strict dist/*",
        "python -m pip install --disable-pip-version-check dist/*.whl pytest",
        'test "$(flakewarden --version)" = "flakewarden $VERSION"',
    ]
    positions = [build.index(line) for line in order]
    assert positions == sorted(positions)


def test_the_build_runs_the_demo_the_readme_gives_from_the_installed_wheel() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    [demo] = re.findall(r"(?m)^cd examples/demo && (flakewarden run .*)$", readme)
    build = _run_text(_workflow()["jobs"]["build"])
    assert f"cd examples/demo\n{demo} | tee" in build


def test_pypi_is_reached_by_trusted_publishing_in_the_pypi_environment() -> None:
    publish = _workflow()["jobs"]["publish"]
    assert publish["environment"]["name"] == "pypi"
    [upload] = [s for s in publish["steps"] if "pypi-publish" in s.get("uses", "")]
    assert re.fullmatch(r"pypa/gh-action-pypi-publish@[0-9a-f]{40}", upload["uses"])
    assert set(upload.get("with", {})) <= {"packages-dir"}, "no password: no stored token"
    assert "secrets." not in WORKFLOW.read_text(encoding="utf-8")


def test_the_release_and_the_major_tag_use_the_job_token_and_the_changelog_notes() -> None:
    job = _workflow()["jobs"]["github-release"]
    text = _run_text(job)
    assert 'gh release create "$TAG" dist/*' in text
    assert "--notes-file notes/notes.md" in text
    assert 'sha="$GITHUB_SHA" -F force=true' in text
    for step in job["steps"]:
        if "run" in step:
            assert step["env"]["GH_TOKEN"] == "${{ github.token }}"


# -- the script stays as clean as the package ---------------------------------------


def test_the_release_script_is_formatted_and_linted() -> None:
    ruff = shutil.which("ruff", path=str(Path(sys.executable).parent)) or shutil.which("ruff")
    assert ruff, "ruff is not installed: pip install -e '.[test]'"
    for command in ([ruff, "format", "--check"], [ruff, "check"]):
        done = subprocess.run(
            [*command, str(SCRIPT)], capture_output=True, text=True, cwd=REPO, timeout=60
        )
        assert done.returncode == 0, done.stdout + done.stderr
