"""Practice sessions: a plan of questions, attempts scored and saved as they happen, a summary, exports.

Plain objects the app keeps per browser session; nothing here imports the UI.
"""

from __future__ import annotations

import json
import random
import time
import uuid
from collections import Counter, defaultdict
from dataclasses import asdict, dataclass, field

from .bank import Bank, Question
from .history import Attempt, History, HistoryUnavailable
from .markup import escape_markdown
from .scoring import Rubric

ORDERS = ("adaptive", "random", "bank order")
DIFFICULTIES = ("any", "easy", "medium", "hard")


def plan_questions(
    bank: Bank,
    topics: list[str] | None = None,
    difficulty: str = "any",
    count: int = 5,
    order: str = "adaptive",
    past: list[Attempt] | None = None,
    seed: int | None = None,
) -> list[str]:
    """Question ids for a session. Adaptive: unseen questions first, in the weakest topics first,
    questions whose points were most often missed first; then repeats, weakest first."""
    pool = [
        q
        for q in bank.questions
        if (not topics or q.topic in topics) and (difficulty in ("any", "", None) or q.difficulty == difficulty)
    ]
    if not pool:
        return []
    rng = random.Random(seed)
    if order == "bank order":
        return [q.id for q in pool[:count]]
    if order == "random" or not past:
        picked = pool[:]
        rng.shuffle(picked)
        return [q.id for q in picked[:count]]
    seen: dict[str, list[int]] = defaultdict(list)
    topic_scores: dict[str, list[int]] = defaultdict(list)
    missed = Counter()
    for a in past:
        if a.kind == "follow_up":
            continue
        seen[a.question_id].append(a.score)
        topic_scores[a.topic].append(a.score)
        for c in a.report.get("covers", []):
            if not c.get("covered"):
                missed[a.question_id] += 1
    overall = [s for scores in topic_scores.values() for s in scores]
    default = sum(overall) / len(overall) if overall else 50.0

    def topic_strength(q: Question) -> float:
        scores = topic_scores.get(q.topic)
        return sum(scores) / len(scores) if scores else default - 1  # an untried topic counts as weak

    def key(q: Question):
        repeat = q.id in seen
        own = sum(seen[q.id]) / len(seen[q.id]) if repeat else 0.0
        return (repeat, own if repeat else topic_strength(q), -missed[q.id], rng.random())

    return [q.id for q in sorted(pool, key=key)[:count]]


@dataclass
class Turn:
    """One scored attempt inside a session."""

    question_id: str
    kind: str  # answer | follow_up | retry
    question: str
    answer: str
    report: dict
    transcript: str | None = None
    delivery: dict | None = None
    at: float = field(default_factory=time.time)


@dataclass
class PracticeSession:
    profile: str
    plan: list[str]
    id: str = field(default_factory=lambda: uuid.uuid4().hex[:12])
    position: int = 0
    turns: list[Turn] = field(default_factory=list)
    follow_up: dict | None = None  # the open follow-up, if the candidate may answer it
    started: float = field(default_factory=time.time)

    @property
    def current(self) -> str | None:
        return self.plan[self.position] if self.position < len(self.plan) else None

    @property
    def finished(self) -> bool:
        return self.current is None

    def advance(self) -> str | None:
        self.position += 1
        self.follow_up = None
        return self.current


def follow_up_rubric(rubric: Rubric, first: dict) -> Rubric:
    """A follow-up answer is scored against the points the first answer (its report dict) missed."""
    missed = [p for p, c in zip(rubric.covers, first["covers"], strict=True) if not c["covered"]]
    if not missed:
        return rubric
    ids = {p.id for p in missed}
    pits = [p for p in rubric.pitfalls if p.kind == "misconception" or (set(p.covers) & ids)]
    return Rubric(rubric.question_id, rubric.question, missed, pits, rubric.follow_ups, rubric.reference)


