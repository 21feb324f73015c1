"""Burn-in's pure parts: the budget's shares, a verdict read as a burn-in result, the config."""

from __future__ import annotations

import pytest

from flakewarden.burn_in import budget
from flakewarden.burn_in.outcome import STABLE, outcome_of, percent, rate_bound
from flakewarden.burn_in.run import slug
from flakewarden.changes import Selected
from flakewarden.config import BurnIn, Config, parse
from flakewarden.errors import ConfigError
from flakewarden.model.binomial import upper_bound
from flakewarden.stress.verdict import Arm, Failure, Verdict


def test_the_budget_is_shared_by_duration_and_each_test_keeps_its_floor() -> None:
    weights = budget.weights([0.2, None, 0.1])
    assert weights == [0.2, pytest.approx(0.15), 0.1]  # unknown: the median of the known
    floors = [5.0, 5.0, 5.0]
    first = budget.share(120.0, weights, floors)
    assert first == pytest.approx(120 * 0.2 / 0.45)
    # What is left is shared again: the last test gets all of it.
    assert budget.share(30.0, weights[2:], floors[2:]) == 30.0
    # The tests after it keep their floors, and no test goes below its own.
    assert budget.share(12.0, [10.0, 0.1, 0.1], floors) == 5.0
    assert budget.share(20.0, [10.0, 0.1, 0.1], floors) == pytest.approx(10.0)


def test_equal_shares_when_no_duration_is_known() -> None:
    assert budget.weights([None, None]) == [1.0, 1.0]
    assert budget.share(120.0, [1.0, 1.0, 1.0], [5.0] * 3) == pytest.approx(40.0)


def test_tests_that_would_not_get_their_floor_do_not_run_but_one_always_does() -> None:
    assert budget.fitting(120.0, [30.0] * 5) == 4
    assert budget.fitting(1.0, [30.0, 30.0]) == 1
    assert budget.fitting(120.0, []) == 0
    floor = budget.floor_seconds(0.5, 0.01)
    assert floor == pytest.approx(max(budget.MIN_FLOOR_SECONDS, 13 * 0.5 + 20 * 0.01))
    # A suite that takes long to collect does not make one test's floor huge.
    assert budget.floor_seconds(60.0, None) == 13 * budget.MAX_START_SECONDS


def _verdict(name: str, *, failures: int = 0, met: bool = False, **fields: object) -> Verdict:
    arms = [
        Arm("isolation", "baseline", runs=10, failures=0, command="cd /p && python -m pytest x"),
        Arm(
            "timing",
            "switch-interval",
            runs=190,
            failures=failures,
            command="cd /p && python -c 'switch' x",
        ),
    ]
    verdict = Verdict("t.py::test_x", name, "the reason", "the rule", arms=arms, duration=3.0)
    verdict.power = {"met": met}
    for key, value in fields.items():
        setattr(verdict, key, value)
    return verdict


SELECTED = Selected("t.py::test_x", ("new test",))


def _outcome(verdict: Verdict):  # type: ignore[no-untyped-def]
    return outcome_of(SELECTED, verdict, budget=40.0, directory="tests/01-x", file="t.py", line=3)


def test_clean_and_bounded_is_stable_with_the_bound_its_runs_put_on_the_rate() -> None:
    outcome = _outcome(_verdict("not-reproducible", met=True))
    assert outcome.verdict == STABLE and not outcome.failing
    assert outcome.runs == 200 and outcome.bound == upper_bound(0, 200)
    assert outcome.summary() == (
        f"0 failures in 200 runs: its rate is below {percent(upper_bound(0, 200))} with 95% "
        "confidence (10 plain retries would bound it only below 25.9%)"
    )
    assert percent(rate_bound(10)) == "25.9%"  # 1 - 0.05 ** (1 / 10)
    data = outcome.to_json()
    assert data["verdict"] == "stable" and data["stress_verdict"] == "not-reproducible"
    assert data["bound"] == round(upper_bound(0, 200), 6) and data["failures"] == 0


def test_clean_but_unbounded_says_what_budget_would_bound_it() -> None:
    verdict = _verdict("not-reproducible")
    verdict.reason = (
        "no failure ...: a budget of about 240 s (--budget-seconds 240) should settle it"
    )
    outcome = _outcome(verdict)
    assert outcome.verdict == "not-reproducible" and not outcome.failing
    assert outcome.budget_to_bound == 240.0
    assert "a budget of about 240 s for this test would bound them" in outcome.summary()


def test_a_race_is_a_new_flaky_test_with_its_knob_and_reproduce_command() -> None:
    failure = Failure("timing", "switch-interval", 7, 3, "assert 399 == 400", "tb")
    outcome = _outcome(_verdict("race", failures=12, knob="switch-interval", first_failure=failure))
    assert outcome.failing and outcome.verdict == "race" and outcome.bound is None
    assert outcome.summary() == "a race under switch-interval: failed 12 of 200 runs"
    assert outcome.reproduce == "cd /p && python -c 'switch' x"


def test_each_failing_verdict_names_what_it_found() -> None:
    order = _outcome(_verdict("order-dependent", failures=3, polluter="t.py::test_a"))
    assert order.summary().startswith("fails after t.py::test_a runs first")
    seed = _outcome(_verdict("seed-dependent", failures=3, seed=7))
    assert "--randomly-seed=7" in seed.summary()
    broken = _outcome(_verdict("deterministic", failures=10))
    assert "a broken test, not a flake" in broken.summary() and broken.failing
    unsure = _outcome(_verdict("inconclusive", failures=2))
    assert unsure.failing and "not a pass" in unsure.summary()
    skipped = _outcome(_verdict("error", failures=1))
    assert not skipped.failing and skipped.summary().startswith("could not be stressed")


def test_a_folder_name_is_path_safe_whatever_the_test_id() -> None:
    assert slug(3, "tests/test_x.py::TestA::test_b[1-../../etc]") == (
        "03-tests-test_x.py-TestA-test_b-1-..-..-etc"
    )
    assert "/" not in slug(1, "a/../../b::c") and slug(2, "::") == "02-test"


def test_the_config_file_sets_burn_in() -> None:
    assert Config().burn_in == BurnIn(fail_on_flaky=True, budget_seconds=120.0, cap=40)
    config = parse({"burn_in": {"fail_on_flaky": False, "budget_seconds": 300, "cap": 5}}, "f")
    assert config.burn_in == BurnIn(False, 300.0, 5)
    with pytest.raises(ConfigError, match=r"burn_in\.fail_on_flaky: expected true or false"):
        parse({"burn_in": {"fail_on_flaky": "no"}}, "f")
    with pytest.raises(ConfigError, match=r"burn_in\.cap: must be 1 or more"):
        parse({"burn_in": {"cap": 0}}, "f")
    with pytest.raises(ConfigError, match=r"burn_in\.budget: unknown key; did you mean"):
        parse({"burn_in": {"budget": 10}}, "f")
