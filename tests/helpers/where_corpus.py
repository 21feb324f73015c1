"""The localisation corpus: flaky tests whose fix is known, each with the lines its fix changes.

Each case is a small project (file name: text) with distractor code that passing and
failing runs share; the lines a fix changes carry a ``# fix`` comment, found when the case
is loaded (``fix_lines``). ``benchmarks/bench_where.py`` stresses every case and prints,
per kind and overall, whether the cause was named right and whether a fix line is in the
top 1, 3 and 10 suspects; the tests stress a few of them.
"""

from __future__ import annotations

import textwrap
from typing import NamedTuple


class Case(NamedTuple):
    name: str
    kind: str  # the cause, as the verdict should name it
    files: dict[str, str]
    test: str  # node id
    verdict: str
    # the knobs (race; "": any), the seed kind (seed-dependent) or the polluter
    # (order-dependent) the verdict should name
    detail: str
    # a recorded run order to stress it with (``--order-from``); () for none
    order: tuple[str, ...] = ()

    def fix_lines(self) -> set[tuple[str, int]]:
        """(file, line) of every line marked ``# fix``."""
        return {
            (name, number)
            for name, text in self.files.items()
            for number, line in enumerate(textwrap.dedent(text).lstrip("\n").splitlines(), 1)
            if "# fix" in line
        }


CACHE = Case(
    "cache check-then-act across 8 threads",
    "race",
    {
        "cache.py": """
            import threading

            built = []
            _stats_lock = threading.Lock()
            stats = {"gets": 0}


            def _count():
                with _stats_lock:  # a distractor: every run counts its gets the same way
                    stats["gets"] += 1


            def _build(key):
                built.append(key)
                parts = [str(key)]
                for part in range(30):
                    parts.append("%s-%d" % (key, part))
                return parts


            class Cache:
                def __init__(self):
                    self._data = {}

                def get(self, key):
                    _count()
                    if key not in self._data:  # fix: check, then act, with no lock
                        self._data[key] = _build(key)  # fix
                    return self._data[key]
            """,
        "test_cache.py": """
            import threading

            import cache


            def test_each_key_is_built_once():
                cache.built.clear()
                shared = cache.Cache()
                barrier = threading.Barrier(8)

                def user():
                    barrier.wait()
                    shared.get("config")

                threads = [threading.Thread(target=user) for _ in range(8)]
                for thread in threads:
                    thread.start()
                for thread in threads:
                    thread.join()
                assert cache.built.count("config") == 1
            """,
    },
    "test_cache.py::test_each_key_is_built_once",
    "race",
    "yield switch-interval",
)

LEDGER = Case(
    "a lost update from 6 threads",
    "race",
    {
        "ledger.py": """
            import threading


            class Ledger:
                def __init__(self):
                    self.total = 0
                    self.entries = []
                    self._lock = threading.Lock()

                def add(self, cents):
                    with self._lock:  # a distractor: the audit trail is locked
                        self.entries.append(cents)
                    self.total += cents  # fix: a read and a write, no lock
            """,
        "test_ledger.py": """
            import threading

            from ledger import Ledger


            def test_every_payment_is_counted():
                ledger = Ledger()
                barrier = threading.Barrier(6)

                def pay():
                    barrier.wait()
                    for _ in range(300):
                        ledger.add(5)

                threads = [threading.Thread(target=pay) for _ in range(6)]
                for thread in threads:
                    thread.start()
                for thread in threads:
                    thread.join()
                assert len(ledger.entries) == 1800
                assert ledger.total == 9000
            """,
    },
    "test_ledger.py::test_every_payment_is_counted",
    "race",
    "yield switch-interval",
)

SESSIONS = Case(
    "two asyncio tasks, an await between check and act",
    "race",
    {
        "sessions.py": """
            import asyncio

            opened = []


            async def _handshake(name):
                await asyncio.sleep(0)
                opened.append(name)
                return {"name": name}


            class Pool:
                def __init__(self):
                    self.sessions = {}

                async def session(self, name):
                    if name not in self.sessions:  # fix: check, then await, then act
                        self.sessions[name] = await _handshake(name)  # fix
                    return self.sessions[name]
            """,
        "test_sessions.py": """
            import asyncio

            import sessions


            def test_one_session_per_name():
                async def main():
                    pool = sessions.Pool()

                    async def later():
                        await asyncio.sleep(0)  # by then the first handshake is done, usually
                        return await pool.session("db")

                    await asyncio.gather(pool.session("db"), later())

                sessions.opened.clear()
                asyncio.run(main())
                assert sessions.opened == ["db"]
            """,
    },
    "test_sessions.py::test_one_session_per_name",
    "race",
    "asyncio",
)

