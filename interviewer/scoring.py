"""Scoring an answer against a rubric: coverage with evidence, polarity-aware pitfalls, a grade.

Cosine similarity says whether an answer talks about a point, not whether it agrees with it
("NumPy can run on the GPU" and "NumPy cannot run on the GPU" score 0.92 with MiniLM). So every
decision that depends on polarity also asks the embedder which of a statement and its negation the
answer is closer to, and counts negation cues on both sides.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

import numpy as np

from .bank import Question
from .embeddings import Embedder
from .text import Unit, negate, negation_count, split_units, term_positions, words

# Global calibration of the method (not per question): similarities of MiniLM between a rubric
# sentence and an answer sentence that states it sit well above 0.5; off-topic talk sits below 0.3.
SIM_FLOOR = 0.30
SIM_FULL = 0.75
COVER_THRESHOLD = 0.50
TERM_WEIGHT = 0.15
CLAIM_THRESHOLD = 0.60
MISCONCEPTION_PENALTY = 12.0
DEFAULT_MAX_WORDS = 5000


@dataclass
class RubricPoint:
    id: str
    text: str
    key_terms: list[str] = field(default_factory=list)


@dataclass
class RubricPitfall:
    id: str
    text: str
    kind: str
    claim: str | None = None
    correction: str | None = None
    expects: str | None = None
    covers: list[str] = field(default_factory=list)
    key_terms: list[str] = field(default_factory=list)
    order: list[str] = field(default_factory=list)


@dataclass
class Rubric:
    """What the scorer needs of a question; built from a bank Question or given inline."""

    question_id: str
    question: str
    covers: list[RubricPoint]
    pitfalls: list[RubricPitfall] = field(default_factory=list)
    follow_ups: list[str] = field(default_factory=list)

    @classmethod
    def from_question(cls, q: Question) -> Rubric:
        return cls(
            q.id,
            q.question,
            [RubricPoint(p.id, p.text, list(p.key_terms)) for p in q.covers],
            [
                RubricPitfall(p.id, p.text, p.kind, p.claim, p.correction, p.expects, list(p.covers),
                              list(p.key_terms), list(getattr(p, "order", []) or []))
                for p in q.pitfalls
            ],
            list(q.follow_ups),
        )


@dataclass
class CoverResult:
    id: str
    index: int
    text: str
    covered: bool
    contradicted: bool
    strength: float
    evidence: str | None
    evidence_span: tuple[int, int] | None = None


@dataclass
class PitfallResult:
    id: str
    index: int
    text: str
    kind: str
    flagged: bool
    evidence: str | None
    correction: str
    evidence_span: tuple[int, int] | None = None


@dataclass
class Report:
    question_id: str
    score: int
    grade: float
    covers: list[CoverResult]
    pitfalls: list[PitfallResult]
    follow_up: dict | None = None
    message: str | None = None
    truncated: bool = False
    words: int = 0

    def to_dict(self) -> dict:
        data = asdict(self)
        for part in ("covers", "pitfalls"):
            for item in data[part]:
                item.pop("evidence_span", None)
        return data


# -- helpers --------------------------------------------------------------------------------------
def _calibrate(sim: float) -> float:
    return float(np.clip((sim - SIM_FLOOR) / (SIM_FULL - SIM_FLOOR), 0.0, 1.0))


def _term_hits(answer: str, terms: list[str]) -> list[tuple[str, int]]:
    hits = []
    for term in terms:
        pos = term_positions(answer, term)
        if pos:
            hits.append((term, pos[0]))
    return hits


def _unit_at(units: list[Unit], offset: int) -> Unit | None:
    best = None
    for u in units:
        if u.start <= offset < u.end and u.kind in ("sentence", "item", "code", "clause"):
            if best is None or (u.end - u.start) < (best.end - best.start):
                best = u
    return best


def _opposes(unit_vec: np.ndarray, stmt_vec: np.ndarray, neg_vec: np.ndarray, unit_text: str, stmt: str) -> bool:
    """True when the unit sides with the negation of the statement rather than the statement."""
    closer_to_negation = float(unit_vec @ neg_vec) > float(unit_vec @ stmt_vec)
    parity_differs = (negation_count(unit_text) % 2) != (negation_count(stmt) % 2)
    return closer_to_negation and parity_differs


def truncate_words(answer: str, max_words: int) -> tuple[str, bool]:
    count = 0
    for i, ch in enumerate(answer):
        if ch.isspace() and i > 0 and not answer[i - 1].isspace():
            count += 1
            if count >= max_words:
                return answer[:i], True
    return answer, False


# -- the scorer -----------------------------------------------------------------------------------
class Scorer:
    """Scores answers with one embedder; stateless apart from the embedder's cache."""

    def __init__(self, embedder: Embedder, max_words: int = DEFAULT_MAX_WORDS):
        self.embedder = embedder
        self.max_words = max_words

    def score(self, rubric: Rubric, answer: str, stored: dict[str, np.ndarray] | None = None) -> Report:
        """Score one answer. `stored` may hold precomputed rubric vectors keyed by item id."""
        if not answer or not answer.strip():
            return self._empty(rubric, "The answer is empty: type or record an answer to get feedback.")
        answer, truncated = truncate_words(answer, self.max_words)
        units = split_units(answer)
        if not units:
            units = [Unit(answer.strip(), answer.index(answer.strip()), len(answer.rstrip()), "sentence")]
        rubric_vecs = self._rubric_vectors(rubric, stored or {})
        unit_vecs = self.embedder.embed([u.text for u in units])
        covers = [self._cover(i, p, answer, units, unit_vecs, rubric_vecs) for i, p in enumerate(rubric.covers, 1)]
        pitfalls = [
            self._pitfall(i, p, answer, units, unit_vecs, rubric_vecs, covers)
            for i, p in enumerate(rubric.pitfalls, 1)
        ]
        score = self._score(covers, pitfalls)
        message = None
        n_words = len(answer.split())
        if truncated:
            message = f"The answer was cut at {self.max_words} words for scoring; the rest was not read."
        return Report(rubric.question_id, score, round(score / 20.0, 1), covers, pitfalls,
                      message=message, truncated=truncated, words=n_words)

    # Vectors for every rubric sentence the decisions need, taken from the store when it has them.
    def _rubric_vectors(self, rubric: Rubric, stored: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        wanted: dict[str, str] = {}
        for p in rubric.covers:
            wanted[p.id] = p.text
            wanted[p.id + ":neg"] = negate(p.text)
        for p in rubric.pitfalls:
            for kind in ("claim", "correction", "expects"):
                text = getattr(p, kind)
                if text:
                    wanted[f"{p.id}:{kind}"] = text
            if p.claim:
                wanted[f"{p.id}:claim:neg"] = negate(p.claim)
            if p.expects:
                wanted[f"{p.id}:expects:neg"] = negate(p.expects)
        missing = [k for k in wanted if k not in stored]
        vecs = dict(stored)
        if missing:
            vecs.update(zip(missing, self.embedder.embed([wanted[k] for k in missing]), strict=True))
        return vecs

    def _best_unit(self, target: np.ndarray, units: list[Unit], unit_vecs: np.ndarray) -> tuple[int, float]:
        sims = unit_vecs @ target
        # A window must beat its own sentences clearly to be the evidence: shorter quotes read better.
        penalty = np.array([0.03 if u.kind == "window" else 0.0 for u in units])
        i = int(np.argmax(sims - penalty))
        return i, float(sims[i])

    def _statement(self, key: str, text: str, terms: list[str], answer: str, units, unit_vecs, vecs):
        """How strongly the answer states `text`, whether it states the opposite, and where."""
        i, sim = self._best_unit(vecs[key], units, unit_vecs)
        hits = _term_hits(answer, terms)
        strength = _calibrate(sim)
        if terms:
            strength = min(1.0, strength + TERM_WEIGHT * len(hits) / len(terms) * (1.0 if sim > SIM_FLOOR else 0.0))
        unit = units[i]
        contradicted = sim >= CLAIM_THRESHOLD and _opposes(unit_vecs[i], vecs[key], vecs[key + ":neg"], unit.text, text)
        return strength, contradicted, unit

    def _cover(self, index, point: RubricPoint, answer, units, unit_vecs, vecs) -> CoverResult:
        strength, contradicted, unit = self._statement(
            point.id, point.text, point.key_terms, answer, units, unit_vecs, vecs
        )
        covered = strength >= COVER_THRESHOLD and not contradicted
        show = covered or contradicted
        return CoverResult(
            point.id, index, point.text, covered, contradicted, round(strength, 3),
            unit.text if show else None, (unit.start, unit.end) if show else None,
        )

    def _pitfall(self, index, pit: RubricPitfall, answer, units, unit_vecs, vecs, covers) -> PitfallResult:
        correction = pit.correction or pit.expects or pit.text
        flagged, evidence = False, None
        if pit.order:
            flagged, evidence = _order_violation(pit.order, answer, units)
        if not flagged and pit.kind == "misconception" and pit.claim:
            flagged, evidence = self._asserts(pit, units, unit_vecs, vecs)
        elif not flagged and pit.kind == "omission":
            linked = [c for c in covers if c.id in pit.covers]
            if linked:
                flagged = any(not c.covered for c in linked)
                wrong = next((c for c in linked if c.contradicted), None)
                if wrong is not None:
                    evidence = (wrong.evidence, wrong.evidence_span)
            elif pit.expects:
                strength, contradicted, unit = self._statement(
                    f"{pit.id}:expects", pit.expects, pit.key_terms, answer, units, unit_vecs, vecs
                )
                flagged = contradicted or strength < COVER_THRESHOLD
                if contradicted:
                    evidence = (unit.text, (unit.start, unit.end))
            elif pit.key_terms:
                flagged = not _term_hits(answer, pit.key_terms)
        text, span = evidence if evidence else (None, None)
        return PitfallResult(pit.id, index, pit.text, pit.kind, flagged, text, correction, span)

    def _asserts(self, pit: RubricPitfall, units, unit_vecs, vecs):
        claim = vecs[f"{pit.id}:claim"]
        neg = vecs[f"{pit.id}:claim:neg"]
        corr = vecs.get(f"{pit.id}:correction")
        sims = unit_vecs @ claim
        best = None
        for i in np.argsort(-sims):
            sim = float(sims[i])
            if sim < CLAIM_THRESHOLD:
                break
            u = units[i]
            if _opposes(unit_vecs[i], claim, neg, u.text, pit.claim):
                continue
            if corr is not None and float(unit_vecs[i] @ corr) > sim:
                continue
            best = u
            break
        if best is None:
            return False, None
        return True, (best.text, (best.start, best.end))

    def _score(self, covers: list[CoverResult], pitfalls: list[PitfallResult]) -> int:
        if not covers:
            return 0
        content = sum(0.0 if c.contradicted else (c.strength if c.covered else 0.5 * c.strength) for c in covers)
        score = 100.0 * content / len(covers)
        score -= MISCONCEPTION_PENALTY * sum(1 for p in pitfalls if p.flagged and p.kind == "misconception")
        return int(round(float(np.clip(score, 0, 100))))

    def _empty(self, rubric: Rubric, message: str) -> Report:
        covers = [CoverResult(p.id, i, p.text, False, False, 0.0, None) for i, p in enumerate(rubric.covers, 1)]
        pitfalls = [
            PitfallResult(p.id, i, p.text, p.kind, p.kind == "omission", None, p.correction or p.expects or p.text)
            for i, p in enumerate(rubric.pitfalls, 1)
        ]
        return Report(rubric.question_id, 0, 0.0, covers, pitfalls, message=message)


def _order_violation(order: list[str], answer: str, units: list[Unit]):
    """An order pitfall: the answer names the calls, but in the wrong order (`step()` before `backward()`)."""
    firsts = []
    for term in order:
        pos = term_positions(answer, term)
        if not pos:
            return False, None
        firsts.append(pos[0])
    if firsts == sorted(firsts):
        return False, None
    unit = _unit_at(units, max(firsts)) or _unit_at(units, min(firsts))
    if unit is None:
        return True, None
    # Two statements in the wrong order read best as the window that holds both.
    lo, hi = min(firsts), max(firsts)
    both = [u for u in units if u.start <= lo and u.end > hi]
    if both:
        unit = min(both, key=lambda u: u.end - u.start)
    return True, (unit.text, (unit.start, unit.end))


def content_words(text: str) -> set[str]:
    return {w for w in words(text) if len(w) > 2}
