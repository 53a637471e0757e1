"""``python -m autojit``: the same command line as the ``autojit`` script."""

import sys

from autojit.explain.cli import main

if __name__ == "__main__":
    sys.exit(main())
