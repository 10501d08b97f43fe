"""The app in a real browser: Debian's chromium driven by Playwright, against `python app.py`."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

from .conftest import ROOT, free_port, wait_for_port

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
]

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(
        not shutil.which("chromium") and not os.path.exists(CHROMIUM),
        reason="Debian's chromium is not installed (.ci/run installs it)",
    ),
]


@pytest.fixture(scope="module")
def app_url(tmp_path_factory, synced_index):
    port = free_port()
    home = tmp_path_factory.mktemp("app-home")
    shutil.copytree(synced_index, home / "chroma")
    env = {
        **os.environ,
        "INTERVIEWER_HOME": str(home),
        "GRADIO_SERVER_PORT": str(port),
        "GRADIO_SERVER_NAME": "127.0.0.1",
    }
    for name in ("OPENAI_BASE_URL", "INTERVIEWER_LLM_MODEL", "CHROMA_HOST"):
        env.pop(name, None)
    log = open(home / "app.log", "w")  # noqa: SIM115
    proc = subprocess.Popen([sys.executable, "app.py"], cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        wait_for_port(port, proc, timeout=120)
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
        yield b
        b.close()


@pytest.fixture
def page(browser):
    context = browser.new_context()
    page = context.new_page()
    page.set_default_timeout(60_000)
    yield page
    context.close()


def test_bank_browser_finds_a_question_by_search_and_shows_its_rubric(app_url, page):
    page.goto(app_url)
    page.get_by_role("tab", name="Question bank").click()
    page.locator("#bank-search textarea, #bank-search input").first.fill("state_dict")
    page.locator("#bank-count").get_by_text("of 66 questions").wait_for()
    table = page.locator("#bank-table")
    table.get_by_text("save-load", exact=True).wait_for()
    assert table.get_by_text("tensors-vs-numpy", exact=True).count() == 0
    table.get_by_text("save-load", exact=True).click()
    detail = page.locator("#bank-detail")
    detail.get_by_text("What a strong answer covers").wait_for()
    assert "state_dict" in detail.inner_text()


def test_typed_answer_gets_feedback_with_evidence_and_script_stays_text(app_url, page):
    page.goto(app_url)
    page.get_by_role("tab", name="Try an answer").click()
    answer = (
        "Tensors and NumPy arrays are both multi-dimensional arrays with the same kind of maths. "
        "Tensors can also run on a GPU and autograd can compute their gradients. "
        "<script>window.pwned=1</script>"
    )
    page.locator("#score-answer textarea").fill(answer)
    page.locator("#score-submit").click()
    feedback = page.locator("#score-feedback")
    feedback.get_by_text("Score").first.wait_for()
    text = feedback.inner_text()
    assert "Covered" in text and "Missed" in text and "Follow-up" in text
    assert "Tensors can also run on a GPU and autograd can compute their gradients" in text
    assert "<script>" in text  # shown as text
    assert page.evaluate("window.pwned === undefined")
