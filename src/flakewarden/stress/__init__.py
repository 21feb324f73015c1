"""The stress wing."""
