"""Which timing knobs apply to a test, and one count for a load knob that escalated."""

from __future__ import annotations

from typing import Any, Optional

from flakewarden.model import TestRecord
from flakewarden.stress.knobs import (
    ALL_KNOBS,
    Concurrency,
    applicable,
    knob_env,
    order_of,
    replay_of,
)
from flakewarden.stress.sequential import Counts, Sequential


def record(concurrency: Optional[dict[str, Any]]) -> TestRecord:
    data: dict[str, Any] = {"id": "t.py::t", "phases": [{"when": "call", "outcome": "passed"}]}
    if concurrency is not None:
        data["concurrency"] = concurrency
    return TestRecord.from_json(data)


def test_the_plugins_facts_are_read_and_a_hostile_value_is_no_fact() -> None:
    assert record({"threads": 3, "event_loop": 0}).threads == 3
    assert record({"threads": 0, "event_loop": 12}).event_loop == 12
    for hostile in ({"threads": "9"}, {"threads": -1}, {"threads": True}, [1, 2], "x"):
        got = record(hostile)  # type: ignore[arg-type]
        assert got.threads is None and got.event_loop is None
    assert record(None).threads is None


def test_a_test_that_ran_no_thread_and_no_loop_gets_only_the_load_knobs() -> None:
    seen = Concurrency().add([record({"threads": 0, "event_loop": 0})] * 10)
    knobs, skipped = applicable(seen)
    assert knobs == ["cpu-load", "throttle"]
    assert set(skipped) == {"switch-interval", "yield", "asyncio"}
    assert "in its 10 isolation runs" in skipped["yield"]
    assert "no event loop ran" in skipped["asyncio"]


def test_one_run_with_a_thread_or_a_loop_is_enough() -> None:
    runs = [record({"threads": 0, "event_loop": 0})] * 9
    threaded = Concurrency().add([*runs, record({"threads": 2, "event_loop": 0})])
    assert applicable(threaded)[0] == ["switch-interval", "yield", "cpu-load", "throttle"]
    looped = Concurrency().add([*runs, record({"threads": 0, "event_loop": 5})])
    assert applicable(looped)[0] == ["asyncio", "cpu-load", "throttle"]


def test_without_the_facts_every_knob_runs() -> None:
    # Records without the facts (not recorded) are no evidence that a knob cannot apply.
    seen = Concurrency().add([record(None)] * 10)
    assert seen.runs == 0
    assert applicable(seen) == (list(ALL_KNOBS), {})


def test_seeded_knobs_carry_their_seed_for_replay() -> None:
    env = knob_env("yield", 41)
    assert env["FLAKEWARDEN_YIELD"].startswith("41:")
    assert replay_of("yield", env) == f"FLAKEWARDEN_YIELD={env['FLAKEWARDEN_YIELD']}"
    assert knob_env("asyncio", 7) == {"FLAKEWARDEN_ASYNCIO": "7"}
    assert replay_of("switch-interval", knob_env("switch-interval", 7)) == ""
    assert order_of(["throttle", "asyncio", "switch-interval"]) == [
        "switch-interval",
        "asyncio",
        "throttle",
    ]


def test_a_load_knobs_reason_says_which_level_it_counts() -> None:
    # A real thread race: the reason said "cpu-load 4/20" while the arm's table said 14/60,
    # because the bound starts afresh at each level. Both counts now come with their level.
    sequential = Sequential(("switch-interval", "cpu-load"))
    for failures in (5, 5):
        sequential.add_round(
            {
                "baseline": [Counts(20, 1)],
                "switch-interval": [Counts(20, 1)],
                "cpu-load": [Counts(20, failures)],
            }
        )
    sequential.reset("cpu-load")  # escalated
    sequential.add_round({"baseline": [Counts(20, 1)], "cpu-load": [Counts(20, 4)]})
    assert sequential.all_levels("cpu-load") == Counts(60, 14)
    assert (
        sequential.counts_text("cpu-load") == "4/20 at its last level (14/60 over all its levels)"
    )
    assert sequential.counts_text("switch-interval") == "2/40"
    described = sequential.bound("cpu-load").describe()
    assert "in its 20 runs at its last level (60 runs over all its levels)" in described
    assert "over all" not in sequential.bound("switch-interval").describe()


def test_a_fast_test_gets_more_runs_per_process_and_a_slow_one_as_before() -> None:
    from flakewarden.stress.timing import FAST_MAX_REPEAT, MAX_REPEAT, MIN_REPEAT, runs_per_process

    assert runs_per_process(0.0002) == FAST_MAX_REPEAT  # a trivial test: 500 runs, ~0.1 s
    assert runs_per_process(0.005) == 100  # fills ~0.5 s
    assert runs_per_process(0.02) == 25  # fills ~0.5 s: more than the usual 20
    assert runs_per_process(0.05) == MAX_REPEAT  # as before: ~2 s, at most 20
    assert runs_per_process(0.1) == MAX_REPEAT
    assert runs_per_process(5.0) == MIN_REPEAT


def test_a_merged_shards_not_applicable_text_is_escaped_in_verdict_md() -> None:
    # After a merge the text comes from a shard's verdict.json: an artifact, so hostile.
    from flakewarden.stress.verdict import Verdict
    from flakewarden.stress.verdict_render import render_markdown

    hostile = "<img src=x onerror=alert(1)> [a](http://e)"
    power = {"met": True, "knobs": {"cpu-load": {}}, "not_applicable": {"yield@x": hostile}}
    verdict = Verdict(test_id="t.py::t", verdict="flaky", reason="", rule="", power=power)
    [line] = [line for line in render_markdown(verdict).splitlines() if line.startswith("- yield")]
    assert "<img" not in line and "](" not in line and "&lt;img" in line
