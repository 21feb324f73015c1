"""Reading and rewriting a pytest command line for reruns.

A rerun keeps every option that shapes how tests run and replaces only the
selection. Which tokens were positional (paths, node ids) is not guessed: the
plugin records ``file_or_dir`` as pytest parsed it, and those tokens are the
ones removed. Exact selection by node id is then done by the plugin
(``FLAKEWARDEN_SELECT``), because pytest's own node-id arguments split on
``::`` and break on parametrized ids that contain it.
"""

from __future__ import annotations

import math
import os
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple, Optional

from flakewarden.errors import UsageError

# Options that choose which tests run: dropped on reruns. Value: takes an argument.
SELECTION_OPTIONS: dict[str, bool] = {
    "-k": True,
    "-m": True,
    "--deselect": True,
    "--lf": False,
    "--last-failed": False,
    "--ff": False,
    "--failed-first": False,
    "--nf": False,
    "--new-first": False,
    "--sw": False,
    "--stepwise": False,
    "--sw-skip": False,
    "--stepwise-skip": False,
    "--sw-reset": False,
    "--stepwise-reset": False,
    "--lfnf": True,
    "--last-failed-no-failures": True,
    # Stopping early would leave other reruns without a result.
    "-x": False,
    "--exitfirst": False,
    "--maxfail": True,
}
# Report files a rerun would overwrite with the reruns' partial view; ours are merged.
REPORT_FILE_OPTIONS: dict[str, bool] = {
    "--junitxml": True,
    "--junit-xml": True,
    "--report-log": True,
    "--html": True,
    "--json-report-file": True,
}
# The coverage threshold applies to the merged total only, never to one attempt.
COV_FAIL_UNDER = "--cov-fail-under"
# Short options of pytest and common plugins that take a value (``-kEXPR`` or ``-k EXPR``).
SHORT_WITH_VALUE = frozenset("kmpcoWrn")


class PytestCommand(NamedTuple):
    """A command split into what starts pytest and the arguments pytest receives."""

    prefix: list[str]
    args: list[str]


def _is_pytest_program(token: str) -> bool:
    name = os.path.basename(token).lower()
    return name in ("pytest", "py.test", "pytest.exe", "py.test.exe")


def locate(command: Sequence[str]) -> Optional[PytestCommand]:
    """Find where pytest's own arguments start: after ``pytest`` or ``-m pytest``."""
    for index, token in enumerate(command):
        if _is_pytest_program(token):
            return PytestCommand(list(command[: index + 1]), list(command[index + 1 :]))
        if token == "-m" and index + 1 < len(command) and command[index + 1] == "pytest":
            return PytestCommand(list(command[: index + 2]), list(command[index + 2 :]))
    return None


def split_with_invocation(
    command: Sequence[str], invocation_args: Sequence[str]
) -> Optional[PytestCommand]:
    """Use the arguments pytest says it received to confirm where they start."""
    located = locate(command)
    if located is None:
        return None
    if list(located.args) != list(invocation_args):
        return None
    return located


def _option_name(token: str) -> str:
    if token.startswith("--"):
        return token.split("=", 1)[0]
    if token.startswith("-") and len(token) >= 2:
        return token[:2]
    return token


def drop_options(args: Sequence[str], table: dict[str, bool]) -> list[str]:
    """``args`` without the options named in ``table`` (value: the option takes an argument)."""
    kept: list[str] = []
    skip_next = False
    for token in args:
        if skip_next:
            skip_next = False
            continue
        name = _option_name(token)
        if name in table:
            takes_value = table[name]
            inline = "=" in token if token.startswith("--") else len(token) > 2
            if takes_value and not inline:
                skip_next = True
            elif not takes_value and not token.startswith("--") and len(token) > 2:
                # A cluster of short flags such as -xvs: drop only the selection flag.
                rest = token[2:]
                if rest.isalpha() and not (set(rest) & SHORT_WITH_VALUE):
                    kept.append("-" + rest)
            continue
        kept.append(token)
    return kept


