"""Turning library objects into Markdown for the browser; user text is always escaped."""

from __future__ import annotations

import html

from ..bank import Question
from ..markup import escape_markdown

escape_user_text = escape_markdown  # the UI's name for it


def question_markdown(q: Question) -> str:
    lines = [
        f"### {html.escape(q.question)}",
        "",
        f"`{q.id}` · topic **{q.topic}** · {q.difficulty} · from `{q.source}`",
        "",
        "**What a strong answer covers**",
        "",
    ]
    lines += [f"{n}. {html.escape(p.text)}" for n, p in enumerate(q.covers, 1)]
    lines += ["", "**Where people lose the point**", ""]
    for n, p in enumerate(q.pitfalls, 1):
        lines.append(f"{n}. *{p.kind}*: {html.escape(p.text)}")
        if p.correction:
            lines.append(f"   - correction: {html.escape(p.correction)}")
    if q.follow_ups:
        lines += ["", "**Follow-up questions**", ""] + [f"- {html.escape(f)}" for f in q.follow_ups]
    lines += ["", "<details><summary>Model answer</summary>", "", html.escape(q.model_answer.strip()), "", "</details>"]
    if q.curation:
        lines += ["", f"> Curation note: {html.escape(q.curation.strip())}"]
    return "\n".join(lines)
