"""``flakewarden.retry``: transient failures retried with backoff and jitter, every retry
logged, everything else propagated as it was; threads and tasks independent."""

from __future__ import annotations

import asyncio
import logging
import subprocess
import sys
import threading
import traceback
from typing import Any

import pytest

from flakewarden.retry import retry


class Flaky:
    """Fails with ``error`` ``times`` times, then returns ``value``."""

    def __init__(self, times: int, error: BaseException, value: Any = "ok") -> None:
        self.times, self.error, self.value, self.calls = times, error, value, 0

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        self.calls += 1
        if self.calls <= self.times:
            raise self.error
        return (self.value, args, kwargs)


def test_a_value_after_transient_failures_with_exponential_backoff(
    caplog: pytest.LogCaptureFixture,
) -> None:
    waits: list[float] = []
    target = Flaky(3, TimeoutError("read timed out"))
    wrapped = retry(
        attempts=4,
        initial_delay=0.1,
        max_delay=0.25,
        jitter=0.5,
        sleep=waits.append,
        random_share=lambda: 0.5,
    )(target)
    with caplog.at_level(logging.WARNING, logger="flakewarden.retry"):
        assert wrapped(1, key="v") == ("ok", (1,), {"key": "v"})
    assert target.calls == 4
    # 0.1, 0.2, then capped at 0.25; each less half of the jitter share (0.5 x 0.5).
    assert waits == pytest.approx([0.075, 0.15, 0.1875])
    messages = [r.getMessage() for r in caplog.records]
    assert len(messages) == 3
    assert messages[0] == (
        "retry: Flaky failed attempt 1 of 4 with TimeoutError: read timed out; "
        "trying again in 0.075 s"
    )


def test_exhausted_retries_re_raise_the_original_with_its_traceback() -> None:
    def fetch_price() -> None:
        raise ConnectionError("connection reset by peer")

    wrapped = retry(attempts=3, sleep=lambda s: None)(fetch_price)
    with pytest.raises(ConnectionError, match="connection reset by peer") as info:
        wrapped()
    frames = [f.name for f in traceback.extract_tb(info.value.__traceback__)]
    assert frames[-1] == "fetch_price"  # raised where it was raised, not re-made
    assert info.value.__cause__ is None and info.value.__context__ is None
    assert wrapped.__name__ == "fetch_price"  # functools.wraps


def test_one_attempt_is_one_call_and_an_excluded_type_is_never_retried() -> None:
    once = Flaky(1, TimeoutError("slow"))
    with pytest.raises(TimeoutError):
        retry(attempts=1, sleep=lambda s: pytest.fail("no wait"))(once)()
    assert once.calls == 1
    wrong = Flaky(5, AssertionError("a race, not a timeout"))
    with pytest.raises(AssertionError):
        retry(on=TimeoutError, attempts=5, sleep=lambda s: pytest.fail("no wait"))(wrong)()
    assert wrong.calls == 1
    # A subclass of a listed type is retried (ConnectionResetError is a ConnectionError).
    reset = Flaky(1, ConnectionResetError("reset"))
    assert retry(sleep=lambda s: None)(reset)()[0] == "ok"


def test_ten_threads_keep_their_own_attempts() -> None:
    failing = [n for n in range(10) if n % 3]
    # Every thread whose first call fails waits in its backoff until all of them are there.
    barrier = threading.Barrier(len(failing))
    results: dict[int, Any] = {}

    def work(n: int) -> None:
        target = Flaky(n % 3, TimeoutError(f"thread {n}"), value=n)

        def pause(seconds: float) -> None:
            if target.calls == 1:
                barrier.wait(timeout=10)

        results[n] = (retry(attempts=3, sleep=pause)(target)()[0], target.calls)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(10)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert results == {n: (n, n % 3 + 1) for n in range(10)}


def test_async_functions_are_retried_and_awaited() -> None:
    waits: list[float] = []

    async def pause(seconds: float) -> None:
        waits.append(seconds)

    calls = 0

    @retry(attempts=3, initial_delay=0.05, jitter=0, sleep=pause)
    async def fetch() -> str:
        nonlocal calls
        calls += 1
        if calls < 3:
            raise TimeoutError("slow upstream")
        return "price"

    assert asyncio.run(fetch()) == "price"
    assert calls == 3 and waits == [0.05, 0.1]


def test_tasks_are_independent_and_a_cancellation_in_the_backoff_propagates_at_once() -> None:
    async def main() -> None:
        counts = {"a": 0, "b": 0}

        @retry(attempts=3, initial_delay=0.01, jitter=0)
        async def call(name: str) -> str:
            counts[name] += 1
            if counts[name] < 2:
                raise ConnectionError(name)
            return name

        assert sorted(await asyncio.gather(call("a"), call("b"))) == ["a", "b"]
        assert counts == {"a": 2, "b": 2}

        @retry(attempts=5, initial_delay=60, max_delay=60, jitter=0)
        async def hangs() -> None:
            raise TimeoutError("down")

        task = asyncio.ensure_future(hangs())
        await asyncio.sleep(0.05)  # now in its 60 s backoff
        task.cancel()
        loop = asyncio.get_running_loop()
        started = loop.time()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert loop.time() - started < 1.0

    asyncio.run(main())


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"attempts": 0}, ValueError),
        ({"attempts": 2.5}, ValueError),
        ({"initial_delay": -1}, ValueError),
        ({"jitter": 1.5}, ValueError),
        ({"max_delay": "1"}, TypeError),
        ({"on": ()}, ValueError),
        ({"on": "TimeoutError"}, TypeError),
        ({"on": BaseException}, ValueError),  # would swallow cancellation and Ctrl-C
        ({"on": KeyboardInterrupt}, ValueError),
    ],
)
def test_bad_arguments_are_refused_when_decorating(kwargs: dict[str, Any], error: type) -> None:
    with pytest.raises(error):
        retry(**kwargs)


def test_it_imports_nothing_beyond_the_standard_library() -> None:
    script = (
        "import sys\n"
        "before = set(sys.modules)\n"
        "import flakewarden.retry\n"
        "new = {m.split('.')[0] for m in set(sys.modules) - before}\n"
        "ours = set(sys.stdlib_module_names) | {'flakewarden'}\n"
        "third = sorted(m for m in new if m not in ours)\n"
        "print(third)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
