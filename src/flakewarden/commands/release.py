"""``flakewarden release TEST_ID [--reason TEXT]``; lives with ``quarantine``."""

from __future__ import annotations

from flakewarden.commands.quarantine import register_release as register

__all__ = ["register"]
