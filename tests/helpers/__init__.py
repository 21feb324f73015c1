"""What the tests share: the GitHub emulator, report and project builders, the Actions runner.

Imported as ``helpers.<module>``: ``tests/`` is on ``sys.path`` through its conftest, as pytest
puts it there for rootdir-relative imports; the benchmarks put it there themselves.
"""
