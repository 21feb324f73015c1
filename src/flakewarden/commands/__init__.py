"""One module per subcommand; each exposes ``register(subparsers)``.

``register`` adds the subparser and sets ``handler`` to a function taking the
parsed namespace and returning an exit code. ``args.test_command`` holds what
followed ``--`` on the command line.
"""

from __future__ import annotations

from types import ModuleType

from . import digest, issues, publish, run, stress

COMMANDS: list[ModuleType] = [run, publish, issues, digest, stress]
