"""The rubric store: every question, covers point and pitfall sentence in a Chroma collection.

We always pass our own embeddings (Chroma would otherwise try to download its default ONNX model).
Sync is incremental: an item is re-embedded only when its text or the model changes.
"""

from __future__ import annotations

import hashlib
import logging
import shutil
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np

from .bank import Bank, Question
from .embeddings import Embedder
from .errors import StoreUnavailable
from .settings import Settings
from .text import negate

log = logging.getLogger(__name__)

COLLECTION = "interviewer-rubric"
Progress = Callable[[int, int], None]


@dataclass(frozen=True)
class Item:
    """One embedded sentence of the bank."""

    id: str
    text: str
    question_id: str
    kind: str  # question | cover | pitfall | claim | correction | expects | negation
    number: int
    topic: str

    @property
    def digest(self) -> str:
        return hashlib.sha256(f"{self.kind}\0{self.text}".encode()).hexdigest()[:16]


def bank_items(bank: Bank) -> Iterator[Item]:
    for q in bank.questions:
        yield from question_items(q)


def question_items(q: Question) -> Iterator[Item]:
    yield Item(f"{q.id}", q.question, q.id, "question", 0, q.topic)
    yield Item(f"{q.id}:model", q.model_answer, q.id, "model_answer", 0, q.topic)
    for n, point in enumerate(q.covers, 1):
        yield Item(point.id, point.text, q.id, "cover", n, q.topic)
        # The scorer asks which of a statement and its opposite an answer sides with.
        yield Item(f"{point.id}:neg", negate(point.text), q.id, "negation", n, q.topic)
    for n, pit in enumerate(q.pitfalls, 1):
        yield Item(pit.id, pit.text, q.id, "pitfall", n, q.topic)
        sentences = [("correction", pit.correction), ("expects", pit.expects), ("claim", pit.claim)]
        sentences += [(f"claim{i}", text) for i, text in enumerate(pit.claims, 1)]
        for key, text in sentences:
            if text:
                kind = "claim" if key.startswith("claim") else key
                yield Item(f"{pit.id}:{key}", text, q.id, kind, n, q.topic)
                if key != "correction":
                    yield Item(f"{pit.id}:{key}:neg", negate(text), q.id, "negation", n, q.topic)


def _open_collection(client):
    # Cosine space: similarities are 1 - distance. Never Chroma's own embedding function.
    return client.get_or_create_collection(COLLECTION, embedding_function=None, metadata={"hnsw:space": "cosine"})


@dataclass
class Match:
    id: str
    text: str
    question_id: str
    kind: str
    topic: str
    similarity: float


