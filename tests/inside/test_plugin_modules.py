"""The plugin's ``modules`` record: which loaded modules came from a folder."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import flakewarden
from flakewarden.inside.plugin import modules


def test_a_folder_lists_the_modules_loaded_from_it_in_the_order_they_loaded() -> None:
    # In a fresh interpreter: this worker may have loaded more of the package than a
    # record names (LIMIT), whatever ran in it before.
    package = Path(flakewarden.__file__).resolve().parent
    script = (
        "import json, sys; from flakewarden.inside.plugin import modules; "
        "print(json.dumps(modules.loaded_under(sys.argv[1])))"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(package)], capture_output=True, text=True, check=True
    )
    found = json.loads(done.stdout)
    assert found[0] == str(package / "__init__.py")
    assert str(Path(modules.__file__).resolve()) in found
    assert all(Path(f).is_relative_to(package) for f in found)


def test_the_interpreters_own_prefix_inside_the_folder_is_left_out() -> None:
    prefix = Path(sys.prefix).resolve()
    pytest_file = str(Path(pytest.__file__).resolve())
    if not Path(pytest_file).is_relative_to(prefix):
        pytest.skip("pytest is not installed under this interpreter's prefix")
    # The folder holding the environment (a .venv inside a checkout): its files are
    # installed code, not the checkout's.
    assert pytest_file not in modules.loaded_under(str(prefix.parent))
    # The environment itself asked for: nothing would be left, so it is not left out.
    assert modules.loaded_under(str(prefix))


def test_the_record_needs_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(modules.ENV, raising=False)
    assert modules.record() is None
    folder = str(Path(flakewarden.__file__).resolve().parent)
    monkeypatch.setenv(modules.ENV, folder)
    record = modules.record()
    assert record is not None and record["kind"] == "modules" and record["under"] == folder
    assert len(record["files"]) <= modules.LIMIT
    assert all(os.path.isabs(f) for f in record["files"])
