"""The Gradio app: one Blocks with a tab per mode, built on the library's functions."""

from __future__ import annotations

import logging
import sys
from pathlib import Path

import gradio as gr

from ..bank import get_bank
from ..history import History
from ..settings import Settings
from .bank_browser import build_bank_tab
from .copilot_tab import build_copilot_tab
from .practice_tab import build_practice_tab
from .progress_tab import build_progress_tab
from .score_tab import build_score_tab

log = logging.getLogger(__name__)
LOOPBACK = {"127.0.0.1", "localhost", "::1"}


def build_app(settings: Settings | None = None) -> gr.Blocks:
    settings = settings or Settings()
    bank = get_bank(settings.rubric_dir)
    with gr.Blocks(title="Interviewer") as demo:
        gr.Markdown("# Interviewer\nPractice technical interviews with rubric-based feedback, all on this machine.")
        build_llm_status(settings)
        history = History.from_settings(settings)
        with gr.Tabs():
            profiles = [build_practice_tab(bank, settings, history), build_progress_tab(history)]
            build_copilot_tab(bank, settings, history)
            build_score_tab(bank, settings)
            build_bank_tab(bank)
        demo.load(signed_in_profile, None, profiles)
    return demo


def signed_in_profile(request: gr.Request):
    """Signed in, the profile is the user's own and cannot be changed; on one's own laptop it is a free name."""
    user = getattr(request, "username", None)
    if not user:
        return gr.update(), gr.update()
    fixed = gr.update(value=user, interactive=False, label="Profile (signed in)")
    return fixed, fixed


def build_llm_status(settings: Settings) -> None:
    """One line on the LLM: checked only when asked (GET /v1/models), never at start-up."""
    from ..llm import llm_from_settings, not_configured_status

    llm = llm_from_settings(settings)
    if llm is None:
        gr.Markdown(f"*{not_configured_status().message}*", elem_id="llm-status")
        return
    with gr.Row():
        status = gr.Markdown(
            f"*LLM configured: {llm.model}. Follow-ups fall back to the rubric if it fails.*", elem_id="llm-status"
        )
        check = gr.Button("Check the LLM", size="sm", elem_id="llm-check", scale=0)

    def on_check():
        result = llm.status()
        mark = "ready" if result.model_found else ("reachable, model missing" if result.reachable else "unreachable")
        return f"*LLM {mark}: {result.message}*"

    check.click(on_check, None, status)


def parse_auth(value: str) -> list[tuple[str, str]]:
    pairs = []
    for item in filter(None, (v.strip() for v in value.split(","))):
        user, sep, password = item.partition(":")
        if not sep or not user or not password:
            raise ValueError("INTERVIEWER_AUTH must look like user:password[,user2:password2]")
        pairs.append((user, password))
    return pairs


def read_auth_file(path: Path) -> list[tuple[str, str]]:
    """Users from a file, one `user:password` per line; blank lines and `#` comments are skipped."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"cannot read INTERVIEWER_AUTH_FILE {path}: {exc}") from None
    pairs = []
    for n, line in enumerate(lines, 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        user, sep, password = line.partition(":")
        if not sep or not user.strip() or not password:
            # The message names the line, never its text, which may hold a password.
            raise ValueError(f"{path}:{n}: a user line must look like user:password")
        pairs.append((user.strip(), password))
    return pairs


def credentials(settings: Settings) -> list[tuple[str, str]]:
    """Every user allowed in: INTERVIEWER_AUTH and INTERVIEWER_AUTH_FILE together; a user named twice is an error."""
    pairs = parse_auth(settings.auth)
    if settings.auth_file:
        pairs += read_auth_file(settings.auth_file)
    seen = set()
    for user, _ in pairs:
        if user in seen:
            raise ValueError(f"user {user!r} is defined twice (INTERVIEWER_AUTH and INTERVIEWER_AUTH_FILE together)")
        seen.add(user)
    return pairs


def prepare(settings: Settings) -> None:
    """Load the model and sync the rubric index before serving, with progress on the console."""
    from tqdm import tqdm

    from ..errors import InterviewerError
    from ..service import get_service

    svc = get_service(settings)
    print(f"Preparing the rubric index ({svc.store.location}) ...", flush=True)
    bar = None

    def progress(done: int, total: int) -> None:
        nonlocal bar
        if bar is None:
            bar = tqdm(total=total, unit="sentence", desc="embedding the bank")
        bar.update(done - bar.n)

    try:
        stats = svc.ensure_index(progress)
    except InterviewerError as exc:
        sys.exit(f"error: {exc}")
    finally:
        if bar is not None:
            bar.close()
    if stats:
        print(f"Index ready: {stats['total']} sentences, {stats['embedded']} embedded now.", flush=True)


def launch(demo: gr.Blocks, settings: Settings) -> None:
    host, port = settings.server_name, settings.server_port
    try:
        auth = credentials(settings) or None
    except ValueError as exc:
        sys.exit(f"error: {exc}")
    if host not in LOOPBACK and not auth:
        sys.exit(
            f"error: refusing to serve on {host} without credentials. Set INTERVIEWER_AUTH=user:password "
            "or INTERVIEWER_AUTH_FILE, or leave GRADIO_SERVER_NAME at 127.0.0.1."
        )
    prepare(settings)
    # Requests beyond the concurrency limit wait in Gradio's queue, which shows each user their place in line.
    demo.queue(default_concurrency_limit=settings.concurrency).launch(
        server_name=host,
        server_port=port,
        # Gradio keeps a copy of every component's config per browser session (0.2 MB here, about 1 MB
        # with a chat) for an hour after the tab closes, up to 10,000 sessions: a bound keeps memory flat.
        state_session_capacity=settings.max_sessions,
        auth=auth,
        show_error=False,
        share=False,
    )