class RubricStore:
    """A Chroma collection of the bank's sentences with our own embeddings."""

    def __init__(self, embedder: Embedder, settings: Settings | None = None, client=None):
        self.settings = settings or Settings()
        self.embedder = embedder
        self._client = client
        self._collection = None
        self._vectors: dict[str, dict[str, np.ndarray]] = {}
        self._lock = threading.Lock()

    # -- connection -------------------------------------------------------------------------
    @property
    def location(self) -> str:
        if self.settings.chroma_host:
            return f"Chroma server at {self.settings.chroma_host}:{self.settings.chroma_port}"
        return f"embedded Chroma in {self.settings.home / 'chroma'}"

    def _connect(self):
        import chromadb
        from chromadb.config import Settings as ChromaSettings

        chroma_settings = ChromaSettings(anonymized_telemetry=False)
        if self.settings.chroma_host:
            try:
                return chromadb.HttpClient(
                    host=self.settings.chroma_host, port=self.settings.chroma_port, settings=chroma_settings
                )
            except Exception as exc:
                raise StoreUnavailable(
                    f"Cannot reach the {self.location} ({exc.__class__.__name__}). Start it with "
                    f"`chroma run --host {self.settings.chroma_host} --port {self.settings.chroma_port}`, "
                    "or unset CHROMA_HOST to use the embedded store."
                ) from None
        path = self.settings.home / "chroma"
        path.mkdir(parents=True, exist_ok=True)
        try:
            client = chromadb.PersistentClient(path=str(path), settings=chroma_settings)
            _open_collection(client).count()
            return client
        except Exception as exc:  # a corrupted index is rebuilt from the bank, never fatal
            log.warning("embedded Chroma index at %s is unreadable (%s); rebuilding it from the bank", path, exc)
            from chromadb.api.client import SharedSystemClient

            SharedSystemClient.clear_system_cache()  # chroma keeps one system per path in-process
            shutil.move(str(path), f"{path}.corrupt-{int(time.time())}")
            path.mkdir(parents=True)
            return chromadb.PersistentClient(path=str(path), settings=chroma_settings)

    @property
    def collection(self):
        if self._collection is None:
            with self._lock:
                if self._collection is None:
                    if self._client is None:
                        self._client = self._connect()
                    self._collection = self._call(lambda: _open_collection(self._client))
        return self._collection

    def _call(self, fn):
        try:
            return fn()
        except StoreUnavailable:
            raise
        except Exception as exc:
            if self.settings.chroma_host:
                self._collection = None
                raise StoreUnavailable(
                    f"The {self.location} did not answer ({exc.__class__.__name__}: {exc}). "
                    "Check that `chroma run` is up; the app retries on the next request."
                ) from None
            raise

    # -- sync -------------------------------------------------------------------------------
    def sync(self, bank: Bank, progress: Progress | None = None) -> dict[str, int]:
        """Bring the collection in line with the bank; embeds only new or changed items."""
        wanted = {item.id: item for item in bank_items(bank)}
        col = self.collection
        existing = self._call(lambda: col.get(include=["metadatas"]))
        have = {i: (m or {}) for i, m in zip(existing["ids"], existing["metadatas"], strict=True)}
        model = self.embedder.name
        if any(m.get("model") != model for m in have.values()):
            log.info("embedding model changed to %s: rebuilding the rubric index", model)
            self._call(lambda: col.delete(ids=list(have)))
            have = {}
        stale = [i for i in have if i not in wanted]
        # Sorted by length, so each batch pads little.
        todo = sorted(
            (it for it in wanted.values() if have.get(it.id, {}).get("hash") != it.digest), key=lambda it: len(it.text)
        )
        if stale:
            self._call(lambda: col.delete(ids=stale))
        batch = 256
        for start in range(0, len(todo), batch):
            chunk = todo[start : start + batch]
            vectors = self.embedder.embed([it.text for it in chunk])
            self._call(
                lambda chunk=chunk, vectors=vectors: col.upsert(
                    ids=[it.id for it in chunk],
                    embeddings=vectors.tolist(),
                    documents=[it.text for it in chunk],
                    metadatas=[
                        {
                            "question_id": it.question_id,
                            "kind": it.kind,
                            "number": it.number,
                            "topic": it.topic,
                            "hash": it.digest,
                            "model": model,
                        }
                        for it in chunk
                    ],
                )
            )
            if progress:
                progress(min(start + batch, len(todo)), len(todo))
        self._vectors.clear()
        return {"embedded": len(todo), "removed": len(stale), "total": len(wanted)}

    # -- retrieval --------------------------------------------------------------------------
    def vectors_for(self, question_id: str) -> dict[str, np.ndarray]:
        """Stored embeddings of one question's sentences, keyed by item id (cached in memory)."""
        cached = self._vectors.get(question_id)
        if cached is not None:
            return cached
        col = self.collection
        got = self._call(lambda: col.get(where={"question_id": question_id}, include=["embeddings"]))
        vectors = {i: np.asarray(v, dtype=np.float32) for i, v in zip(got["ids"], got["embeddings"], strict=True)}
        self._vectors[question_id] = vectors
        return vectors

    def nearest(self, text: str, kind: str = "question", k: int = 5) -> list[Match]:
        """The k bank sentences of this kind closest to `text` (cosine similarity)."""
        vector = self.embedder.embed([text])[0]
        col = self.collection
        res = self._call(
            lambda: col.query(
                query_embeddings=[vector.tolist()],
                n_results=k,
                where={"kind": kind},
                include=["documents", "metadatas", "distances"],
            )
        )
        return [
            Match(i, doc, meta["question_id"], meta["kind"], meta["topic"], 1.0 - float(dist))
            for i, doc, meta, dist in zip(
                res["ids"][0], res["documents"][0], res["metadatas"][0], res["distances"][0], strict=True
            )
        ]
