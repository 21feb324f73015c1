"""The flake history: a SQLite store of every ingested run, and what is computed from it.

It reads the shared model only (``RunReport`` in, ``HistoryRun``/``HistoryEntry``
out); fetching reports from GitHub is the commands' business, never this wing's.
"""
