"""``flakewarden run --shard K/N``: every test in exactly one shard, reruns within it."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from helpers.project import PYTEST, Project, flaky_module

from flakewarden.history.store import HistoryStore
from flakewarden.inside.plugin import shard_of
from flakewarden.reports.report_json import read_report

SEED = 20261202


def _ids(count: int) -> list[str]:
    return [f"tests/test_m{n % 7}.py::test_{n}[p{n % 3}]" for n in range(count)]


@pytest.mark.parametrize("durations", ["none", "some", "all"])
@pytest.mark.parametrize("count", [1, 2, 3, 7])
def test_every_test_lands_in_exactly_one_shard_whatever_the_order(
    durations: str, count: int
) -> None:
    rng = random.Random(SEED)
    ids = _ids(200)
    seconds = {
        "none": {},
        "some": {i: rng.uniform(0, 3) for i in ids[::3]},
        "all": {i: rng.uniform(0, 3) for i in ids},
    }[durations]
    split = shard_of(ids, count, seconds)
    assert sorted(split) == sorted(ids) and set(split.values()) <= set(range(count))
    for _ in range(5):
        shuffled = ids[:]
        rng.shuffle(shuffled)
        assert shard_of(shuffled, count, seconds) == split, f"seed {SEED}"


def test_durations_go_longest_first_onto_the_least_loaded_shard() -> None:
    seconds = {"a": 10.0, "b": 9.0, "c": 8.0, "d": 3.0, "e": 2.0, "f": 2.0}
    # a→0 (loads 10, 0), b→1 (10, 9), c→1 (10, 17), d→0 (13, 17), e→0 (15, 17), f→0 (17, 17).
    assert shard_of(list("fedcba"), 2, seconds) == {
        "a": 0,
        "b": 1,
        "c": 1,
        "d": 0,
        "e": 0,
        "f": 0,
    }


def test_a_test_without_a_duration_counts_at_the_median() -> None:
    # Known: 1, 4, 6 (median 4); "new" counts as 4, after "x" (6) and before "y" (4) by id.
    seconds = {"x": 6.0, "y": 4.0, "z": 1.0}
    assert shard_of(["z", "y", "x", "new"], 2, seconds) == {"x": 0, "new": 1, "y": 1, "z": 0}


def test_without_durations_the_split_is_a_stable_hash_of_each_id() -> None:
    ids = _ids(2000)
    split = shard_of(ids, 4, {})
    # Each id's shard depends on that id alone: adding tests moves none of the others.
    assert shard_of(ids[:500], 4, {}) == {i: split[i] for i in ids[:500]}
    sizes = sorted(list(split.values()).count(k) for k in range(4))
    # About as many tests each: 500 expected, and a fair split's sd is 19.
    assert sizes[0] > 420 and sizes[-1] < 580


def _suite(project: Project) -> list[str]:
    ids = []
    for module in range(3):
        body = "\n".join(f"def test_{n}():\n    pass\n" for n in range(4))
        project.write(f"tests/test_m{module}.py", body)
        ids += [f"tests/test_m{module}.py::test_{n}" for n in range(4)]
    project.write("tests/test_flaky.py", flaky_module("flaky"))
    return [*ids, "tests/test_flaky.py::test_flaky"]


def test_shards_of_a_real_suite_cover_it_once_and_rerun_within_themselves(
    project: Project,
) -> None:
    ids = _suite(project)
    expected = shard_of(ids, 3, {})
    seen: dict[str, int] = {}
    for k in (1, 2, 3):
        result = project.run("--shard", f"{k}/3", "-q", report_dir=f"shard-{k}")
        assert result.returncode == 0, result.stdout + result.stderr
        report = result.report
        assert report["shard"] == f"{k}/3"
        for test in report["tests"]:
            assert test["id"] not in seen, f"{test['id']} in shards {seen[test['id']]} and {k}"
            seen[test["id"]] = k
        assert {t["id"] for t in report["tests"]} == {i for i in ids if expected[i] == k - 1}
        reruns = report["attempts"][1:]
        if expected["tests/test_flaky.py::test_flaky"] == k - 1:
            assert result.outcomes["tests/test_flaky.py::test_flaky"] == "flaky"
            assert [a["selected"] for a in reruns] == [["tests/test_flaky.py::test_flaky"]]
        else:
            assert reruns == []
    assert sorted(seen) == sorted(ids)


def test_xdist_workers_split_alike(project: Project) -> None:
    ids = _suite(project)
    expected = shard_of(ids, 2, {})
    result = project.run("--shard", "2/2", "-q", command=[*PYTEST, "-n", "2"])
    assert result.returncode == 0, result.stdout + result.stderr
    assert {t["id"] for t in result.report["tests"]} == {i for i in ids if expected[i] == 1}


def _with_durations(report_dir: Path, seconds: dict[str, float]) -> None:
    data = json.loads((report_dir / "report.json").read_text(encoding="utf-8"))
    for test in data["tests"]:
        test["attempts"][0]["duration"] = seconds[test["id"]]
    (report_dir / "report.json").write_text(json.dumps(data), encoding="utf-8")


def test_the_last_report_or_the_history_balances_the_shards(
    project: Project, tmp_path: Path
) -> None:
    ids = _suite(project)
    full = project.run("-q", report_dir="full")
    assert full.returncode == 0, full.stdout + full.stderr
    seconds = {i: float(n % 5) + 0.5 for n, i in enumerate(ids)}
    _with_durations(full.report_dir, seconds)
    expected = shard_of(ids, 2, seconds)
    assert expected != shard_of(ids, 2, {})  # the durations change the split
    history = tmp_path / "history.db"
    with HistoryStore.open(history) as store:
        assert store.ingest(read_report(full.report_dir), "full")
        [run] = store.runs()
        # The history keeps milliseconds over every attempt: a flaky test's mean is per attempt.
        per_attempt = {e.test_id: e.duration / e.attempts for e in store.entries([run.run_key])}
    from_history = shard_of(ids, 2, per_attempt)
    cases = [
        (1, full.report_dir, expected),
        (2, full.report_dir / "report.json", expected),
        (1, history, from_history),
    ]
    for k, source, split in cases:
        result = project.run(
            "--shard", f"{k}/2", "--shard-durations", str(source), "-q", report_dir=f"s{k}"
        )
        assert result.returncode == 0, result.stdout + result.stderr
        got = {t["id"] for t in result.report["tests"]}
        assert got == {i for i in ids if split[i] == k - 1}, source


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--shard", "0/3"], "expected a shard from 1 to 3, got 0"),
        (["--shard", "4/3"], "expected a shard from 1 to 3, got 4"),
        (["--shard", "two"], "expected K/N such as 2/4, got 'two'"),
        (["--shard", "1/0"], "expected 1 to 256 shards, got 0"),
        (
            ["--shard", "1/2", "--shard-durations", "missing"],
            "--shard-durations missing: not found",
        ),
    ],
)
def test_bad_shard_options_are_usage_errors(
    project: Project, args: list[str], message: str
) -> None:
    _suite(project)
    result = project.run(*args)
    assert result.returncode == 4
    # One line says what is wrong (argparse's usage may come before it).
    assert result.stderr.strip().splitlines()[-1].endswith(message), result.stderr
    assert not (project.root / "report" / "report.json").exists()


def test_a_corrupt_durations_file_is_one_line_and_exit_4(project: Project) -> None:
    _suite(project)
    bad = project.write("durations.json", "{not json")
    result = project.run("--shard", "1/2", "--shard-durations", str(bad))
    assert result.returncode == 4
    [line] = result.stderr.strip().splitlines()
    assert line.startswith("flakewarden: error: --shard-durations: cannot read ")
    assert str(bad) in line
