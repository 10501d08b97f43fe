"""Interviewer co-pilot: a live rubric checklist while a person interviews, and a scorecard.

The machine proposes (points covered, pitfalls flagged, follow-ups to ask); the interviewer decides.
A mark the interviewer set is never overridden by a later update, and the scorecard says which marks
were theirs. The recommendation is the interviewer's alone.
"""

from __future__ import annotations

import json
import time
import uuid
from dataclasses import dataclass, field

from .errors import StoreUnavailable
from .followups import rubric_follow_up
from .markup import escape_markdown
from .scoring import Report, Rubric, RubricPoint
from .service import Interviewer

MATCH_THRESHOLD = 0.65  # below this cosine, a typed question is "not in the bank" (unrelated ones sit under 0.4)


@dataclass
class PlannedQuestion:
    """One question of the interview: from the bank, matched to it, or provisional."""

    text: str
    rubric: Rubric
    source: str  # bank | matched | provisional
    match_similarity: float | None = None
    origins: dict[str, str] = field(default_factory=dict)  # point id -> where a provisional point came from
    transcript: str = ""
    report: dict | None = None
    overrides: dict[str, bool] = field(default_factory=dict)  # point id -> the interviewer's mark
    dismissed: list[str] = field(default_factory=list)  # pitfall ids the interviewer dismissed
    notes: str = ""
    suggestions: list[dict] = field(default_factory=list)
    last_report: Report | None = field(default=None, repr=False, compare=False)
    store_notice: str | None = None  # why the rubric store was not used for the last update


def plan_from_bank(svc: Interviewer, question_id: str) -> PlannedQuestion:
    q = svc.bank.get(question_id)
    return PlannedQuestion(q.question, svc.rubric(q.id), "bank")


def plan_from_text(svc: Interviewer, text: str, k_points: int = 6) -> tuple[PlannedQuestion, str]:
    """Match a typed question to the bank; when nothing is close, assemble a provisional checklist
    from the nearest rubric points across the bank. Returns the plan item and a notice for the user."""
    text = " ".join(text.split())
    if len(text) < 8:
        raise ValueError("Type the whole question (at least a few words).")
    svc.ensure_index()
    best = svc.store.nearest(text, kind="question", k=3)
    if best and best[0].similarity >= MATCH_THRESHOLD:
        m = best[0]
        item = PlannedQuestion(text, svc.rubric(m.question_id), "matched", round(m.similarity, 3))
        return item, f"Matched to bank question `{m.question_id}` (similarity {m.similarity:.2f})."
    points = svc.store.nearest(text, kind="cover", k=k_points)
    rubric = Rubric(
        "custom-" + uuid.uuid4().hex[:6], text, [RubricPoint(f"custom.c{n}", p.text) for n, p in enumerate(points, 1)]
    )
    origins = {f"custom.c{n}": f"{p.id} ({p.similarity:.2f})" for n, p in enumerate(points, 1)}
    near = f" (closest: `{best[0].question_id}`, {best[0].similarity:.2f})" if best else ""
    return (
        PlannedQuestion(text, rubric, "provisional", round(best[0].similarity, 3) if best else None, origins),
        f"No close match in the bank{near}: a provisional checklist was assembled from the nearest rubric "
        "points; check each point's origin.",
    )


def update(svc: Interviewer, item: PlannedQuestion, transcript: str) -> PlannedQuestion:
    """Re-score the growing transcript. Only new sentences are embedded (the rest come from the cache)."""
    item.transcript = transcript
    if not transcript.strip():
        item.report, item.last_report, item.suggestions = None, None, []
        return item
    stored, item.store_notice = (
        svc.stored_vectors(item.rubric.question_id) if item.source != "provisional" else (None, None)
    )
    report = svc.score_rubric(item.rubric, transcript, stored)
    item.report = report.to_dict()
    item.last_report = report
    item.suggestions = suggestions(item, report)
    return item


