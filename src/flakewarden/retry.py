"""``flakewarden.retry``: retry a call on known-transient exceptions only, and say so.

    from flakewarden.retry import retry

    @retry(on=(TimeoutError, ConnectionError), attempts=3, initial_delay=0.1,
           max_delay=2.0, jitter=0.5)
    def fetch_price(symbol): ...

- Only exceptions that are instances of ``on`` are retried; any other propagates at once.
- Attempt ``k`` (from 1) that fails waits ``min(max_delay, initial_delay * 2 ** (k - 1))``,
  less a random share of up to ``jitter`` of it, drawn afresh for that wait.
- The last attempt's exception is re-raised as it was, with its own traceback.
- ``attempts=1`` is one call and no retry.
- Sync and async functions alike, decided once when decorating. An ``await`` in the
  backoff is a plain ``asyncio.sleep``, so a cancellation propagates at once.
- Nothing is shared between calls: each call keeps its own attempt count and draws its
  own jitter from the operating system's source, so threads and tasks are independent.
- Every retry is logged (logger ``flakewarden.retry``, level WARNING): the function, the
  attempt, the exception's type and message, and the delay. A retry is evidence, never
  hidden.
- Under ``flakewarden run`` each retry is also handed to the injected pytest plugin
  (``flakewarden_pytest_plugin.record_retry``), which records it for the test and the
  attempt it happened in, whatever the logging configuration; the reports then show a
  test that passed only after retries inside it.

It imports nothing beyond the standard library.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import logging
import random
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any, Optional, TypeVar, Union, cast

__all__ = ["retry"]

LOGGER = logging.getLogger("flakewarden.retry")
F = TypeVar("F", bound=Callable[..., Any])
_NEVER = (KeyboardInterrupt, SystemExit, GeneratorExit, asyncio.CancelledError)
_SOURCE = random.SystemRandom()  # stateless: each draw reads the OS's random source


def _exceptions(on: Any) -> tuple[type[BaseException], ...]:
    kinds = on if isinstance(on, tuple) else (on,)
    if not kinds:
        raise ValueError("retry(on=...) needs at least one exception type")
    for kind in kinds:
        if not (isinstance(kind, type) and issubclass(kind, BaseException)):
            raise TypeError(f"retry(on=...) takes exception types, not {kind!r}")
        if issubclass(kind, _NEVER) or any(issubclass(n, kind) for n in _NEVER):
            raise ValueError(
                f"retry(on=...) must not catch {kind.__name__}: cancellation, interrupts and "
                "exits always propagate"
            )
    return cast("tuple[type[BaseException], ...]", kinds)


def _number(name: str, value: Any, low: float, high: float = float("inf")) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value:
        raise TypeError(f"retry({name}=...) must be a number, not {value!r}")
    if not low <= value <= high:
        raise ValueError(f"retry({name}=...) must be between {low:g} and {high:g}, not {value!r}")
    return float(value)


def _name(function: Callable[..., Any]) -> str:
    named = getattr(function, "__qualname__", None) or getattr(function, "__name__", None)
    return str(named or type(function).__qualname__)  # a callable object: its class


def _qualified(kind: type) -> str:
    return f"{getattr(kind, '__module__', None) or 'builtins'}.{kind.__qualname__}"


def _message(exc: BaseException) -> str:
    try:
        return str(exc)[:500]
    except Exception:  # an exception whose __str__ fails is still retried and reported
        return f"<unprintable {type(exc).__name__}>"


#: The injected plugin's module name (``flakewarden.runner.process.PLUGIN_MODULE``).
PLUGIN_MODULE = "flakewarden_pytest_plugin"


def _tell_the_plugin(event: dict[str, Any]) -> None:
    """Hand a retry to flakewarden's plugin when this process runs under it; else nothing."""
    plugin = sys.modules.get(PLUGIN_MODULE)
    record = getattr(plugin, "record_retry", None)
    if record is None:
        return
    try:
        record(event)
    except Exception:  # the evidence must never break the code under test
        LOGGER.exception("retry: flakewarden's plugin could not record a retry")


def retry(
    on: Union[type[BaseException], tuple[type[BaseException], ...]] = (
        TimeoutError,
        ConnectionError,
    ),
    attempts: int = 3,
    initial_delay: float = 0.1,
    max_delay: float = 2.0,
    jitter: float = 0.5,
    *,
    logger: Optional[logging.Logger] = None,
    sleep: Optional[Callable[[float], Any]] = None,
    random_share: Optional[Callable[[], float]] = None,
) -> Callable[[F], F]:
    """The decorator; see the module. ``sleep`` (sync, or async for a coroutine function)
    and ``random_share`` (a number in [0, 1)) are for tests."""
    kinds = _exceptions(on)
    if isinstance(attempts, bool) or not isinstance(attempts, int) or attempts < 1:
        raise ValueError(
            f"retry(attempts=...) must be a whole number of 1 or more, not {attempts!r}"
        )
    first = _number("initial_delay", initial_delay, 0)
    ceiling = _number("max_delay", max_delay, 0)
    share = _number("jitter", jitter, 0, 1)
    log = logger or LOGGER
    draw = random_share or _SOURCE.random

    def delay_for(attempt: int) -> float:
        base: float = min(ceiling, first * 2.0 ** (attempt - 1))
        return base * (1.0 - share * float(draw()))

    def note(function: Callable[..., Any], attempt: int, exc: BaseException, wait: float) -> None:
        _tell_the_plugin(
            {
                "function": _name(function),
                "exception": _qualified(type(exc)),
                "message": _message(exc),
                "attempt": attempt,
                "attempts": attempts,
                "delay": wait,
            }
        )
        log.warning(
            "retry: %s failed attempt %d of %d with %s: %s; trying again in %.3f s",
            _name(function),
            attempt,
            attempts,
            type(exc).__qualname__,
            _message(exc),
            wait,
        )

    def decorate(function: F) -> F:
        if inspect.iscoroutinefunction(function):
            pause = cast("Callable[[float], Awaitable[Any]]", sleep or asyncio.sleep)

            @functools.wraps(function)
            async def run_async(*args: Any, **kwargs: Any) -> Any:
                for attempt in range(1, attempts + 1):
                    try:
                        return await function(*args, **kwargs)
                    except kinds as exc:
                        if attempt == attempts:
                            raise
                        wait = delay_for(attempt)
                        note(function, attempt, exc, wait)
                    await pause(wait)
                raise AssertionError("unreachable")  # pragma: no cover

            return cast(F, run_async)

        nap = sleep or time.sleep

        @functools.wraps(function)
        def run(*args: Any, **kwargs: Any) -> Any:
            for attempt in range(1, attempts + 1):
                try:
                    return function(*args, **kwargs)
                except kinds as exc:
                    if attempt == attempts:
                        raise
                    wait = delay_for(attempt)
                    note(function, attempt, exc, wait)
                nap(wait)
            raise AssertionError("unreachable")  # pragma: no cover

        return cast(F, run)

    return decorate
