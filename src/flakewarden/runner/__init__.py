"""The runner wing."""
