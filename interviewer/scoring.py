"""Scoring an answer against a rubric: coverage with evidence, polarity-aware pitfalls, a grade.

Cosine similarity says whether an answer talks about a point, not whether it agrees with it
("NumPy can run on the GPU" and "NumPy cannot run on the GPU" score 0.92 with MiniLM). So every
decision that depends on polarity also asks the embedder which of a statement and its negation the
answer is closer to, and counts negation cues on both sides.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field

import numpy as np

from .bank import Question
from .embeddings import Embedder
from .injection import blank_directives
from .text import (
    Unit,
    content_stems,
    is_codeish,
    negate,
    negation_count,
    polarity_stems,
    split_units,
    term_positions,
)

# How an answer covers a point is decided from six signals by a logistic model whose seven weights
# are fitted by `python -m bench.fit_cover` on the labelled dev set (leave-one-question-out F1 0.86),
# refitted when windows became the sum of their sentences' vectors:
# best cosine of an answer unit with the point; share of the point's key terms in the answer; share
# of the point's content words (not already in the question) in the best unit, and in the whole
# answer; cosine of the point with the question (points that restate the question are matched by any
# on-topic talk); and whether the best unit is closer to this point than to any other of the rubric.
COVER_WEIGHTS = np.array([1.28, 2.48, 1.11, 3.55, -0.42, 1.29])
COVER_BIAS = -3.62
COVER_THRESHOLD = 0.50
# Similarity above which an answer unit is "about" a claim; below it, polarity is not judged.
CLAIM_THRESHOLD = 0.70
# The score mixes how well each point is covered with two holistic signals a grader also uses:
# cosine of the whole answer with the model answer, and the share of the model answer's content
# words (beyond the question's) the answer uses. Chosen on Mohler assignments 1-6 only: of the mixes
# within 0.005 of the best Pearson r there (0.574), the one that weighs rubric coverage most.
SCORE_MIX = (0.4, 0.5, 0.1)
# Maps the mix onto 0-100 so that grade = score / 20 lands near an interviewer's 0-5 on the dev set
# (a monotone map: it changes no correlation, only the scale people read).
SCORE_FLOOR, SCORE_CEIL = 0.30, 0.73
MISCONCEPTION_PENALTY = 12.0
DEFAULT_MAX_WORDS = 5000
_WINDOW_PARTS = ("sentence", "item")  # what a window of neighbours is made of
_ANSWER_PARTS = ("sentence", "item", "code")  # what the answer is made of: clauses and windows overlap them
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


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
    claims: list[str] = field(default_factory=list)

    @property
    def all_claims(self) -> list[str]:
        return ([self.claim] if self.claim else []) + self.claims


@dataclass
class Rubric:
    """What the scorer needs of a question; built from a bank Question or given inline."""

    question_id: str
    question: str
    covers: list[RubricPoint]
    pitfalls: list[RubricPitfall] = field(default_factory=list)
    follow_ups: list[str] = field(default_factory=list)
    reference: str | None = None  # a model answer, for the holistic part of the score

    @property
    def reference_text(self) -> str:
        return self.reference or " ".join(p.text for p in self.covers)

    @classmethod
    def from_question(cls, q: Question) -> Rubric:
        return cls(
            q.id,
            q.question,
            [RubricPoint(p.id, p.text, list(p.key_terms)) for p in q.covers],
            [
                RubricPitfall(
                    p.id,
                    p.text,
                    p.kind,
                    p.claim,
                    p.correction,
                    p.expects,
                    list(p.covers),
                    list(p.key_terms),
                    list(p.order),
                    list(p.claims),
                )
                for p in q.pitfalls
            ],
            list(q.follow_ups),
            q.model_answer,
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
    check: str | None = None  # "confirmed" or "withdrawn" by the LLM's second opinion; None: not asked


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
    raw: float = 0.0
    set_aside: list[str] = field(default_factory=list)  # sentences addressed to the grader, not scored

    def to_dict(self) -> dict:
        data = asdict(self)
        for part in ("covers", "pitfalls"):
            for item in data[part]:
                item.pop("evidence_span", None)
        return data


def withdraw_flag(report: Report, flag: PitfallResult) -> None:
    """Clear a misconception flag that a second opinion rejected, and lift its score penalty."""
    flag.flagged, flag.check = False, "withdrawn"
    report.raw = round(report.raw + MISCONCEPTION_PENALTY, 2)
    report.score, report.grade = _scaled(report.raw)


def _claim_key(pitfall_id: str, n: int) -> str:
    """The vector key of a misconception's n-th phrasing of its wrong claim (0: `claim`, then `claims`)."""
    return f"{pitfall_id}:claim" if n == 0 else f"{pitfall_id}:claim{n}"


