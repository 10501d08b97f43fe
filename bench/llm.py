"""LLM follow-ups against a real local OpenAI-compatible server (llama.cpp's, SmolLM2-135M, one thread).

Measures time to the first streamed token and total time of a follow-up through the app's path
(prompt rendering, streaming, validation, fallback logic), against the same request made with the raw
`openai` client in the same run: the difference is what the app adds.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.common import print_table  # noqa: E402
from tests.conftest import free_port, stop, wait_for_port  # noqa: E402
from tests.llm_server import MODEL_ID, wait_until_ready  # noqa: E402

ANSWER = "You loop over the DataLoader, call model(inputs), compute the loss and call optimizer.step()."


def main(repeats: int = 5) -> None:
    import openai

    from interviewer.followups import follow_up_messages, suggest_follow_up
    from interviewer.llm import OpenAICompatibleLLM
    from interviewer.service import Interviewer

    os.environ["INTERVIEWER_HOME"] = tempfile.mkdtemp(prefix="interviewer-bench-llm-")
    svc = Interviewer()
    svc.ensure_index()
    rubric = svc.rubric("training-loop")
    report = svc.scorer.score(rubric, ANSWER, svc.store.vectors_for("training-loop"))
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, str(ROOT / "tests" / "llm_server.py"), str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for_port(port, server, timeout=60)
        url = f"http://127.0.0.1:{port}/v1"
        wait_until_ready(url)
        client = openai.OpenAI(base_url=url, api_key="not-needed", timeout=60, max_retries=0)
        llm = OpenAICompatibleLLM(url, MODEL_ID, read_timeout=60)
        messages = follow_up_messages(rubric, report, ANSWER)  # exactly what the app sends
        raw_first, raw_total, app_first, app_total = [], [], [], []
        for _ in range(repeats):
            t = time.perf_counter()
            first = None
            stream = client.chat.completions.create(
                model=MODEL_ID, messages=messages, max_tokens=80, temperature=0.0, stream=True
            )
            for chunk in stream:
                if first is None and chunk.choices and chunk.choices[0].delta.content:
                    first = time.perf_counter() - t
            raw_first.append(first or 0.0)
            raw_total.append(time.perf_counter() - t)

            marks: list[float] = []

            def mark(_text: str, marks=marks) -> None:
                marks.append(time.perf_counter())

            t = time.perf_counter()
            follow = suggest_follow_up(rubric, report, ANSWER, llm, on_text=mark)
            app_total.append(time.perf_counter() - t)
            app_first.append((marks[0] - t) if marks else 0.0)
        med = statistics.median
        rows = [
            ("raw client: first token (s)", f"{med(raw_first):.2f}", "baseline"),
            ("raw client: total (s)", f"{med(raw_total):.2f}", "baseline"),
            ("app follow-up: first token (s)", f"{med(app_first):.2f}", ""),
            ("app follow-up: total (s)", f"{med(app_total):.2f}", f"source of the last one: {follow['source']}"),
            ("overhead the app adds, total (ms)", f"{(med(app_total) - med(raw_total)) * 1000:.0f}", ""),
        ]
        print_table("LLM follow-up (local llama.cpp server, SmolLM2-135M, 1 thread)", rows, "median")
    finally:
        stop(server)


if __name__ == "__main__":
    main()
