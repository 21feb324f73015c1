"""Every random generator a run draws from, seeded from one seed (``FLAKEWARDEN_RANDOM_SEED``).

A fresh interpreter seeds ``random`` from the operating system, and so does every
library that makes a generator of its own without a seed (Faker makes one when it is
imported). A failure that follows those draws then looks like noise. With
``FLAKEWARDEN_RANDOM_SEED=<seed>``, each run of a test (each in-process repeat too)
gets the seed ``<seed> + <iteration>``, and before its setup:

- the ``random`` module is seeded with it, and numpy's global state
  (``numpy.random.seed``) when numpy is imported;
- the generators libraries keep for themselves are seeded by name, when imported, as
  pytest-randomly does: Faker's (``faker.generator.random``), factory_boy's
  (``factory.random.reseed_random``), model_bakery's (``model_bakery.random_gen.baker_random``);
- every ``random.Random()`` made with no seed (or reseeded with none) and every
  ``numpy.random.default_rng()`` called with none, during the run or at import, draws
  its seed from a stream seeded by the run's seed, so it is the same on a replay.

The seed of each run goes on its reports (``SEED_ATTRIBUTE``), and from there into its
``test`` record. ``os.urandom``, ``secrets``, ``uuid.uuid4`` and ``random.SystemRandom``
read the operating system and are left alone: no seed reaches them. Nothing is done
where pytest-randomly reseeds (its seed decides then) or without the variable.
"""

from __future__ import annotations

import random
import sys
from typing import Any, Callable, Optional

from .recorder import SEED_ATTRIBUTE
from .variables import read

VARIABLE = "FLAKEWARDEN_RANDOM_SEED"
__all__ = ["SEED_ATTRIBUTE", "VARIABLE", "configure", "current", "run_starts", "unconfigure"]

_base: Optional[int] = None  # the process's seed, while installed
_iterations: dict[str, int] = {}  # runs so far of each node id
_current: Optional[int] = None  # the seed of the run in progress
_stream: Optional[random.Random] = None  # where unseeded generators draw their seeds
_original_seed: Optional[Callable[..., Any]] = None
_original_default_rng: Optional[Callable[..., Any]] = None


def parse(text: str) -> Optional[int]:
    """A non-negative integer seed, or None."""
    text = text.strip()
    return int(text) if text.isdigit() else None


def configure(config: Any) -> Optional[int]:
    """Install the seeding when the variable asks and pytest-randomly does not reseed."""
    global _base, _stream, _original_seed
    seed = read(VARIABLE, parse, "a whole number")
    if seed is None or _randomly_reseeds(config):
        return None
    _base = seed
    _stream = random.Random(f"flakewarden:import:{seed}")  # for what is made before a test
    _original_seed = random.Random.seed
    random.Random.seed = _seed  # type: ignore[method-assign]
    random.seed = _module_seed  # bound to the module's instance at import: replaced too
    return seed


def _randomly_reseeds(config: Any) -> bool:
    plugin = config.pluginmanager.get_plugin("randomly")
    return plugin is not None and getattr(config.option, "randomly_reseed", True) is not False


def _seed(self: random.Random, a: Any = None, *args: Any, **kwargs: Any) -> None:
    """``Random.seed`` with no seed draws one from the stream instead of the system."""
    assert _original_seed is not None
    if a is None and _stream is not None and self is not _stream:
        a = _stream.getrandbits(64)
    _original_seed(self, a, *args, **kwargs)


def _module_seed(a: Any = None, *args: Any, **kwargs: Any) -> None:
    _seed(random._inst, a, *args, **kwargs)


def _default_rng(seed: Any = None, *args: Any, **kwargs: Any) -> Any:
    assert _original_default_rng is not None
    if seed is None and _stream is not None:
        seed = _stream.getrandbits(64)
    return _original_default_rng(seed, *args, **kwargs)


def run_starts(nodeid: str) -> Optional[int]:
    """Seed everything for the next run of ``nodeid``; its seed (None when not installed)."""
    global _current, _stream
    if _base is None:
        return None
    iteration = _iterations.get(nodeid, 0)
    _iterations[nodeid] = iteration + 1
    _current = _base + iteration
    _stream = random.Random(f"flakewarden:{_current}")
    random.seed(_current)
    _seed_libraries(_current)
    return _current


def current() -> Optional[int]:
    return _current


def _seed_libraries(seed: int) -> None:
    global _original_default_rng
    numpy_random: Any = sys.modules.get("numpy.random")
    if numpy_random is not None:
        try:
            numpy_random.seed(seed % 2**32)
            if _original_default_rng is None:
                _original_default_rng = numpy_random.default_rng
                numpy_random.default_rng = _default_rng
        except Exception:  # pragma: no cover - a numpy without them
            pass
    faker_generator = sys.modules.get("faker.generator")
    if faker_generator is not None and hasattr(faker_generator, "random"):
        faker_generator.random.seed(seed)
    factory_random = sys.modules.get("factory.random")
    if factory_random is not None and hasattr(factory_random, "reseed_random"):
        factory_random.reseed_random(seed)
    bakery = sys.modules.get("model_bakery.random_gen")
    if bakery is not None and hasattr(bakery, "baker_random"):
        bakery.baker_random.seed(seed)


def unconfigure() -> None:
    """Undo ``configure``: nothing of ours stays patched after the session."""
    global _base, _current, _stream, _original_seed, _original_default_rng
    if _original_seed is not None:
        random.Random.seed = _original_seed  # type: ignore[method-assign]
        random.seed = random._inst.seed
    numpy_random: Any = sys.modules.get("numpy.random")
    if _original_default_rng is not None and numpy_random is not None:
        numpy_random.default_rng = _original_default_rng
    _base = _current = _stream = _original_seed = _original_default_rng = None
    _iterations.clear()
