"""Real open-source projects' suites, fetched from PyPI at pinned versions when run."""
