import sys

from flakewarden.cli import main

sys.exit(main())
