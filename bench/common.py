"""What every benchmark shares: percentiles and the table it prints."""

from __future__ import annotations

import json
from pathlib import Path


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def print_table(title: str, rows: list[tuple[str, str, str]], value_header: str = "value") -> None:
    print(f"\n## {title}\n")
    print(f"| measure | {value_header} | note |\n|---|---|---|")
    for name, value, note in rows:
        print(f"| {name} | {value} | {note} |")


def print_grid(title: str, headers: list[str], rows: list[list[str]]) -> None:
    """A table with any columns, one row per measured case."""
    print(f"\n## {title}\n")
    print("| " + " | ".join(headers) + " |\n|" + "---|" * len(headers))
    for row in rows:
        print("| " + " | ".join(row) + " |")


def dev_flags(svc, dev: Path) -> list[tuple[str, list[str], bool]]:
    """(flagged unit, the wrong claim's phrasings, whether the label agrees) for each misconception the
    scorer flags on the labelled dev set."""
    flags = []
    for line in dev.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        row = json.loads(line)
        rubric = svc.rubric(row["question_id"])
        report = svc.score_answer(rubric, row["answer"])
        for result, pitfall in zip(report.pitfalls, rubric.pitfalls, strict=True):
            if result.kind == "misconception" and result.flagged and result.evidence:
                flags.append((result.evidence, pitfall.all_claims, result.index in row["pitfalls"]))
    return flags
