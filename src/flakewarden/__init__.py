"""flakewarden: rerun failed tests in fresh processes and keep flakes visible.

This module must stay importable with the standard library alone.
"""

import time as _time

__version__ = "1.0.0"
#: When our first line ran: the timings record (model/timings.py) counts our imports from here.
IMPORTED_AT = _time.time()
