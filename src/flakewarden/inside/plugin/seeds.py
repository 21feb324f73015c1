"""Every random generator a process draws from, seeded from one seed (``FLAKEWARDEN_RANDOM_SEED``).

A fresh interpreter seeds ``random`` from the operating system, and so does every library
that makes a generator of its own without a seed (Faker makes one when it is imported,
numpy's global state is seeded so). A failure that follows those draws then looks like
noise. With ``FLAKEWARDEN_RANDOM_SEED=<seed>``, as pytest imports the plugin (``-p``: before
it loads any conftest or collects anything, so before the project's code runs):

- the ``random`` module is seeded with it;
- every ``random.Random()`` made with no seed afterwards (and every ``seed()`` call with
  none) draws its seed from a stream seeded by it: Faker's, factory_boy's and
  model_bakery's generators among them, made as those libraries are imported;
- numpy's global state (``numpy.random.seed``) is seeded with it as ``numpy.random`` is
  imported, and every ``numpy.random.default_rng()`` called with no seed draws from the
  stream;
- the generators of those libraries already imported when pytest configured (a plugin
  imported them in a fork server) are reseeded by name, as pytest-randomly does.

Nothing is reseeded between tests or in-process repeats: a process's draws go on as in a
process of the user's own, so code that seeds a generator itself (at import, in a fixture)
keeps its seed, and one seed replays the whole process (run ``n`` of it with
``FLAKEWARDEN_REPEAT=n``). The seed goes on each run's reports (``SEED_ATTRIBUTE``) and
from there into its ``test`` record. ``os.urandom``, ``secrets``, ``uuid.uuid4`` and
``random.SystemRandom`` read the operating system and are left alone: no seed reaches
them. Nothing is done where pytest-randomly reseeds (its seed decides then).
"""

from __future__ import annotations

import random
import sys
from typing import Any, Callable, Optional

from .on_import import OnImport
from .recorder import SEED_ATTRIBUTE
from .variables import read

__all__ = ["SEED_ATTRIBUTE", "VARIABLE", "configure", "early", "unconfigure"]

VARIABLE = "FLAKEWARDEN_RANDOM_SEED"
NUMPY = "numpy.random"

_base: Optional[int] = None  # the process's seed, while installed
_stream: Optional[random.Random] = None  # where unseeded generators draw their seeds
_original_seed: Optional[Callable[..., Any]] = None
_original_default_rng: Optional[Callable[..., Any]] = None
_finder: Optional[OnImport] = None


def parse(text: str) -> Optional[int]:
    """A non-negative integer seed, or None."""
    text = text.strip()
    return int(text) if text.isdigit() else None


def early() -> Optional[int]:
    """Seed the process's generators, when the variable asks: as the plugin is imported."""
    global _base, _stream, _original_seed, _finder
    seed = read(VARIABLE, parse, "a whole number")
    if seed is None or _base is not None:
        return _base
    _base = seed
    _stream = random.Random(f"flakewarden:{seed}")
    _original_seed = random.Random.seed
    random.Random.seed = _seed  # type: ignore[method-assign]
    random.seed = _module_seed  # bound to the module's instance at import: replaced too
    random.seed(seed)
    _reseed_loaded(seed)
    numpy_random = sys.modules.get(NUMPY)
    if numpy_random is not None:
        _seed_numpy(numpy_random)
    else:
        _finder = OnImport(NUMPY, _seed_numpy)
        _finder.install()
    return seed


def configure(config: Any) -> Optional[int]:
    """The process's seed, its reports marked with it; None (and undone) where
    pytest-randomly reseeds: its seed decides then."""
    seed = early()
    if seed is None:
        return None
    if _randomly_reseeds(config):
        unconfigure()
        return None
    config.pluginmanager.register(_reports(), "flakewarden-seeds")
    return seed


def _reports() -> Any:
    """A plugin: each report of a run carries the process's seed, for its ``test`` record."""
    import pytest  # pytest is running us by now

    class Reports:
        @pytest.hookimpl(hookwrapper=True)
        def pytest_runtest_makereport(self, item: Any, call: Any) -> Any:
            outcome = yield
            if outcome.excinfo is None:
                setattr(outcome.get_result(), SEED_ATTRIBUTE, _base)

    return Reports()


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


def _reseed_loaded(seed: int) -> None:
    """The generators of libraries imported before pytest configured (in a fork server)."""
    faker_generator = sys.modules.get("faker.generator")
    if faker_generator is not None and hasattr(faker_generator, "random"):
        faker_generator.random.seed(seed)
    factory_random = sys.modules.get("factory.random")
    if factory_random is not None and hasattr(factory_random, "reseed_random"):
        factory_random.reseed_random(seed)
    bakery = sys.modules.get("model_bakery.random_gen")
    if bakery is not None and hasattr(bakery, "baker_random"):
        bakery.baker_random.seed(seed)


def _seed_numpy(numpy_random: Any) -> None:
    global _original_default_rng
    if _base is None:
        return
    try:
        numpy_random.seed(_base % 2**32)
        if _original_default_rng is None:
            _original_default_rng = numpy_random.default_rng
            numpy_random.default_rng = _default_rng
    except Exception:  # pragma: no cover - a numpy without them
        pass


def unconfigure() -> None:
    """Undo ``configure``: nothing of ours stays patched after the session."""
    global _base, _stream, _original_seed, _original_default_rng, _finder
    if _original_seed is not None:
        random.Random.seed = _original_seed  # type: ignore[method-assign]
        random.seed = random._inst.seed
    numpy_random: Any = sys.modules.get(NUMPY)
    if _original_default_rng is not None and numpy_random is not None:
        numpy_random.default_rng = _original_default_rng
    if _finder is not None:
        _finder.remove()
    _base = _stream = _original_seed = _original_default_rng = _finder = None