def set_marks(item: PlannedQuestion, ticked: list[str]) -> None:
    """The interviewer ticked exactly these point ids: every difference from the machine is theirs."""
    for row in checklist(item):
        want = row["id"] in ticked
        if want != row["machine"] or row["id"] in item.overrides:
            item.overrides[row["id"]] = want
    if item.last_report is not None:
        item.suggestions = suggestions(item, item.last_report)


def dismiss_flags(item: PlannedQuestion, dismissed: list[str]) -> None:
    item.dismissed = list(dismissed)
    if item.last_report is not None:
        item.suggestions = suggestions(item, item.last_report)


def suggestions(item: PlannedQuestion, report: Report, n: int = 3) -> list[dict]:
    """Up to three rubric follow-ups, for the most important open points first."""
    out: list[dict] = []
    probe = Report(
        report.question_id,
        report.score,
        report.grade,
        [c for c in report.covers if not item.overrides.get(c.id, c.covered)],
        [p for p in report.pitfalls if p.id not in item.dismissed],
    )
    while len(out) < n:
        follow = rubric_follow_up(item.rubric, probe)
        if not follow or any(f["text"] == follow["text"] for f in out):
            break
        out.append(follow)
        # The next suggestion probes the next most important gap.
        probe.covers = [c for c in probe.covers if c.id != follow.get("target")]
        probe.pitfalls = [p for p in probe.pitfalls if p.id != follow.get("target")]
    return out


def checklist(item: PlannedQuestion) -> list[dict]:
    """Each point with the machine's mark, the interviewer's (if any) and the final one."""
    rows = []
    covers = {c["id"]: c for c in (item.report or {}).get("covers", [])}
    for n, point in enumerate(item.rubric.covers, 1):
        machine = covers.get(point.id, {})
        auto = bool(machine.get("covered"))
        human = item.overrides.get(point.id)
        rows.append(
            {
                "id": point.id,
                "index": n,
                "text": point.text,
                "machine": auto,
                "interviewer": human,
                "final": auto if human is None else human,
                "evidence": machine.get("evidence"),
                "contradicted": bool(machine.get("contradicted")),
                "origin": item.origins.get(point.id),
            }
        )
    return rows


def flags(item: PlannedQuestion) -> list[dict]:
    return [
        {**p, "dismissed": p["id"] in item.dismissed} for p in (item.report or {}).get("pitfalls", []) if p["flagged"]
    ]


def item_score(item: PlannedQuestion) -> int:
    rows = checklist(item)
    if not rows:
        return 0
    if not item.overrides:
        return int((item.report or {}).get("score", 0))
    return round(100 * sum(r["final"] for r in rows) / len(rows))


@dataclass
class Interview:
    candidate: str = ""
    role: str = ""
    questions: list[PlannedQuestion] = field(default_factory=list)
    recommendation: int | None = None  # 1-5, the interviewer's alone
    summary: str = ""
    id: str = field(default_factory=lambda: uuid.uuid4().hex[:12])
    started: float = field(default_factory=time.time)


def scorecard(interview: Interview) -> dict:
    per_question = []
    for item in interview.questions:
        rows = checklist(item)
        per_question.append(
            {
                "question": item.text,
                "question_id": item.rubric.question_id,
                "source": item.source,
                "match_similarity": item.match_similarity,
                "score": item_score(item),
                "covered": [r["text"] for r in rows if r["final"]],
                "missed": [r["text"] for r in rows if not r["final"]],
                "interviewer_marks": {r["id"]: r["interviewer"] for r in rows if r["interviewer"] is not None},
                "checklist": rows,
                "flags": flags(item),
                "notes": item.notes,
                "transcript": item.transcript,
            }
        )
    return {
        "interview": interview.id,
        "candidate": interview.candidate,
        "role": interview.role,
        "started": interview.started,
        "recommendation": interview.recommendation,
        "summary": interview.summary,
        "questions": per_question,
    }


def scorecard_json(interview: Interview) -> str:
    return json.dumps(scorecard(interview), indent=2)


