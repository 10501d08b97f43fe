"""Would a contradiction classifier trained on SemEval-2013 sharpen the misconception flags?

`python -m bench.fit_contradiction` answers with measurements, not a shipped model:

1. On `../shared/benchmarks/semeval2013/train_3way.csv` it fits a logistic regression on
   (reference answer, student answer) pairs: the same local signals the scorer reads (cosine, how much
   closer the student is to the reference's negation, negation parity, shared and new content words)
   and, in a second model, MiniLM's elementwise product and difference of the two vectors. It reports
   macro-F1 under 5-fold cross-validation grouped by question (no question in both folds), as the
   benchmark's README asks, 3-way and for correct vs contradictory.
2. It fits both models on all of SemEval and asks them, for each misconception the scorer flags on the
   dev set, whether the flagged unit contradicts the wrong claim it matched. A classifier that helps
   would give the false flags (a unit that denies the claim) a higher probability than the true ones:
   the table gives that separation as ROC AUC over the flags (0.5 is chance), and the flags kept when
   every flag the classifier calls a contradiction (p > 0.5) is withdrawn.
"""

from __future__ import annotations

import csv
import os
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared"
SEMEVAL = SHARED / "benchmarks" / "semeval2013" / "train_3way.csv"
DEV = SHARED / "data" / "pytorch_dev.jsonl"
sys.path.insert(0, str(ROOT))

from bench.common import dev_flags, print_grid  # noqa: E402

LABELS = {"correct": 0, "contradictory": 1, "incorrect": 2}


def pair_features(reference: str, student: str, vectors: dict[str, np.ndarray]) -> list[float]:
    """The local signals for one pair; `vectors` holds both texts and the reference's negation."""
    from interviewer.text import content_stems, negate, negation_count

    ref, neg, st = vectors[reference], vectors[negate(reference)], vectors[student]
    cosine = float(st @ ref)
    toward_negation = float(st @ neg) - cosine
    parity = float(negation_count(student) % 2 != negation_count(reference) % 2)
    ref_words, st_words = content_stems(reference), content_stems(student)
    shared = len(ref_words & st_words) / len(ref_words) if ref_words else 0.0
    new = len(st_words - ref_words) / len(st_words) if st_words else 0.0
    return [
        cosine,
        toward_negation,
        parity,
        float(negation_count(student) > 0),
        float(negation_count(reference) > 0),
        shared,
        new,
        parity * cosine,
        toward_negation * cosine,
    ]


def vector_features(reference: str, student: str, vectors: dict[str, np.ndarray]) -> np.ndarray:
    ref, st = vectors[reference], vectors[student]
    return np.concatenate([ref * st, np.abs(ref - st)])


def embed_all(embedder, texts: set[str]) -> dict[str, np.ndarray]:
    ordered = sorted(texts)
    return dict(zip(ordered, embedder.embed(ordered), strict=True))


def main() -> None:
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import f1_score, roc_auc_score
    from sklearn.model_selection import GroupKFold

    os.environ.setdefault("INTERVIEWER_HOME", tempfile.mkdtemp(prefix="interviewer-fit-"))
    from interviewer.service import Interviewer
    from interviewer.text import negate

    svc = Interviewer()
    svc.ensure_index()
    with SEMEVAL.open(encoding="utf-8", newline="") as fh:
        rows = list(csv.DictReader(fh))
    texts = {r["reference_answer"] for r in rows} | {r["student_answer"] for r in rows}
    vectors = embed_all(svc.embedder, texts | {negate(t) for t in {r["reference_answer"] for r in rows}})
    local = np.array([pair_features(r["reference_answer"], r["student_answer"], vectors) for r in rows])
    products = [vector_features(r["reference_answer"], r["student_answer"], vectors) for r in rows]
    both = np.hstack([local, np.array(products)])
    y = np.array([LABELS[r["label"]] for r in rows])
    groups = np.array([r["question_id"] for r in rows])
    two_way = y < 2

    def cross_validated(X: np.ndarray, mask: np.ndarray) -> float:
        X, labels, by = X[mask], y[mask], groups[mask]
        predicted = np.zeros_like(labels)
        for train, test in GroupKFold(5).split(X, labels, by):
            predicted[test] = LogisticRegression(max_iter=3000).fit(X[train], labels[train]).predict(X[test])
        return float(f1_score(labels, predicted, average="macro"))

    everything = np.ones_like(two_way)
    models = {"local signals": local, "local + MiniLM vector products": both}
    table = [
        [name, f"{cross_validated(X, everything):.3f}", f"{cross_validated(X, two_way):.3f}"]
        for name, X in models.items()
    ]
    print_grid(
        f"SemEval-2013 ({len(rows)} answers, 5 folds by question): macro-F1",
        ["features", "3-way", "correct vs contradictory"],
        table,
    )

    # The dev set's misconception flags: does the classifier tell the true ones from the false?
    flags = dev_flags(svc, DEV)
    texts = {unit for unit, _, _ in flags} | {c for _, claims, _ in flags for c in claims}
    dev_vectors = embed_all(svc.embedder, texts | {negate(t) for t in texts})
    table = []
    for name, X in models.items():
        model = LogisticRegression(max_iter=3000).fit(X[two_way], y[two_way])
        p_contra = []
        for unit, claims, _ in flags:
            claim = max(claims, key=lambda c: float(dev_vectors[unit] @ dev_vectors[c]))
            row = pair_features(claim, unit, dev_vectors)
            if X.shape[1] > len(row):
                row = np.concatenate([row, vector_features(claim, unit, dev_vectors)])
            p_contra.append(float(model.predict_proba(np.array([row]))[0, 1]))
        true = [t for _, _, t in flags]
        kept = [t for t, p in zip(true, p_contra, strict=True) if p <= 0.5]
        table.append(
            [
                name,
                f"{roc_auc_score([not t for t in true], p_contra):.2f}",
                f"{min(p_contra):.2f}-{max(p_contra):.2f}",
                f"{sum(kept)} true, {len(kept) - sum(kept)} false (of {sum(true)}, {len(true) - sum(true)})",
            ]
        )
    print_grid(
        f"Dev set: the scorer's {len(flags)} misconception flags, P(unit contradicts the claim it matched)",
        ["features", "AUC, false vs true flags", "range", "flags kept at p <= 0.5"],
        table,
    )
    svc.close()


if __name__ == "__main__":
    main()
