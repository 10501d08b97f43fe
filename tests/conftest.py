"""Every test runs in its own temporary home; the real bundled model is shared across the session."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared"
sys.path.insert(0, str(ROOT))

import interviewer  # noqa: E402,F401  (offline environment before torch loads)


@pytest.fixture(autouse=True)
def home(tmp_path, monkeypatch) -> Path:
    """A fresh data directory, and no LLM or Chroma server unless a test sets one."""
    home = tmp_path / "home"
    monkeypatch.setenv("INTERVIEWER_HOME", str(home))
    for name in ("CHROMA_HOST", "OPENAI_BASE_URL", "OPENAI_API_KEY", "INTERVIEWER_LLM_MODEL", "INTERVIEWER_RUBRICS"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)
    return home


@pytest.fixture(scope="session")
def embedder():
    from interviewer.embeddings import get_embedder
    from interviewer.settings import Settings

    return get_embedder(Settings(env={}))


@pytest.fixture
def service(home):
    from interviewer.service import Interviewer
    from interviewer.settings import Settings

    return Interviewer(Settings())


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_port(port: int, proc: subprocess.Popen | None = None, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode}")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.2)
    raise TimeoutError(f"nothing listening on 127.0.0.1:{port} after {timeout}s")


def run_cli(*args: str, env: dict | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
    full_env = {**os.environ, **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "interviewer", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=full_env,
        timeout=timeout,
    )
