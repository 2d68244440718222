"""``python -m manibo`` runs the command line."""

import sys

from manibo.cli import main

sys.exit(main())
