"""action.yml: its ``run:`` steps executed with bash in a simulated runner, its ``uses:`` checked.

The runner (``helpers/actions_runner.py``) runs the steps as GitHub would; the tests run a
small real project with a flaky test.
"""

from __future__ import annotations

import ast
import fcntl
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any, Optional

import pytest
from helpers.actions_expressions import Evaluator
from helpers.actions_runner import ActionRun, Runner, load_action
from helpers.project import make_project as write_project
from helpers.pythons import cli_floor, dotted
from helpers.workflow_commands import parse_commands, read_output_file

from flakewarden import __version__

REPO = Path(__file__).resolve().parents[1]
SHA = re.compile(r"^[^@\s]+@[0-9a-f]{40}$")


def test_evaluator() -> None:
    ev = Evaluator({"github": {"event_name": "push", "job": "j"}, "inputs": {"a-b": "x"}})
    assert ev.evaluate("github.event_name == 'PUSH'") is True
    assert ev.evaluate("github.event_name == 'push' || github.event_name == 'schedule'") is True
    assert ev.evaluate("inputs.a-b") == "x"
    assert ev.evaluate("inputs.missing || 'fallback'") == "fallback"
    assert ev.evaluate("!(inputs['a-b'] != 'x')") is True
    assert ev.template("n-${{ github.job }}-${{ 0 }}") == "n-j-0"


# -- the project under test --------------------------------------------------------

FLAKY_TESTS = """
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).parent


def flaky_once(name):
    marker = HERE / f".failed-once-{name}"
    if not marker.exists():
        marker.write_text("failed once")
        raise AssertionError(f"lost the race: 100% sure, a:b, c")


def test_ok():
    (HERE.parent / "interpreter.txt").write_text(sys.prefix)


def test_sometimes():
    flaky_once("sometimes")


@pytest.mark.parametrize("value", [1], ids=["::error::pwn,a:b%0A"])
def test_hostile(value):
    flaky_once("hostile")
"""

BROKEN_TEST = """
def test_broken():
    assert 1 == 2, "always broken"
"""


PYPROJECT = '[tool.pytest.ini_options]\ntestpaths = ["tests"]\naddopts = "-p no:randomly"\n'


def make_project(workspace: Path, *, broken: bool = False) -> Path:
    files = {"pyproject.toml": PYPROJECT, "tests/test_flaky.py": FLAKY_TESTS}
    if broken:
        files["tests/test_broken.py"] = BROKEN_TEST
    return write_project(workspace / "project", files, ini=None, verbatim=True)


def line_of(path: Path, needle: str) -> str:
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if needle in line:
            return str(number)
    raise AssertionError(needle)


@pytest.fixture
def runner(tmp_path: Path) -> Runner:
    runner = Runner(tmp_path)
    # The install step itself is exercised once, for real, in test_real_install.
    runner.extra_env["FLAKEWARDEN_PREINSTALLED_VENV"] = sys.prefix
    return runner


def assert_flaky_run(runner: Runner, run: ActionRun, project: Path) -> None:
    step = run.step("run")
    assert step.returncode == 0, step.stdout + step.stderr
    assert run.outputs == {
        "outcome": "flaky",
        "passed": "1",
        "failed": "0",
        "flaky": "2",
        "quarantined": "0",
        "report-dir": str(project / "flakewarden-report"),
        "coverage": "",
    }
    test_file = project / "tests" / "test_flaky.py"
    commands = parse_commands(step.stdout)
    # Exactly our two warnings: the hostile id in the test output emitted nothing of its own.
    assert [(name, props) for name, props, _ in commands] == [
        (
            "warning",
            {
                "title": "Flaky test: tests/test_flaky.py::test_sometimes",
                "file": "project/tests/test_flaky.py",
                "line": line_of(test_file, "def test_sometimes"),
            },
        ),
        (
            "warning",
            {
                "title": "Flaky test: tests/test_flaky.py::test_hostile[::error::pwn,a:b%0A]",
                "file": "project/tests/test_flaky.py",
                "line": line_of(test_file, "@pytest.mark.parametrize"),  # pytest: the decorator
            },
        ),
    ]
    first_line = commands[0][2].splitlines()[0]
    assert "1 of 2 attempts failed" in first_line
    assert "lost the race: 100% sure, a:b, c" in first_line
    # The summary: totals, the flaky rows, the artifact name; identical to summary.md.
    summary = step.summary
    assert summary.startswith("## flakewarden: passed (2 flaky)\n")
    assert r"| flaky | tests/test\_flaky.py:\:test\_sometimes | 1 of 2 failed |" in summary
    assert f"**{run.step('upload').with_['name']}**" in summary
    assert summary == (project / "flakewarden-report" / "summary.md").read_text(encoding="utf-8")
    # The tests ran with the user's interpreter, not flakewarden's venv.
    assert (project / "interpreter.txt").read_text(encoding="utf-8") == sys.prefix
    # Nothing leaks into later steps of the user's job.
    assert run.github_env == ""
    upload = run.step("upload")
    assert upload.condition is True
    assert upload.with_["path"] == str(project / "flakewarden-report")
    assert upload.with_["include-hidden-files"] == "true"


