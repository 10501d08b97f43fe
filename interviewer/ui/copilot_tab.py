"""The Co-pilot tab: plan an interview, follow the candidate's answer live, keep the verdict human."""

from __future__ import annotations

import tempfile
from pathlib import Path

import gradio as gr

from .. import copilot
from ..bank import Bank
from ..errors import InterviewerError
from ..history import History, HistoryUnavailable
from ..service import get_service
from ..settings import Settings
from .render import escape_user_text


def _owner(request: gr.Request | None) -> str:
    return (getattr(request, "username", None) if request is not None else None) or "local"


def _plan_markdown(interview: copilot.Interview | None) -> str:
    if not interview or not interview.questions:
        return "No questions yet: add them from the bank or type your own."
    lines = []
    for n, item in enumerate(interview.questions, 1):
        if item.source == "matched":
            how = f"matched to `{item.rubric.question_id}` ({item.match_similarity:.2f})"
        else:
            how = "from the bank" if item.source == "bank" else "provisional checklist"
        lines.append(f"{n}. {escape_user_text(item.text)} · *{how}*")
    return "\n".join(lines)


def _choices(interview: copilot.Interview | None) -> list[tuple[str, int]]:
    if not interview:
        return []
    return [(f"{n}. {item.text[:80]}", n - 1) for n, item in enumerate(interview.questions, 1)]


def _live_views(item: copilot.PlannedQuestion | None):
    """Checklist, evidence, flags, follow-ups for one question."""
    if item is None:
        return (gr.update(choices=[], value=[]), "", gr.update(choices=[], value=[]), "", "")
    rows = copilot.checklist(item)
    choices = [(f"{r['index']}. {r['text']}", r["id"]) for r in rows]
    ticked = [r["id"] for r in rows if r["final"]]
    lines = []
    for r in rows:
        state = "covered" if r["final"] else ("stated the opposite" if r["contradicted"] else "open")
        who = " · *your mark*" if r["interviewer"] is not None else ""
        origin = f" · from `{r['origin']}`" if r["origin"] else ""
        line = f"- **{r['index']}. {state}**{who}{origin}: {r['text']}"
        if r["evidence"] and (r["machine"] or r["contradicted"]):
            line += f"  \n  “{escape_user_text(r['evidence'])}”"
        lines.append(line)
    evidence = "\n".join(lines) if item.transcript.strip() else "Waiting for the candidate's answer."
    raised = copilot.flags(item)
    flag_choices = [(f"{f['kind']}: {f['text']}", f["id"]) for f in raised]
    flag_lines = []
    for f in raised:
        mark = "dismissed" if f["dismissed"] else "flag"
        quote = f"  \n  “{escape_user_text(f['evidence'])}”" if f.get("evidence") else ""
        flag_lines.append(f"- **{mark}** ({f['kind']}): {f['text']}{quote}  \n  → {f['correction']}")
    follow = "\n".join(
        f"{n}. {escape_user_text(s['text'])} *({s['source']})*" for n, s in enumerate(item.suggestions, 1)
    )
    return (
        gr.update(choices=choices, value=ticked),
        evidence,
        gr.update(choices=flag_choices, value=list(item.dismissed)),
        "\n".join(flag_lines) or "No flags.",
        follow or "No follow-up needed yet.",
    )


