"""The scheduled digest: one issue ranking the open flake issues, grouped by owner."""
