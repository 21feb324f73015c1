"""The GitHub REST client and its helpers: requests, errors, artifact downloads, pull checks.

Only the transport lives here; what flakewarden does with GitHub is in ``issues/``,
``quarantine/`` and ``actions/``. Every caller's bookkeeping is fail-open and runs within a
deadline, so GitHub being slow or down never changes a run's outcome.
"""