def build_copilot_tab(bank: Bank, settings: Settings, history: History) -> None:
    with gr.Tab("Co-pilot", id="copilot"):
        state = gr.State(None)
        gr.Markdown(
            "Run a real interview with a live rubric beside it. You decide: every mark can be changed, "
            "and the recommendation is yours alone."
        )
        with gr.Row():
            candidate = gr.Textbox(label="Candidate (optional)", elem_id="copilot-candidate")
            role = gr.Textbox(label="Role (optional)", elem_id="copilot-role")
        gr.Markdown("### Plan")
        with gr.Row():
            pick = gr.Dropdown(
                [(f"{q.question} ({q.id})", q.id) for q in bank.questions],
                label="From the bank",
                filterable=True,
                elem_id="copilot-pick",
                scale=4,
            )
            add_pick = gr.Button("Add", elem_id="copilot-add-bank", scale=1)
        with gr.Row():
            typed = gr.Textbox(label="Or type your own question", elem_id="copilot-typed", scale=4)
            add_typed = gr.Button("Add typed question", elem_id="copilot-add-typed", scale=1)
        plan_md = gr.Markdown(_plan_markdown(None), elem_id="copilot-plan")
        plan_notice = gr.Markdown(elem_id="copilot-plan-notice")
        with gr.Row():
            current = gr.Dropdown([], label="Current question", elem_id="copilot-current", scale=4)
            up = gr.Button("Move up", scale=1)
            down = gr.Button("Move down", scale=1)
            remove = gr.Button("Remove", scale=1)
        gr.Markdown("### Live")
        with gr.Row():
            transcript = gr.Textbox(
                label="The candidate's answer so far: type notes or paste the transcript",
                lines=6,
                elem_id="copilot-transcript",
                scale=3,
            )
            mic = gr.Audio(
                sources=["microphone"],
                type="numpy",
                label="Or record a part of the answer",
                elem_id="copilot-mic",
                scale=1,
            )
        live_notice = gr.Markdown(elem_id="copilot-notice")
        with gr.Row():
            with gr.Column(scale=3):
                ticks = gr.CheckboxGroup(
                    [], label="Checklist (tick or untick to set your own mark)", elem_id="copilot-checklist"
                )
                evidence = gr.Markdown(elem_id="copilot-evidence")
            with gr.Column(scale=2):
                dismiss = gr.CheckboxGroup([], label="Flags (tick to dismiss)", elem_id="copilot-dismiss")
                flags_md = gr.Markdown(elem_id="copilot-flags")
                gr.Markdown("**Ask next**")
                follow_md = gr.Markdown(elem_id="copilot-follow")
                ask_llm = gr.Button(
                    "Ask the LLM for follow-ups", size="sm", elem_id="copilot-ask-llm", visible=bool(settings.llm_model)
                )
        notes = gr.Textbox(label="Your notes on this question", lines=2, elem_id="copilot-notes")
        gr.Markdown("### Scorecard")
        with gr.Row():
            recommendation = gr.Radio(
                [1, 2, 3, 4, 5],
                label="Your recommendation (1 = no hire, 5 = strong hire)",
                elem_id="copilot-recommendation",
            )
            summary = gr.Textbox(label="Overall summary", lines=2, elem_id="copilot-summary")
        export = gr.Button("Export scorecard", variant="primary", elem_id="copilot-export")
        files = gr.File(label="Scorecard", file_count="multiple", elem_id="copilot-files")
        live_outputs = [ticks, evidence, dismiss, flags_md, follow_md]

        def save(interview: copilot.Interview | None, request: gr.Request | None) -> str:
            if interview is None:
                return ""
            try:
                history.save_scorecard(interview.id, _owner(request), interview.candidate, copilot.scorecard(interview))
            except HistoryUnavailable as exc:
                return f"Not saved: {exc}. Export the scorecard to keep it."
            return ""

        def item_of(interview, index):
            if interview is None or index is None or not (0 <= int(index) < len(interview.questions)):
                return None
            return interview.questions[int(index)]

        def after_plan_change(interview, select, notice, request):
            choices = _choices(interview)
            item = item_of(interview, select)
            return (
                interview,
                _plan_markdown(interview),
                notice,
                gr.update(choices=choices, value=select),
                item.transcript if item else "",
                item.notes if item else "",
                *_live_views(item),
                save(interview, request),
            )

        plan_outputs = [state, plan_md, plan_notice, current, transcript, notes, *live_outputs, live_notice]

        def on_add_bank(interview, qid, who, job, request: gr.Request):
            if not qid:
                return after_plan_change(interview, None, "Pick a question first.", request)
            interview = interview or copilot.Interview(who or "", job or "")
            interview.questions.append(copilot.plan_from_bank(get_service(settings), qid))
            return after_plan_change(interview, len(interview.questions) - 1, "", request)

        add_pick.click(on_add_bank, [state, pick, candidate, role], plan_outputs)

        def on_add_typed(interview, text, who, job, request: gr.Request):
            interview = interview or copilot.Interview(who or "", job or "")
            try:
                item, notice = copilot.plan_from_text(get_service(settings), text or "")
            except (ValueError, InterviewerError) as exc:
                return after_plan_change(interview, None, f"**Could not add it:** {exc}", request)
            interview.questions.append(item)
            return after_plan_change(interview, len(interview.questions) - 1, notice, request)

        add_typed.click(on_add_typed, [state, typed, candidate, role], plan_outputs)

        def move(interview, index, delta, request):
            if item_of(interview, index) is None:
                return after_plan_change(interview, index, "Choose a question first.", request)
            i, j = int(index), int(index) + delta
            if delta and 0 <= j < len(interview.questions):
                qs = interview.questions
                qs[i], qs[j] = qs[j], qs[i]
                return after_plan_change(interview, j, "", request)
            if not delta:
                interview.questions.pop(i)
                return after_plan_change(interview, 0 if interview.questions else None, "", request)
            return after_plan_change(interview, index, "", request)

        def on_up(interview, index, request: gr.Request):
            return move(interview, index, -1, request)

        def on_down(interview, index, request: gr.Request):
            return move(interview, index, 1, request)

        def on_remove(interview, index, request: gr.Request):
            return move(interview, index, 0, request)

        up.click(on_up, [state, current], plan_outputs)
        down.click(on_down, [state, current], plan_outputs)
        remove.click(on_remove, [state, current], plan_outputs)

        def on_select(interview, index):
            item = item_of(interview, index)
            return (item.transcript if item else "", item.notes if item else "", *_live_views(item))

        current.input(on_select, [state, current], [transcript, notes, *live_outputs])

        def on_transcript(interview, index, text, request: gr.Request):
            item = item_of(interview, index)
            if item is None:
                return (*_live_views(None), "Add a question to the plan first; your text is kept in the box.")
            try:
                copilot.update(get_service(settings), item, text or "")
            except InterviewerError as exc:
                return (*_live_views(item), f"**The checklist could not update:** {exc} The transcript is kept.")
            notice = "" if (text or "").strip() else "The transcript is empty."
            jump = copilot.detect_jump(get_service(settings), interview, item) if notice == "" else None
            return (*_live_views(item), save(interview, request) or item.store_notice or jump or notice)

        transcript.change(
            on_transcript,
            [state, current, transcript],
            [*live_outputs, live_notice],
            trigger_mode="always_last",
            show_progress="hidden",
        )

        def on_ticks(interview, index, ticked, request: gr.Request):
            item = item_of(interview, index)
            if item is None:
                return (*_live_views(None), "")
            copilot.set_marks(item, ticked or [])
            return (*_live_views(item), save(interview, request))

        ticks.input(on_ticks, [state, current, ticks], [*live_outputs, live_notice])

        def on_dismiss(interview, index, dismissed, request: gr.Request):
            item = item_of(interview, index)
            if item is not None:
                copilot.dismiss_flags(item, dismissed or [])
            return (*_live_views(item), save(interview, request))

        dismiss.input(on_dismiss, [state, current, dismiss], [*live_outputs, live_notice])

        def on_notes(interview, index, text, request: gr.Request):
            item = item_of(interview, index)
            if item is not None:
                item.notes = text or ""
            return save(interview, request)

        notes.input(on_notes, [state, current, notes], live_notice)

        def on_card(interview, who, job, rec, text, request: gr.Request):
            if interview is None:
                return ""
            interview.candidate, interview.role = who or "", job or ""
            interview.recommendation = int(rec) if rec else None
            interview.summary = text or ""
            return save(interview, request)

        for component in (candidate, role, recommendation, summary):
            component.input(on_card, [state, candidate, role, recommendation, summary], live_notice)

        def on_mic(audio, interview, index, text):
            item = item_of(interview, index)
            if audio is None:
                return gr.update(), ""
            from ..speech import get_transcriber

            rate, data = audio
            try:
                heard = get_transcriber().transcribe(data, rate, item.text if item else "")
            except InterviewerError as exc:
                return gr.update(), f"**Could not transcribe this part:** {exc} Type notes instead; nothing was lost."
            return ((text or "").rstrip() + " " + heard.text).strip(), ""

        mic.stop_recording(on_mic, [mic, state, current, transcript], [transcript, live_notice])

        def on_export(interview):
            if interview is None or not interview.questions:
                return None, "Plan at least one question first."
            out = Path(tempfile.mkdtemp(prefix="interviewer-scorecard-"))
            md, js = out / f"scorecard-{interview.id}.md", out / f"scorecard-{interview.id}.json"
            md.write_text(copilot.scorecard_markdown(interview), encoding="utf-8")
            js.write_text(copilot.scorecard_json(interview), encoding="utf-8")
            return [str(md), str(js)], ""

        export.click(on_export, [state], [files, live_notice])

        def on_ask_llm(interview, index):
            item = item_of(interview, index)
            if item is None or not item.transcript.strip():
                return gr.update(), "Wait for some of the answer first."
            found, notice = copilot.llm_suggestions(get_service(settings).llm, item)
            text = "\n".join(f"{n}. {escape_user_text(s['text'])} *({s['source']})*" for n, s in enumerate(found, 1))
            return text or "No follow-up needed yet.", notice

        ask_llm.click(on_ask_llm, [state, current], [follow_md, live_notice])
