"""Run every benchmark and print its table."""

import sys

from . import scoring

if __name__ == "__main__":
    only = sys.argv[1:]
    if not only or "scoring" in only:
        scoring.main()
