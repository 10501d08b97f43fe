"""The Progress tab: scores over time, average by topic, the points most often missed."""

from __future__ import annotations

import datetime as dt

import gradio as gr
import pandas as pd

from ..history import History, progress
from .practice_tab import profile_name
from .render import escape_user_text


def build_progress_tab(history: History) -> gr.Textbox:
    """The Progress tab; returns its profile box, which the app fills with the signed-in user."""
    with gr.Tab("Progress", id="progress"):
        with gr.Row():
            profile = gr.Textbox(label="Profile", value="me", elem_id="progress-profile", scale=3)
            load = gr.Button("Show my progress", variant="primary", elem_id="progress-load", scale=1)
        info = gr.Markdown(elem_id="progress-info")
        over_time = gr.LinePlot(x="when", y="score", title="Scores over time", y_lim=[0, 100], elem_id="progress-time")
        by_topic = gr.BarPlot(x="topic", y="score", title="Average by topic", y_lim=[0, 100], elem_id="progress-topic")
        missed = gr.Dataframe(
            headers=["point", "times missed"],
            interactive=False,
            elem_id="progress-missed",
            label="Points most often missed",
        )
        with gr.Row():
            confirm = gr.Checkbox(label="Yes, delete every attempt of this profile", elem_id="progress-confirm")
            delete = gr.Button("Delete my history", variant="stop", elem_id="progress-delete")

        def on_load(name: str, request: gr.Request):
            who = profile_name(name, request)
            p = progress(history.attempts(who))
            shown = escape_user_text(who)
            if not p.attempts:
                return f"No attempts yet for **{shown}**: answer a question in Practice.", None, None, None
            times = pd.DataFrame(
                {
                    "when": [dt.datetime.fromtimestamp(t) for t, _, _ in p.over_time],
                    "score": [s for _, s, _ in p.over_time],
                }
            )
            topics = pd.DataFrame({"topic": list(p.by_topic), "score": list(p.by_topic.values())})
            rows = [[text, n] for _, text, n in p.most_missed]
            return f"**{shown}**: {p.attempts} answer(s).", times, topics, rows

        load.click(on_load, [profile], [info, over_time, by_topic, missed])

        def on_delete(name: str, sure: bool, request: gr.Request):
            who = profile_name(name, request)
            if not sure:
                return "Tick the box to confirm: deleting history cannot be undone.", gr.update()
            n = history.delete_profile(who)
            return f"Deleted {n} attempt(s) of **{escape_user_text(who)}**.", False

        delete.click(on_delete, [profile, confirm], [info, confirm])
    return profile
