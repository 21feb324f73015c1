"""Flake issues: one per test, with its marker and hit ledger, owners and notifications.

Also the pull-request comment and, in ``digest/``, the scheduled digest.
"""