def scorecard_markdown(interview: Interview) -> str:
    card = scorecard(interview)
    rec = card["recommendation"]
    started = time.strftime("%Y-%m-%d %H:%M", time.localtime(card["started"]))
    lines = [
        f"# Interview scorecard: {escape_markdown(card['candidate'] or 'candidate')}",
        "",
        f"Role: {escape_markdown(card['role'] or '-')} · {started}",
        f"Recommendation (interviewer): {rec if rec else 'not given'} / 5",
        "",
    ]
    if card["summary"]:
        lines += ["Summary:", "", "    " + card["summary"].replace("\n", "\n    "), ""]
    for n, q in enumerate(card["questions"], 1):
        lines += [f"## {n}. {escape_markdown(q['question'])}", "", f"Score {q['score']}/100 · {q['source']}", ""]
        for r in q["checklist"]:
            mark = "x" if r["final"] else " "
            who = " (interviewer)" if r["interviewer"] is not None else ""
            origin = f" [from {r['origin']}]" if r["origin"] else ""
            lines.append(f"- [{mark}] {escape_markdown(r['text'])}{who}{origin}")
        for f in q["flags"]:
            state = "dismissed by interviewer" if f["dismissed"] else "flag"
            lines.append(f"- {state}: {escape_markdown(f['text'])} → {escape_markdown(f['correction'] or '')}")
        if q["notes"]:
            lines += ["", "Notes:", "", "    " + q["notes"].replace("\n", "\n    ")]
        lines.append("")
    return "\n".join(lines)


def llm_suggestions(llm, item: PlannedQuestion) -> tuple[list[dict], str]:
    """Three ranked follow-ups from the LLM for the current transcript; the rubric's on any failure.
    Returns the suggestions and a notice ("" when the LLM answered)."""
    from .errors import LLMUnavailable
    from .followups import LLM_NOTICE, validate_question
    from .injection import without_directives
    from .llm import quote_answer, render

    report = item.last_report
    if llm is None or report is None:
        return item.suggestions, "" if llm else "No LLM configured: these follow-ups come from the rubric."
    missed = "; ".join(c.text for c in report.covers if not item.overrides.get(c.id, c.covered)) or "none"
    raised = "; ".join(p.text for p in report.pitfalls if p.flagged and p.id not in item.dismissed) or "none"
    messages = render(
        "copilot_suggestions",
        question=item.text,
        answer=quote_answer(without_directives(item.transcript)),
        missed=missed,
        flags=raised,
    )
    try:
        text = llm.complete(messages, max_tokens=160, temperature=0.0)
        questions = []
        for line in text.splitlines():
            try:
                q = validate_question(line.lstrip("0123456789.-) *"), item.rubric)
            except LLMUnavailable:
                continue
            if q not in questions:
                questions.append(q)
        if not questions:
            raise LLMUnavailable("the LLM suggested no usable question")
    except LLMUnavailable as exc:
        return item.suggestions, f"{LLM_NOTICE} ({exc})"
    item.suggestions = [{"text": q, "source": "llm"} for q in questions[:3]]
    return item.suggestions, ""


JUMP_SIMILARITY = 0.6


def detect_jump(svc: Interviewer, interview: Interview, item: PlannedQuestion) -> str | None:
    """A notice when the latest sentence reads as an answer to another planned question."""
    from .text import split_units

    sentences = [u for u in split_units(item.transcript) if u.kind in ("sentence", "item")]
    if not sentences or len(sentences[-1].text.split()) < 5:
        return None
    others = {q.rubric.question_id: n for n, q in enumerate(interview.questions, 1) if q is not item}
    if not others:
        return None
    try:
        nearest = svc.store.nearest(sentences[-1].text, kind="cover", k=3)
    except StoreUnavailable:  # a hint, not a duty: without the store there is no hint
        return None
    own = {p.text for p in item.rubric.covers}
    for match in nearest:
        if match.text in own or match.similarity < JUMP_SIMILARITY:
            return None
        if match.question_id in others:
            n = others[match.question_id]
            return (
                f"The last sentence sounds like an answer to question {n} ({interview.questions[n - 1].text}): "
                "switch the current question if the candidate moved on."
            )
    return None
