"""The Practice tab: a question at a time, typed or spoken answers, feedback with evidence, a summary."""

from __future__ import annotations

import queue
import tempfile
import threading
from pathlib import Path

import gradio as gr
import pandas as pd

from ..bank import Bank
from ..errors import InterviewerError
from ..followups import suggest_follow_up
from ..history import History
from ..practice import (
    DIFFICULTIES,
    ORDERS,
    PracticeSession,
    Turn,
    export_json,
    export_markdown,
    follow_up_rubric,
    plan_questions,
    record,
    summary,
)
from ..service import get_service
from ..settings import Settings
from .feedback import report_markdown
from .render import escape_user_text

ALL = "All topics"


def _user(text: str) -> dict:
    return {"role": "user", "content": escape_user_text(text)}


def _bot(text: str) -> dict:
    return {"role": "assistant", "content": text}


def profile_name(requested: str, request: gr.Request | None) -> str:
    """With sign-in, the profile is the signed-in user; on one's own laptop, the name typed."""
    user = getattr(request, "username", None) if request is not None else None
    return user or (requested or "").strip() or "me"


def _stream_follow_up(svc, rubric, report, answer):
    """Yield the follow-up's text as the LLM writes it, then the final follow-up dict."""
    pieces: queue.Queue = queue.Queue()
    result: dict = {}

    def work():
        try:
            result["follow"] = suggest_follow_up(rubric, report, answer, svc.llm, on_text=pieces.put)
        finally:
            pieces.put(None)

    threading.Thread(target=work, daemon=True).start()
    while (piece := pieces.get()) is not None:
        yield piece
    yield result.get("follow")


