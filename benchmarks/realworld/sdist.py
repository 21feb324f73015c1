"""Fetch a real project's source distribution from PyPI and give it a virtual environment.

The corpus scripts measure flakewarden on suites nobody here wrote. Sources are downloaded at
run time at a pinned version (``pip download --no-binary :all: --no-deps``) into a cache
directory and unpacked; nothing of them is ever copied into this repository.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tarfile
import venv
import zipfile
from collections.abc import Sequence
from pathlib import Path

DEFAULT_CACHE = Path(
    os.environ.get("FLAKEWARDEN_CORPUS_CACHE", Path.home() / ".cache" / "flakewarden-corpus")
)


class FetchError(RuntimeError):
    """A source distribution could not be downloaded or unpacked."""


def download(name: str, version: str, cache: Path = DEFAULT_CACHE) -> Path:
    """Return the path of ``NAME==VERSION``'s sdist archive, downloading it once into ``cache``."""
    target = cache / "sdists" / f"{name}-{version}"
    found = _archives(target)
    if found:
        return found[0]
    target.mkdir(parents=True, exist_ok=True)
    command = [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--quiet",
        "--disable-pip-version-check",
        "--no-binary",
        ":all:",
        "--no-deps",
        "--no-build-isolation",
        "--dest",
        str(target),
        f"{name}=={version}",
    ]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    found = _archives(target)
    if not found:
        # --no-build-isolation skips fetching build backends; some sdists need theirs to
        # report metadata, so try once more the ordinary way.
        command.remove("--no-build-isolation")
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        found = _archives(target)
    if not found:
        raise FetchError(f"{name}=={version}: pip download failed: {done.stderr.strip()[-500:]}")
    return found[0]


def unpack(archive: Path, dest: Path) -> Path:
    """Unpack ``archive`` into a fresh ``dest`` and return the project's top directory."""
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    if archive.name.endswith(".zip"):
        with zipfile.ZipFile(archive) as zf:
            zf.extractall(dest)
    else:
        with tarfile.open(archive) as tf:
            if sys.version_info >= (3, 12):
                tf.extractall(dest, filter="data")
            else:
                tf.extractall(dest)  # a PyPI sdist at a pinned version
    entries = [p for p in dest.iterdir() if p.is_dir()]
    return entries[0] if len(entries) == 1 else dest


def fetch(name: str, version: str, work: Path, cache: Path = DEFAULT_CACHE) -> Path:
    """Download (cached) and unpack ``NAME==VERSION`` under ``work``; return the source tree."""
    return unpack(download(name, version, cache), work / f"{name}-{version}")


def make_venv(where: Path, requirements: Sequence[str], cache: Path = DEFAULT_CACHE) -> Path:
    """Create a venv at ``where`` with ``requirements`` installed; return its interpreter.

    Requirements are pip arguments (``pytest==9.2.0``, ``-e /path``, ``.``). Pip's own cache is
    used, so a second corpus run installs from the machine's wheels without network.
    """
    if where.exists():
        shutil.rmtree(where)
    venv.EnvBuilder(with_pip=True).create(where)
    python = where / ("Scripts" if os.name == "nt" else "bin") / "python"
    if requirements:
        done = subprocess.run(
            [
                str(python),
                "-m",
                "pip",
                "install",
                "--quiet",
                "--disable-pip-version-check",
                *requirements,
            ],
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode != 0:
            raise FetchError(
                f"pip install {' '.join(requirements)} failed: {done.stderr.strip()[-800:]}"
            )
    return python


def _archives(directory: Path) -> list[Path]:
    if not directory.is_dir():
        return []
    return sorted(
        p for p in directory.iterdir() if p.name.endswith((".tar.gz", ".tgz", ".zip", ".tar.bz2"))
    )
