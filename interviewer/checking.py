"""A second opinion on misconception flags from the configured LLM.

The local scorer flags a misconception when a sentence of the answer is close to the wrong claim and
carries its polarity. Embeddings cannot tell every correct paraphrase from the wrong idea, so some
flags are false (see the README's evaluation table). When an LLM is configured, each such flag is put
to it with the wrong claim, its correction and the flagged sentence (prompts/check_flag.txt): a flag
it rejects is withdrawn and its score penalty lifted, one it confirms is marked so. Flags from code
order (`step()` before `backward()`) are exact and are not asked about. Any LLM failure keeps the
local decisions and says so. The answer reaches the LLM as data, without the sentences addressed to
the grader, as for follow-ups.
"""

from __future__ import annotations

import logging
import re

from .errors import LLMUnavailable
from .injection import without_directives
from .llm import LLMBadResponse, quote_answer, render
from .scoring import PitfallResult, Report, Rubric, RubricPitfall, withdraw_flag

log = logging.getLogger(__name__)

CHECK_NOTICE = "LLM unavailable: misconception flags are the local scorer's, not double-checked."
_VERDICT = re.compile(r"\W*(yes|no)\b", re.IGNORECASE)


def check_messages(rubric: Rubric, pitfall: RubricPitfall, flag: PitfallResult, answer: str) -> list[dict]:
    """The chat messages that ask an LLM whether one flagged sentence asserts the misconception."""
    return render(
        "check_flag",
        question=rubric.question,
        mistake=pitfall.text,
        claim=pitfall.claim or pitfall.text,
        correction=flag.correction,
        evidence=quote_answer(flag.evidence or "", tag="sentence"),
        answer=quote_answer(without_directives(answer)),
    )


def parse_verdict(text: str) -> bool:
    """True for a reply that starts with yes, False for no; anything else is LLMBadResponse."""
    m = _VERDICT.match(text)
    if not m:
        raise LLMBadResponse("the LLM's check of a flag is neither yes nor no")
    return m.group(1).lower() == "yes"


def check_flags(llm, rubric: Rubric, report: Report, answer: str) -> Report:
    """Ask the LLM about each evidence-backed misconception flag; withdraw those it rejects."""
    pitfalls = {p.id: p for p in rubric.pitfalls}
    for flag in report.pitfalls:
        pitfall = pitfalls.get(flag.id)
        if not (flag.flagged and flag.kind == "misconception" and flag.evidence and pitfall and not pitfall.order):
            continue
        try:
            confirmed = parse_verdict(llm.complete(check_messages(rubric, pitfall, flag, answer), 3, 0.0))
        except LLMUnavailable as exc:
            log.warning("misconception check skipped: %s", exc)
            report.message = " ".join(filter(None, (report.message, CHECK_NOTICE)))
            return report  # one failure is enough: the next call would wait as long
        if confirmed:
            flag.check = "confirmed"
        else:
            withdraw_flag(report, flag)
    return report
