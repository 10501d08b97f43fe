"""How far a negation cue reaches, and what placing the cues changes: `python -m bench.negation_reach`.

The scorer reads a unit as denying a wrong claim when their counts of negation cues differ in parity,
or when a cue of one falls on a word the other states plainly (`interviewer.text.polarity_stems`: a cue
denies the next `NEGATION_REACH` content words of its clause). This prints three tables, for the count
alone and for each reach:

1. the dev set's misconception precision and recall (`python -m interviewer eval`'s numbers);
2. without labels: the bank's phrasings of one wrong claim all assert it, so every ordered pair of them
   that a rule reads as a denial is a wrong denial;
3. SemEval-2013 (correct vs contradictory, `../shared/benchmarks/semeval2013/train_3way.csv`): each
   answer is read against its nearest reference answer (MiniLM cosine) and called contradictory when
   it denies it. Most of its contradictions are not negations, so this only shows the rules do no harm.

About 20 s on this 2-core VM, in a fresh data directory (the rubric index is built first).
"""

from __future__ import annotations

import csv
import os
import sys
import tempfile
from itertools import permutations
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared"
SEMEVAL = SHARED / "benchmarks" / "semeval2013" / "train_3way.csv"
DEV = SHARED / "data" / "pytorch_dev.jsonl"
sys.path.insert(0, str(ROOT))

from bench.common import print_grid  # noqa: E402

REACHES = (1, 2, 3, 4, 6)


def _use(reach: int | None) -> None:
    """Make the scorer read cues by their count alone (None) or placed with this reach."""
    from interviewer import scoring, text

    text._sentence_polarity.cache_clear()
    if reach is None:
        scoring.polarity_stems = lambda _: (frozenset(), frozenset())
    else:
        text.NEGATION_REACH = reach
        scoring.polarity_stems = text.polarity_stems


def _phrasing_pairs(bank) -> list[tuple[str, str]]:
    from interviewer.scoring import Rubric

    pairs = []
    for question in bank.questions:
        for pitfall in Rubric.from_question(question).pitfalls:
            if pitfall.kind == "misconception":
                prose = [c for c in pitfall.all_claims if "`" not in c]  # the scorer does not compare code
                pairs.extend(permutations(prose, 2))
    return pairs


def _semeval_nearest(embedder) -> tuple[list[tuple[str, str]], list[bool]]:
    """(answer, its nearest reference answer) and whether the answer is contradictory."""
    with SEMEVAL.open(encoding="utf-8", newline="") as f:
        rows = [r for r in csv.DictReader(f) if r["label"] in ("correct", "contradictory")]
    references = {
        r["question_id"]: [ref.split("] ", 1)[-1].strip() for ref in r["all_reference_answers"].split(" || ")]
        for r in rows
    }
    texts = sorted({t for refs in references.values() for t in refs} | {r["student_answer"] for r in rows})
    vectors = dict(zip(texts, embedder.embed(texts), strict=True))
    pairs = []
    for r in rows:
        answer = vectors[r["student_answer"]]
        nearest = max(references[r["question_id"]], key=lambda ref: float(answer @ vectors[ref]))
        pairs.append((r["student_answer"], nearest))
    return pairs, [r["label"] == "contradictory" for r in rows]


def main() -> None:
    if not DEV.exists() or not SEMEVAL.exists():
        raise SystemExit(f"needs {DEV} and {SEMEVAL} beside the checkout")
    os.environ.setdefault("INTERVIEWER_HOME", tempfile.mkdtemp(prefix="interviewer-reach-"))
    from interviewer.evaluation import PRF, evaluate_dev
    from interviewer.scoring import _denies
    from interviewer.service import Interviewer

    svc = Interviewer()

    def score(question_id: str, answer: str):
        return svc.score_answer(svc.rubric(question_id), answer)

    phrasings = _phrasing_pairs(svc.bank)
    semeval, contradictory = _semeval_nearest(svc.embedder)
    rows = []
    for reach in (None, *REACHES):
        _use(reach)
        dev = evaluate_dev(score, svc.bank, DEV)["misconception"]
        wrong_denials = sum(_denies(a, b) for a, b in phrasings)
        semeval_prf = PRF()
        for (answer, ref), gold in zip(semeval, contradictory, strict=True):
            semeval_prf.add(_denies(answer, ref), gold)
        name = "count of cues alone" if reach is None else f"placed, reach {reach}" + (" (the scorer)" * (reach == 2))
        rows.append(
            [
                name,
                f"{dev['precision']:.2f} / {dev['recall']:.2f} ({dev['tp']}/{dev['fp']}/{dev['fn']})",
                f"{wrong_denials} of {len(phrasings)}",
                f"{semeval_prf.precision:.3f} / {semeval_prf.recall:.3f}",
            ]
        )
    _use(2)
    print_grid(
        "Negation cues: counted, or placed with a reach",
        [
            "rule",
            "dev misconception P / R (TP/FP/FN)",
            "bank phrasings read as denying each other",
            "SemEval contradictory P / R",
        ],
        rows,
    )


if __name__ == "__main__":
    main()