def build_practice_tab(bank: Bank, settings: Settings, history: History) -> gr.Textbox:
    """The Practice tab; returns its profile box, which the app fills with the signed-in user."""
    with gr.Tab("Practice", id="practice"):
        state = gr.State(None)
        with gr.Row():
            profile = gr.Textbox(label="Profile (a local name)", value="me", elem_id="practice-profile", scale=1)
            topics = gr.Dropdown(
                [ALL, *bank.topics()], value=[ALL], multiselect=True, label="Topics", elem_id="practice-topics", scale=2
            )
            difficulty = gr.Dropdown(list(DIFFICULTIES), value="any", label="Difficulty", scale=1)
            count = gr.Slider(1, 20, value=5, step=1, label="Questions", scale=1)
            order = gr.Radio(list(ORDERS), value="adaptive", label="Order", elem_id="practice-order", scale=2)
        start = gr.Button("Start a session", variant="primary", elem_id="practice-start")
        chat = gr.Chatbot(label="Interview", elem_id="practice-chat", height=460, feedback_options=None)
        notice = gr.Markdown(elem_id="practice-notice")
        with gr.Row():
            answer = gr.Textbox(
                label="Your answer (type, or record and correct the transcript)",
                lines=5,
                elem_id="practice-answer",
                scale=3,
            )
            mic = gr.Audio(
                sources=["microphone"], type="numpy", label="Speak your answer", elem_id="practice-mic", scale=1
            )
        delivery_state = gr.State(None)
        with gr.Row():
            submit = gr.Button("Submit answer", variant="primary", elem_id="practice-submit")
            retry = gr.Button("Retry this question", elem_id="practice-retry")
            nxt = gr.Button("Next question", elem_id="practice-next")
            model = gr.Button("Show model answer", elem_id="practice-model")
            end = gr.Button("End session", variant="stop", elem_id="practice-end")
        with gr.Group(visible=False) as done_box:
            summary_md = gr.Markdown(elem_id="practice-summary")
            chart = gr.BarPlot(
                x="topic", y="score", title="Average score by topic", y_lim=[0, 100], elem_id="practice-chart"
            )
            files = gr.File(label="Export", file_count="multiple", elem_id="practice-export")

        def ask(session: PracticeSession, messages: list, prefix: str = "") -> list:
            qid = session.current
            if qid is None:
                return [*messages, _bot("That was the last question. Press **End session** for your summary.")]
            q = bank.get(qid)
            n = session.position + 1
            return [
                *messages,
                _bot(f"{prefix}**Question {n} of {len(session.plan)}** ({q.topic}, {q.difficulty})\n\n{q.question}"),
            ]

        def on_start(name, chosen, level, how_many, how, request: gr.Request):
            who = profile_name(name, request)
            picked = [t for t in (chosen or []) if t != ALL]
            try:
                past = history.attempts(who)
            except Exception:  # history is a nicety for planning; never block a session on it
                past = []
            plan = plan_questions(bank, picked or None, level, int(how_many), how, past)
            if not plan:
                return (
                    None,
                    [],
                    "No question matches these topics and difficulty; widen the selection.",
                    gr.update(visible=False),
                )
            session = PracticeSession(who, plan)
            return session, ask(session, [], f"Hello {escape_user_text(who)}. "), "", gr.update(visible=False)

        start.click(on_start, [profile, topics, difficulty, count, order], [state, chat, notice, done_box])

        def on_transcribe(audio, session: PracticeSession | None):
            if audio is None:
                return gr.update(), None, ""
            from ..speech import delivery, get_transcriber

            rate, data = audio
            prompt = bank.get(session.current).question if session and session.current else ""
            try:
                transcript = get_transcriber().transcribe(data, rate, prompt)
            except InterviewerError as exc:
                return gr.update(), None, f"**Could not transcribe:** {exc}"
            info = delivery(transcript)
            return (
                transcript.text,
                {
                    "transcript": transcript.text,
                    "summary": info.summary(),
                    **{"wpm": info.words_per_minute, "fillers": info.fillers, "longest_pause": info.longest_pause},
                },
                f"Transcribed {transcript.duration:.0f} s of speech. Correct the text if needed, then submit.",
            )

        mic.stop_recording(on_transcribe, [mic, state], [answer, delivery_state, notice])
        mic.upload(on_transcribe, [mic, state], [answer, delivery_state, notice])

        def on_submit(session: PracticeSession | None, text: str, spoken: dict | None, messages: list):
            messages = list(messages or [])
            if session is None or session.finished:
                yield session, messages, text, spoken, "Start a session first (or press End session for the summary)."
                return
            if not text or not text.strip():
                yield session, messages, text, spoken, "The answer is empty: type it, or record it with the microphone."
                return
            svc = get_service(settings)
            q = bank.get(session.current)
            open_follow = session.follow_up
            rubric = svc.rubric(q.id)
            messages.append(_user(text))
            yield session, [*messages, _bot("Scoring…")], text, spoken, ""
            try:
                base = session.turns[-1].report if open_follow and session.turns else None
                if open_follow and base:
                    rubric = follow_up_rubric(rubric, base)
                    report = svc.score_rubric(rubric, text)
                    kind, asked = "follow_up", open_follow["text"]
                else:
                    report = svc.score_answer(rubric, text)
                    kind = (
                        "retry"
                        if any(t.question_id == q.id and t.kind != "follow_up" for t in session.turns)
                        else "answer"
                    )
                    asked = q.question
                report = svc.check_flags(rubric, report, text)
            except InterviewerError as exc:
                yield (
                    session,
                    [*messages, _bot(f"**Could not score this answer:** {exc}")],
                    text,
                    spoken,
                    "Your answer is still in the box; try again.",
                )
                return
            body = report_markdown(report)
            if spoken:
                body += f"\n\n**Delivery** (how it was said, not scored): {spoken['summary']}"
            messages.append(_bot(body))
            yield session, messages, text, spoken, ""
            follow = None
            if kind != "follow_up":
                for piece in _stream_follow_up(svc, rubric, report, text):
                    if isinstance(piece, str):
                        yield session, [*messages, _bot(f"**Follow-up:** {escape_user_text(piece)}")], text, spoken, ""
                    else:
                        follow = piece
            report.follow_up = follow
            turn = Turn(q.id, kind, asked, text, report.to_dict(), spoken["transcript"] if spoken else None, spoken)
            saved_note = record(history, session, q, turn)
            note = saved_note or ""
            if follow:
                session.follow_up = follow
                line = f"**Follow-up** ({follow['source']}): {escape_user_text(follow['text'])}"
                if follow.get("notice"):
                    line = f"*{follow['notice']}*\n\n" + line
                messages.append(_bot(line + "\n\nAnswer it, retry the question, or go to the next one."))
            else:
                session.follow_up = None
                messages.append(_bot("Retry the question or go to the next one."))
            yield session, messages, "", None, note

        submit.click(on_submit, [state, answer, delivery_state, chat], [state, chat, answer, delivery_state, notice])

        def on_next(session: PracticeSession | None, messages: list):
            if session is None:
                return session, messages, "Start a session first."
            session.advance()
            return session, ask(session, list(messages or [])), ""

        nxt.click(on_next, [state, chat], [state, chat, notice])

        def on_retry(session: PracticeSession | None, messages: list):
            if session is None or session.finished:
                return session, messages, "Start a session first."
            session.follow_up = None
            return session, ask(session, list(messages or []), "Again: "), ""

        retry.click(on_retry, [state, chat], [state, chat, notice])

        def on_model(session: PracticeSession | None, messages: list):
            if session is None or session.finished:
                return messages, "Start a session first."
            qid = session.current
            if not any(t.question_id == qid for t in session.turns):
                return messages, "The model answer is shown after you have answered the question."
            q = bank.get(qid)
            return [*list(messages or []), _bot(f"**Model answer:** {q.model_answer.strip()}")], ""

        model.click(on_model, [state, chat], [chat, notice])

        def on_end(session: PracticeSession | None):
            if session is None or not session.turns:
                return gr.update(visible=False), "", None, None, "Answer at least one question first."
            s = summary(session, bank)
            lines = [f"### Session summary: {s['answered']} answer(s)", "", "**Points most often missed**", ""]
            lines += [f"- {m['text']} (×{m['times']})" for m in s["most_missed"]] or ["- none"]
            out = Path(tempfile.mkdtemp(prefix="interviewer-export-"))
            md = out / f"practice-{session.id}.md"
            js = out / f"practice-{session.id}.json"
            md.write_text(export_markdown(session, bank), encoding="utf-8")
            js.write_text(export_json(session, bank), encoding="utf-8")
            frame = pd.DataFrame({"topic": list(s["by_topic"]), "score": list(s["by_topic"].values())})
            return gr.update(visible=True), "\n".join(lines), frame, [str(md), str(js)], ""

        end.click(on_end, [state], [done_box, summary_md, chart, files, notice])
    return profile
