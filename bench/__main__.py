"""Run the benchmarks and print their tables: `python -m bench [scoring] [copilot] [llm] [practice]`."""

import sys

from . import copilot, llm, practice, scoring

if __name__ == "__main__":
    only = sys.argv[1:]
    for name, module in (("scoring", scoring), ("copilot", copilot), ("llm", llm), ("practice", practice)):
        if not only or name in only:
            module.main()
