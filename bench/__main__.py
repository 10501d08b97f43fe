"""Run the benchmarks and print their tables: `python -m bench [scoring] [copilot] [llm] [practice] [load]`.

Options after the names go to the load benchmark, e.g. `python -m bench load --soak-minutes 10`.
"""

import sys

from . import copilot, llm, load, practice, scoring

if __name__ == "__main__":
    modules = {"scoring": scoring, "copilot": copilot, "llm": llm, "practice": practice, "load": load}
    only = [a for a in sys.argv[1:] if a in modules]
    options = [a for a in sys.argv[1:] if a not in modules]
    for name, module in modules.items():
        if not only or name in only:
            module.main(options) if name == "load" else module.main()
