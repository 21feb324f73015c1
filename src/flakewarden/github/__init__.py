"""GitHub: the REST client, Actions I/O, flake issues, the digest and quarantine.

Everything that talks to GitHub or formats for it. Bookkeeping here is fail-open and runs
within a deadline, so GitHub being slow or down never changes a run's outcome.
"""
