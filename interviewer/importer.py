"""Turning a document of interview material into draft rubric YAML for a person to review.

Two formats are understood: rubric blocks ("What a strong answer covers" bullets followed by
"Where people lose the point" bullets), and numbered question-and-answer text ("12. Question?"
then the answer's paragraphs or bullets).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from .errors import RubricError

# No two adjacent `\s*` and no lazy group before `\s*$`: both backtrack quadratically over a long run
# of spaces inside a line (minutes for 200 KB), so numbered lines are matched with their end stripped.
_COVERS_HEAD = re.compile(r"^\s*what a strong answer covers\s*(?::\s*)?$", re.IGNORECASE)
_PITFALLS_HEAD = re.compile(r"^\s*where people lose the point\s*(?::\s*)?$", re.IGNORECASE)
_BULLET = re.compile(r"^\s*(?:[•\-*]|\d+[.)])\s*[×x✗]?\s*(.+)$")
_NUMBERED_Q = re.compile(r"^\s*(\d{1,3})[.)]\s+(.{3,})$")
_OMISSION_CUES = re.compile(r"^(forgetting|failing|omitting|not mentioning|leaving out|skipping|missing)\b", re.I)


@dataclass
class Draft:
    number: int
    question: str = ""
    covers: list[str] = field(default_factory=list)
    pitfalls: list[str] = field(default_factory=list)
    answer: list[str] = field(default_factory=list)


def slugify(text: str, limit: int = 6, max_chars: int = 60) -> str:
    words = re.findall(r"[a-z0-9]+", text.lower())
    stop = {"what", "is", "are", "the", "a", "an", "of", "in", "and", "do", "does", "how", "we", "to", "use"}
    kept = [w for w in words if w not in stop][:limit] or words[:limit] or ["question"]
    # The id names the draft's file: one long word must not make a name the file system refuses.
    return "-".join(kept)[:max_chars].rstrip("-")


def _strip_instruction(text: str) -> str:
    # Seed points are instructions to the candidate ("Explain that X"); a rubric states X.
    text = re.sub(
        r"^(explain|describe|mention|highlight|emphasize|emphasise|detail|discuss|define|illustrate|"
        r"recommend|provide examples?( for)?|name|briefly differentiate|note)\s*(that|how|:)?\s*",
        "",
        text,
        flags=re.I,
    )
    return text[:1].upper() + text[1:] if text else text


def parse_rubric_blocks(text: str) -> list[Draft]:
    drafts: list[Draft] = []
    section = None
    for line in text.splitlines():
        if _COVERS_HEAD.match(line):
            drafts.append(Draft(len(drafts) + 1))
            section = "covers"
            continue
        if _PITFALLS_HEAD.match(line):
            section = "pitfalls"
            continue
        m = _BULLET.match(line)
        if m and drafts and section:
            getattr(drafts[-1], section).append(m.group(1).strip())
    return drafts


def parse_numbered_qa(text: str) -> list[Draft]:
    drafts: list[Draft] = []
    for line in text.splitlines():
        m = _NUMBERED_Q.match(line.rstrip())
        # A numbered line starts the next question only if it continues the numbering, so the
        # numbered steps inside an answer ("1. Initialize the function.") stay in that answer.
        starts = m and (
            (not drafts and m.group(2).endswith("?")) or (drafts and int(m.group(1)) == drafts[-1].number + 1)
        )
        if starts:
            drafts.append(Draft(int(m.group(1)), question=m.group(2)))
            continue
        if drafts and line.strip():
            drafts[-1].answer.append(line.strip())
    return drafts


def draft_question(d: Draft, source: str, qid: str | None = None) -> dict:
    """A draft question dict in the bank's schema, to be reviewed and edited by a person."""
    if d.covers:
        covers = [_strip_instruction(c) for c in d.covers]
        question = d.question or f"TODO: write the question for rubric block {d.number}"
        model_answer = " ".join(covers)
    else:
        bullets = [re.sub(r"^[•\-*]\s*", "", a) for a in d.answer]
        sentences = [s for b in bullets for s in re.split(r"(?<=[.!?])\s+", b) if len(s.split()) >= 2]
        covers = sentences[:5] or ["TODO: what a strong answer states"]
        question = d.question
        model_answer = " ".join(bullets) or "TODO: a short model answer"
    qid = qid or slugify(question if d.question else covers[0])
    pitfalls = []
    for n, p in enumerate(d.pitfalls, 1):
        kind = "omission" if _OMISSION_CUES.match(p) else "misconception"
        entry = {"id": f"{qid}.p{n}", "kind": kind, "text": p}
        if kind == "misconception":
            entry["claim"] = "TODO: the wrong claim as a candidate would say it"
            entry["correction"] = "TODO: the correct statement in one sentence"
        else:
            entry["expects"] = "TODO: what a good answer states"
        pitfalls.append(entry)
    return {
        "id": qid,
        "number": d.number,
        "question": question,
        "topic": "TODO",
        "difficulty": "medium",
        "source": source,
        "model_answer": model_answer,
        "covers": [{"id": f"{qid}.c{n}", "text": c} for n, c in enumerate(covers, 1)],
        "pitfalls": pitfalls,
    }


def import_document(path: Path) -> list[dict]:
    """Parse a document in either seed format into draft question dicts."""
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise RubricError(str(path), "not UTF-8 text; convert it (e.g. `iconv -t UTF-8`) and import again") from None
    except OSError as exc:
        raise RubricError(str(path), f"cannot read the file: {exc.strerror}") from None
    drafts = parse_rubric_blocks(text)
    if not drafts:
        drafts = parse_numbered_qa(text)
    if not drafts:
        raise RubricError(
            str(path),
            'found neither "What a strong answer covers" blocks nor numbered questions ("1. Question?")',
        )
    used: set[str] = set()
    out = []
    for d in drafts:
        q = draft_question(d, path.name)
        base, n = q["id"], 2
        while q["id"] in used:
            q = draft_question(d, path.name, f"{base}-{n}")
            n += 1
        used.add(q["id"])
        out.append(q)
    return out


def write_drafts(drafts: list[dict], out_dir: Path) -> list[Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = []
    for q in drafts:
        path = out_dir / f"{q['id']}.yaml"
        path.write_text(yaml.safe_dump(q, sort_keys=False, allow_unicode=True, width=100), encoding="utf-8")
        paths.append(path)
    return paths
