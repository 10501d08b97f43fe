"""Follow-up questions from the rubric: aimed at the most important gap, varied, never the answer."""

from __future__ import annotations

import hashlib
import re

from .scoring import Report, Rubric
from .text import words

_STOP = set(
    "the a an and or of to in on for with is are be by as it its that this which when what how why not no "
    "can do does use used using from into their them they you your at if than then so also all any each".split()
)

_PITFALL_TEMPLATES = (
    'You said: "{quote}". Walk me through why that holds, step by step.',
    'Let\'s test that: "{quote}". What would you expect to see if you ran it?',
    'I want to push on one thing you said: "{quote}". Are you sure? How would you check?',
)
_GAP_TEMPLATES = (
    "What role does {topic} play here?",
    "Can you say more about {topic}?",
    "How does {topic} come into this in practice?",
    "Suppose I asked you specifically about {topic}: what would you add?",
)


def _overlap(a: str, b: str) -> int:
    return len({w for w in words(a) if w not in _STOP} & {w for w in words(b) if w not in _STOP})


def _pick(options: tuple[str, ...], seed: str) -> str:
    return options[int(hashlib.sha1(seed.encode()).hexdigest(), 16) % len(options)]


def _topic_phrase(text: str, key_terms: list[str]) -> str:
    if key_terms:
        return f"`{key_terms[0]}`" if re.search(r"[_.()]", key_terms[0]) else key_terms[0]
    content = [w for w in re.findall(r"[A-Za-z_][\w.]*", text) if w.lower() not in _STOP]
    return " ".join(content[:3]) if content else "that part"


def rubric_follow_up(rubric: Rubric, report: Report) -> dict | None:
    """One follow-up question probing the most important gap; None when nothing is missing."""
    seed = report.question_id + str(report.score) + str(report.words)
    flagged = [p for p in report.pitfalls if p.flagged and p.kind == "misconception" and p.evidence]
    if flagged:
        pit = flagged[0]
        quote = pit.evidence if len(pit.evidence) <= 160 else pit.evidence[:157] + "..."
        return {"text": _pick(_PITFALL_TEMPLATES, seed).format(quote=quote), "source": "rubric", "target": pit.id}
    gaps = [c for c in report.covers if c.contradicted] + sorted(
        (c for c in report.covers if not c.covered and not c.contradicted), key=lambda c: c.strength
    )
    omissions = [p for p in report.pitfalls if p.flagged and p.kind == "omission"]
    if omissions and not gaps:
        target_text, target_id, terms = omissions[0].text, omissions[0].id, []
    elif gaps:
        point = next(p for p in rubric.covers if p.id == gaps[0].id)
        target_text, target_id, terms = point.text, point.id, point.key_terms
    else:
        return None
    # A follow-up written by a person for this question beats a template, when one fits the gap.
    written = sorted(rubric.follow_ups, key=lambda f: -_overlap(f, target_text))
    if written and _overlap(written[0], target_text) >= 1:
        return {"text": written[0], "source": "rubric", "target": target_id}
    text = _pick(_GAP_TEMPLATES, seed + target_id).format(topic=_topic_phrase(target_text, terms))
    return {"text": text, "source": "rubric", "target": target_id}


# -- with an LLM -----------------------------------------------------------------------------------
LLM_NOTICE = "LLM unavailable: rubric follow-up"


def validate_question(text: str, rubric: Rubric) -> str:
    """One question of sensible length that does not copy the rubric; else LLMBadResponse."""
    from .llm import LLMBadResponse

    text = text.strip().strip('"').strip()
    text = re.sub(r"^(follow[- ]?up( question)?|question)\s*[:\-]\s*", "", text, flags=re.I)
    if "?" not in text:
        raise LLMBadResponse("the LLM's follow-up is not a question")
    question = " ".join(text[: text.index("?") + 1].split())
    if not 10 <= len(question) <= 300:
        raise LLMBadResponse("the LLM's follow-up has an unusable length")
    asked = {w for w in words(question) if w not in _STOP}
    for source in [rubric.reference_text, *(p.text for p in rubric.covers)]:
        known = {w for w in words(source) if w not in _STOP}
        if len(asked) >= 4 and len(asked & known) / len(asked) > 0.85:
            raise LLMBadResponse("the LLM's follow-up repeats the rubric's answer")
    return question


def _target_of(rubric: Rubric, report: Report) -> str:
    fallback = rubric_follow_up(rubric, report)
    if not fallback:
        return "none"
    target = fallback["target"]
    for item in [*rubric.covers, *rubric.pitfalls]:
        if item.id == target:
            return item.text
    return target


def follow_up_messages(rubric: Rubric, report: Report, answer: str) -> list[dict]:
    """The chat messages that ask an LLM for one follow-up (prompts/follow_up.txt)."""
    from .injection import without_directives
    from .llm import quote_answer, render

    covered = "; ".join(c.text for c in report.covers if c.covered) or "none"
    missed = "; ".join(c.text for c in report.covers if not c.covered) or "none"
    flags = "; ".join(p.text for p in report.pitfalls if p.flagged) or "none"
    return render(
        "follow_up",
        question=rubric.question,
        answer=quote_answer(without_directives(answer)),  # what is said to the grader never reaches it
        covered=covered,
        missed=missed,
        flags=flags,
        target=_target_of(rubric, report),
    )


def llm_follow_up(llm, rubric: Rubric, report: Report, answer: str, on_text=None) -> dict:
    """Ask the LLM for one follow-up, streaming its text to `on_text`; raises LLMUnavailable."""
    messages = follow_up_messages(rubric, report, answer)
    text = ""
    for piece in llm.stream(messages, max_tokens=80, temperature=0.0):
        text += piece
        if on_text:
            on_text(text)
    return {
        "text": validate_question(text, rubric),
        "source": "llm",
        "target": (rubric_follow_up(rubric, report) or {}).get("target"),
    }


def suggest_follow_up(rubric: Rubric, report: Report, answer: str, llm=None, on_text=None) -> dict | None:
    """The LLM's follow-up when one is configured and answers well; the rubric's otherwise."""
    from .errors import LLMUnavailable

    fallback = rubric_follow_up(rubric, report)
    if llm is None or fallback is None or not answer.strip():
        return fallback
    try:
        return llm_follow_up(llm, rubric, report, answer, on_text)
    except LLMUnavailable as exc:
        return {**fallback, "notice": LLM_NOTICE, "reason": str(exc)}