def test_flaky_suite_is_green_with_warnings(runner: Runner) -> None:
    project = make_project(runner.workspace)
    runner.matrix = {"python": "3.12", "os": "ubuntu-latest"}
    run = runner.run({"working-directory": "project"})
    assert_flaky_run(runner, run, project)
    # report.json says which job and matrix entry it is, from the matrix passed through env.
    report = json.loads((project / "flakewarden-report" / "report.json").read_text("utf-8"))
    context = report["context"]
    assert (context["job"], context["run_attempt"], context["event"]) == ("test", 1, "push")
    assert context["job_name"] == "os=ubuntu-latest, python=3.12"
    assert run.step("upload").with_["name"] == "flakewarden-test-0-attempt-1"
    assert run.step("upload").with_["retention-days"] == ""
    assert not (runner.temp / "flakewarden-venv").exists()  # the preinstalled venv was used


def copy_action(where: Path) -> Path:
    """The action's checkout as a runner downloads it: no bytecode, no build leftovers."""
    where.mkdir(parents=True)
    for name in ("pyproject.toml", "README.md", "action.yml"):
        shutil.copy2(REPO / name, where / name)
    shutil.copytree(
        REPO / "src",
        where / "src",
        ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"),
    )
    return where


@pytest.fixture(scope="module")
def built_venv(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """One real install, no override: the action's checkout and the venv it built (the cache).

    Built once for the whole session, pytest-xdist workers included (they share the parent
    of their base temporary directories): a worker that finds the entry complete reuses it,
    and one whose build failed leaves none, so the next worker builds and fails the same.
    """
    base = tmp_path_factory.getbasetemp()
    shared = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    root = shared / "action-built-venv"
    with open(shared / "action-built-venv.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (root / "complete").is_file():
            shutil.rmtree(root, ignore_errors=True)
            _build_venv(root)
            (root / "complete").touch()
    return root / "action", root / "cache-entry"


def _build_venv(root: Path) -> None:
    """The real install ``built_venv`` shares: checked as it runs, then saved as the cache."""
    action = copy_action(root / "action")
    runner = Runner(root / "job", action_path=action)
    project = make_project(runner.workspace)
    run = runner.run({"working-directory": "project", "python": sys.executable})
    install = run.step("install")
    assert install.returncode == 0, install.stdout + install.stderr
    venv = runner.temp / "flakewarden-venv"
    assert install.outputs == {"python": str(venv / "bin" / "python"), "built": "true"}
    assert "building the flakewarden venv (no venv)" in install.stdout
    assert f"flakewarden {__version__}\n" in install.stdout
    assert_flaky_run(runner, run, project)
    # The cache entry is saved right after the build, before any test runs.
    save = run.step("save")
    assert save.condition is True
    assert save.with_ == {"path": str(venv), "key": run.step("key").outputs["key"]}
    assert run.step("restore").with_ == save.with_
    shutil.copytree(venv, root / "cache-entry", symlinks=True)


def _pyenv_python(version: str) -> Optional[str]:
    """A CPython ``version`` (3.X) that runs, from pyenv; None when this machine has none."""
    for candidate in sorted(Path.home().glob(f".pyenv/versions/{version}.*/bin/python{version}")):
        probe = subprocess.run([str(candidate), "-c", "pass"], capture_output=True, timeout=30)
        if probe.returncode == 0:
            return str(candidate)
    return None


def _key_step(
    runner: Runner, python_input: str
) -> tuple[subprocess.CompletedProcess[str], dict[str, str]]:
    """The step that chooses flakewarden's own interpreter, run alone as the runner would."""
    [key] = [s for s in load_action()["runs"]["steps"] if s.get("id") == "key"]
    output = runner.temp / "key-output"
    output.write_text("", encoding="utf-8")
    done = subprocess.run(
        ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", key["run"]],
        cwd=runner.workspace,
        env={
            **runner.base_env(),
            "FLAKEWARDEN_HOST_PYTHON": python_input,
            "GITHUB_OUTPUT": str(output),
        },
        capture_output=True,
        text=True,
        timeout=60,
    )
    return done, read_output_file(output)


def _too_old(where: Path) -> str:
    """A python3 as old as the plugin's floor: its answer to the version check is "older"."""
    if (real := _pyenv_python("3.9")) is not None:
        where.symlink_to(real)
    else:
        where.write_text("#!/bin/sh\necho 'Python 3.9.18'\nexit 1\n", encoding="utf-8")
        where.chmod(0o755)
    return str(where)


def test_flakewarden_is_hosted_by_a_supported_python_when_the_tests_use_an_older_one(
    tmp_path: Path,
) -> None:
    """setup-python put an old python3 first on PATH for the tests: the action passes it over."""
    runner = Runner(tmp_path)
    _too_old(runner.bin / "python3")
    done, outputs = _key_step(runner, "")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "flakewarden needs Python 3.10 or later: python3 is older; looking further" in (
        done.stdout
    )
    # The next candidate, `python` on PATH: the interpreter running this suite.
    assert outputs["host"] == os.path.realpath(getattr(sys, "_base_executable", sys.executable))


def test_an_old_python_input_is_refused_with_a_reason(tmp_path: Path) -> None:
    runner = Runner(tmp_path)
    done, outputs = _key_step(runner, _too_old(tmp_path / "python3.9"))
    assert done.returncode == 4
    assert done.stdout.startswith(
        "::error title=flakewarden::the python input names an interpreter that does not run or "
        "is older than 3.10"
    )
    assert "key" not in outputs
    # A supported one is taken as given.
    done, outputs = _key_step(runner, sys.executable)
    assert done.returncode == 0, done.stderr
    assert outputs["host"] == os.path.realpath(getattr(sys, "_base_executable", sys.executable))


@pytest.mark.parametrize("version", [dotted(cli_floor()), "3.13"])
def test_the_venv_builds_and_merges_coverage_on_the_oldest_and_newest_pythons(
    tmp_path: Path, version: str
) -> None:
    """The oldest Python flakewarden runs on, and 3.13, whose venv writes a .gitignore the check
    must know; before 3.11 coverage.py needs tomli to read the project's pyproject.toml, where
    this project keeps its [tool.coverage]."""
    host = _pyenv_python(version)
    if host is None:
        pytest.skip(f"no CPython {version} from pyenv on this machine")
    runner = Runner(tmp_path / "job", action_path=copy_action(tmp_path / "action"))
    project = make_project(runner.workspace)
    (project / "tests" / "test_flaky.py").unlink()  # one attempt: its data file measures app
    (project / "app.py").write_text("def f():\n    return 1\n", encoding="utf-8")
    with open(project / "pyproject.toml", "a", encoding="utf-8") as config:
        config.write(
            '\n[tool.coverage.run]\nsource = ["app"]\n\n[tool.coverage.report]\nprecision = 1\n'
        )
    (project / "tests" / "test_app.py").write_text(
        "import app\n\n\ndef test_f():\n    assert app.f() == 1\n", encoding="utf-8"
    )
    run = runner.run({"working-directory": "project", "python": host, "coverage": "true"})
    install = run.step("install")
    assert install.returncode == 0, install.stdout + install.stderr
    assert "building the flakewarden venv (no venv)" in install.stdout
    venv_python = runner.temp / "flakewarden-venv" / "bin" / "python"
    assert install.outputs == {"python": str(venv_python), "built": "true"}
    step = run.step("run")
    assert step.returncode == 0, step.stdout + step.stderr
    # app.py: 2 statements, both run; the precision of 1 comes from pyproject.toml.
    assert run.outputs["coverage"] == "100.0", step.stdout
    # The venv it built is the one a later job restores and accepts.
    again = Runner(tmp_path / "job2", action_path=runner.action_path)
    shutil.copytree(
        runner.temp / "flakewarden-venv", again.temp / "flakewarden-venv", symlinks=True
    )
    make_project(again.workspace)
    restored = again.run({"working-directory": "project", "python": host}).step("install")
    assert "restored from the cache and checked" in restored.stdout, restored.stdout


def restored_runner(root: Path, built: tuple[Path, Path]) -> Runner:
    """A fresh job whose cache restore brought back the venv ``built`` saved."""
    action, entry = built
    runner = Runner(root, action_path=action)
    shutil.copytree(entry, runner.temp / "flakewarden-venv", symlinks=True)
    return runner


def test_real_install(tmp_path: Path, built_venv: tuple[Path, Path]) -> None:
    """A venv under $RUNNER_TEMP from the action's checkout; restored from the cache, it is used."""
    runner = restored_runner(tmp_path / "job", built_venv)
    # Bytecode from the cache is never used: it is dropped, and compiled again from the source.
    planted = _site(runner.temp / "flakewarden-venv") / "flakewarden" / "__pycache__" / "x.pyc"
    planted.parent.mkdir(exist_ok=True)
    planted.write_bytes(b"not bytecode")
    project = make_project(runner.workspace)
    run = runner.run({"working-directory": "project", "python": sys.executable})
    install = run.step("install")
    assert install.returncode == 0, install.stdout + install.stderr
    assert not planted.exists()
    venv_python = runner.temp / "flakewarden-venv" / "bin" / "python"
    assert install.outputs == {"python": str(venv_python), "built": "false"}
    assert "restored from the cache and checked" in install.stdout
    assert f"flakewarden {__version__}\n" in install.stdout
    assert run.step("save").condition is False  # nothing new to save
    assert_flaky_run(runner, run, project)
    # The user's environment was not modified: flakewarden lives only in the venv.
    check = subprocess.run(
        [str(venv_python), "-c", "import flakewarden, sys; print(flakewarden.__file__)"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert check.stdout.startswith(str(runner.temp / "flakewarden-venv"))
    # Only what the steps import: not actions-toolkit's PyGithub, nor junitparser.
    site = Path(check.stdout).parents[1]
    assert not (site / "github").exists()
    assert not (site / "junitparser").exists()


def _site(venv: Path) -> Path:
    [site] = venv.glob("lib/python*/site-packages")
    return site


def _edit_dependency(venv: Path) -> str:
    init = _site(venv) / "requests" / "__init__.py"
    init.write_text(init.read_text(encoding="utf-8") + "\nPOISONED = True\n", encoding="utf-8")
    return "requests/__init__.py differs from its installer's record"


def _add_pth(venv: Path) -> str:
    (_site(venv) / "zz-poison.pth").write_text("import os; os.environ['X'] = '1'\n")
    return "zz-poison.pth is not part of the venv"


def _edit_flakewarden(venv: Path) -> str:
    cli = _site(venv) / "flakewarden" / "cli.py"
    cli.write_text(cli.read_text(encoding="utf-8") + "\nPOISONED = True\n", encoding="utf-8")
    return "its flakewarden is not the action's"


def _delete_module(venv: Path) -> str:
    (_site(venv) / "yaml" / "__init__.py").unlink()
    return "yaml/__init__.py differs from its installer's record"


def _system_site_packages(venv: Path) -> str:
    cfg = venv / "pyvenv.cfg"
    text = cfg.read_text(encoding="utf-8")
    cfg.write_text(text.replace("= false", "= true"), encoding="utf-8")
    return "pyvenv.cfg lets in the system's packages"


@pytest.mark.parametrize(
    "tamper", [_edit_dependency, _add_pth, _edit_flakewarden, _delete_module, _system_site_packages]
)
def test_a_tampered_or_broken_cached_venv_is_rebuilt(
    tmp_path: Path, built_venv: tuple[Path, Path], tamper: Any
) -> None:
    runner = restored_runner(tmp_path / "job", built_venv)
    venv = runner.temp / "flakewarden-venv"
    reason = tamper(venv)
    project = make_project(runner.workspace)
    run = runner.run({"working-directory": "project", "python": sys.executable})
    install = run.step("install")
    assert install.returncode == 0, install.stdout + install.stderr
    [line] = [x for x in install.stdout.splitlines() if x.startswith("building the flakewarden")]
    assert line.endswith(f"{reason})")
    assert install.outputs["built"] == "true"
    assert run.step("save").condition is True  # the rebuilt venv replaces the entry
    assert not (_site(venv) / "zz-poison.pth").exists()
    assert "POISONED" not in (_site(venv) / "requests" / "__init__.py").read_text("utf-8")
    assert "POISONED" not in (_site(venv) / "flakewarden" / "cli.py").read_text("utf-8")
    assert "include-system-site-packages = false" in (venv / "pyvenv.cfg").read_text("utf-8")
    assert_flaky_run(runner, run, project)


def _declared_dependencies() -> set[str]:
    """``[project] dependencies`` of pyproject.toml, on every Python the suite runs on.

    tomllib is 3.11+ and CI runs 3.10 too: the list, a TOML array of basic strings, is also a
    Python literal. Where tomllib exists the two readings must agree.
    """
    text = (REPO / "pyproject.toml").read_text(encoding="utf-8")
    found = re.search(r"(?ms)^\[project\]$.*?^dependencies = (\[.*?^\])$", text)
    assert found, "no [project] dependencies in pyproject.toml"
    declared = set(ast.literal_eval(found[1]))
    if sys.version_info >= (3, 11):
        import tomllib

        assert declared == set(tomllib.loads(text)["project"]["dependencies"])
    return declared


def test_the_venv_requirements_are_pyprojects_that_are_imported() -> None:
    """The install list names every runtime dependency, and junitparser is none of them: the
    product reads JUnit with its own streaming reader (the tests cross-check with it)."""
    [install] = [s for s in load_action()["runs"]["steps"] if s.get("id") == "install"]
    listed = set(install["env"]["FW_REQUIREMENTS"].split())
    declared = _declared_dependencies()
    assert declared - listed == set()
    assert not any(d.startswith("junitparser") for d in declared)
    imported = subprocess.run(
        ["git", "-C", str(REPO), "grep", "-l", "junitparser", "--", "src"],
        capture_output=True,
        text=True,
    )
    assert imported.stdout == ""


def test_failing_suite_is_red_and_still_ships_evidence(runner: Runner) -> None:
    project = make_project(runner.workspace, broken=True)
    run = runner.run({"working-directory": "project", "reruns": "1"})
    step = run.step("run")
    assert step.returncode == 1
    assert run.outputs["outcome"] == "failed"
    assert run.outputs["failed"] == "1"
    assert run.outputs["flaky"] == "2"
    errors = [c for c in parse_commands(step.stdout) if c[0] == "error"]
    assert [props["title"] for _, props, _ in errors] == [
        "Failed test: tests/test_broken.py::test_broken"
    ]
    assert "always broken" in errors[0][2]
    assert step.summary.startswith("## flakewarden: failed (2 flaky, 1 failed)")
    # The upload still runs after a red step.
    upload = run.step("upload")
    assert upload.condition is True
    assert upload.with_["path"] == str(project / "flakewarden-report")


def test_the_junit_input_publishes_another_runners_files_instead_of_running(
    runner: Runner,
) -> None:
    samples = Path(__file__).resolve().parent / "data" / "junit-samples"
    results = runner.workspace / "build" / "test-results" / "go"
    results.mkdir(parents=True)
    shutil.copy(samples / "gotestsum" / "gotestsum-rerun.xml", results / "report.xml")
    run = runner.run(
        {"junit": "build/test-results/**/*.xml", "command": "false-is-never-run", "reruns": "1"}
    )
    step = run.step("run")
    assert step.returncode == 1, step.stdout + step.stderr
    assert (run.outputs["outcome"], run.outputs["failed"], run.outputs["flaky"]) == (
        "failed",
        "1",
        "1",
    )
    titles = [props["title"] for _, props, _ in parse_commands(step.stdout)]
    assert titles == [
        "Failed test: example.com/sample::TestFail",
        "Flaky test: example.com/sample::TestFlaky",
    ]
    assert step.summary.startswith("## flakewarden: failed (1 flaky, 1 failed)")
    assert "Read from 1 JUnit XML file another runner wrote" in step.summary
    report = json.loads((runner.workspace / "flakewarden-report" / "report.json").read_text())
    assert report["junit_from"] == [str(results / "report.xml")]


def test_fail_on_flaky_turns_the_step_red(runner: Runner) -> None:
    make_project(runner.workspace)
    run = runner.run({"working-directory": "project", "fail-on-flaky": "true"})
    assert run.step("run").returncode == 1
    assert run.outputs["flaky"] == "2"
    assert len(parse_commands(run.step("run").stdout)) == 2


@pytest.mark.parametrize(("given", "process"), [("false", "new process"), ("", "forked")])
def test_the_fork_reruns_input_reaches_the_run(runner: Runner, given: str, process: str) -> None:
    make_project(runner.workspace)
    run = runner.run({"working-directory": "project", "fork-reruns": given})
    assert run.step("run").returncode == 0, run.step("run").stderr
    report = runner.workspace / "project" / "flakewarden-report" / "report.json"
    reruns = json.loads(report.read_text())["attempts"][1:]
    assert reruns and all(a["process"].startswith(process) for a in reruns)


def test_command_is_split_like_a_shell_but_never_run_by_one(runner: Runner) -> None:
    project = make_project(runner.workspace)
    run = runner.run(
        {
            "working-directory": "project",
            "command": "python -m pytest -k 'test_ok or test_sometimes' -p no:cacheprovider",
        }
    )
    assert run.step("run").returncode == 0, run.step("run").stderr
    assert run.outputs["passed"] == "1"
    assert run.outputs["flaky"] == "1"  # test_hostile was deselected by the quoted -k

    pwned = runner.workspace / "pwned"
    run = runner.run(
        {
            "working-directory": "project",
            "command": f'python -c "import sys; sys.exit(0)" $(touch {pwned}) `touch {pwned}`',
        }
    )
    assert not pwned.exists()
    # python -c ran with the substitutions as plain words and exited 0 without a pytest
    # session: flakewarden calls that an error (3), and the outputs say so.
    assert run.step("run").returncode == 3
    assert run.outputs["outcome"] == "error"
    assert project.exists()


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ({"command": "   "}, "the command input is empty"),
        ({"command": "python -m 'pytest"}, "unbalanced quotes"),
        ({"coverage": "yes"}, "input --coverage must be true or false"),
        ({"fork-reruns": "no"}, "input fork-reruns must be true, false or empty"),
        ({"working-directory": "does-not-exist"}, ""),
    ],
)
def test_usage_errors_still_write_outputs(
    runner: Runner, given: dict[str, str], message: str
) -> None:
    make_project(runner.workspace)
    run = runner.run({"working-directory": "project", **given})
    step = run.step("run")
    assert step.returncode == 4
    assert run.outputs["outcome"] == "usage-error"
    assert run.outputs["flaky"] == "0"
    # The report dir is made absolute inside the working directory; one that cannot be
    # entered leaves the input as given.
    project = runner.workspace / "project"
    absolute = "working-directory" not in given
    expected = str(project / "flakewarden-report") if absolute else "flakewarden-report"
    assert run.outputs["report-dir"] == expected
    if message:
        [(name, _, data)] = parse_commands(step.stdout)
        assert name == "error"
        assert message in data


def test_the_shard_inputs_run_one_shard_balanced_by_the_given_durations(
    runner: Runner,
) -> None:
    from flakewarden.inside.plugin import shard_of

    project = make_project(runner.workspace, broken=True)
    whole = runner.run({"working-directory": "project", "reruns": "0"})
    report = json.loads((project / "flakewarden-report" / "report.json").read_text())
    ids = [t["id"] for t in report["tests"]]
    durations = runner.workspace / "earlier"
    shutil.copytree(project / "flakewarden-report", durations)
    assert whole.step("run").returncode == 1
    seconds = {t["id"]: t["attempts"][0]["duration"] for t in report["tests"]}
    expected = {i for i in ids if shard_of(ids, 2, seconds)[i] == 1}
    assert expected and expected != set(ids)  # a real split: both shards hold tests
    run = runner.run(
        {
            "working-directory": "project",
            "shard": "2/2",
            "shard-durations": str(durations),
            "reruns": "0",
        }
    )
    shard = json.loads((project / "flakewarden-report" / "report.json").read_text())
    assert shard["shard"] == "2/2"
    assert {t["id"] for t in shard["tests"]} == expected
    assert run.step("run").returncode == int("tests/test_broken.py::test_broken" in expected)


def test_no_tests_collected(runner: Runner) -> None:
    project = runner.workspace / "empty"
    (project / "tests").mkdir(parents=True)
    (project / "tests" / "test_nothing.py").write_text("x = 1\n", encoding="utf-8")
    run = runner.run({"working-directory": "empty"})
    assert run.step("run").returncode == 5
    assert run.outputs["outcome"] == "no-tests"


def test_token_never_reaches_the_tests_or_the_log(runner: Runner) -> None:
    project = make_project(runner.workspace)
    (project / "tests" / "test_env.py").write_text(
        "import os\n\ndef test_env():\n"
        "    assert not [k for k, v in os.environ.items() if v.startswith('ghs_')]\n",
        encoding="utf-8",
    )
    run = runner.run({"working-directory": "project"})
    assert run.step("run").returncode == 0, run.step("run").stdout
    for step in run.steps:
        assert "ghs_" not in step.stdout + step.stderr + step.summary


# -- static checks -------------------------------------------------------------------


def test_no_expression_inside_any_run_script() -> None:
    for step in load_action()["runs"]["steps"]:
        if "run" in step:
            assert "${{" not in step["run"], step["name"]
            assert step["shell"] == "bash"


def test_uses_steps_are_pinned_and_always_upload_hidden_files() -> None:
    uses = [s for s in load_action()["runs"]["steps"] if "uses" in s]
    assert uses, "the report upload step is missing"
    for step in uses:
        assert SHA.match(step["uses"]), step["uses"]
    [upload] = [s for s in uses if s["uses"].startswith("actions/upload-artifact@")]
    assert upload["uses"] == "actions/upload-artifact@ea165f8d65b6e75b540449e92b4886f43607fa02"
    assert upload["with"]["include-hidden-files"] is True
    assert re.match(r"^always\(\)(\s|$)", upload["if"])
    assert "${{ inputs.retention-days }}" in upload["with"]["retention-days"]


def test_marketplace_metadata_inputs_and_outputs() -> None:
    action = load_action()
    for key in ("name", "description", "author"):
        assert action[key]
    assert set(action["branding"]) == {"icon", "color"}
    assert action["runs"]["using"] == "composite"
    expected_inputs = {
        "command",
        "working-directory",
        "reruns",
        "blame",
        "blame-base",
        "check-base",
        "untouched-failures",
        "link-base-failures",
        "max-failures",
        "rerun-only",
        "rerun-except",
        "junit",
        "coverage",
        "cov-fail-under",
        "fail-on-flaky",
        "fork-reruns",
        "report-dir",
        "artifact-name",
        "retention-days",
        "config",
        "github-token",
        "python",
        "file-issues",
        "comment",
        "webhook-url",
        "job-name",
        "shard",
        "shard-durations",
        "burn-in",
        "burn-in-budget",
        "burn-in-base",
    }
    assert set(action["inputs"]) == expected_inputs
    for name, spec in action["inputs"].items():
        assert spec["description"], name
        assert "default" in spec, name
        assert spec.get("required", False) is False, name
    assert set(action["outputs"]) == {
        "outcome",
        "passed",
        "failed",
        "flaky",
        "quarantined",
        "report-dir",
        "coverage",
    }
    assert action["inputs"]["command"]["default"] == "python -m pytest"
    assert action["inputs"]["github-token"]["default"] == "${{ github.token }}"


def test_default_artifact_names_are_unique_per_job_matrix_cell_and_attempt(tmp_path: Path) -> None:
    names = set()
    for job, index, attempt in [
        ("test", 0, "1"),
        ("test", 1, "1"),
        ("lint", 0, "1"),
        ("test", 0, "2"),
    ]:
        runner = Runner(tmp_path)
        runner.job, runner.job_index, runner.run_attempt = job, index, attempt
        names.add(runner.inputs({})["artifact-name"])
    assert len(names) == 4
    assert all(re.fullmatch(r"[A-Za-z0-9_.-]+", n) for n in names)


@pytest.mark.parametrize(
    ("event", "expected"),
    [
        ("push", "true"),
        ("schedule", "true"),
        ("pull_request", "false"),
        ("pull_request_target", "false"),
    ],
)
def test_file_issues_defaults_on_for_push_and_schedule_only(
    tmp_path: Path, event: str, expected: str
) -> None:
    runner = Runner(tmp_path)
    runner.event_name = event
    assert runner.inputs({})["file-issues"] == expected


# -- flake issues --------------------------------------------------------------------


def test_flake_issues_are_filed_on_push_with_the_token_kept_out_of_the_tests(
    runner: Runner,
) -> None:
    from helpers.github_emulator import GitHubEmulator

    make_project(runner.workspace)
    with GitHubEmulator() as github:
        runner.extra_env.update(
            {
                "GITHUB_API_URL": github.url,
                "GITHUB_REPOSITORY": github.full_name,
                "GITHUB_SERVER_URL": "https://github.example",
                "GITHUB_RUN_ID": "42",
            }
        )
        run = runner.run({"working-directory": "project", "github-token": github.token})
        titles = sorted(issue["title"] for issue in github.issues.values())
    assert run.step("run").returncode == 0
    issues = run.step("issues")
    assert issues.returncode == 0, issues.stdout + issues.stderr
    assert titles == [
        "flake: tests/test_flaky.py::test_hostile[::error::pwn,a:b%0A]",
        "flake: tests/test_flaky.py::test_sometimes",
    ]
    assert run.step("run").env.get("GITHUB_TOKEN") is None
    for step in run.steps:
        assert github.token not in step.stdout + step.stderr + step.summary


@pytest.mark.parametrize(
    ("event", "given", "runs"),
    [
        ("pull_request", {}, False),
        ("push", {"file-issues": "false"}, False),
        ("pull_request", {"file-issues": "true"}, True),
    ],
)
def test_flake_issues_follow_the_input(
    runner: Runner, event: str, given: dict[str, str], runs: bool
) -> None:
    make_project(runner.workspace)
    runner.event_name = event
    run = runner.run({"working-directory": "project", **given})
    assert run.step("issues").condition is runs
    if runs:
        # No repository in this simulated job: one warning, and the job stays green.
        assert run.step("issues").returncode == 0
        [(name, _, _)] = parse_commands(run.step("issues").stdout)
        assert name == "warning"


def test_the_pull_request_comment_is_opt_in_and_edited_in_place(runner: Runner) -> None:
    from helpers.github_emulator import GitHubEmulator

    project = make_project(runner.workspace)
    runner.event_name = "pull_request"
    assert runner.run({"working-directory": "project"}).step("comment").condition is False
    with GitHubEmulator() as github:
        pr = github.add_issue("A change", "")
        pr["pull_request"] = {"url": f"https://api.github.com/repos/{github.full_name}/pulls/1"}
        emulator_env(runner, github.url, github.full_name, "47")
        runner.extra_env["GITHUB_REF"] = f"refs/pull/{pr['number']}/merge"
        given = {"working-directory": "project", "github-token": github.token, "comment": "true"}
        for push, run_id in (("created", "47"), ("updated", "48"), ("up to date", "48")):
            for marker in (project / "tests").glob(".failed-once-*"):
                marker.unlink()  # each push flakes again
            runner.extra_env["GITHUB_RUN_ID"] = run_id
            run = runner.run(given)
            step = run.step("comment")
            assert step.condition is True and step.returncode == 0, step.stdout + step.stderr
            said = step.stdout.replace("the comment is up to date", "up to date the comment")
            assert f"{push} the comment on pull request #{pr['number']}" in said
        comments = github.comments[pr["number"]]
        assert len(comments) == 1 and github.schema_errors == []
    body = comments[0]["body"]
    assert "### flakewarden: 0 failed, 2 flaky of 3 tests" in body
    assert "`tests/test_flaky.py::test_sometimes`" in body and "/actions/runs/48" in body
    assert run.step("run").env.get("GITHUB_TOKEN") is None


def test_no_flake_issues_step_when_nothing_was_flaky(runner: Runner) -> None:
    project = runner.workspace / "project"
    (project / "tests").mkdir(parents=True)
    (project / "tests" / "test_ok.py").write_text("def test_ok():\n    pass\n", encoding="utf-8")
    run = runner.run({"working-directory": "project"})
    assert run.outputs["outcome"] == "passed"
    assert run.step("issues").condition is False


def test_quarantined_failure_keeps_the_job_green_and_is_counted(runner: Runner) -> None:
    from helpers.github_emulator import GitHubEmulator

    from flakewarden.issues.marker import format_marker, read_marker

    project = make_project(runner.workspace)
    (project / "tests" / "test_quarantined.py").write_text(
        "import os\n\n"
        "def test_known_flake():\n"
        "    assert not [k for k, v in os.environ.items() if v.startswith('ghs_')]\n"
        "    assert False, 'still flaky'\n",
        encoding="utf-8",
    )
    test_id = "tests/test_quarantined.py::test_known_flake"
    with GitHubEmulator() as github:
        marker = {"id": test_id, "hits": 4, "quarantined_at": "2026-01-01T00:00:00+00:00"}
        number = github.add_issue(
            f"flake: {test_id}",
            f"Investigation notes.\n\n{format_marker(marker)}\n",
            labels=("flaky-test", "quarantined"),
        )["number"]
        runner.extra_env.update(
            {
                "GITHUB_API_URL": github.url,
                "GITHUB_REPOSITORY": github.full_name,
                "GITHUB_SERVER_URL": "https://github.example",
                "GITHUB_RUN_ID": "43",
            }
        )
        run = runner.run({"working-directory": "project", "github-token": github.token})
        counted = read_marker(github.issues[number]["body"])
    step = run.step("run")
    assert step.returncode == 0, step.stdout + step.stderr
    assert run.outputs["quarantined"] == "1"
    report = json.loads((Path(run.outputs["report-dir"]) / "report.json").read_text())
    outcomes = {t["id"]: t["outcome"] for t in report["tests"]}
    assert outcomes[test_id] == "quarantined"
    assert report["quarantine_known"] == [test_id]
    # The step before the tests read the set with the token; the tests never saw it.
    assert "still flaky" in json.dumps(report)
    assert run.step("issues").condition is True
    assert counted is not None and counted["runs"] == 1 and counted["failures"] == 1
    for each in run.steps:
        assert github.token not in each.stdout + each.stderr + each.summary


# -- the token is out of the tests' reach -----------------------------------------------

TOKEN_SCAN_TEST = """
import os
from pathlib import Path

# Hex, so that neither this file nor its bytecode holds the token itself.
TOKEN = bytes.fromhex("{token_hex}")


def _read(path):
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except OSError:
        return None


def test_no_process_or_file_within_reach_holds_the_token():
    found, action_processes = [], 0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        for part in ("environ", "cmdline"):
            data = _read(entry / part)
            if data is None:
                continue
            if part == "environ" and b"FW_REPORT_DIR=" in data and entry.name != str(os.getpid()):
                action_processes += 1
            if TOKEN in data:
                found.append(f"/proc/{{entry.name}}/{{part}}")
    for root in (os.environ["RUNNER_TEMP"], os.environ["GITHUB_WORKSPACE"]):
        for directory, _, names in os.walk(root):
            for name in names:
                data = _read(os.path.join(directory, name))
                if data is not None and TOKEN in data:
                    found.append(os.path.join(directory, name))
    # The scan is live: it read the action's step shell and flakewarden itself.
    assert action_processes >= 2, "could not read the action's own processes"
    assert found == [], found
"""


def emulator_env(runner: Runner, url: str, repository: str, run_id: str) -> None:
    runner.extra_env.update(
        {
            "GITHUB_API_URL": url,
            "GITHUB_REPOSITORY": repository,
            "GITHUB_SERVER_URL": "https://github.example",
            "GITHUB_RUN_ID": run_id,
        }
    )


def add_quarantined_test(project: Path) -> str:
    (project / "tests" / "test_quarantined.py").write_text(
        "def test_known_flake():\n    assert False, 'still flaky'\n", encoding="utf-8"
    )
    return "tests/test_quarantined.py::test_known_flake"


@pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="needs procfs")
def test_no_process_holds_the_token_while_the_tests_run(runner: Runner) -> None:
    """A test that scans every process's environ and cmdline it can read finds no token.

    The token is used before the tests (the quarantined set) and after them (flake
    issues), so each of those steps really held it; the tests' step never does.
    """
    import secrets

    from helpers.github_emulator import GitHubEmulator

    from flakewarden.issues.marker import format_marker

    token = "ghs_" + secrets.token_hex(18)  # unique: no other process on this machine has it
    project = make_project(runner.workspace)
    (project / "tests" / "test_scan.py").write_text(
        TOKEN_SCAN_TEST.format(token_hex=token.encode().hex()), encoding="utf-8"
    )
    quarantined = add_quarantined_test(project)
    with GitHubEmulator(token=token) as github:
        github.add_issue(
            f"flake: {quarantined}",
            format_marker({"id": quarantined, "hits": 4, "quarantined_at": "2026-01-01T00:00:00Z"}),
            labels=("flaky-test", "quarantined"),
        )
        emulator_env(runner, github.url, github.full_name, "44")
        run = runner.run({"working-directory": "project", "github-token": token})
        titles = sorted(issue["title"] for issue in github.issues.values())
    step = run.step("run")
    report = json.loads((Path(run.outputs["report-dir"]) / "report.json").read_text())
    outcomes = {t["id"]: t for t in report["tests"]}
    scan = outcomes["tests/test_scan.py::test_no_process_or_file_within_reach_holds_the_token"]
    assert scan["outcome"] == "passed", [a["message"] for a in scan["attempts"]]
    assert step.returncode == 0, step.stdout + step.stderr
    # The step before the tests read the set with the token ...
    assert run.step("quarantine").returncode == 0
    assert outcomes[quarantined]["outcome"] == "quarantined"
    # ... the step after filed the flakes with it ...
    assert f"flake: {quarantined}" in titles
    assert "flake: tests/test_flaky.py::test_sometimes" in titles
    # ... and the tests' step never had it.
    assert token not in step.env.values()
    for each in run.steps:
        assert token not in each.stdout + each.stderr + each.summary


def test_the_quarantined_set_fails_open_in_its_own_step(runner: Runner, tmp_path: Path) -> None:
    """GitHub unreachable: one warning, no test treated as quarantined, the run goes on."""
    import socket

    project = make_project(runner.workspace)
    add_quarantined_test(project)
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    emulator_env(runner, f"http://127.0.0.1:{port}", "octo-org/octo-repo", "45")
    run = runner.run(
        {"working-directory": "project", "file-issues": "false", "github-token": "ghs_x" * 8}
    )
    pre = run.step("quarantine")
    assert pre.returncode == 0, pre.stdout + pre.stderr
    [(name, _, message)] = parse_commands(pre.stdout)
    assert name == "warning"
    assert "cannot read the quarantined tests from GitHub" in message
    assert "no test is treated as quarantined" in message
    step = run.step("run")
    assert step.returncode == 1  # the quarantined test's failure fails the job: nothing hidden
    assert run.outputs["quarantined"] == "0"
    assert "cannot read the quarantined tests" not in step.stdout  # said once, before


def test_an_empty_token_is_reported_by_the_input_that_sets_it(runner: Runner) -> None:
    make_project(runner.workspace)
    emulator_env(runner, "http://127.0.0.1:9", "octo-org/octo-repo", "46")
    run = runner.run({"working-directory": "project", "github-token": ""})
    issues = run.step("issues")
    assert issues.returncode == 0
    [(name, _, message)] = parse_commands(issues.stdout)
    assert name == "warning"
    assert "github-token input" in message
    assert "GITHUB_TOKEN" not in message and "--token" not in message
    assert run.step("quarantine").condition is False  # nothing to read the set with


def test_a_token_in_the_jobs_environment_is_called_out(runner: Runner) -> None:
    """A job-wide GITHUB_TOKEN reaches the tests whatever the action does: say so."""
    make_project(runner.workspace)
    runner.extra_env["GITHUB_TOKEN"] = "ghs_joblevel" + "0" * 24
    run = runner.run({"working-directory": "project", "file-issues": "false"})
    warnings = [
        data for name, _, data in parse_commands(run.step("run").stdout) if name == "warning"
    ]
    [callout] = [w for w in warnings if "job's environment" in w]
    assert "GITHUB_TOKEN or GH_TOKEN" in callout
    assert "github-token input" in callout
    assert "ghs_joblevel" not in run.step("run").stdout


@pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="needs procfs")
def test_a_runner_that_exports_inputs_still_keeps_the_token_from_the_tests(
    runner: Runner,
) -> None:
    """act exports every input as INPUT_<NAME> to every step; the tests' step empties it."""
    import secrets

    token = "ghs_" + secrets.token_hex(18)
    project = make_project(runner.workspace)
    (project / "tests" / "test_scan.py").write_text(
        TOKEN_SCAN_TEST.format(token_hex=token.encode().hex()), encoding="utf-8"
    )
    runner.extra_env["INPUT_GITHUB-TOKEN"] = token  # what act adds to every step
    run = runner.run({"working-directory": "project", "file-issues": "false"})
    step = run.step("run")
    assert step.returncode == 0, step.stdout + step.stderr
    assert run.outputs["passed"] == "2"  # test_ok and the scan
