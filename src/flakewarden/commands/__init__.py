"""One module per subcommand; each exposes ``register(subparsers)``.

``register`` adds the subparser and sets ``handler`` to a function taking the
parsed namespace and returning an exit code. ``args.test_command`` holds what
followed ``--`` on the command line.

Modules are named here, not imported: the CLI imports only the subcommand it
runs, so ``flakewarden run`` never pays for the GitHub client or the stress
machinery.
"""

from __future__ import annotations

import importlib
from types import ModuleType

COMMANDS: tuple[str, ...] = (
    "run",
    "publish",
    "merge",
    "issues",
    "comment",
    "link-base-failures",
    "publish-run",
    "digest",
    "stress",
    "burn-in",
    "verify-fix",
    "quarantine",
    "quarantined",
    "release",
    "reevaluate",
    "history",
    "dashboard",
)


def load(name: str) -> ModuleType:
    return importlib.import_module(f"{__name__}.{name.replace('-', '_')}")
