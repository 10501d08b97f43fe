"""The functions the CLI, the app and the tests share: one place that wires bank, store and scorer."""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Callable

import numpy as np

from .bank import Bank, get_bank
from .batching import ScoreBatcher
from .checking import check_flags
from .embeddings import get_embedder
from .errors import StoreUnavailable
from .followups import suggest_follow_up
from .llm import llm_from_settings
from .scoring import Report, Rubric, RubricPitfall, RubricPoint, Scorer
from .settings import Settings
from .store import RubricStore

log = logging.getLogger(__name__)


def inline_rubric(
    question_id: str,
    question: str,
    covers: list[str] | None = None,
    pitfalls: list[dict] | None = None,
    reference: str | None = None,
) -> Rubric:
    """A rubric given by its texts; a reference answer is split into points when no covers are given."""
    texts = [c for c in (covers or []) if c and c.strip()]
    if not texts and reference:
        texts = split_reference(reference)
    if not texts:
        raise ValueError("an inline rubric needs `covers` (a list of texts) or a `reference` answer")
    points = [RubricPoint(f"{question_id}.c{i}", t.strip()) for i, t in enumerate(texts, 1)]
    pits = []
    for i, p in enumerate(pitfalls or [], 1):
        kind = p.get("kind", "misconception")
        if kind not in ("omission", "misconception"):
            raise ValueError(f"pitfall {i}: kind must be omission or misconception, not {kind!r}")
        text = p["text"]
        pits.append(
            RubricPitfall(
                f"{question_id}.p{i}",
                text,
                kind,
                claim=p.get("claim") or (text if kind == "misconception" else None),
                correction=p.get("correction"),
                expects=p.get("expects") or (text if kind == "omission" else None),
            )
        )
    return Rubric(question_id, question, points, pits)


def split_reference(reference: str) -> list[str]:
    """Points of a model answer: its sentences, and the clauses of long ones."""
    parts = [s.strip() for s in re.split(r"(?<=[.!?;])\s+|\n+", reference) if s.strip()]
    return [p for p in parts if len(p.split()) >= 2] or [reference.strip()]


class Interviewer:
    """Bank, store and scorer for one set of settings; models and the index load on first use."""

    def __init__(self, settings: Settings | None = None, bank: Bank | None = None):
        self.settings = settings or Settings()
        self.bank = bank or get_bank(self.settings.rubric_dir)
        self.embedder = get_embedder(self.settings)
        self.store = RubricStore(self.embedder, self.settings)
        self.scorer = Scorer(self.embedder, self.settings.max_words)
        self.batcher = ScoreBatcher(self.scorer) if self.settings.batch_scoring else None
        self.llm = llm_from_settings(self.settings)  # built lazily: no network until first use
        self._synced = False
        self._sync_lock = threading.Lock()

    def ensure_index(self, progress: Callable[[int, int], None] | None = None) -> dict | None:
        """Sync the rubric index with the bank once per process."""
        if self._synced:
            return None
        with self._sync_lock:
            if self._synced:
                return None
            stats = self.store.sync(self.bank, progress)
            self._synced = True
            return stats

    def rubric(self, question_id: str) -> Rubric:
        return Rubric.from_question(self.bank.get(question_id))

    def score(self, question_id: str, answer: str, use_llm: bool = True, on_follow_up_text=None) -> Report:
        """Score an answer to a bank question, with rubric vectors from the store, and add a follow-up
        (from the LLM when one is configured and `use_llm`, else, or on any LLM failure, the rubric)."""
        rubric = self.rubric(question_id)
        report = self.score_answer(rubric, answer)
        if use_llm:
            report = self.check_flags(rubric, report, answer)
        llm = self.llm if use_llm else None
        report.follow_up = suggest_follow_up(rubric, report, answer or "", llm, on_follow_up_text)
        return report

    def score_answer(self, rubric: Rubric, answer: str) -> Report:
        """Score an answer to a bank question's rubric with its stored vectors; no follow-up. When the
        store cannot be reached, the report says so and the rubric is embedded here instead."""
        if not answer or not answer.strip():
            return self.scorer.score(rubric, answer)
        vectors, notice = self.stored_vectors(rubric.question_id)
        report = self.score_rubric(rubric, answer, vectors)
        report.message = " ".join(filter(None, (report.message, notice))) or None
        return report

    def check_flags(self, rubric: Rubric, report: Report, answer: str) -> Report:
        """The LLM's second opinion on the report's misconception flags, when an LLM is configured and
        INTERVIEWER_LLM_CHECK is on; otherwise the report as it is."""
        if self.llm is None or not self.settings.llm_check or not (answer or "").strip():
            return report
        return check_flags(self.llm, rubric, report, answer)

    def stored_vectors(self, question_id: str) -> tuple[dict[str, np.ndarray], str | None]:
        """A bank question's rubric vectors from the store, and a notice when the store cannot be reached.

        Without the store the scorer embeds the rubric sentences itself: slower, the same result. The
        store is asked again on the next answer, so scoring returns to it as soon as it is back."""
        try:
            self.ensure_index()
            return self.store.vectors_for(question_id), None
        except StoreUnavailable as exc:
            log.warning("rubric store unavailable, embedding the rubric locally: %s", exc)
            return {}, f"{exc} Meanwhile answers are scored with the rubric embedded on this machine."

    def score_rubric(self, rubric: Rubric, answer: str, vectors: dict[str, np.ndarray] | None = None) -> Report:
        """Score an answer against a rubric; with batch scoring on, together with other sessions' answers."""
        if self.batcher is None:
            return self.scorer.score(rubric, answer, vectors)
        return self.batcher.score(rubric, answer, vectors)

    def close(self) -> None:
        """Stop the batch scorer's worker after the answers already submitted."""
        if self.batcher is not None:
            self.batcher.close()


_shared: Interviewer | None = None
_shared_lock = threading.Lock()


def get_service(settings: Settings | None = None) -> Interviewer:
    """The process-wide Interviewer the app uses (one model, one index, shared by every session)."""
    global _shared
    with _shared_lock:
        if _shared is None:
            _shared = Interviewer(settings)
        return _shared
