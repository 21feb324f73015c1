"""``flakewarden run``: placeholder until the attempt loop lands."""
