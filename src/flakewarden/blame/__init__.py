"""Blame: whether a failed test ran the change under review, and whether the base fails too."""
