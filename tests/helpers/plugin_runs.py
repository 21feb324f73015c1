"""A generated project run by real pytest processes with the injected plugin, as stress runs it.

Each run is a fresh interpreter that loads the plugin from its private folder (``PYTHONPATH``
and ``-p flakewarden_pytest_plugin``, as ``plugin_env`` sets them) and records into a results
file of its own. Plugin autoloading is off, so a run costs a bare pytest's start-up; the
plugins a project needs are named in ``plugins`` (``pytest_asyncio.plugin``).
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import sysconfig
import tempfile
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Optional

from flakewarden.runner.process import plugin_dir, plugin_env
from helpers.project import PYTEST

#: The eval loop of a GIL build from 3.11 on switches threads only at calls and backward
#: jumps; 3.9 and 3.10 also switch inside a line, and a free-threaded build has no GIL.
SWITCHES_ONLY_BETWEEN_LINES = sys.version_info >= (3, 11) and not sysconfig.get_config_var(
    "Py_GIL_DISABLED"
)


@dataclasses.dataclass
class PluginRun:
    returncode: int
    stdout: str
    stderr: str
    tests: list[dict[str, Any]]

    @property
    def failed(self) -> int:
        """Test records (one per in-process repeat) with a failed phase."""
        return sum(
            any(phase["outcome"] == "failed" for phase in test["phases"]) for test in self.tests
        )


def run_plugin(
    root: Path,
    *args: str,
    extra: Optional[Mapping[str, str]] = None,
    plugins: Sequence[str] = (),
    record: bool = True,
    directory: Optional[Path] = None,
    python: Optional[str] = None,
) -> PluginRun:
    """One pytest process in ``root`` with the plugin; ``extra`` is added to its environment.

    ``python``: the interpreter that runs pytest (default: this one).
    """
    if directory is None:
        with plugin_dir() as made:
            return run_plugin(
                root,
                *args,
                extra=extra,
                plugins=plugins,
                record=record,
                directory=made,
                python=python,
            )
    with tempfile.TemporaryDirectory(prefix="flakewarden-knob-run-") as work:
        results = Path(work) / "results.jsonl"
        env = plugin_env(directory, results, extra=extra)
        env.pop("PYTEST_XDIST_WORKER", None)
        env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
        if not record:
            env.pop("FLAKEWARDEN_RESULTS")
        loads = [part for name in plugins for part in ("-p", name)]
        pytest = PYTEST if python is None else [python, "-m", "pytest"]
        done = subprocess.run(
            [*pytest, "-p", "no:cacheprovider", *loads, *args],
            cwd=root,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        tests = _test_records(results)
    return PluginRun(done.returncode, done.stdout, done.stderr, tests)


def run_many(
    root: Path,
    *args: str,
    extras: Sequence[Mapping[str, str]],
    plugins: Sequence[str] = (),
    python: Optional[str] = None,
) -> list[PluginRun]:
    """One process per ``extras`` entry, two at a time (the machine's cores)."""
    with plugin_dir() as directory, ThreadPoolExecutor(min(2, os.cpu_count() or 1)) as pool:
        return list(
            pool.map(
                lambda extra: run_plugin(
                    root, *args, extra=extra, plugins=plugins, directory=directory, python=python
                ),
                extras,
            )
        )


def _test_records(path: Path) -> list[dict[str, Any]]:
    """The ``test`` records as the plugin wrote them (every field, ``concurrency`` too)."""
    if not path.exists():
        return []
    records = (json.loads(line) for line in path.read_text(encoding="utf-8").splitlines())
    return [record for record in records if record.get("kind") == "test"]


#: What the async tests install beside the suite's own packages (pinned: the knob's
#: figures were measured with these).
ASYNC_PACKAGES = ("pytest-asyncio==1.5.0", "anyio==4.16.0")


def async_python(folder: Path) -> str:
    """An interpreter that has this one's packages and also pytest-asyncio and anyio.

    The suite leaves them out of its own environment: autoloaded, pytest-asyncio warns in
    every pytest process the suite starts. A venv in ``folder`` sees this environment's
    packages through a ``.pth`` file and gets the two from PyPI (pip, run from this
    environment, installs only what it does not see there); ``pytest.skip`` says why when
    they cannot be installed (no network).
    """
    import pytest

    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(folder)], check=True)
    python = folder / "bin" / "python"
    found = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    )
    own = Path(found.stdout.strip())
    own.mkdir(parents=True, exist_ok=True)
    (own / "flakewarden-suite.pth").write_text(
        "\n".join(p for p in sys.path if p.endswith("-packages")) + "\n", encoding="utf-8"
    )
    done = subprocess.run(
        [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
         *ASYNC_PACKAGES],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    if done.returncode:
        lines = (done.stderr or done.stdout).strip().splitlines() or ["no output"]
        pytest.skip(f"pytest-asyncio and anyio could not be installed: {lines[-1]}")
    return str(python)
