"""Argument parsing and dispatch only; each subcommand lives in ``commands/``.

Errors are caught here, at the edge, and turned into an exit code and one line.
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import os
import sys
from collections.abc import Sequence
from typing import Optional

from flakewarden import IMPORTED_AT, __version__
from flakewarden.commands import COMMANDS, load
from flakewarden.console import one_line
from flakewarden.errors import FlakewardenError
from flakewarden.model import ExitCode, timings


class _Parser(argparse.ArgumentParser):
    """argparse that exits with our usage code (4) and one line, not pytest-style 2."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.print_usage(sys.stderr)
        sys.stderr.write(f"flakewarden: error: {one_line(message)}\n")
        raise SystemExit(ExitCode.USAGE_ERROR)


def build_parser(only: Optional[str] = None) -> argparse.ArgumentParser:
    """The parser; with ``only``, just that subcommand is imported and registered."""
    parser = _Parser(
        prog="flakewarden",
        description="Rerun only the failed tests in fresh processes and keep every flake visible.",
    )
    parser.add_argument("--version", action="version", version=f"flakewarden {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    subparsers.required = True
    for name in COMMANDS:
        if only is None or name == only:
            load(name).register(subparsers)
    return parser


def split_command(argv: Sequence[str]) -> tuple[list[str], list[str]]:
    """Split at the first ``--``: our options before it, the test command after."""
    argv = list(argv)
    if "--" in argv:
        at = argv.index("--")
        return argv[:at], argv[at + 1 :]
    return argv, []


#: Commands after which the process ends without tearing the interpreter down (``entry``).
HARD_EXIT = frozenset({"run"})


def entry() -> None:
    """The console script and ``python -m flakewarden``: ``main``, then exit with its code.

    After ``flakewarden run`` every report is written and closed; what is left is the
    interpreter freeing a big suite's objects one by one (~5 ms of every CI job on a
    2,000-test suite). So it flushes its output, runs the exit handlers (``atexit``:
    anything registered, such as coverage.py measuring this process) and exits at once.
    """
    argv = sys.argv[1:]
    code = main(argv)
    if _chosen(split_command(argv)[0]) in HARD_EXIT:
        atexit._run_exitfuncs()
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(OSError, ValueError):  # closed, or its reader left
                stream.flush()
        os._exit(code)
    sys.exit(code)


def _chosen(ours: Sequence[str]) -> Optional[str]:
    """The subcommand: the first word of our options that is not an option."""
    return next((word for word in ours if not word.startswith("-")), None)


def main(argv: Optional[Sequence[str]] = None) -> int:
    timings.reset()  # one record per command, should one process run several
    timings.mark("imported", IMPORTED_AT)
    timings.mark("main")
    try:
        return _main(argv)
    finally:
        timings.write_if_asked()


def _main(argv: Optional[Sequence[str]]) -> int:
    ours, command = split_command(sys.argv[1:] if argv is None else argv)
    chosen = _chosen(ours)
    if chosen is None and "--version" in ours and "-h" not in ours and "--help" not in ours:
        # Asked before any subcommand (the action checks its venv with it): the answer needs
        # none of the subcommands' modules, which would cost a third of a second to import.
        sys.stdout.write(f"flakewarden {__version__}\n")
        return 0
    try:
        with timings.phase("parse"):  # imports the chosen subcommand
            args = build_parser(chosen if chosen in COMMANDS else None).parse_args(ours)
    except SystemExit as exc:  # --help, --version, or a usage error
        return int(exc.code or 0) if isinstance(exc.code, int) else ExitCode.USAGE_ERROR
    args.test_command = command
    try:
        return int(args.handler(args))
    except FlakewardenError as exc:
        sys.stderr.write(f"flakewarden: error: {one_line(exc)}\n")
        return int(exc.exit_code)
    except KeyboardInterrupt:
        sys.stderr.write("flakewarden: interrupted\n")
        return int(ExitCode.INTERRUPTED)
    except Exception as exc:  # a bug of ours: one line and exit 3, never "tests failed"
        sys.stderr.write(
            f"flakewarden: internal error: {type(exc).__name__}: {one_line(exc)} "
            "(please report it with the command that caused it)\n"
        )
        return int(ExitCode.INTERNAL_ERROR)


if __name__ == "__main__":  # pragma: no cover
    entry()
