"""A ``pytest`` console script as pip writes one, beside no particular interpreter: the
suite's own environment may have none of its own (a virtualenv reusing the system's
packages), so tests that run pytest as a script write one naming this interpreter."""

from __future__ import annotations

import sys
from pathlib import Path

CONSOLE_SCRIPT = """\
#!{python}
import re
import sys
from pytest import console_main
if __name__ == "__main__":
    sys.argv[0] = re.sub(r"(-script\\.pyw|\\.exe)?$", "", sys.argv[0])
    sys.exit(console_main())
"""


def pytest_script(directory: Path) -> Path:
    """``directory/pytest``, an executable console script running this interpreter's pytest."""
    directory.mkdir(parents=True, exist_ok=True)
    script = directory / "pytest"
    script.write_text(CONSOLE_SCRIPT.format(python=sys.executable), encoding="utf-8")
    script.chmod(0o755)
    return script
