"""Practice mode, end to end in a real browser: click to feedback shown, typed and spoken.

Starts `python app.py` on a free loopback port with a fresh data directory, drives Debian's chromium
through Playwright, and for the spoken path feeds a 20-second answer synthesised with piper through
Chromium's fake microphone. The baseline is the same answer scored by a direct library call in this
process (no browser, no HTTP), measured in the same run.
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
from tests.conftest import CHROMIUM_FLAGS, free_port, synthesize_wav, wait_for_port  # noqa: E402

ANSWER = (
    "Tensors and NumPy arrays are both multi-dimensional arrays with the same kind of maths: indexing, "
    "broadcasting and matrix products. Tensors can also live on a GPU, and autograd records operations on "
    "them so that backward can compute gradients, which is why networks are trained with tensors. You "
    "convert with torch.from_numpy and tensor.numpy, and on the CPU they share memory."
)
SPOKEN = ANSWER + " " + "In practice I move the model and every batch to the same device before computing."


def main(repeats: int = 5) -> None:
    from playwright.sync_api import sync_playwright

    from interviewer.service import Interviewer

    home = Path(tempfile.mkdtemp(prefix="interviewer-bench-practice-"))
    os.environ["INTERVIEWER_HOME"] = str(home)
    svc = Interviewer()
    svc.ensure_index()
    svc.score("tensors-vs-numpy", ANSWER)
    direct = []
    for _ in range(repeats):
        svc.embedder._cache.clear()
        t = time.perf_counter()
        svc.score("tensors-vs-numpy", ANSWER)
        direct.append(time.perf_counter() - t)

    wav = synthesize_wav(SPOKEN, home / "spoken.wav")
    port = free_port()
    env = {**os.environ, "GRADIO_SERVER_PORT": str(port)}
    app = subprocess.Popen(
        [sys.executable, "app.py"], cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    typed, spoken_transcribe, spoken_feedback = [], [], []
    try:
        wait_for_port(port, app, timeout=180)
        url = f"http://127.0.0.1:{port}"
        flags = [
            *CHROMIUM_FLAGS,
            "--use-fake-ui-for-media-stream",
            "--use-fake-device-for-media-stream",
            f"--use-file-for-fake-audio-capture={wav}",
        ]
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=flags)
            page = browser.new_context(permissions=["microphone"]).new_page()
            page.set_default_timeout(120_000)
            page.goto(url)
            page.locator("#practice-order").get_by_text("bank order").click()
            for i in range(repeats):
                page.locator("#practice-start").click()
                page.locator("#practice-chat").get_by_text("Question 1 of").wait_for()
                page.locator("#practice-answer textarea").fill(ANSWER + f" (run {i})")
                t = time.perf_counter()
                page.locator("#practice-submit").click()
                page.locator("#practice-chat").get_by_text("Score").first.wait_for()
                typed.append(time.perf_counter() - t)
                page.locator("#practice-chat").get_by_text("Answer it, retry the question").wait_for()
            for _ in range(2):
                page.locator("#practice-start").click()
                page.locator("#practice-chat").get_by_text("Question 1 of").wait_for()
                mic = page.locator("#practice-mic")
                mic.get_by_role("button", name="Record").click()
                page.wait_for_timeout(20_000)
                t = time.perf_counter()
                mic.get_by_role("button", name="Stop").click()
                page.locator("#practice-notice").get_by_text("Transcribed").wait_for()
                spoken_transcribe.append(time.perf_counter() - t)
                t = time.perf_counter()
                page.locator("#practice-submit").click()
                page.locator("#practice-chat").get_by_text("Score").first.wait_for()
                spoken_feedback.append(time.perf_counter() - t)
                page.locator("#practice-chat").get_by_text("Answer it, retry the question").wait_for()
                mic.get_by_role("button", name="Clear").click()
            browser.close()
    finally:
        app.terminate()
        app.wait(timeout=20)

    base = statistics.median(direct)
    med = statistics.median
    rows = [
        ("direct library call, same answer (s)", f"{base:.3f}", "baseline"),
        ("typed: click submit -> feedback shown (s)", f"{med(typed):.3f}", f"{med(typed) / base:.1f}x baseline"),
        ("spoken 20 s: stop -> transcript shown (s)", f"{med(spoken_transcribe):.2f}", ""),
        ("spoken 20 s: submit -> feedback shown (s)", f"{med(spoken_feedback):.3f}", ""),
        ("spoken 20 s: stop -> feedback, total (s)", f"{med(spoken_transcribe) + med(spoken_feedback):.2f}", ""),
    ]
    print_table("Practice benchmark (browser, end to end)", rows, "median")


if __name__ == "__main__":
    main()
