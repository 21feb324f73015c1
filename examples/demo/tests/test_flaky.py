"""A test that fails its first attempt in a session and passes its second.

It keeps a marker file per parent process: under flakewarden every attempt is
a fresh child of the same flakewarden process, so the first attempt fails and
the rerun passes, which is what a flaky test looks like from outside.
"""

import os
import tempfile
from pathlib import Path

from demo.calc import add


def test_sometimes_fails():
    marker = Path(tempfile.gettempdir()) / f"flakewarden-demo-{os.getppid()}"
    if not marker.exists():
        marker.write_text("failed once")
        assert add(1, 1) == 3, "lost the race this time"
    marker.unlink()
    assert add(1, 1) == 2
