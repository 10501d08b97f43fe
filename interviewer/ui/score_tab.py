"""A quick way to try the scorer: pick a question, type an answer, see the feedback."""

from __future__ import annotations

import gradio as gr

from ..bank import Bank
from ..errors import InterviewerError
from ..service import get_service
from ..settings import Settings
from .feedback import report_markdown


def build_score_tab(bank: Bank, settings: Settings) -> None:
    with gr.Tab("Try an answer", id="score"):
        choices = [(f"{q.question} ({q.id})", q.id) for q in bank.questions]
        question = gr.Dropdown(
            choices, value=choices[0][1] if choices else None, label="Question", elem_id="score-question"
        )
        answer = gr.Textbox(
            label="Your answer", lines=8, elem_id="score-answer", placeholder="Answer as you would in the interview."
        )
        submit = gr.Button("Score my answer", variant="primary", elem_id="score-submit")
        feedback = gr.Markdown(elem_id="score-feedback")

        def run(qid: str, text: str):
            if not qid:
                return "Pick a question first."
            try:
                report = get_service(settings).score(qid, text)
            except InterviewerError as exc:
                return f"**Could not score this answer:** {exc} Your answer is still in the box."
            return report_markdown(report)

        submit.click(run, [question, answer], feedback, concurrency_limit=4)
