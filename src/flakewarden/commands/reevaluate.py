"""``flakewarden reevaluate``: release proposals and escalations; lives with ``quarantine``."""

from __future__ import annotations

from flakewarden.commands.quarantine import register_reevaluate as register

__all__ = ["register"]
