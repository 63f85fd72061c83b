"""Command line: ``python -m skderand`` runs the demonstration."""

import sys

from skderand._cli import main

if __name__ == "__main__":
    sys.exit(main())