def _scaled(raw: float) -> tuple[int, float]:
    """The 0-100 score and the 0-5 grade people read, from the unclipped score."""
    score = round(float(np.clip(raw, 0, 100)))
    return score, round(score / 20.0, 1)


# -- helpers --------------------------------------------------------------------------------------
@dataclass
class _Context:
    """One answer prepared for scoring: its units, their vectors and its content words."""

    answer: str
    units: list[Unit]
    unit_vecs: np.ndarray
    vecs: dict[str, np.ndarray]
    point_matrix: np.ndarray  # unit x covers-point cosine
    answer_stems: set[str]
    question_stems: set[str]
    whole: np.ndarray  # the whole answer's vector (the normalised sum of its parts')
    claim_sims: dict[str, np.ndarray]  # misconception id -> unit x claim-phrasing cosine


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
        inside = u.start <= offset < u.end and u.kind in ("sentence", "item", "code", "clause")
        if inside and (best is None or (u.end - u.start) < (best.end - best.start)):
            best = u
    return best


def _opposes(unit_vec: np.ndarray, stmt_vec: np.ndarray, neg_vec: np.ndarray, unit_text: str, stmt: str) -> bool:
    """True when the unit sides with the negation of the statement rather than the statement."""
    closer_to_negation = float(unit_vec @ neg_vec) > float(unit_vec @ stmt_vec)
    return closer_to_negation and _denies(unit_text, stmt)


def _denies(unit_text: str, statement: str) -> bool:
    """Whether the unit's negations set it against the statement (a covers point or a wrong claim): an odd
    number of cues more or fewer, or a cue that falls on a word the other side states outside any negation
    ("you still want `torch.no_grad()`; `eval()` doesn't disable autograd" against "after `eval()` you
    don't need `torch.no_grad()`": one cue each, on different words)."""
    if negation_count(unit_text) % 2 != negation_count(statement) % 2:
        return True
    unit_denies, unit_asserts = polarity_stems(unit_text)
    stmt_denies, stmt_asserts = polarity_stems(statement)
    return bool(unit_denies & stmt_asserts or stmt_denies & unit_asserts)


def _normalised_sum(vectors: np.ndarray) -> np.ndarray:
    total = vectors.sum(axis=0)
    return total / max(float(np.linalg.norm(total)), 1e-12)


