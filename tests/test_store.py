"""The rubric store on a real Chroma: embedded on disk, and a real `chroma run` server on 127.0.0.1."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from interviewer.bank import load_bank
from interviewer.embeddings import Embedder
from interviewer.errors import StoreUnavailable
from interviewer.settings import Settings
from interviewer.store import RubricStore

from .conftest import ROOT, free_port

pytestmark = pytest.mark.fresh_home


class CountingEmbedder(Embedder):
    """The real model underneath, counting the texts it is asked to embed."""

    def __init__(self, inner: Embedder, name: str = "all-MiniLM-L6-v2"):
        super().__init__()
        self.inner, self.name, self.embedded = inner, name, []

    def embed_batch(self, texts):
        self.embedded.extend(texts)
        return self.inner.embed(texts)


def _small_bank(tmp_path: Path, ids=("autograd", "no-grad")) -> Path:
    folder = tmp_path / "bank"
    folder.mkdir()
    for qid in ids:
        shutil.copy(ROOT / "rubrics" / "pytorch-interview" / f"{qid}.yaml", folder / f"{qid}.yaml")
    return folder


def test_sync_embeds_everything_once_then_only_what_changed(tmp_path, embedder):
    folder = _small_bank(tmp_path)
    counting = CountingEmbedder(embedder)
    store = RubricStore(counting, Settings())
    first = store.sync(load_bank(folder))
    assert first["embedded"] == first["total"] > 10
    counting.embedded.clear()
    assert store.sync(load_bank(folder))["embedded"] == 0
    assert counting.embedded == []

    path = folder / "autograd.yaml"
    text = path.read_text()
    assert "records tensor operations" in text
    path.write_text(text.replace("records tensor operations", "records every operation"), encoding="utf-8")
    again = RubricStore(counting, Settings())  # a new process start: state comes from disk
    stats = again.sync(load_bank(folder))
    assert stats["embedded"] >= 1 and stats["embedded"] <= 3
    assert any("records every operation" in t for t in counting.embedded)
    assert all("no_grad" not in t for t in counting.embedded)


def test_a_removed_question_leaves_the_index(tmp_path, embedder):
    folder = _small_bank(tmp_path)
    store = RubricStore(embedder, Settings())
    store.sync(load_bank(folder))
    (folder / "no-grad.yaml").unlink()
    stats = store.sync(load_bank(folder))
    assert stats["removed"] > 0
    assert store.vectors_for("no-grad") == {}


def test_a_model_change_rebuilds_the_collection(tmp_path, embedder):
    folder = _small_bank(tmp_path, ids=("autograd",))
    RubricStore(CountingEmbedder(embedder, "model-a"), Settings()).sync(load_bank(folder))
    stats = RubricStore(CountingEmbedder(embedder, "model-b"), Settings()).sync(load_bank(folder))
    assert stats["embedded"] == stats["total"]


def test_known_question_points_come_back_with_stored_embeddings(tmp_path, embedder):
    store = RubricStore(embedder, Settings())
    store.sync(load_bank(_small_bank(tmp_path)))
    vectors = store.vectors_for("autograd")
    assert {"autograd.c1", "autograd.c4", "autograd.p1:claim", "autograd.p1:correction"} <= set(vectors)
    text = load_bank().get("autograd").covers[0].text
    assert float(vectors["autograd.c1"] @ embedder.embed([text])[0]) > 0.999


def test_a_free_form_question_finds_the_nearest_bank_question(tmp_path, embedder):
    store = RubricStore(embedder, Settings())
    store.sync(load_bank(_small_bank(tmp_path)))
    best = store.nearest("When do you wrap code in torch.no_grad and why?", kind="question", k=2)
    assert best[0].question_id == "no-grad" and best[0].similarity > best[1].similarity


def test_a_corrupted_embedded_index_is_rebuilt_from_the_bank(tmp_path, embedder, home):
    folder = _small_bank(tmp_path, ids=("autograd",))
    RubricStore(embedder, Settings()).sync(load_bank(folder))
    for f in (home / "chroma").rglob("*.sqlite3"):
        f.write_bytes(b"this is not a database")
    store = RubricStore(embedder, Settings())
    stats = store.sync(load_bank(folder))
    assert stats["embedded"] == stats["total"]
    assert "autograd.c1" in store.vectors_for("autograd")


def test_server_mode_uses_a_real_chroma_server_with_the_same_code(tmp_path, embedder, chroma_server, monkeypatch):
    port, proc = chroma_server
    monkeypatch.setenv("CHROMA_HOST", "127.0.0.1")
    monkeypatch.setenv("CHROMA_PORT", str(port))
    from interviewer.service import Interviewer

    svc = Interviewer(Settings(), bank=load_bank(_small_bank(tmp_path)))
    assert "server" in svc.store.location
    report = svc.score("no-grad", "torch.no_grad() disables gradient tracking inside the block, for inference.")
    assert report.covers[0].covered
    assert not (Path(Settings().home) / "chroma").exists()  # nothing embedded on disk in server mode

    proc.terminate()
    proc.wait(timeout=10)
    fresh = RubricStore(embedder, Settings())
    with pytest.raises(StoreUnavailable) as err:
        fresh.vectors_for("no-grad")
    assert "chroma run" in str(err.value)


def test_an_unreachable_chroma_server_gives_an_actionable_error(monkeypatch, embedder):
    monkeypatch.setenv("CHROMA_HOST", "127.0.0.1")
    monkeypatch.setenv("CHROMA_PORT", str(free_port()))
    with pytest.raises(StoreUnavailable) as err:
        RubricStore(embedder, Settings()).vectors_for("autograd")
    assert "CHROMA_HOST" in str(err.value) or "chroma run" in str(err.value)


def test_similarities_are_cosine_whatever_created_the_collection(tmp_path, embedder):
    store = RubricStore(embedder, Settings())
    store.sync(load_bank(_small_bank(tmp_path)))
    text = load_bank().get("no-grad").question
    assert store.nearest(text, kind="question", k=1)[0].similarity > 0.99
