"""Owning a report directory: replace what flakewarden wrote there, and nothing else.

``--report-dir .`` is allowed, so the directory may hold a user's files next to
ours. A sentinel file, ``.flakewarden-report``, holds a manifest: the names a
command owns (``attempts``, ``report.json``, ...), every file and directory the
last run left under them, and the files that were already there and are not
ours. A new run deletes only the files the manifest lists; a run that died
before recording its files is cleaned up as "everything under the owned names
except what was not ours", so a crash never leaves stale records to be mixed
with new ones. A file of an owned name at the top that flakewarden did not
write, or one inside a numbered attempt directory, is refused, never replaced.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path, PurePosixPath
from typing import Any, Optional

from flakewarden.errors import UsageError

SENTINEL = ".flakewarden-report"
#: What this process claimed, should a test delete the sentinel while it runs.
_claims: dict[str, tuple[list[str], list[str]]] = {}
_NOTE = "This directory holds a flakewarden report; flakewarden replaces the files listed here."


def _inside(name: str, owned: Sequence[str]) -> bool:
    """True for a safe relative path under one of the ``owned`` names."""
    path = PurePosixPath(name)
    if path.is_absolute() or ".." in path.parts or not path.parts:
        return False
    return path.parts[0] in owned


def _walk(directory: Path, owned: Sequence[str]) -> tuple[list[str], list[str]]:
    """Every file (or link) and every directory under the owned names, relative, "/" separated."""
    files: list[str] = []
    dirs: list[str] = []
    for name in owned:
        top = directory / name
        if top.is_symlink() or top.is_file():
            files.append(name)
        elif top.is_dir():
            dirs.append(name)
            for root, subdirs, names in os.walk(top):
                base = Path(root).relative_to(directory).as_posix()
                dirs.extend(f"{base}/{d}" for d in subdirs if not (Path(root) / d).is_symlink())
                files.extend(f"{base}/{n}" for n in names)
                files.extend(f"{base}/{d}" for d in subdirs if (Path(root) / d).is_symlink())
        elif os.path.lexists(top):
            files.append(name)
    return files, dirs


def _read_manifest(sentinel: Path) -> dict[str, Any]:
    try:
        data = json.loads(sentinel.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _names(data: dict[str, Any], key: str, owned: Sequence[str]) -> set[str]:
    value = data.get(key)
    if not isinstance(value, list):
        return set()
    return {v for v in value if isinstance(v, str) and _inside(v, owned)}


def _write_manifest(directory: Path, data: dict[str, Any]) -> None:
    (directory / SENTINEL).write_text(
        json.dumps({"note": _NOTE, **data}, ensure_ascii=False, indent=1) + "\n",
        encoding="utf-8",
    )


def _remove_empty_dirs(directory: Path, dirs: Iterable[str]) -> None:
    for name in sorted(dirs, key=lambda d: d.count("/"), reverse=True):
        with contextlib.suppress(OSError):  # not empty (a user's file is kept), or gone
            (directory / name).rmdir()


def claim_directory(directory: Path, owned: Sequence[str]) -> None:
    """Make ``directory`` ours: delete the last run's files under ``owned``, and only those."""
    sentinel = directory / SENTINEL
    try:
        if directory.is_dir():
            manifest = _read_manifest(sentinel) if sentinel.exists() else {}
            if not isinstance(manifest.get("owned"), list):
                # Not a directory flakewarden wrote (or one an older version wrote).
                _refuse_clashes(directory, [n for n in owned if os.path.lexists(directory / n)])
            present, dirs = _walk(directory, owned)
            if manifest.get("complete") is True:
                ours = _names(manifest, "files", owned)
            else:  # the last run died before listing its files
                ours = set(present) - _names(manifest, "foreign", owned)
            foreign = sorted(set(present) - ours)
            _refuse_clashes(directory, foreign)
            for name in sorted(ours):
                (directory / name).unlink(missing_ok=True)
            _remove_empty_dirs(directory, dirs)
            foreign = sorted(set(_walk(directory, owned)[0]))
        else:
            foreign = []
        directory.mkdir(parents=True, exist_ok=True)
        _write_manifest(
            directory,
            {"owned": list(owned), "foreign": foreign, "complete": False, "job": job_identity()},
        )
        _claims[str(directory)] = (list(owned), foreign)
    except OSError as exc:
        raise UsageError(f"cannot use --report-dir {directory}: {exc.strerror}") from exc


def _refuse_clashes(directory: Path, foreign: Sequence[str]) -> None:
    """Refuse files of others where flakewarden writes: owned names, numbered attempts."""
    clashing = [name for name in foreign if "/" not in name]
    clashing += [name for name in foreign if name.count("/") >= 2 and name.split("/")[1].isdigit()]
    if clashing:
        shown = ", ".join(clashing[:3]) + (
            f" and {len(clashing) - 3} more" if len(clashing) > 3 else ""
        )
        raise UsageError(
            f"--report-dir {directory} already holds {shown} that flakewarden did not "
            "write; move them or choose a new or empty directory"
        )


def record_written(directory: Path) -> None:
    """List in the manifest every file this run left, so the next run deletes just those."""
    sentinel = directory / SENTINEL
    manifest = _read_manifest(sentinel)
    if not isinstance(manifest.get("owned"), list) and str(directory) in _claims:
        # A test deleted the directory, sentinel and all: what is there now is ours.
        owned, foreign_list = _claims[str(directory)]
        manifest = {"owned": owned, "foreign": foreign_list, "job": job_identity()}
    owned = [o for o in manifest.get("owned", []) if isinstance(o, str)]
    if not owned:
        return
    foreign = _names(manifest, "foreign", owned)
    files, _ = _walk(directory, owned)
    mine = sorted(set(files) - foreign)
    # Unwritable: the next run falls back to "everything but what was not ours".
    with contextlib.suppress(OSError):
        _write_manifest(
            directory,
            {
                "owned": owned,
                "foreign": sorted(foreign),
                "complete": True,
                "files": mine,
                "job": manifest.get("job", ""),
            },
        )


def job_identity(env: Optional[Mapping[str, str]] = None) -> str:
    """This GitHub Actions job, as its steps see it; ``""`` outside GitHub Actions.

    ``RUNNER_TRACKING_ID`` is fresh for every job; the run, attempt, job and runner
    names stand in where the runner's process cleanup (which sets it) is off.
    """
    env = os.environ if env is None else env
    if env.get("GITHUB_ACTIONS") != "true":
        return ""
    if env.get("RUNNER_TRACKING_ID"):
        return env["RUNNER_TRACKING_ID"]
    keys = ("GITHUB_RUN_ID", "GITHUB_RUN_ATTEMPT", "GITHUB_JOB", "RUNNER_NAME")
    parts = [env.get(key, "") for key in keys]
    return "/".join(parts) if any(parts) else ""


def written_in_this_job(directory: Path) -> bool:
    """True when a run in this very job wrote ``directory`` (its lines are in this log)."""
    here = job_identity()
    if not here:
        return False
    return bool(_read_manifest(directory / SENTINEL).get("job") == here)
