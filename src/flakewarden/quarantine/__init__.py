"""Quarantine under policy: the conditions, the label, the quarantined set and its counts."""
