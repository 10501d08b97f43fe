"""Measuring the scorer against human labels: the PyTorch dev set and the Mohler benchmark."""

from __future__ import annotations

import csv
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy.stats import pearsonr, spearmanr

from .bank import Bank
from .scoring import Report, Rubric, Scorer
from .service import inline_rubric

DEFAULT_SHARED = Path(__file__).resolve().parent.parent.parent / "shared"


@dataclass
class PRF:
    tp: int = 0
    fp: int = 0
    fn: int = 0

    def add(self, predicted: bool, actual: bool) -> None:
        self.tp += predicted and actual
        self.fp += predicted and not actual
        self.fn += actual and not predicted

    @property
    def precision(self) -> float:
        return self.tp / (self.tp + self.fp) if self.tp + self.fp else 0.0

    @property
    def recall(self) -> float:
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else 0.0

    @property
    def f1(self) -> float:
        p, r = self.precision, self.recall
        return 2 * p * r / (p + r) if p + r else 0.0

    def row(self) -> dict:
        return {
            "precision": round(self.precision, 3),
            "recall": round(self.recall, 3),
            "f1": round(self.f1, 3),
            "tp": self.tp,
            "fp": self.fp,
            "fn": self.fn,
        }


def evaluate_dev(score: Callable[[str, str], Report], bank: Bank, path: Path) -> dict:
    """Covers and pitfall P/R/F1 and Spearman of grade vs the human grade on labelled answers."""
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    covers, pitfalls = PRF(), PRF()
    by_kind = {"omission": PRF(), "misconception": PRF()}
    ours, human, details = [], [], []
    for row in rows:
        report = score(row["question_id"], row["answer"])
        gold_covers, gold_pits = set(row["covers"]), set(row["pitfalls"])
        for c in report.covers:
            covers.add(c.covered, c.index in gold_covers)
        for p in report.pitfalls:
            pitfalls.add(p.flagged, p.index in gold_pits)
            by_kind[p.kind].add(p.flagged, p.index in gold_pits)
        ours.append(report.grade)
        human.append(row["grade"])
        details.append(
            {
                "answer_id": row["answer_id"],
                "grade": report.grade,
                "human": row["grade"],
                "covers": [c.index for c in report.covers if c.covered],
                "gold_covers": sorted(gold_covers),
                "pitfalls": [p.index for p in report.pitfalls if p.flagged],
                "gold_pitfalls": sorted(gold_pits),
            }
        )
    return {
        "answers": len(rows),
        "covers": covers.row(),
        "pitfalls": pitfalls.row(),
        "omission": by_kind["omission"].row(),
        "misconception": by_kind["misconception"].row(),
        "spearman": round(float(spearmanr(ours, human).statistic), 3),
        "details": details,
    }


def load_mohler(path: Path) -> list[dict]:
    with path.open(encoding="utf-8", newline="") as fh:
        return list(csv.DictReader(fh))


def evaluate_mohler(scorer: Scorer, path: Path, fit_assignments=range(1, 7)) -> dict:
    """Pearson r and RMSE by the benchmark's protocol: calibration fitted on assignments 1-6 only."""
    rows = load_mohler(path)
    rubrics: dict[str, Rubric] = {}
    for row in rows:
        qid = row["question_id"]
        if qid not in rubrics:
            rubrics[qid] = inline_rubric(f"mohler-{qid}", row["question"], reference=row["reference_answer"])
    jobs = [(rubrics[r["question_id"]], r["student_answer_clean"] or r["student_answer"], None) for r in rows]
    # Pearson needs the unclipped score: about half the gold grades are 5.0 and would pile up at 100.
    raw_arr = np.array([report.raw for report in scorer.score_many(jobs)], dtype=float)
    gold = np.array([float(r["score_avg"]) for r in rows])
    assignment = np.array([int(r["assignment"]) for r in rows])
    fit = np.isin(assignment, list(fit_assignments))
    slope, intercept = np.polyfit(raw_arr[fit], gold[fit], 1)
    pred = np.clip(slope * raw_arr + intercept, 0, 5)
    test = ~fit

    def stats(mask):
        return {
            "pearson": round(float(pearsonr(raw_arr[mask], gold[mask]).statistic), 3),
            "rmse": round(float(np.sqrt(np.mean((pred[mask] - gold[mask]) ** 2))), 3),
            "n": int(mask.sum()),
        }

    return {
        "assignments_7_12": stats(test),
        "all": stats(np.ones_like(test)),
        "calibration": {"slope": round(float(slope), 4), "intercept": round(float(intercept), 3)},
    }


def format_table(dev: dict | None, mohler: dict | None) -> str:
    lines = ["| Data | Measure | Value |", "|---|---|---|"]
    if dev:
        for part in ("covers", "omission", "misconception", "pitfalls"):
            r = dev[part]
            lines.append(
                f"| PyTorch dev ({dev['answers']} answers) | {part} P / R / F1 | "
                f"{r['precision']:.2f} / {r['recall']:.2f} / {r['f1']:.2f} |"
            )
        lines.append(f"| PyTorch dev | Spearman, grade vs human | {dev['spearman']:.2f} |")
    if mohler:
        for key, label in (("assignments_7_12", "assignments 7-12"), ("all", "all 2273")):
            r = mohler[key]
            lines.append(f"| Mohler, {label} | Pearson r / RMSE | {r['pearson']:.2f} / {r['rmse']:.2f} |")
    return "\n".join(lines)
