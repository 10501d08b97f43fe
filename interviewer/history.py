"""Practice history in SQLite: every attempt is written the moment it is scored.

Profiles are local names, not accounts. If the database cannot be written (locked by another
process, disk full), the attempt is kept in memory and written on the next successful save; the
caller is told, and nothing already answered is lost.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

SCHEMA = """
CREATE TABLE IF NOT EXISTS attempts (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    profile TEXT NOT NULL,
    session_id TEXT NOT NULL,
    mode TEXT NOT NULL DEFAULT 'practice',
    kind TEXT NOT NULL DEFAULT 'answer',
    question_id TEXT NOT NULL,
    topic TEXT NOT NULL,
    question TEXT NOT NULL,
    answer TEXT NOT NULL,
    transcript TEXT,
    score INTEGER NOT NULL,
    grade REAL NOT NULL,
    report TEXT NOT NULL,
    delivery TEXT,
    created_at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS attempts_profile ON attempts(profile, created_at);
CREATE TABLE IF NOT EXISTS scorecards (
    interview_id TEXT PRIMARY KEY,
    owner TEXT NOT NULL,
    candidate TEXT NOT NULL,
    data TEXT NOT NULL,
    updated_at REAL NOT NULL
);
"""


@dataclass
class Attempt:
    profile: str
    session_id: str
    question_id: str
    topic: str
    question: str
    answer: str
    score: int
    grade: float
    report: dict
    kind: str = "answer"
    mode: str = "practice"
    transcript: str | None = None
    delivery: dict | None = None
    created_at: float = field(default_factory=time.time)
    id: int | None = None


ATTEMPT_COLUMNS = (
    "id",
    "profile",
    "session_id",
    "mode",
    "kind",
    "question_id",
    "topic",
    "question",
    "answer",
    "transcript",
    "score",
    "grade",
    "report",
    "delivery",
    "created_at",
)


class HistoryUnavailable(Exception):
    """The history database could not be written; the attempt is kept in memory meanwhile."""


class History:
    """Attempts per profile, in one SQLite file."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self.pending: list[Attempt] = []
        self._lock = threading.Lock()
        self._ready = False

    @contextlib.contextmanager
    def _db(self) -> Iterator[sqlite3.Connection]:
        """A connection inside one transaction; the schema is created once per History, not per call."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if not self.path.exists():  # removed behind our back: create the schema again
            self._ready = False
        conn = sqlite3.connect(self.path, timeout=2.0)
        try:
            if not self._ready:
                conn.execute("PRAGMA journal_mode=WAL")
                conn.executescript(SCHEMA)
                self._ready = True
            with conn:
                yield conn
        finally:
            conn.close()

    def save(self, attempt: Attempt) -> Attempt:
        """Write the attempt (and any held back earlier); raises HistoryUnavailable if it cannot."""
        with self._lock:
            self.pending.append(attempt)
            columns = [c for c in ATTEMPT_COLUMNS if c != "id"]
            sql = f"INSERT INTO attempts ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})"
            try:
                with self._db() as conn:
                    for a in self.pending:
                        values = {
                            **a.__dict__,
                            "report": json.dumps(a.report),
                            "delivery": json.dumps(a.delivery) if a.delivery else None,
                        }
                        a.id = conn.execute(sql, [values[c] for c in columns]).lastrowid
            except sqlite3.Error as exc:
                raise HistoryUnavailable(
                    f"could not save to {self.path} ({exc}); the attempt is kept and will be saved with the next one"
                ) from None
            self.pending = []
            return attempt

    def attempts(self, profile: str) -> list[Attempt]:
        with self._db() as conn:
            rows = conn.execute(
                f"SELECT {', '.join(ATTEMPT_COLUMNS)} FROM attempts WHERE profile = ? ORDER BY created_at, id",
                (profile,),
            ).fetchall()
        out = []
        for row in rows:
            values = dict(zip(ATTEMPT_COLUMNS, row, strict=True))
            values["report"] = json.loads(values["report"])
            values["delivery"] = json.loads(values["delivery"]) if values["delivery"] else None
            out.append(Attempt(**values))
        return out

    def save_scorecard(self, interview_id: str, owner: str, candidate: str, data: dict) -> None:
        """Insert or replace an interview's scorecard; raises HistoryUnavailable if it cannot."""
        try:
            with self._db() as conn:
                conn.execute(
                    "INSERT INTO scorecards (interview_id, owner, candidate, data, updated_at) VALUES (?,?,?,?,?)"
                    " ON CONFLICT(interview_id) DO UPDATE SET candidate=excluded.candidate, data=excluded.data,"
                    " updated_at=excluded.updated_at",
                    (interview_id, owner, candidate, json.dumps(data), time.time()),
                )
        except sqlite3.Error as exc:
            raise HistoryUnavailable(f"could not save the scorecard to {self.path} ({exc})") from None

    def scorecards(self, owner: str) -> list[dict]:
        with self._db() as conn:
            rows = conn.execute("SELECT data FROM scorecards WHERE owner = ? ORDER BY updated_at", (owner,)).fetchall()
        return [json.loads(r[0]) for r in rows]

    def delete_profile(self, profile: str) -> int:
        with self._db() as conn:
            return conn.execute("DELETE FROM attempts WHERE profile = ?", (profile,)).rowcount


@dataclass
class Progress:
    """What the Progress tab shows for one profile."""

    attempts: int
    over_time: list[tuple[float, int, str]]  # (time, score, question id)
    by_topic: dict[str, float]
    most_missed: list[tuple[str, str, int]]  # (point id, text, times missed)


def progress(attempts: list[Attempt]) -> Progress:
    main = [a for a in attempts if a.kind != "follow_up"]
    by_topic: dict[str, list[int]] = defaultdict(list)
    missed: Counter[str] = Counter()
    texts: dict[str, str] = {}
    for a in main:
        by_topic[a.topic].append(a.score)
        for c in a.report.get("covers", []):
            texts[c["id"]] = c["text"]
            if not c["covered"]:
                missed[c["id"]] += 1
    return Progress(
        attempts=len(main),
        over_time=[(a.created_at, a.score, a.question_id) for a in main],
        by_topic={t: round(sum(s) / len(s), 1) for t, s in sorted(by_topic.items())},
        most_missed=[(pid, texts[pid], n) for pid, n in missed.most_common(10)],
    )
