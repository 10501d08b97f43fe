"""Several app replicas share one Chroma server and one PostgreSQL history, and each user sees only their own."""

from __future__ import annotations

import pytest

from .conftest import start_app, stop

USERS = "ann:ann-secret,bob:bob-secret"
ANSWER = (
    "Tensors are multi-dimensional arrays like NumPy arrays, but they run on a GPU and support autograd. "
    "torch.from_numpy() and tensor.numpy() convert between them."
)


def _client(url: str, user: str, password: str):
    from gradio_client import Client

    return Client(url, auth=(user, password), verbose=False)


def _last_text(messages: list[dict]) -> str:
    return " ".join(part["text"] for m in messages for part in m["content"] if part.get("type") == "text")


def test_two_replicas_share_the_chroma_server_and_postgres_history(tmp_path, chroma_server, postgres_url):
    port, _ = chroma_server
    shared = {
        "CHROMA_HOST": "127.0.0.1",
        "CHROMA_PORT": str(port),
        "INTERVIEWER_HISTORY_URL": postgres_url,
        "INTERVIEWER_AUTH": USERS,
    }
    first, url_a = start_app(tmp_path / "replica-a", **shared)  # embeds the bank into the empty server
    try:
        second, url_b = start_app(tmp_path / "replica-b", **shared)
        try:
            log_b = (tmp_path / "replica-b" / "app.log").read_text()
            assert "0 embedded now" in log_b  # the second replica found the first one's index on the server
            assert not (tmp_path / "replica-a" / "chroma").exists()  # nothing embedded on disk
            assert not (tmp_path / "replica-b" / "history.sqlite3").exists()  # history is in PostgreSQL

            ann_a = _client(url_a, "ann", "ann-secret")
            chat, _ = ann_a.predict("", [], "any", 1, "bank order", api_name="/on_start")
            assert "Hello ann" in _last_text(chat)
            chat, *_ = ann_a.predict(ANSWER, None, chat, api_name="/on_submit")
            assert "Score" in _last_text(chat)

            # Ann's answer, scored on replica A, is in her progress on replica B; Bob sees nothing of it,
            # whatever profile name he asks for: signed in, the profile is the user.
            info, *_ = _client(url_b, "ann", "ann-secret").predict("me", api_name="/on_load")
            assert "**ann**: 1 answer(s)" in info
            info, *_ = _client(url_b, "bob", "bob-secret").predict("ann", api_name="/on_load")
            assert "No attempts yet for **bob**" in info
        finally:
            stop(second)
    finally:
        stop(first)


def test_a_wrong_password_gets_no_access(tmp_path, synced_index):
    proc, url = start_app(tmp_path / "home", synced_index, INTERVIEWER_AUTH=USERS)
    try:
        with pytest.raises(Exception, match=r"(?i)incorrect|invalid|login|credentials"):
            _client(url, "ann", "wrong")
    finally:
        stop(proc)
