"""Small real pytest projects in a temporary folder, and the real CLI run on them.

One builder writes every project the tests make, so that each states only the files that
matter to it and the pytest set-up that keeps runs ordered and free of a cache is the same.
"""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
import textwrap
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Optional

from .hermetic import clean_env

PYTHON = sys.executable
PYTEST = [PYTHON, "-m", "pytest"]

#: A bare pytest config: it marks the project's root. The projects hold no hypothesis test,
#: and hypothesis's plugin (a test dependency of ours, so installed beside them) imports
#: hypothesis in its terminal summary in every run: 0.15 s of each of the suite's many
#: pytest processes (0.41 s against 0.26 s for a trivial run on the 2-core machine).
PLAIN_INI = "[pytest]\naddopts = -p no:hypothesispytest\n"
#: Order fixed and no cache: what a test of the runner needs to see the same run twice.
ISOLATED_INI = "[pytest]\naddopts = -p no:randomly -p no:cacheprovider -p no:hypothesispytest\n"


def source(text: str) -> str:
    """``text`` as written in a test (indented, after a newline) as it goes in a file."""
    return textwrap.dedent(text).lstrip("\n")


def make_project(
    root: Path,
    files: Mapping[str, str],
    *,
    ini: Optional[str] = PLAIN_INI,
    verbatim: bool = False,
) -> Path:
    """``root`` with ``ini`` as its ``pytest.ini`` (``None``: none) and then ``files``.

    Each file's text goes through :func:`source` unless ``verbatim``, for a test whose
    project keeps its text byte for byte (a leading blank line moves every line number).
    """
    root.mkdir(parents=True, exist_ok=True)
    if ini is not None:
        (root / "pytest.ini").write_text(ini, encoding="utf-8")
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text if verbatim else source(text), encoding="utf-8")
    return root


FLAKY_TEMPLATE = """
from pathlib import Path

COUNTER = Path(__file__).parent / ".counter-{name}"


def bump():
    n = int(COUNTER.read_text()) if COUNTER.exists() else 0
    COUNTER.write_text(str(n + 1))
    return n + 1
"""


@dataclasses.dataclass
class Result:
    returncode: int
    stdout: str
    stderr: str
    report_dir: Path

    @property
    def report(self) -> dict[str, Any]:
        return json.loads((self.report_dir / "report.json").read_text(encoding="utf-8"))

    def test(self, test_id: str) -> dict[str, Any]:
        for test in self.report["tests"]:
            if test["id"] == test_id:
                return test
        raise AssertionError(f"{test_id} not in report: {[t['id'] for t in self.report['tests']]}")

    @property
    def outcomes(self) -> dict[str, str]:
        return {t["id"]: t["outcome"] for t in self.report["tests"]}


@dataclasses.dataclass
class Project:
    root: Path

    def write(self, relative: str, text: str) -> Path:
        make_project(self.root, {relative: text}, ini=None)
        return self.root / relative

    def env(self, extra: Optional[dict[str, str]] = None) -> dict[str, str]:
        # A suite run inside GitHub Actions must not publish to the real job.
        return clean_env(extra)

    def run(
        self,
        *args: str,
        command: Optional[list[str]] = None,
        cwd: Optional[Path] = None,
        env: Optional[dict[str, str]] = None,
        report_dir: str = "report",
    ) -> Result:
        """``flakewarden run --report-dir ... ARGS -- COMMAND`` as a real subprocess."""
        where = cwd or self.root
        full = self._command(args, command, report_dir)
        done = subprocess.run(
            full,
            cwd=where,
            env=self.env(env),
            capture_output=True,
            text=True,
            encoding="utf-8",
            timeout=300,
        )
        return Result(done.returncode, done.stdout, done.stderr, self.root / report_dir)

    def drive(self, source: str, *args: str) -> Any:
        """Run ``source`` (a script that uses flakewarden's own functions) in a child
        interpreter, in the project, and return the JSON value its last line prints.

        For tests of what happens inside a run: in-process, the run would make this
        test's worker the subreaper of every orphan.
        """
        done = subprocess.run(
            [PYTHON, "-c", textwrap.dedent(source), *args],
            cwd=self.root,
            env=self.env(),
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0, done.stdout + done.stderr
        return json.loads(done.stdout.splitlines()[-1])

    def start(self, *args: str, report_dir: str = "report") -> subprocess.Popen[str]:
        """The same ``flakewarden run`` started in the background, for tests that signal it."""
        return subprocess.Popen(
            self._command(args, None, report_dir),
            cwd=self.root,
            env=self.env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def _command(
        self, args: tuple[str, ...], command: Optional[list[str]], report_dir: str
    ) -> list[str]:
        return [
            PYTHON,
            "-m",
            "flakewarden",
            "run",
            "--report-dir",
            str(self.root / report_dir),
            *args,
            "--",
            *(PYTEST if command is None else command),
        ]


#: A test module's helper: ``bump(name)`` counts the runs of ``name`` (1 the first time), one
#: file per name beside the module, so xdist's workers never share one.
BUMP_BY_NAME = """
def bump(name):
    count = Path(__file__).with_name(name + ".count")
    runs = int(count.read_text()) + 1 if count.exists() else 1
    count.write_text(str(runs))
    return runs
"""


def flaky_module(name: str, fail_times: int = 1) -> str:
    """Source of a test module whose test ``test_{name}`` fails ``fail_times`` then passes."""
    return (
        FLAKY_TEMPLATE.format(name=name)
        + f"""

def test_{name}():
    assert bump() > {fail_times}, "flaked"
"""
    )
