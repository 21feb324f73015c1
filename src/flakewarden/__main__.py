"""``python -m flakewarden``: the same entry point as the ``flakewarden`` console script."""

import sys

from flakewarden.cli import main

sys.exit(main())