BASKET = Case(
    "a discount branch a random basket takes 1 time in 8",
    "seed (random)",
    {
        "prices.py": """
            import random


            def basket():
                return [random.randint(1, 40) * 25 for _ in range(4)]


            def discounted(cents):
                if random.random() < 0.125:
                    return round(cents * 0.9 / 100) * 100  # fix: rounds to whole units
                return cents * 9 // 10


            def total(items):
                return discounted(sum(items))
            """,
        "test_prices.py": """
            import prices


            def test_discount_keeps_cents():
                items = prices.basket()
                assert prices.total(items) == sum(items) * 9 // 10
            """,
    },
    "test_prices.py::test_discount_keeps_cents",
    "seed-dependent",
    "random",
)

TAGS = Case(
    "a join of a set of strings",
    "seed (hash)",
    {
        "labels.py": """
            def normalise(names):
                cleaned = [name.strip().lower() for name in names]
                return [name for name in cleaned if name]


            def header(names):
                unique = {name for name in normalise(names)}  # fix: a set's order
                return ", ".join(unique)
            """,
        "test_labels.py": """
            import labels


            def test_header_lists_names_in_order():
                assert labels.header(["Alpha", " beta "]) == "alpha, beta"
            """,
    },
    "test_labels.py::test_header_lists_names_in_order",
    "seed-dependent",
    "hash",
)

DEADLINE = Case(
    "a 250 ms deadline for 80 ms of work",
    "deadline",
    {
        "report.py": """
            import threading
            import time

            DEADLINE = 0.25  # fix: too short a deadline under load


            def _spin(count):
                total = 0
                for step in range(count):
                    total += step
                return total


            def _steps_for(seconds):
                # how many steps take ``seconds`` of CPU on this machine, measured once
                start = time.process_time()
                _spin(200_000)
                took = max(time.process_time() - start, 1e-4)
                return int(200_000 * seconds / took)


            STEPS = _steps_for(0.08)  # 80 ms of work, on an idle machine


            def _work(out):
                out.append(_spin(STEPS))


            def build():
                out = []
                worker = threading.Thread(target=_work, args=(out,))
                worker.start()
                worker.join(timeout=DEADLINE)  # fix
                return out
            """,
        "test_report.py": """
            import report


            def test_report_is_built_before_the_deadline():
                assert report.build(), "the report was not built in time"
            """,
    },
    "test_report.py::test_report_is_built_before_the_deadline",
    "race",
    "",  # a load knob or yield: any; the cause to name is the deadline
)

SETTINGS = Case(
    "a polluter replaces a settings global",
    "order-dependent",
    {
        "depot/__init__.py": "",
        "depot/settings.py": """
            CURRENCY = "EUR"
            LOCALE = "de_DE"
            RATES = {"EUR": 1.0, "USD": 1.1}
            """,
        "depot/prices.py": """
            from depot import settings


            def label(cents):
                rate = settings.RATES[settings.CURRENCY]  # a distractor: every run reads it
                amount = cents * rate / 100
                return f"{amount:.2f} {settings.CURRENCY}"
            """,
        "test_settings.py": """
            from depot import settings


            def test_rates_are_positive():
                assert all(rate > 0 for rate in settings.RATES.values())


            def test_us_store_uses_dollars():
                settings.CURRENCY = "USD"  # fix: never restored (monkeypatch restores it)
                assert settings.CURRENCY == "USD"


            def test_locale():
                assert settings.LOCALE.startswith("de")
            """,
        "test_prices.py": """
            from depot import prices


            def test_label_in_euros():
                assert prices.label(1250) == "12.50 EUR"
            """,
    },
    "test_prices.py::test_label_in_euros",
    "order-dependent",
    "test_settings.py::test_us_store_uses_dollars",
    (
        "test_settings.py::test_rates_are_positive",
        "test_settings.py::test_us_store_uses_dollars",
        "test_settings.py::test_locale",
        "test_prices.py::test_label_in_euros",
    ),
)

CORPUS = (CACHE, LEDGER, SESSIONS, BASKET, TAGS, DEADLINE, SETTINGS)
