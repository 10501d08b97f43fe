"""`bank draft "QUESTION"`: an LLM writes a rubric draft in the bank's schema for a person to review."""

from __future__ import annotations

import re
from pathlib import Path

import yaml
from pydantic import ValidationError

from .bank import Question
from .errors import InterviewerError, LLMUnavailable
from .importer import slugify
from .llm import LLM, render


def _as_list(value) -> list:
    if value is None:
        return []
    return value if isinstance(value, list) else [value]


def draft_rubric(llm: LLM, question: str) -> tuple[dict, list[str]]:
    """Ask the LLM for a rubric; returns the draft (ids filled in) and the problems a reviewer must fix."""
    text = llm.complete(render("rubric_draft", question=question), max_tokens=700, temperature=0.0)
    text = re.sub(r"^```(?:yaml)?\s*|\s*```\s*$", "", text.strip())
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError:
        data = None
    if not isinstance(data, dict):
        raise LLMUnavailable("the LLM did not return a YAML mapping; try again or write the rubric by hand")
    qid = slugify(question)
    covers = [c if isinstance(c, str) else (c or {}).get("text", "") for c in _as_list(data.get("covers"))]
    pitfalls = []
    for n, p in enumerate(_as_list(data.get("pitfalls")), 1):
        p = p if isinstance(p, dict) else {"text": str(p)}
        entry = {"id": f"{qid}.p{n}", "kind": p.get("kind", "misconception"), "text": str(p.get("text", ""))}
        for key in ("claim", "correction", "expects"):
            if p.get(key):
                entry[key] = str(p[key])
        pitfalls.append(entry)
    draft = {
        "id": qid,
        "number": 1,
        "question": question,
        "topic": slugify(str(data.get("topic", "general")), limit=2),
        "difficulty": str(data.get("difficulty", "medium")).lower(),
        "source": "llm-draft",
        "model_answer": str(data.get("model_answer", "")).strip(),
        "covers": [{"id": f"{qid}.c{n}", "text": str(c)} for n, c in enumerate(covers, 1) if c],
        "pitfalls": pitfalls,
        "follow_ups": [str(f) for f in _as_list(data.get("follow_ups"))],
    }
    problems = []
    try:
        Question.model_validate(draft)
    except ValidationError as exc:
        problems = [f"{'.'.join(str(x) for x in e['loc'])}: {e['msg']}" for e in exc.errors()]
    return draft, problems


def write_draft(llm: LLM | None, question: str, out_dir: Path) -> tuple[Path, list[str]]:
    if llm is None:
        raise InterviewerError(
            "Drafting a rubric needs an LLM: set INTERVIEWER_LLM_MODEL (and OPENAI_BASE_URL for a local server)."
        )
    draft, problems = draft_rubric(llm, question)
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"{draft['id']}.yaml"
    path.write_text(yaml.safe_dump(draft, sort_keys=False, allow_unicode=True, width=100), encoding="utf-8")
    return path, problems