def truncate_words(answer: str, max_words: int) -> tuple[str, bool]:
    if len(answer.split()) < max_words:  # the usual answer: no need to walk it character by character
        return answer, False
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
        original = answer
        answer, directives = blank_directives(answer)
        set_aside = [original[a:b].strip() for a, b in directives]
        if not answer.strip():
            report = self._empty(rubric, "The answer only speaks to the grader; answer the question to be scored.")
            report.set_aside = set_aside
            return report
        ctx = self._context(rubric, answer, directives, stored or {})
        covers = [self._cover(i, p, ctx) for i, p in enumerate(rubric.covers, 1)]
        pitfalls = [self._pitfall(i, p, ctx, covers) for i, p in enumerate(rubric.pitfalls, 1)]
        holistic = float(ctx.whole @ ctx.vecs["__reference__"])
        reference_stems = content_stems(rubric.reference_text) - ctx.question_stems
        lexical = len(reference_stems & ctx.answer_stems) / len(reference_stems) if reference_stems else 0.0
        raw = self._raw_score(covers, pitfalls, holistic, lexical)
        score, grade = _scaled(raw)
        message = None
        n_words = len(answer.split())
        if truncated:
            message = f"The answer was cut at {self.max_words} words for scoring; the rest was not read."
        return Report(
            rubric.question_id,
            score,
            grade,
            covers,
            pitfalls,
            message=message,
            truncated=truncated,
            raw=round(raw, 2),
            words=n_words,
            set_aside=set_aside,
        )

    def _context(self, rubric: Rubric, answer: str, directives: list[tuple[int, int]], stored: dict) -> _Context:
        """The answer's units and their vectors, beside the rubric's vectors."""
        # A 2-sentence window across a blanked sentence would quote spaces the candidate never wrote.
        units = [u for u in split_units(answer) if not any(u.start < b and a < u.end for a, b in directives)]
        if not units:
            units = [Unit(answer.strip(), answer.index(answer.strip()), len(answer.rstrip()), "sentence")]
        vecs = self._rubric_vectors(rubric, stored)
        unit_vecs = self._unit_vectors(units)
        # The whole answer is not run through the model again: its vector is the normalised sum of its
        # sentences', items' and code lines' vectors. That reads all of a long answer (the model reads
        # 128 tokens) and, on the dev set and Mohler, follows the graders as well as a pass of its own.
        whole = _normalised_sum(unit_vecs[[i for i, u in enumerate(units) if u.kind in _ANSWER_PARTS]])
        points = np.stack([vecs[p.id] for p in rubric.covers], axis=1)
        claim_sims = {
            p.id: unit_vecs @ np.stack([vecs[_claim_key(p.id, n)] for n in range(len(p.all_claims))], axis=1)
            for p in rubric.pitfalls
            if p.kind == "misconception" and p.all_claims
        }
        return _Context(
            answer,
            units,
            unit_vecs,
            vecs,
            unit_vecs @ points,
            content_stems(answer),
            content_stems(rubric.question),
            whole,
            claim_sims,
        )

    def _unit_vectors(self, units: list[Unit]) -> np.ndarray:
        """Every unit's vector. A window of neighbouring sentences is not embedded: it gets the normalised
        sum of its sentences' vectors, which scores the dev set and Mohler the same (see the README) and
        saves about 45% of the model time on a typical answer. The whole answer is not embedded either
        (see `_context`)."""
        own = [i for i, u in enumerate(units) if u.kind != "window"]
        embedded = self._embed([units[i].text for i in own])
        vecs = np.zeros((len(units), embedded.shape[1]), dtype=np.float32)
        vecs[own] = embedded
        for i, u in enumerate(units):
            if u.kind != "window":
                continue
            # A window is made of whole prose sentences or items (text.split_units), all embedded above.
            parts = [j for j in own if units[j].kind in _WINDOW_PARTS and u.start <= units[j].start < u.end]
            vecs[i] = _normalised_sum(vecs[parts])
        return vecs

    def cover_features(self, rubric: Rubric, answer: str, stored: dict | None = None) -> np.ndarray:
        """The cover model's features, one row per covers point (what `bench/fit_cover.py` fits on)."""
        answer, directives = blank_directives(truncate_words(answer, self.max_words)[0])
        ctx = self._context(rubric, answer, directives, stored or {})
        rows = [self._statement_features(p.id, p.text, p.key_terms, ctx, i)[0] for i, p in enumerate(rubric.covers)]
        return np.stack(rows)

    def score_many(self, jobs: list[tuple[Rubric, str, dict | None]], chunk: int = 256) -> list[Report]:
        """Score many answers; their units are embedded together, a chunk of answers at a time."""
        reports: list[Report] = []
        for start in range(0, len(jobs), chunk):
            part = jobs[start : start + chunk]
            units = []
            for _, answer, _ in part if len(part) > 1 else ():  # one answer alone: score() embeds its units
                if answer and answer.strip():
                    kept = blank_directives(truncate_words(answer, self.max_words)[0])[0]
                    units += [u.text for u in split_units(kept) if u.kind != "window"]
            if units:
                self._embed(units)  # one batched pass fills the cache that score() reads
            reports.extend(self.score(rubric, answer, stored) for rubric, answer, stored in part)
        return reports

    # Vectors for every rubric sentence the decisions need, taken from the store when it has them.
    def _rubric_vectors(self, rubric: Rubric, stored: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        wanted: dict[str, str] = {"__question__": rubric.question or "question", "__reference__": rubric.reference_text}
        if rubric.question_id in stored:
            stored = {**stored, "__question__": stored[rubric.question_id]}
        if f"{rubric.question_id}:model" in stored:
            stored = {**stored, "__reference__": stored[f"{rubric.question_id}:model"]}
        for p in rubric.covers:
            wanted[p.id] = p.text
            wanted[p.id + ":neg"] = negate(p.text)
        for p in rubric.pitfalls:
            for kind in ("claim", "correction", "expects"):
                text = getattr(p, kind)
                if text:
                    wanted[f"{p.id}:{kind}"] = text
            for n, claim in enumerate(p.all_claims):
                key = _claim_key(p.id, n)
                wanted[key] = claim
                wanted[key + ":neg"] = negate(claim)
            if p.expects:
                wanted[f"{p.id}:expects:neg"] = negate(p.expects)
        missing = [k for k in wanted if k not in stored]
        vecs = dict(stored)
        if missing:
            vecs.update(zip(missing, self._embed([wanted[k] for k in missing]), strict=True))
        return vecs

    def _embed(self, texts: list[str]) -> np.ndarray:
        # A lone surrogate (a JSON "\ud800" escape, a non-UTF-8 byte in argv) cannot be encoded and the
        # tokenizer rejects the whole batch with a TypeError; it is embedded as U+FFFD instead. Evidence
        # still quotes the answer as given: spans index the original text.
        return self.embedder.embed([_LONE_SURROGATE.sub("\ufffd", t) for t in texts])

    def _best_unit(self, target: np.ndarray, ctx: _Context) -> tuple[int, float]:
        sims = ctx.unit_vecs @ target
        # A window must beat its own sentences clearly to be the evidence: shorter quotes read better.
        penalty = np.array([0.03 if u.kind == "window" else 0.0 for u in ctx.units])
        i = int(np.argmax(sims - penalty))
        return i, float(sims[i])

    def _statement(self, key: str, text: str, terms: list[str], ctx: _Context, own_column: int | None = None):
        """How likely the answer states `text` (0-1), whether it states the opposite, and where."""
        features, i = self._statement_features(key, text, terms, ctx, own_column)
        unit, sim = ctx.units[i], float(features[0])
        strength = 1.0 / (1.0 + np.exp(-(features @ COVER_WEIGHTS + COVER_BIAS)))
        contradicted = sim >= CLAIM_THRESHOLD and _opposes(
            ctx.unit_vecs[i], ctx.vecs[key], ctx.vecs[key + ":neg"], unit.text, text
        )
        return float(strength), contradicted, unit

    def _statement_features(
        self, key: str, text: str, terms: list[str], ctx: _Context, own_column: int | None = None
    ) -> tuple[np.ndarray, int]:
        """The cover model's six features for one statement, and the answer unit closest to it."""
        i, sim = self._best_unit(ctx.vecs[key], ctx)
        unit = ctx.units[i]
        terms_found = len(_term_hits(ctx.answer, terms)) / len(terms) if terms else 0.0
        stems = content_stems(text) - ctx.question_stems
        in_unit = len(stems & content_stems(unit.text)) / len(stems) if stems else 0.0
        in_answer = len(stems & ctx.answer_stems) / len(stems) if stems else 0.0
        to_question = float(ctx.vecs["__question__"] @ ctx.vecs[key])
        row = ctx.point_matrix[i]
        if own_column is None:
            exclusive = float(sim >= row.max()) if row.size else 1.0
        else:
            exclusive = float(int(np.argmax(row)) == own_column)
        return np.array([sim, terms_found, in_unit, in_answer, to_question, exclusive]), i

    def _cover(self, index, point: RubricPoint, ctx: _Context) -> CoverResult:
        strength, contradicted, unit = self._statement(point.id, point.text, point.key_terms, ctx, index - 1)
        covered = strength >= COVER_THRESHOLD and not contradicted
        show = covered or contradicted
        return CoverResult(
            point.id,
            index,
            point.text,
            covered,
            contradicted,
            round(strength, 3),
            unit.text if show else None,
            (unit.start, unit.end) if show else None,
        )

    def _pitfall(self, index, pit: RubricPitfall, ctx: _Context, covers) -> PitfallResult:
        correction = pit.correction or pit.expects or pit.text
        flagged, evidence = False, None
        if pit.order:
            flagged, evidence = _order_violation(pit.order, ctx.answer, ctx.units)
        if not flagged and pit.kind == "misconception" and pit.claim:
            flagged, evidence = self._asserts(pit, ctx)
        elif not flagged and pit.kind == "omission":
            linked = [c for c in covers if c.id in pit.covers]
            if linked:
                flagged = any(not c.covered for c in linked)
                wrong = next((c for c in linked if c.contradicted), None)
                if wrong is not None:
                    evidence = (wrong.evidence, wrong.evidence_span)
            elif pit.expects:
                strength, contradicted, unit = self._statement(f"{pit.id}:expects", pit.expects, pit.key_terms, ctx)
                flagged = contradicted or strength < COVER_THRESHOLD
                if contradicted:
                    evidence = (unit.text, (unit.start, unit.end))
            elif pit.key_terms:
                flagged = not _term_hits(ctx.answer, pit.key_terms)
        text, span = evidence if evidence else (None, None)
        return PitfallResult(pit.id, index, pit.text, pit.kind, flagged, text, correction, span)

    def _asserts(self, pit: RubricPitfall, ctx: _Context):
        """Whether some unit asserts one of the wrong claims: close to it, with the claim's polarity
        (an explicit denial has the opposite parity of negation cues), closer to the claim than to the
        correction in meaning and no nearer to the correction in words (a unit that uses more of the
        correction's own words than of the claim's sides with the correction: "it's define-by-run, a fresh
        graph every iteration" against "you define the graph first, it's define-and-run"), and closer to it
        than to any other misconception of the question (a sentence is evidence for the wrong idea it is
        most like, not for each of its neighbours). Code is not compared, on either side: MiniLM matches
        the correct call (`torch.save(model.state_dict())`) to the wrong one (`model = torch.load(PATH)`)
        at 0.9+. A claim that names a call in prose ("model.eval() turns off gradient tracking") is prose."""
        corr = ctx.vecs.get(f"{pit.id}:correction")
        rivals = [m for pid, m in ctx.claim_sims.items() if pid != pit.id]
        rival_sims = np.concatenate(rivals, axis=1).max(axis=1) if rivals else None
        corr_words = content_stems(pit.correction) if pit.correction else frozenset()
        unit_words: dict[int, frozenset[str]] = {}  # a unit's content stems, once across the claim phrasings
        best, best_sim = None, 0.0
        for n, text in enumerate(pit.all_claims):
            if "`" in text:
                continue
            claim_words = content_stems(text)
            sims = ctx.claim_sims[pit.id][:, n]
            for i in np.flatnonzero(sims >= CLAIM_THRESHOLD):
                u = ctx.units[i]
                if is_codeish(u.text):
                    continue
                # A clause is read with its sentence: in "NumPy cannot use the GPU by itself; GPU
                # arrays need CuPy" the second clause is not a claim that NumPy runs on the GPU.
                context = [u] + [s for s in ctx.units if s.kind == "sentence" and s.start <= u.start < s.end]
                if any(_denies(c.text, text) for c in context):
                    continue
                if corr is not None and float(sims[i]) <= float(ctx.unit_vecs[i] @ corr):
                    continue
                if rival_sims is not None and sims[i] < rival_sims[i]:
                    continue
                if i not in unit_words:
                    unit_words[i] = content_stems(u.text)
                words = unit_words[i]
                if len(words & (corr_words - claim_words)) > len(words & (claim_words - corr_words)):
                    continue
                if sims[i] > best_sim:
                    best, best_sim = u, float(sims[i])
        if best is None:
            return False, None
        return True, (best.text, (best.start, best.end))

    def _raw_score(
        self, covers: list[CoverResult], pitfalls: list[PitfallResult], holistic: float, lexical: float
    ) -> float:
        """The score before it is clipped to 0-100 (kept in reports as `raw`: correlations need it)."""
        if not covers:
            return 0.0
        content = sum(0.0 if c.contradicted else c.strength for c in covers) / len(covers)
        w_content, w_holistic, w_lexical = SCORE_MIX
        mix = w_content * content + w_holistic * max(holistic, 0.0) + w_lexical * lexical
        score = 100.0 * (mix - SCORE_FLOOR) / (SCORE_CEIL - SCORE_FLOOR)
        return score - MISCONCEPTION_PENALTY * sum(1 for p in pitfalls if p.flagged and p.kind == "misconception")

    def _empty(self, rubric: Rubric, message: str) -> Report:
        covers = [CoverResult(p.id, i, p.text, False, False, 0.0, None) for i, p in enumerate(rubric.covers, 1)]
        pitfalls = [
            PitfallResult(p.id, i, p.text, p.kind, p.kind == "omission", None, p.correction or p.expects or p.text)
            for i, p in enumerate(rubric.pitfalls, 1)
        ]
        return Report(rubric.question_id, 0, 0.0, covers, pitfalls, message=message)


def _order_violation(order: list[str], answer: str, units: list[Unit]):
    """An order pitfall: code or numbered steps that make the calls in the wrong order (`step()` before
    `backward()`). Prose is not judged by word order: "clip once backward() has run" is correct."""
    steps = [u for u in units if u.kind in ("code", "item")]
    firsts = []
    for term in order:
        pos = [u.start + p for u in steps for p in term_positions(u.text.split("#")[0], term)]
        if not pos:
            return False, None
        firsts.append(min(pos))
    if firsts == sorted(firsts):
        return False, None
    # The evidence runs from the first call made too early to the call it should have followed.
    first = _unit_at(units, min(firsts))
    last = _unit_at(units, max(firsts))
    if first is None or last is None:
        return True, None
    start, end = min(first.start, last.start), max(first.end, last.end)
    return True, (answer[start:end], (start, end))
