"""``FLAKEWARDEN_RANDOM_SEED``: every generator a run draws from, from one recorded seed.

Real pytest processes with the injected plugin, as stress starts them: the same seed
draws the same values in two processes (``random``, a ``random.Random()`` made at import
and one made in the test, a library's own generator reseeded by name), another seed draws
others, each in-process repeat gets the next seed, and the seed is in each test record.
"""

from __future__ import annotations

import ast
import random
import re
from pathlib import Path

from helpers.plugin_runs import run_many, run_plugin
from helpers.project import make_project

FILES = {
    # Laid out as Faker keeps its generator: a module-level ``random.Random()`` made at
    # import, which seeding the ``random`` module does not reach.
    "fakelib/__init__.py": "",
    "fakelib/generator.py": """
        import random as random_module

        random = random_module.Random()
        """,
    "made_at_import.py": """
        import random

        generator = random.Random()
        """,
    "test_draws.py": """
        import random

        import made_at_import
        from fakelib import generator


        def test_draws():
            values = [
                random.random(),
                made_at_import.generator.random(),
                random.Random().random(),
                generator.random.random(),
            ]
            print("DRAWS", repr(values))
        """,
}


def _draws(stdout: str) -> list[list[float]]:
    return [ast.literal_eval(found) for found in re.findall(r"DRAWS (\[.*?\])", stdout)]


def test_one_seed_draws_the_same_values_in_every_process_and_another_seed_others(
    tmp_path: Path,
) -> None:
    project = make_project(tmp_path / "p", FILES)
    seeded = {"FLAKEWARDEN_RANDOM_SEED": "4242"}
    other = {"FLAKEWARDEN_RANDOM_SEED": "4243"}
    runs = run_many(project, "-s", "-p", "no:randomly", extras=[seeded, seeded, other, {}])
    draws = [_draws(run.stdout) for run in runs]
    assert all(len(d) == 1 for d in draws), [run.stdout[-2000:] for run in runs]
    same, again, changed, unseeded = (d[0] for d in draws)
    assert same == again  # every one of the four generators replays
    assert all(a != b for a, b in zip(same, changed))  # and another seed moves every one
    assert all(a != b for a, b in zip(same, unseeded))
    # The ``random`` module's first draw is exactly what ``random.seed(<seed>)`` gives.
    assert same[0] == random.Random(4242).random()
    assert runs[0].tests[0]["seed"] == 4242
    assert "seed" not in runs[3].tests[0]  # no variable: nothing seeded, nothing recorded


def test_in_process_repeats_draw_on_from_the_process_seed_and_replay_with_it(
    tmp_path: Path,
) -> None:
    project = make_project(tmp_path / "p", FILES)
    extra = {"FLAKEWARDEN_RANDOM_SEED": "10", "FLAKEWARDEN_REPEAT": "3"}
    runs = run_many(project, "-s", "-p", "no:randomly", extras=[extra, extra])
    first, again = ([d[0] for d in _draws(run.stdout)] for run in runs)
    assert [t["seed"] for t in runs[0].tests] == [10, 10, 10]  # the process's seed, each run
    # Not reseeded between runs: the stream goes on, as in a process of the user's own ...
    stream = random.Random(10)
    assert first == [stream.random() for _ in range(3)]
    # ... and the same seed replays every run of the process, the third one included.
    assert again == first


def test_code_that_seeds_a_generator_itself_keeps_its_seed(tmp_path: Path) -> None:
    # A module that seeds ``random`` as it is imported fails the same way in every process
    # of the user's CI: the plugin must not reseed over it.
    files = {
        "test_seeded.py": """
            import random

            random.seed(1)


            def test_draw():
                print("DRAWS", repr([random.random()]))
            """
    }
    project = make_project(tmp_path / "p", files)
    runs = run_many(
        project,
        "-s",
        "-p",
        "no:randomly",
        extras=[{"FLAKEWARDEN_RANDOM_SEED": "5"}, {"FLAKEWARDEN_RANDOM_SEED": "6"}],
    )
    assert [_draws(run.stdout) for run in runs] == [[[random.Random(1).random()]]] * 2


def test_a_seed_that_is_not_a_whole_number_is_ignored_and_said(tmp_path: Path) -> None:
    project = make_project(tmp_path / "p", FILES)
    run = run_plugin(project, "-s", "-p", "no:randomly", extra={"FLAKEWARDEN_RANDOM_SEED": "x;1"})
    assert run.returncode == 0
    assert "FLAKEWARDEN_RANDOM_SEED='x;1' is not a whole number: ignored" in run.stderr
    assert "seed" not in run.tests[0]
