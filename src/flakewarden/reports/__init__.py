"""The reports wing."""
