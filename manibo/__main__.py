"""``python -m manibo`` runs the command line."""

import sys

try:
    from manibo.cli import main
except KeyboardInterrupt:  # Ctrl-C while Python starts: the command's one line and status 130
    sys.stderr.write("\nmanibo: interrupted\n")
    sys.exit(130)

sys.exit(main())
