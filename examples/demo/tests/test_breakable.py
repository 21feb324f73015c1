"""A deterministic failure, switched on by DEMO_BREAK=1: every rerun fails too."""

import os

from demo.calc import divide


def test_divide_by_two():
    expected = 3 if os.environ.get("DEMO_BREAK") == "1" else 2
    assert divide(4, 2) == expected
