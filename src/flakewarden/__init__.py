"""flakewarden: rerun failed tests in fresh processes and keep flakes visible.

This module must stay importable with the standard library alone.
"""

__version__ = "0.1.0"
