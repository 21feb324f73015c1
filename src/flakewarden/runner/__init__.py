"""Running the tests: the attempt loop, the plugin injected into pytest, pytest's arguments.

Everything ``flakewarden run`` does between starting the user's command and handing a
``RunReport`` to the writers: processes and their timeouts, crashes and continuations,
the consistency check against pytest's own counts, and the coverage merge.
"""
