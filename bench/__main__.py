"""Run the benchmarks and print their tables: `python -m bench [scoring] [copilot] [practice]`."""

import sys

from . import copilot, practice, scoring

if __name__ == "__main__":
    only = sys.argv[1:]
    if not only or "scoring" in only:
        scoring.main()
    if not only or "copilot" in only:
        copilot.main()
    if not only or "practice" in only:
        practice.main()
