"""Batch grading of a JSONL file: bad lines are reported by number and skipped, the rest graded."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

from .followups import rubric_follow_up
from .scoring import Rubric
from .service import Interviewer, inline_rubric
from .settings import Settings


def parse_line(svc: Interviewer, number: int, line: str) -> tuple[str, Rubric, str]:
    """Validate one input line; raises ValueError with a message naming what to fix."""
    try:
        row = json.loads(line)
    except json.JSONDecodeError as exc:
        raise ValueError(f"not valid JSON ({exc.msg} at column {exc.colno})") from None
    except ValueError as exc:  # an integer of over 4300 digits
        raise ValueError(f"not usable JSON ({exc})") from None
    except RecursionError:
        raise ValueError("not usable JSON (nested too deeply)") from None
    if not isinstance(row, dict):
        raise ValueError("expected a JSON object with id and answer")
    if "id" not in row:
        raise ValueError("missing `id`")
    answer = row.get("answer")
    if not isinstance(answer, str):
        raise ValueError("`answer` must be a string")
    if row.get("question_id"):
        qid = str(row["question_id"])
        if qid not in svc.bank:
            raise ValueError(f"unknown question_id {qid!r}")
        return row["id"], svc.rubric(qid), answer
    covers = row.get("covers") or []
    if not isinstance(covers, list) or not all(isinstance(c, str) for c in covers):
        raise ValueError("`covers` must be a list of texts")
    pitfalls = row.get("pitfalls") or []
    if not isinstance(pitfalls, list) or not all(
        isinstance(p, dict)
        and isinstance(p.get("text"), str)
        and all(isinstance(p.get(k), str | None) for k in ("claim", "correction", "expects"))
        for p in pitfalls
    ):
        raise ValueError("`pitfalls` must be a list of {text, kind} objects (text, claim, correction: texts)")
    reference = row.get("reference")
    if not isinstance(reference, str | None):
        raise ValueError("`reference` must be a text (a model answer)")
    reference = (reference or "").strip() or None  # a blank reference would make one empty point
    if not row.get("question") and not covers and not reference:
        raise ValueError("needs `question_id`, or an inline rubric (`question` with `covers` or `reference`)")
    rubric = inline_rubric(f"line-{number}", str(row.get("question") or ""), covers, pitfalls, reference)
    return row["id"], rubric, answer


def grade_lines(svc: Interviewer, lines: Iterator[str], batch: int = 64, errors=sys.stderr) -> Iterator[dict]:
    """Yield one result dict per good line, scoring a batch of answers at a time."""
    pending: list[tuple[str, Rubric, str]] = []

    def flush() -> Iterator[dict]:
        jobs = [
            (rubric, answer, svc.store.vectors_for(rubric.question_id) if rubric.question_id in svc.bank else None)
            for _, rubric, answer in pending
        ]
        for (rid, rubric, _), report in zip(pending, svc.scorer.score_many(jobs), strict=True):
            report.follow_up = rubric_follow_up(rubric, report)
            yield {"id": rid, **report.to_dict()}
        pending.clear()

    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            pending.append(parse_line(svc, number, line))
        except (ValueError, KeyError, TypeError) as exc:
            print(f"line {number}: skipped: {exc}", file=errors)
            continue
        if len(pending) >= batch:
            yield from flush()
    if pending:
        yield from flush()


def grade_file(path: Path, out: Path | None, settings: Settings, progress: bool = True) -> dict:
    svc = Interviewer(settings)
    text = path.read_text(encoding="utf-8", errors="replace")
    # Only a newline ends a JSONL line (reading turned \r\n into \n): splitlines() would also split at
    # U+2028 or U+0085 inside an answer, and number the lines unlike the editor a person fixes them in.
    lines = text.split("\n")
    svc.ensure_index()
    graded = 0
    fh = out.open("w", encoding="utf-8") if out else sys.stdout
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=len(lines), unit="answer", file=sys.stderr, desc="grading")
    try:
        for result in grade_lines(svc, iter(lines)):
            fh.write(json.dumps(result) + "\n")
            graded += 1
            if bar:
                bar.update(1)
    finally:
        if bar:
            bar.close()
        if out:
            fh.close()
    return {"graded": graded, "skipped": sum(1 for ln in lines if ln.strip()) - graded}
