"""Refit the cover model (`COVER_WEIGHTS`, `COVER_BIAS` in interviewer/scoring.py) on the dev set.

`python -m bench.fit_cover` computes the six features of every (answer, covers point) pair of the
80 labelled dev answers, fits a logistic regression, and prints F1 at the 0.5 threshold for: the
shipped weights, the refit in-sample, and the refit under leave-one-question-out cross-validation
(each question's answers scored by a model fitted on the other 15 questions), which is the number to
trust for answers to questions the model never saw.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
DEV = ROOT.parent / "shared" / "data" / "pytorch_dev.jsonl"
sys.path.insert(0, str(ROOT))

from bench.common import print_table  # noqa: E402

FEATURES = ["similarity", "key terms found", "content words in unit", "content words in answer", "point~question"]
FEATURES.append("closest point")


def prf(predicted: np.ndarray, gold: np.ndarray) -> str:
    tp = float(np.sum(predicted & gold))
    p = tp / max(1, int(predicted.sum()))
    r = tp / max(1, int(gold.sum()))
    f = 2 * p * r / (p + r) if p + r else 0.0
    return f"P {p:.2f} / R {r:.2f} / F1 {f:.2f}"


def main() -> None:
    import os

    from sklearn.linear_model import LogisticRegression

    os.environ.setdefault("INTERVIEWER_HOME", tempfile.mkdtemp(prefix="interviewer-fit-"))
    from interviewer.scoring import COVER_BIAS, COVER_THRESHOLD, COVER_WEIGHTS
    from interviewer.service import Interviewer

    svc = Interviewer()
    svc.ensure_index()
    rows = [json.loads(line) for line in DEV.read_text(encoding="utf-8").splitlines() if line.strip()]
    X, y, groups = [], [], []
    for row in rows:
        rubric = svc.rubric(row["question_id"])
        features = svc.scorer.cover_features(rubric, row["answer"], svc.store.vectors_for(row["question_id"]))
        X.extend(features)
        y.extend(n in row["covers"] for n in range(1, len(rubric.covers) + 1))
        groups.extend([row["question_id"]] * len(rubric.covers))
    X, y, groups = np.array(X), np.array(y), np.array(groups)

    shipped = 1 / (1 + np.exp(-(X @ COVER_WEIGHTS + COVER_BIAS))) >= COVER_THRESHOLD
    model = LogisticRegression(C=1.0, max_iter=1000).fit(X, y)
    in_sample = model.predict_proba(X)[:, 1] >= 0.5
    held_out = np.zeros_like(y)
    for question in np.unique(groups):
        test = groups == question
        fold = LogisticRegression(C=1.0, max_iter=1000).fit(X[~test], y[~test])
        held_out[test] = fold.predict_proba(X[test])[:, 1] >= 0.5

    table = []
    for name, predicted in (("shipped weights", shipped), ("refit, in-sample", in_sample)):
        table.append((name, prf(predicted, y), f"{len(y)} points"))
    table.append(("refit, leave one question out", prf(held_out, y), "16 folds"))
    print_table("Cover model on the dev set (covers decisions)", table, "precision / recall / F1")
    print("\nrefit weights:", ", ".join(f"{n} {w:+.2f}" for n, w in zip(FEATURES, model.coef_[0], strict=True)))
    print(f"refit bias: {model.intercept_[0]:+.2f}; shipped: {np.round(COVER_WEIGHTS, 2).tolist()}, {COVER_BIAS:+.2f}")
    svc.close()


if __name__ == "__main__":
    main()
