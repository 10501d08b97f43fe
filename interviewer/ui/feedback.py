"""Feedback as Markdown a person reads at a glance; the answer's words are escaped, never markup."""

from __future__ import annotations

from ..scoring import Report
from .render import escape_user_text


def _quote(text: str, limit: int = 300) -> str:
    text = " ".join(text.split())
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    return f"“{escape_user_text(text)}”"


def report_markdown(report: Report) -> str:
    lines = [f"**Score {report.score}/100** · grade {report.grade}/5"]
    if report.message:
        lines += ["", f"> {escape_user_text(report.message)}"]
    covered = [c for c in report.covers if c.covered]
    missed = [c for c in report.covers if not c.covered and not c.contradicted]
    wrong = [c for c in report.covers if c.contradicted]
    if covered:
        lines += ["", "**Covered**"]
        lines += [f"- {c.text}  \n  <mark>{_quote(c.evidence)}</mark>" for c in covered if c.evidence]
    if wrong:
        lines += ["", "**Stated the opposite** (check this)"]
        lines += [f"- {c.text}  \n  {_quote(c.evidence)}" for c in wrong if c.evidence]
    if missed:
        lines += ["", "**Missed**"] + [f"- {c.text}" for c in missed]
    flags = [p for p in report.pitfalls if p.flagged]
    if flags:
        lines += ["", "**Flags**"]
        for p in flags:
            line = f"- *{p.kind}*: {p.text}" + (" (confirmed by the LLM)" if p.check == "confirmed" else "")
            if p.evidence:
                line += f"  \n  {_quote(p.evidence)}"
            line += f"  \n  → {p.correction}"
            lines.append(line)
    if report.set_aside:
        lines += ["", "**Set aside** (addressed to the grader, not scored)"]
        lines += [f"- {_quote(text)}" for text in report.set_aside]
    if report.follow_up:
        lines += ["", f"**Follow-up** ({report.follow_up['source']}): {escape_user_text(report.follow_up['text'])}"]
    return "\n".join(lines)
