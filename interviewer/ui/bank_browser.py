"""The bank browser tab: topics, search, and each question's rubric."""

from __future__ import annotations

import gradio as gr

from ..bank import Bank
from .render import question_markdown

ALL = "All topics"


def _rows(bank: Bank, text: str, topic: str) -> list[list[str]]:
    hits = bank.search(text or "", None if topic in (None, "", ALL) else topic)
    return [[q.id, q.topic, q.difficulty, q.question] for q in hits]


def build_bank_tab(bank: Bank) -> None:
    with gr.Tab("Question bank", id="bank"):
        if bank.errors:
            gr.Markdown(
                "**Some rubric files could not be loaded** (run `python -m interviewer bank validate`):\n\n"
                + "\n".join(f"- {e}" for e in bank.errors)
            )
        with gr.Row():
            search = gr.Textbox(
                label="Search", placeholder="e.g. zero_grad, dropout, state_dict", elem_id="bank-search", scale=3
            )
            topic = gr.Dropdown([ALL, *bank.topics()], value=ALL, label="Topic", elem_id="bank-topic", scale=1)
        count = gr.Markdown(f"{len(bank)} questions", elem_id="bank-count")
        table = gr.Dataframe(
            value=_rows(bank, "", ALL),
            headers=["id", "topic", "difficulty", "question"],
            interactive=False,
            wrap=True,
            elem_id="bank-table",
            max_height=420,
        )
        detail = gr.Markdown("Select a question to see its rubric.", elem_id="bank-detail")

        def refresh(text: str, chosen: str):
            rows = _rows(bank, text, chosen)
            note = f"{len(rows)} of {len(bank)} questions" if rows else "No question matches; try fewer words."
            return rows, note

        def show(rows, evt: gr.SelectData):
            row = evt.index[0] if isinstance(evt.index, (list, tuple)) else evt.index
            try:
                qid = rows.iloc[row, 0] if hasattr(rows, "iloc") else rows[row][0]
            except (IndexError, KeyError):
                return "Select a question to see its rubric."
            return question_markdown(bank.get(qid)) if qid in bank else "Select a question to see its rubric."

        search.change(refresh, [search, topic], [table, count])
        topic.change(refresh, [search, topic], [table, count])
        table.select(show, [table], detail)