def strip_flag_in_cluster(args: Sequence[str], flag: str) -> list[str]:
    """Remove a short flag hidden in a cluster (``-vxs`` -> ``-vs``)."""
    out: list[str] = []
    for token in args:
        if (
            len(token) > 2
            and token.startswith("-")
            and not token.startswith("--")
            and token[1:].isalpha()
            and token[1] not in SHORT_WITH_VALUE
            and flag in token[1:]
        ):
            letters = token[1:]
            # Stop at the first value-taking letter: what follows it is its value.
            if not set(letters) & SHORT_WITH_VALUE:
                letters = letters.replace(flag, "")
                if letters:
                    out.append("-" + letters)
                continue
        out.append(token)
    return out


def remove_positionals(args: Sequence[str], positionals: Sequence[str]) -> list[str]:
    """Remove the tokens pytest parsed as positional, matching from the end."""
    wanted = Counter(positionals)
    kept_reversed: list[str] = []
    for token in reversed(args):
        if wanted.get(token, 0) > 0:
            wanted[token] -= 1
            continue
        kept_reversed.append(token)
    return list(reversed(kept_reversed))


def cov_fail_under(args: Sequence[str]) -> Optional[float]:
    """The threshold given to pytest-cov on the command line, if any.

    ``nan`` or ``inf`` would turn the gate off without a word: a usage error.
    """
    for index, token in enumerate(args):
        if token.startswith(COV_FAIL_UNDER + "="):
            return _percent(token.split("=", 1)[1])
        if token == COV_FAIL_UNDER and index + 1 < len(args):
            return _percent(args[index + 1])
    return None


def _percent(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value):
        raise UsageError(f"{COV_FAIL_UNDER} expects a finite number, got {text[:40]!r}")
    return value


def without_cov_fail_under(args: Sequence[str]) -> list[str]:
    return drop_options(args, {COV_FAIL_UNDER: True})


def measures_coverage(args: Sequence[str]) -> bool:
    """True when pytest-cov is asked to measure on the command line."""
    return any(token == "--cov" or token.startswith("--cov=") for token in args)


def has_option(args: Sequence[str], *names: str) -> bool:
    return any(_option_name(token) in names for token in args)


def test_file(node_id: str) -> str:
    """The file part of a node id (before the first ``::``), relative to rootdir."""
    return node_id.split("::", 1)[0]


def rerun_args(
    args: Sequence[str],
    *,
    positionals: Sequence[str],
    node_ids: Sequence[str],
    rootdir: Path,
) -> list[str]:
    """pytest arguments for a rerun of ``node_ids``: same options, new selection.

    The positional arguments become the files holding the tests (absolute, so a
    run started in a subdirectory works), which keeps collection small; the
    plugin then keeps exactly the node ids. ``--rootdir`` is pinned so that node
    ids stay the same when the arguments change.
    """
    kept = remove_positionals(args, positionals)
    kept = strip_flag_in_cluster(kept, "x")
    kept = drop_options(kept, SELECTION_OPTIONS)
    kept = drop_options(kept, REPORT_FILE_OPTIONS)
    kept = without_cov_fail_under(kept)
    if measures_coverage(kept):
        kept.append(f"{COV_FAIL_UNDER}=0")
    if has_option(kept, "--cov-report"):
        kept = [*drop_options(kept, {"--cov-report": True}), "--cov-report="]
    if not has_option(kept, "--rootdir"):
        kept.append(f"--rootdir={rootdir}")
    files: dict[str, None] = {}
    for node_id in node_ids:
        path = rootdir / test_file(node_id)
        if not path.exists():
            # Not a file path we can name (a package id, a plugin's item): let
            # pytest collect as the user asked and the plugin select.
            return kept + list(positionals)
        files.setdefault(str(path), None)
    return kept + list(files)
