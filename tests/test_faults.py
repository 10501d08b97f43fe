"""Parts failing: the app killed mid-session, a full disk, a broken speech model, a deleted index.

(The LLM hanging or sending garbage is in test_llm.py, a locked SQLite file in test_practice.py, a
corrupted index and an unreachable Chroma server in test_store.py.)
"""

from __future__ import annotations

import shutil
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from interviewer.errors import ModelNotFound, TranscriptionError
from interviewer.history import Attempt, History, HistoryUnavailable
from interviewer.service import Interviewer
from interviewer.settings import Settings
from interviewer.speech import WhisperTranscriber, bundled_asr_path

from .conftest import start_app, stop, wait_for_port

ANSWERS = [
    "Tensors are multi-dimensional arrays like NumPy arrays, but they also run on GPUs and support autograd.",
    "Autograd records the operations on tensors in a graph and backward() computes the gradients with the chain rule.",
]


def _attempt(score: int) -> Attempt:
    return Attempt("ann", "s1", "autograd", "autograd", "What is autograd?", f"answer {score}", score, score / 20, {})


def test_every_scored_attempt_is_there_after_the_app_is_killed(tmp_path, synced_index):
    from gradio_client import Client

    home = tmp_path / "home"
    proc, url = start_app(home, synced_index)
    try:
        client = Client(url, verbose=False)
        chat, _ = client.predict("kim", [], "any", 3, "bank order", api_name="/on_start")
        for answer in ANSWERS:
            chat, *_ = client.predict(answer, None, chat, api_name="/on_submit")
            chat = client.predict(chat, api_name="/on_next")[0]
        proc.send_signal(signal.SIGKILL)  # no shutdown, no flush: whatever was not written is gone
        proc.wait(timeout=10)
    finally:
        stop(proc)
    saved = History(home / "history.sqlite3").attempts("kim")
    assert [a.answer for a in saved] == ANSWERS
    proc, url = start_app(home)
    try:
        info, *_ = Client(url, verbose=False).predict("kim", api_name="/on_load")
        assert "**kim**: 2 answer(s)" in info
    finally:
        stop(proc)


@pytest.fixture
def tiny_disk(tmp_path) -> Path:
    """A 1 MiB tmpfs: a real file system that really fills up."""
    mount = tmp_path / "disk"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mount)], capture_output=True)
    if done.returncode:
        pytest.skip(f"cannot mount a small tmpfs here (needs root): {done.stderr.decode().strip()}")
    yield mount
    subprocess.run(["umount", "-l", str(mount)], capture_output=True)


def test_a_full_disk_keeps_the_attempt_in_memory_and_saves_it_when_space_returns(tiny_disk):
    history = History(tiny_disk / "history.sqlite3")
    history.save(_attempt(10))
    filler = tiny_disk / "filler"
    with open(filler, "wb", buffering=0) as f, pytest.raises(OSError, match="No space"):  # fill it up
        while True:
            f.write(b"\0" * 4096)
    with pytest.raises(HistoryUnavailable, match="kept") as err:
        history.save(_attempt(20))
    assert "full" in str(err.value).lower()
    assert [a.score for a in history.pending] == [20]
    filler.unlink()
    history.save(_attempt(30))
    assert [a.score for a in History(tiny_disk / "history.sqlite3").attempts("ann")] == [10, 20, 30]
    assert history.pending == []


def test_a_damaged_speech_model_gives_a_clear_message_and_typing_still_works(tmp_path, service):
    broken = tmp_path / "whisper"
    shutil.copytree(bundled_asr_path(), broken)
    (broken / "model.bin").write_bytes(b"not a model")
    speech = np.random.default_rng(2).normal(0, 0.2, 16_000 * 2).astype(np.float32)
    with pytest.raises((ModelNotFound, TranscriptionError), match="type your answers"):
        WhisperTranscriber(model_path=broken).transcribe(speech, 16_000)
    assert service.score("autograd", ANSWERS[1]).score > 0  # the typed path is untouched


def test_a_deleted_index_directory_is_rebuilt_from_the_bank(home):
    shutil.rmtree(home / "chroma")
    svc = Interviewer(Settings())
    stats = svc.ensure_index()
    assert stats["embedded"] == stats["total"] > 0
    assert svc.score("autograd", ANSWERS[1]).covers[0].covered
    svc.close()


def test_scoring_goes_on_while_the_chroma_server_is_down_and_uses_it_again_when_it_returns(
    tmp_path, chroma_server, monkeypatch
):
    port, proc = chroma_server
    monkeypatch.setenv("CHROMA_HOST", "127.0.0.1")
    monkeypatch.setenv("CHROMA_PORT", str(port))
    svc = Interviewer(Settings())
    try:
        before = svc.score("autograd", ANSWERS[1], use_llm=False)
        assert before.message is None

        proc.terminate()  # the server stops mid-session
        proc.wait(timeout=20)
        svc.store._vectors.clear()  # nothing cached: every rubric vector would have to come from the server
        during = svc.score("autograd", ANSWERS[1], use_llm=False)
        assert "chroma run" in during.message and "embedded on this machine" in during.message
        assert during.score == before.score  # the same rubric, embedded locally: the same result

        server = tmp_path / "chroma-server"
        chroma = Path(sys.executable).parent / "chroma"
        back = subprocess.Popen(
            [str(chroma), "run", "--host", "127.0.0.1", "--port", str(port), "--path", str(server)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            wait_for_port(port, back, timeout=60)
            after = svc.score("autograd", ANSWERS[1], use_llm=False)
            assert after.message is None and after.score == before.score
            assert svc.store._vectors  # read from the server again
        finally:
            stop(back)
    finally:
        svc.close()