def record(history: History | None, session: PracticeSession, question: Question, turn: Turn) -> str | None:
    """Save a turn to history; returns a notice for the user when it could not be saved (yet)."""
    session.turns.append(turn)
    if history is None:
        return None
    attempt = Attempt(
        profile=session.profile,
        session_id=session.id,
        question_id=question.id,
        topic=question.topic,
        question=turn.question,
        answer=turn.answer,
        score=turn.report["score"],
        grade=turn.report["grade"],
        report=turn.report,
        kind=turn.kind,
        transcript=turn.transcript,
        delivery=turn.delivery,
        created_at=turn.at,
    )
    try:
        history.save(attempt)
    except HistoryUnavailable as exc:
        return f"Not saved yet: {exc}."
    return None


def summary(session: PracticeSession, bank: Bank) -> dict:
    by_topic: dict[str, list[int]] = defaultdict(list)
    missed = Counter()
    texts = {}
    for t in session.turns:
        if t.kind == "follow_up":
            continue
        by_topic[bank.get(t.question_id).topic].append(t.report["score"])
        for c in t.report["covers"]:
            texts[c["id"]] = c["text"]
            if not c["covered"]:
                missed[c["id"]] += 1
    return {
        "answered": sum(1 for t in session.turns if t.kind != "follow_up"),
        "by_topic": {k: round(sum(v) / len(v), 1) for k, v in sorted(by_topic.items())},
        "most_missed": [{"id": i, "text": texts[i], "times": n} for i, n in missed.most_common(5)],
    }


def export_json(session: PracticeSession, bank: Bank) -> str:
    return json.dumps(
        {
            "profile": session.profile,
            "session": session.id,
            "started": session.started,
            "summary": summary(session, bank),
            "turns": [asdict(t) for t in session.turns],
        },
        indent=2,
    )


def _md_text(text: str) -> str:
    """Candidate text in Markdown exports: indented as a code block so nothing in it renders."""
    return "\n".join("    " + line for line in (text or "").splitlines()) or "    (empty)"


def export_markdown(session: PracticeSession, bank: Bank) -> str:
    s = summary(session, bank)
    started = time.strftime("%Y-%m-%d %H:%M", time.localtime(session.started))
    lines = [
        f"# Practice session {session.id}",
        "",
        f"Profile: {escape_markdown(session.profile)} · started {started}",
        f" · {s['answered']} question(s) answered",
        "",
        "## Scores by topic",
        "",
    ]
    lines += [f"- {topic}: {score}" for topic, score in s["by_topic"].items()] or ["- (none)"]
    lines += ["", "## Most missed points", ""]
    lines += [f"- {m['text']} (×{m['times']})" for m in s["most_missed"]] or ["- (none)"]
    for n, t in enumerate(session.turns, 1):
        r = t.report
        lines += [
            "",
            f"## {n}. {t.question}",
            "",
            f"*{t.kind}* · {time.strftime('%H:%M:%S', time.localtime(t.at))} · score {r['score']}/100",
            "",
            "Answer:",
            "",
            _md_text(t.answer),
        ]
        if t.transcript and t.transcript != t.answer:
            lines += ["", "Transcript:", "", _md_text(t.transcript)]
        if t.delivery:
            lines += ["", f"Delivery: {t.delivery.get('summary', '')}"]
        lines += ["", "Covered:"] + [f"- {c['text']}" for c in r["covers"] if c["covered"]]
        lines += ["", "Missed:"] + [f"- {c['text']}" for c in r["covers"] if not c["covered"]]
        flags = [p for p in r["pitfalls"] if p["flagged"]]
        if flags:
            lines += ["", "Flags:"] + [f"- {p['text']} → {p['correction']}" for p in flags]
        if r.get("follow_up"):
            lines += ["", f"Follow-up ({r['follow_up']['source']}): {r['follow_up']['text']}"]
    return "\n".join(lines) + "\n"
