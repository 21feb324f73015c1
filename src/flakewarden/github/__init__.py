"""The github wing."""
