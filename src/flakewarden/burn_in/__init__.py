"""Burn-in: stress the tests a pull request adds or changes, within a budget it can afford.

A new test that passes once in CI may still fail one run in twenty; burn-in runs the
change's tests through the stress engine before they merge, so a new flaky test is found
by its author, with a verdict and a command that reproduces it.

- ``run``: ``run_burn_in(options, say, progress)``, the diff, one collection, the
  selection (``flakewarden.changes``) and each selected test stressed in turn; ``BurnIn``
  holds what it found and its exit code.
- ``collect``: the suite collected once, with each item's file, line and fixtures.
- ``budget``: each test's share of the budget, and the floor it gets at least.
- ``stress_one``: the one use of the stress engine, and reading its verdict.
- ``outcome``: a test's result (``stable``, or the engine's verdict) and its bound.
- ``report``: ``burn-in.json``, ``burn-in.md`` and the annotations.
"""

from __future__ import annotations

from .outcome import STABLE, TestOutcome
from .run import BurnIn, BurnInOptions, run_burn_in

__all__ = ["STABLE", "BurnIn", "BurnInOptions", "TestOutcome", "run_burn_in"]
