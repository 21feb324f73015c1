"""The base check: a test that failed on a pull request, run again on the merge base.

``check_on_base`` checks the merge base out in a temporary worktree (``worktree``), runs the
run's own test command there in one fresh process with the plugin selecting exactly the
failed tests, and reads each test's verdict (``base_verdicts``): ``fails`` when it fails
there too, ``passes`` when it passes there, ``error`` when it could not be told (not at the
base, skipped there, the worktree or the command failed, the process crashed or timed out).

The trap it guards against: a project installed in editable mode, or with its source folder
on ``sys.path``, imports the pull request's checkout even when its tests run from the base's
worktree, and the check would then test the pull request again. So the worktree's ``src``
and its counterpart of the command's folder go first on ``PYTHONPATH`` (and every
``PYTHONPATH`` entry under the checkout is moved to the worktree), and the plugin lists the
modules the run loaded from the checkout (``FLAKEWARDEN_MODULES_UNDER``): any at all makes
every verdict ``error``, naming the first file.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Callable, Optional

from flakewarden.changes.git import GitUnusable, run_git
from flakewarden.errors import UsageError
from flakewarden.model.blame import BaseCheck
from flakewarden.runner import pytest_args
from flakewarden.runner.process import plugin_dir, plugin_env, resolve_executable, run_child
from flakewarden.runner.process_results import read_results

from .base_verdicts import (
    NOT_AT_BASE,
    Ended,
    foreign_import,
    loaded_files,
    one_line,
    verdicts,
)
from .worktree import WorktreeError, worktree_of

Say = Callable[[str], None]
MODULES_ENV = "FLAKEWARDEN_MODULES_UNDER"  # read by the plugin's ``modules``
RESULTS_FILE = "results.jsonl"
LOG_FILE = "output.log"
SELECT_FILE = "select.json"
WORKTREE_SECONDS = 300.0  # checking out a large repository takes a while
UNVERIFIED = (
    "the base's run did not list the modules it loaded: cannot tell whether it ran the base's code"
)


def check_on_base(
    *,
    root: Path,
    merge_base: str,
    cwd: Path,
    command: Sequence[str],
    test_ids: Sequence[str],
    work_dir: Path,
    timeout: float,
    say: Say,
    config: Optional[Mapping[str, Any]] = None,
    environ: Optional[Mapping[str, str]] = None,
) -> dict[str, BaseCheck]:
    """Each of ``test_ids`` run on ``merge_base``: its ``BaseCheck``, by test id.

    ``root`` is the repository's top, ``cwd`` the folder the run's ``command`` ran in (under
    ``root``), ``test_ids`` pytest node ids relative to pytest's rootdir. ``config`` is the
    plugin's ``config`` record of the run's first attempt: with it only the failed tests'
    files are collected on the base (as a rerun collects), and a test whose file is not at
    the base is known without running; without it the command's own selection is collected
    and the plugin keeps the test ids. The process may run ``timeout`` seconds; ``environ``
    (default: this process's environment) is the environment it starts from. Its records,
    output and selection go in ``work_dir``. ``Interrupted`` (Ctrl-C, SIGTERM) propagates,
    once the worktree is removed.
    """
    ids = list(dict.fromkeys(test_ids))
    if not ids:
        return {}
    root, cwd = root.resolve(), cwd.resolve()
    work_dir.mkdir(parents=True, exist_ok=True)
    shown = one_line(merge_base, 60)
    say(f"base check: running {len(ids)} failed test(s) on the merge base {shown}")
    try:
        with worktree_of(root, merge_base, timeout=max(WORKTREE_SECONDS, timeout)) as tree:
            commit = _head(tree) or merge_base
            checks = _check_in(
                tree, commit, root, cwd, command, ids, work_dir, timeout, config, environ
            )
    except WorktreeError as error:
        why = one_line(f"the merge base could not be checked out: {error}")
        return {test_id: BaseCheck("error", merge_base, why) for test_id in ids}
    tally = Counter(check.verdict for check in checks.values())
    say("base check: " + ", ".join(f"{n} {verdict}" for verdict, n in sorted(tally.items())))
    return checks


def _head(tree: Path) -> str:
    try:
        answer = run_git(tree, ["rev-parse", "--verify", "HEAD"])
    except GitUnusable:
        return ""
    return answer.line if answer.ok else ""


def _inside(path: Path, root: Path, tree: Path) -> Optional[Path]:
    """``path``'s counterpart in the worktree ``tree`` of ``root``; None when not under it."""
    try:
        return tree / path.relative_to(root)
    except ValueError:
        return None


def _check_in(
    tree: Path,
    commit: str,
    root: Path,
    cwd: Path,
    command: Sequence[str],
    ids: list[str],
    work_dir: Path,
    timeout: float,
    config: Optional[Mapping[str, Any]],
    environ: Optional[Mapping[str, str]],
) -> dict[str, BaseCheck]:
    def every(why: str) -> dict[str, BaseCheck]:
        return {test_id: BaseCheck("error", commit, one_line(why)) for test_id in ids}

    base_cwd = _inside(cwd, root, tree)
    if base_cwd is None:
        return every(f"the command's folder {cwd} is outside the repository {root}")
    if not base_cwd.is_dir():
        return every(f"the command's folder {cwd.relative_to(root)} is not at the base")
    rootdir = _rootdir(config, root)
    base_rootdir = None if rootdir is None else _inside(rootdir, root, tree)
    gone = _not_at_base(ids, rootdir, base_rootdir)
    checks = {test_id: BaseCheck("error", commit, NOT_AT_BASE) for test_id in gone}
    run_ids = [test_id for test_id in ids if test_id not in checks]
    if not run_ids:
        return checks
    base_command = _base_command(command, config, root, cwd, tree, base_cwd, run_ids, base_rootdir)
    results_path, log = work_dir / RESULTS_FILE, work_dir / LOG_FILE
    results_path.unlink(missing_ok=True)  # the plugin appends
    select = work_dir / SELECT_FILE
    select.write_text(json.dumps(run_ids), encoding="utf-8")
    with plugin_dir() as plugin:
        env = plugin_env(
            plugin,
            results_path,
            select=select,
            extra={MODULES_ENV: str(root)},
            base=_environment(environ, root, cwd, tree, base_cwd),
        )
        try:
            resolve_executable(base_command, base_cwd)
            child = run_child(base_command, cwd=base_cwd, env=env, log=log, timeout=timeout)
        except UsageError as error:
            why = one_line(f"the command cannot run on the base: {error}")
            checks.update({test_id: BaseCheck("error", commit, why) for test_id in run_ids})
            return {test_id: checks[test_id] for test_id in ids}
    results = read_results(results_path)
    loaded = loaded_files(results_path)
    foreign = foreign_import(loaded or [], root)
    if loaded is None and results.tests:
        foreign = UNVERIFIED
    ended = Ended(child.exit_code, child.timed_out, timeout, log)
    checks.update(verdicts(run_ids, results, ended, commit, foreign=foreign))
    return {test_id: checks[test_id] for test_id in ids}


def _rootdir(config: Optional[Mapping[str, Any]], root: Path) -> Optional[Path]:
    """pytest's rootdir in the run, from its ``config`` record, when under ``root``."""
    text = None if config is None else config.get("rootdir")
    if not isinstance(text, str) or not text:
        return None
    rootdir = Path(text).resolve()
    return rootdir if rootdir == root or root in rootdir.parents else None


def _not_at_base(
    ids: Sequence[str], rootdir: Optional[Path], base_rootdir: Optional[Path]
) -> list[str]:
    """The ids whose file is in the run's rootdir and not in the base's."""
    if rootdir is None or base_rootdir is None:
        return []
    gone = []
    for test_id in ids:
        file = pytest_args.test_file(test_id)
        if file and (rootdir / file).exists() and not (base_rootdir / file).exists():
            gone.append(test_id)
    return gone


def _moved(token: str, root: Path, tree: Path) -> str:
    """``token`` with a path under ``root`` (the whole token, or an option's ``=value``)
    pointing into the worktree instead."""
    head, equals, value = token.rpartition("=") if token.startswith("-") else ("", "", token)
    if not value or not os.path.isabs(value):
        return token
    moved = _inside(Path(os.path.normpath(value)), root, tree)
    return token if moved is None else f"{head}{equals}{moved}"


def _program(program: str, root: Path, cwd: Path, tree: Path, base_cwd: Path) -> str:
    """The program to run on the base: the base's own copy when it has one, else the
    checkout's (a virtual environment in it is not committed, so not in the worktree)."""
    if os.path.isabs(program):
        moved = _inside(Path(program), root, tree)
        return str(moved) if moved is not None and moved.exists() else program
    has_folder = os.sep in program or bool(os.altsep and os.altsep in program)
    if has_folder and not (base_cwd / program).exists() and (cwd / program).exists():
        return str(cwd / program)
    return program


def _base_command(
    command: Sequence[str],
    config: Optional[Mapping[str, Any]],
    root: Path,
    cwd: Path,
    tree: Path,
    base_cwd: Path,
    run_ids: Sequence[str],
    base_rootdir: Optional[Path],
) -> list[str]:
    """The run's command for the base: its own options, only the failed tests' files.

    As a rerun does (``pytest_args.rerun_args``), with the positional arguments the run's
    ``config`` record names; a collection error in another file does not stop the session
    (``--continue-on-collection-errors``), and an xdist run is run in one process (``-n0``)
    so the plugin sees every module it loads.
    """
    if not command:
        return []
    program = _program(command[0], root, cwd, tree, base_cwd)
    located = pytest_args.locate(command)
    if located is None:
        return [program, *command[1:]]  # not a plain pytest command: the plugin selects
    prefix = [program, *located.prefix[1:]]
    args = located.args
    positionals = [str(p) for p in (config or {}).get("file_or_dir") or []]
    narrow = (
        config is not None
        and base_rootdir is not None
        and not Counter(positionals) - Counter(args)  # every positional is in the command
    )
    if narrow and base_rootdir is not None:
        args = pytest_args.rerun_args(
            args, positionals=positionals, node_ids=run_ids, rootdir=base_rootdir
        )
    else:
        args = pytest_args.drop_options(args, pytest_args.SELECTION_OPTIONS)
        args = pytest_args.drop_options(args, pytest_args.REPORT_FILE_OPTIONS)
    # Paths into the checkout (``--rootdir``, ``-c``, ``--basetemp``) point into the worktree.
    args = [_moved(token, root, tree) for token in args]
    if not pytest_args.has_option(args, "--continue-on-collection-errors"):
        args.append("--continue-on-collection-errors")
    xdist = bool((config or {}).get("xdist")) or pytest_args.has_option(
        args, "-n", "--numprocesses"
    )
    if xdist:
        args.append("-n0")
    return prefix + args


def _environment(
    environ: Optional[Mapping[str, str]], root: Path, cwd: Path, tree: Path, base_cwd: Path
) -> dict[str, str]:
    """The environment to start from, ``PYTHONPATH`` pointing at the base's code first."""
    env = dict(os.environ if environ is None else environ)
    entries: list[str] = []
    src = tree / "src"
    if src.is_dir():
        entries.append(str(src))
    entries.append(str(base_cwd))
    for entry in env.get("PYTHONPATH", "").split(os.pathsep):
        if not entry:
            continue
        path = Path(entry) if os.path.isabs(entry) else cwd / entry
        moved = _inside(Path(os.path.normpath(path)), root, tree)
        entries.append(str(moved if moved is not None else path))
    env["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(entries))
    return env
