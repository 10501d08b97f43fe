"""The question bank: rubric YAML files validated with pydantic, loaded tolerantly.

A broken file never hides the rest of the bank: `load_bank` returns the questions that loaded and a
list of `RubricError`s, each naming the file, the question and the field to fix.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from .errors import RubricError, UnknownQuestion

ID_PATTERN = r"^[a-z0-9][a-z0-9-]*$"
Difficulty = Literal["easy", "medium", "hard"]
PitfallKind = Literal["omission", "misconception"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)


class CoverPoint(_Strict):
    """One thing a strong answer states."""

    id: str
    text: str = Field(min_length=3)
    key_terms: list[str] = Field(default_factory=list)


class Pitfall(_Strict):
    """A way answers lose the point: an omission (left out) or a misconception (a wrong claim)."""

    id: str
    kind: PitfallKind
    text: str = Field(min_length=3)
    # misconception: the wrong claim as an answer would assert it, and the correct statement.
    claim: str | None = None
    claims: list[str] = Field(default_factory=list)  # more phrasings of the wrong claim, as candidates say it
    correction: str | None = None
    # omission: the covers points whose absence is the pitfall, or a statement a good answer makes.
    covers: list[str] = Field(default_factory=list)
    expects: str | None = None
    key_terms: list[str] = Field(default_factory=list)
    # calls a correct answer makes in this order; naming them out of order is the pitfall
    order: list[str] = Field(default_factory=list)


class Question(_Strict):
    """One interview question with its rubric."""

    id: str = Field(pattern=ID_PATTERN)
    number: int = Field(ge=1, description="position in its source document")
    question: str = Field(min_length=10)
    topic: str = Field(pattern=ID_PATTERN)
    difficulty: Difficulty
    source: str
    model_answer: str = Field(min_length=10)
    covers: list[CoverPoint] = Field(min_length=1)
    pitfalls: list[Pitfall] = Field(default_factory=list)
    follow_ups: list[str] = Field(default_factory=list)
    curation: str | None = Field(default=None, description="what was corrected from the seed, for reviewers")

    @field_validator("covers")
    @classmethod
    def _no_duplicate_covers(cls, covers: list[CoverPoint]) -> list[CoverPoint]:
        _check_unique(p.id for p in covers)
        return covers

    @model_validator(mode="after")
    def _check_ids(self) -> Question:
        for n, point in enumerate(self.covers, 1):
            if point.id != f"{self.id}.c{n}":
                raise ValueError(f"covers point {n} has id {point.id!r}; expected {self.id}.c{n}")
        for n, pit in enumerate(self.pitfalls, 1):
            if pit.id != f"{self.id}.p{n}":
                raise ValueError(f"pitfall {n} has id {pit.id!r}; expected {self.id}.p{n}")
            unknown = [c for c in pit.covers if c not in {p.id for p in self.covers}]
            if unknown:
                raise ValueError(f"pitfall {pit.id} refers to unknown covers points {unknown}")
        return self

    def cover(self, point_id: str) -> CoverPoint:
        return next(p for p in self.covers if p.id == point_id)


def _check_unique(ids: Iterable[str]) -> None:
    seen: set[str] = set()
    for i in ids:
        if i in seen:
            raise ValueError(f"duplicate id {i!r}")
        seen.add(i)


@dataclass
class Bank:
    """The loaded questions, in bank order, plus the problems found while loading."""

    questions: list[Question] = field(default_factory=list)
    errors: list[RubricError] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._by_id = {q.id: q for q in self.questions}

    def get(self, question_id: str) -> Question:
        try:
            return self._by_id[question_id]
        except KeyError:
            hint = ", ".join(sorted(self._by_id)[:5])
            raise UnknownQuestion(
                f"No question {question_id!r} in the bank. See `python -m interviewer bank list` (e.g. {hint})."
            ) from None

    def __contains__(self, question_id: str) -> bool:
        return question_id in self._by_id

    def __len__(self) -> int:
        return len(self.questions)

    def topics(self) -> list[str]:
        return sorted({q.topic for q in self.questions})

    def search(self, text: str, topic: str | None = None) -> list[Question]:
        """Questions whose id, wording, topic or rubric text contains every word of `text`."""
        words = [w for w in re.split(r"\s+", text.lower()) if w]
        hits = []
        for q in self.questions:
            if topic and q.topic != topic:
                continue
            hay = " ".join([q.id, q.question, q.topic, q.model_answer, *(p.text for p in q.covers)]).lower()
            if all(w in hay for w in words):
                hits.append(q)
        return hits


def default_rubric_dir() -> Path:
    return Path(__file__).resolve().parent.parent / "rubrics"


def load_question_file(path: Path) -> Question:
    """Parse and validate one rubric file; raises RubricError naming the file and field."""
    try:
        raw = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise RubricError(str(path), f"not UTF-8 text (byte {exc.start}); re-save the file as UTF-8") from None
    try:
        data = yaml.safe_load(raw)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise RubricError(str(path), f"malformed YAML{where}: {problem}") from None
    except ValueError as exc:
        # PyYAML builds tagged and implicit values with plain int(), float() and date(): `!!int abc`,
        # `2001-02-30` or a 5000-digit number raise ValueError, not YAMLError.
        raise RubricError(str(path), f"a value cannot be read ({exc}); quote it to keep it as text") from None
    except RecursionError:
        raise RubricError(str(path), "nested too deeply to read; a rubric is a few levels of keys and lists") from None
    if not isinstance(data, dict):
        raise RubricError(str(path), "expected a mapping with id, question, covers, ... at the top level")
    qid = data.get("id") if isinstance(data.get("id"), str) else None
    try:
        return Question.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = ".".join(str(p) for p in err["loc"]) or None
        msg = err["msg"]
        if err["type"] == "missing":
            msg = "this field is required"
        elif err["type"] == "too_short" and loc == "covers":
            msg = "a question needs at least one covers point"
        more = f" (and {len(exc.errors()) - 1} more problems)" if len(exc.errors()) > 1 else ""
        raise RubricError(str(path), msg + more, question_id=qid, field=loc) from None


def rubric_files(root: Path) -> list[Path]:
    if root.is_file():
        return [root]
    return sorted(p for p in root.rglob("*") if p.suffix in {".yaml", ".yml"} and p.is_file())


def load_bank(root: Path | None = None) -> Bank:
    """Load every rubric file under `root`; bad files become errors, never hide the others."""
    root = Path(root) if root else default_rubric_dir()
    if not root.exists():
        return Bank(errors=[RubricError(str(root), "no such file or directory")])
    questions: list[Question] = []
    errors: list[RubricError] = []
    seen: dict[str, Path] = {}
    for path in rubric_files(root):
        try:
            q = load_question_file(path)
        except RubricError as exc:
            errors.append(exc)
            continue
        if q.id in seen:
            errors.append(RubricError(str(path), f"duplicate question id; {seen[q.id]} already defines it", q.id, "id"))
            continue
        seen[q.id] = path
        questions.append(q)
    questions.sort(key=lambda q: (q.source, q.number))
    return Bank(questions, errors)


_bank_cache: dict[Path, Bank] = {}


def get_bank(root: Path | None = None) -> Bank:
    """The bank loaded once per process (per directory)."""
    root = Path(root) if root else default_rubric_dir()
    if root not in _bank_cache:
        _bank_cache[root] = load_bank(root)
    return _bank_cache[root]
