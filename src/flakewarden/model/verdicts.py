"""The stress verdicts: their names, what each allows, and which wins when several are found.

Defined once: the config's validation, the stress engine, the shard merge, the
quarantine policy, the digest and the issue text all read these.

Quarantine needs evidence that the failure is not a real break and not a race. An order
or seed dependency, or a test that leaks state into itself (it passes its first run in
every fresh process and fails when repeated in the same one), is a found, reproducible
cause outside timing. A flat rate that no knob moves (``flaky``), or no failure at all
(``not-reproducible``), is allowed only when the evidence bounds what every knob could be
doing: each knob's runs exclude an increase in the failure rate larger than the margin.
Without that bound it is absence of evidence, and ``inconclusive`` (failures that no rule
explains when the budget ended) is always refused.
"""

from __future__ import annotations

from typing import Literal

DETERMINISTIC = "deterministic"
RACE = "race"
ORDER_DEPENDENT = "order-dependent"
SEED_DEPENDENT = "seed-dependent"
NON_IDEMPOTENT = "non-idempotent"
FLAKY = "flaky"
NOT_REPRODUCIBLE = "not-reproducible"
INCONCLUSIVE = "inconclusive"
ERROR = "error"

# Every verdict, in the order the documentation lists them.
VERDICTS = (
    DETERMINISTIC,
    RACE,
    ORDER_DEPENDENT,
    SEED_DEPENDENT,
    NON_IDEMPOTENT,
    FLAKY,
    NOT_REPRODUCIBLE,
    INCONCLUSIVE,
    ERROR,
)

# Whether a verdict can ever allow a quarantine label (the bound below still applies).
QUARANTINE_ALLOWED = {
    DETERMINISTIC: False,
    RACE: False,
    ORDER_DEPENDENT: True,
    SEED_DEPENDENT: True,
    NON_IDEMPOTENT: True,
    FLAKY: True,
    NOT_REPRODUCIBLE: True,
    INCONCLUSIVE: False,
    ERROR: False,
}
# A race or a real break is fixed, never quarantined; inconclusive and error found nothing.
NEVER_QUARANTINE = tuple(v for v in VERDICTS if not QUARANTINE_ALLOWED[v])
# Verdicts that name no cause: they allow quarantine only with every knob bounded.
NEEDS_BOUND = (FLAKY, NOT_REPRODUCIBLE)
# Verdicts that name something to fix in the code: a recorded one stands, whatever a
# policy allows (the digest never calls its quarantine "refused").
NAMES_A_FIX = (DETERMINISTIC, RACE)

# The kinds of seed dependence the draws phase names (``stress/draws.py``): the random seed,
# the hash seed, both together, either alone. Each replays from its seeds, so it is a bug in
# the code or in the test, and its verdict never allows a quarantine.
DRAW_KINDS = ("random", "hash", "pair", "either")

# What one runner proves is not undone by another's clean runs: when stress shards of
# one test disagree, the first of these that any shard found is the merged verdict.
PRECEDENCE = (DETERMINISTIC, RACE, ORDER_DEPENDENT, SEED_DEPENDENT, NON_IDEMPOTENT)


# Blame (``flakewarden run --base``): whether a failed test ran the change, and the base.
ChangeVerdict = Literal["touches", "untouched", "unknown"]
BaseVerdict = Literal["fails", "passes", "error"]
CHANGE_VERDICTS: tuple[ChangeVerdict, ...] = ("touches", "untouched", "unknown")
BASE_VERDICTS: tuple[BaseVerdict, ...] = ("fails", "passes", "error")
#: ``blame.untouched_failures``: what a failure that ran none of the change and fails on the
#: base too does to the gate. ``report``: nothing, it is shown; ``warn``: its annotation is
#: a warning; ``ignore-in-gate``: it does not fail the job.
UNTOUCHED_POLICIES = ("report", "warn", "ignore-in-gate")
