"""The stress corpus's races, as small projects (file name: text): for tests and benchmarks.

Each is a race a knob exposes and nothing else does on a quiet machine; the tests that
stress them say which knob, and ``benchmarks/bench_stress_verdicts.py`` counts how often
real stress runs call them ``race``.
"""

from __future__ import annotations

#: Eight threads reserve stock with a read, a little work and a write: a lost update that
#: the switch interval exposes in 1-4% of runs, and the yield knob far more often.
LOST_UPDATE = {
    "stock.py": """
        class Stock:
            def __init__(self, units):
                self.units = units

            def reserve(self, count):
                current = self.units  # read
                for _ in range(400):  # a little work between the read and the write
                    pass
                self.units = current - count  # write: another thread's update is lost
        """,
    "test_stock.py": """
        import threading

        from stock import Stock


        def test_concurrent_reservations_are_all_counted():
            stock = Stock(1000)
            barrier = threading.Barrier(8)

            def customer():
                barrier.wait()
                stock.reserve(1)

            threads = [threading.Thread(target=customer) for _ in range(8)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            assert stock.units == 992
        """,
}

#: A lost update inside one line: no call and no backward jump in its window, so only a
#: thread that yields at an opcode (the ``yield`` knob) interleaves it.
ONE_LINE_LOST_UPDATE = {
    "counter.py": """
        class Counter:
            def __init__(self):
                self.count = 0

            def add(self):
                self.count += 1  # a read and a write in one line: no switch point between
        """,
    "test_counter.py": """
        import threading

        from counter import Counter


        def test_every_increment_is_counted():
            counter = Counter()
            barrier = threading.Barrier(4)

            def work():
                barrier.wait()
                for _ in range(2000):
                    counter.add()

            threads = [threading.Thread(target=work) for _ in range(4)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            assert counter.count == 8000
        """,
}

#: Two asyncio tasks that rely on the order they were scheduled in: the ``asyncio`` knob's
#: reordered ready callbacks expose it; a FIFO loop never does.
TASK_ORDER_RACE = {
    "test_cache.py": """
        import asyncio


        async def warm(cache):
            await asyncio.sleep(0)  # a lookup elsewhere
            cache["config"] = {"retries": 3}


        async def read(cache, seen):
            await asyncio.sleep(0)  # a lookup elsewhere
            seen.append(cache.get("config"))  # assumes the warm-up task got there first


        def test_the_reader_sees_the_warmed_cache():
            async def main():
                cache, seen = {}, []
                await asyncio.gather(warm(cache), read(cache, seen))
                return seen

            assert asyncio.run(main()) == [{"retries": 3}]
        """,
}

#: No thread and no event loop: only the load knobs can apply.
NO_LOOP = {
    "test_plain.py": """
        import random


        def test_a_rare_coin():
            assert random.random() > 0.0  # never fails
        """,
}
