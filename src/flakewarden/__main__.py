"""``python -m flakewarden``: the same entry point as the ``flakewarden`` console script."""

from flakewarden.cli import entry

entry()
