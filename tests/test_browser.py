"""The app in a real browser: Debian's chromium driven by Playwright, against `python app.py`."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil

import pytest

from .conftest import CHROMIUM_FLAGS, running_app

CHROMIUM = "/usr/bin/chromium"

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(
        not shutil.which("chromium") and not os.path.exists(CHROMIUM),
        reason="Debian's chromium is not installed (.ci/run installs it)",
    ),
]


@pytest.fixture(scope="module")
def app_url(tmp_path_factory, synced_index):
    with running_app(tmp_path_factory.mktemp("app-home"), synced_index) as url:
        yield url


@pytest.fixture(scope="module")
def playwright():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        yield p


@pytest.fixture(scope="module")
def browser(playwright):
    b = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
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


def _start_practice(page, app_url, profile="me"):
    page.goto(app_url)
    page.locator("#practice-profile input, #practice-profile textarea").first.fill(profile)
    page.locator("#practice-order").get_by_text("bank order").click()
    page.locator("#practice-start").click()
    page.locator("#practice-chat").get_by_text("Question 1 of").wait_for()


TENSOR_ANSWER = (
    "Tensors and NumPy arrays are both multi-dimensional arrays with the same kind of maths. "
    "Tensors can also run on a GPU, and autograd can compute their gradients."
)


def test_practice_typed_answer_feedback_follow_up_and_export(app_url, page):
    _start_practice(page, app_url, "typist")
    page.locator("#practice-answer textarea").fill(TENSOR_ANSWER + " <img src=x onerror=window.pwned=1>")
    page.locator("#practice-submit").click()
    chat = page.locator("#practice-chat")
    chat.get_by_text("Answer it, retry the question").wait_for()
    text = chat.inner_text()
    assert "Covered" in text and "Missed" in text and "Follow-up" in text
    assert "“Tensors and NumPy arrays are both multi-dimensional arrays with the same kind of maths.”" in text
    assert "<img src=x" in text and page.evaluate("window.pwned === undefined")

    page.locator("#practice-end").click()
    page.locator("#practice-summary").get_by_text("Session summary").wait_for()
    links = page.locator("#practice-export a")
    links.first.wait_for()
    hrefs = [links.nth(i).get_attribute("href") for i in range(links.count())]
    md_url = next(h for h in hrefs if h.endswith(".md"))
    js_url = next(h for h in hrefs if h.endswith(".json"))
    md = page.request.get(md_url if md_url.startswith("http") else app_url + md_url).text()
    data = page.request.get(js_url if js_url.startswith("http") else app_url + js_url).json()
    assert "How do PyTorch tensors compare with NumPy arrays" in md and "the same kind of maths" in md
    turn = data["turns"][0]
    assert turn["question_id"] == "tensors-vs-numpy" and turn["answer"].startswith("Tensors and NumPy arrays")
    assert 0 <= turn["report"]["score"] <= 100 and turn["report"]["follow_up"]["text"]


def test_two_browser_sessions_never_see_each_other(app_url, browser):
    ann_ctx, bob_ctx = browser.new_context(), browser.new_context()
    try:
        ann, bob = ann_ctx.new_page(), bob_ctx.new_page()
        for p in (ann, bob):
            p.set_default_timeout(60_000)
        _start_practice(ann, app_url, "ann")
        _start_practice(bob, app_url, "bob")
        ann.locator("#practice-answer textarea").fill("ANN-SECRET tensors are arrays with a device.")
        ann.locator("#practice-submit").click()
        ann.locator("#practice-chat").get_by_text("Answer it, retry the question").wait_for()
        bob.locator("#practice-next").click()
        bob.locator("#practice-chat").get_by_text("Question 2 of").wait_for()
        assert "ANN-SECRET" not in bob.locator("#practice-chat").inner_text()
        assert "Question 2 of" not in ann.locator("#practice-chat").inner_text()
        bob.get_by_role("tab", name="Progress").click()
        bob.locator("#progress-profile input, #progress-profile textarea").first.fill("bob")
        bob.locator("#progress-load").click()
        bob.locator("#progress-info").get_by_text("No attempts yet").wait_for()
    finally:
        ann_ctx.close()
        bob_ctx.close()


def test_spoken_answer_through_the_fake_microphone_is_transcribed_and_scored(app_url, playwright, tmp_path):
    from .conftest import synthesize_wav

    if importlib.util.find_spec("piper") is None:
        pytest.skip("piper-tts (test-only) is not installed")
    wav = synthesize_wav(TENSOR_ANSWER, tmp_path / "answer.wav")
    flags = [
        *CHROMIUM_FLAGS,
        "--use-fake-ui-for-media-stream",
        "--use-fake-device-for-media-stream",
        f"--use-file-for-fake-audio-capture={wav}",
    ]
    b = playwright.chromium.launch(executable_path=CHROMIUM, args=flags)
    try:
        page = b.new_context(permissions=["microphone"]).new_page()
        page.set_default_timeout(60_000)
        _start_practice(page, app_url, "speaker")
        mic = page.locator("#practice-mic")
        mic.get_by_role("button", name="Record").click()
        # The fake device loops the ~9 s file from wherever it is when recording starts: two loops
        # hold every phrase whole at least once.
        page.wait_for_timeout(18_000)
        mic.get_by_role("button", name="Stop").click()
        page.locator("#practice-notice").get_by_text("Transcribed").wait_for()
        transcript = page.locator("#practice-answer textarea").input_value().lower()
        assert "numpy" in transcript and "gpu" in transcript
        page.locator("#practice-submit").click()
        chat = page.locator("#practice-chat")
        chat.get_by_text("Answer it, retry the question").wait_for()
        text = chat.inner_text()
        assert "Covered" in text and "Delivery" in text and "words per minute" in text
    finally:
        b.close()


def test_history_survives_an_app_restart(browser, tmp_path, synced_index):
    home = tmp_path / "app-home"
    home.mkdir()
    with running_app(home, synced_index) as url:
        page = browser.new_page()
        page.set_default_timeout(60_000)
        _start_practice(page, url, "keeper")
        page.locator("#practice-answer textarea").fill(TENSOR_ANSWER)
        page.locator("#practice-submit").click()
        page.locator("#practice-chat").get_by_text("Answer it, retry the question").wait_for()
        page.close()
    with running_app(home, synced_index) as url:
        page = browser.new_page()
        page.set_default_timeout(60_000)
        page.goto(url)
        page.get_by_role("tab", name="Progress").click()
        page.locator("#progress-profile input, #progress-profile textarea").first.fill("keeper")
        page.locator("#progress-load").click()
        page.locator("#progress-info").get_by_text("1 answer(s)").wait_for()
        missed = page.locator("#progress-missed").inner_text()
        assert "NumPy" in missed or "numpy" in missed or "tensor" in missed.lower()
        page.close()


def test_copilot_plan_live_checklist_override_and_scorecard(app_url, page):
    page.goto(app_url)
    page.get_by_role("tab", name="Co-pilot").click()
    page.locator("#copilot-candidate input, #copilot-candidate textarea").first.fill("Dana")
    pick = page.locator("#copilot-pick input")
    pick.click()
    pick.fill("training loop")
    page.get_by_role("option", name="training loop").first.click()
    page.locator("#copilot-add-bank").click()
    plan = page.locator("#copilot-plan")
    plan.get_by_text("Walk me through a basic training loop").wait_for()
    page.locator("#copilot-typed input, #copilot-typed textarea").first.fill(
        "How would you save and later load a PyTorch model's weights?"
    )
    page.locator("#copilot-add-typed").click()
    page.locator("#copilot-plan-notice").get_by_text("Matched to bank question").wait_for()
    assert "matched to save-load" in plan.inner_text()

    current = page.locator("#copilot-current input")
    current.click()
    page.get_by_role("option", name="training loop").first.click()
    page.wait_for_function("document.querySelector('#copilot-current input').value.includes('training loop')")
    page.locator("#copilot-checklist").get_by_text("The loop iterates over a DataLoader").wait_for()
    transcript = page.locator("#copilot-transcript textarea")
    evidence = page.locator("#copilot-evidence")
    transcript.fill("So first you iterate over the DataLoader to get batches of inputs and targets.")
    evidence.get_by_text("“So first you iterate over the DataLoader").wait_for()
    assert evidence.inner_text().count("covered:") == 1
    transcript.fill(
        transcript.input_value() + " Then outputs = model(inputs), the criterion computes the loss, "
        "optimizer.zero_grad() clears old gradients, loss.backward() computes new ones and "
        "optimizer.step() updates the weights."
    )
    page.wait_for_function("document.querySelector('#copilot-evidence').innerText.split('covered:').length > 4")

    page.locator("#copilot-checklist label").filter(has_text="1. The loop iterates").click()  # the interviewer's call
    evidence.get_by_text("your mark").wait_for()
    page.locator("#copilot-recommendation").get_by_text("4", exact=True).click()
    page.locator("#copilot-export").click()
    links = page.locator("#copilot-files a")
    links.first.wait_for()
    hrefs = [links.nth(i).get_attribute("href") for i in range(links.count())]
    js = next(h for h in hrefs if h.endswith(".json"))
    card = page.request.get(js if js.startswith("http") else app_url + js).json()
    first = card["questions"][0]
    assert first["interviewer_marks"] == {"training-loop.c1": False}
    assert "The loop iterates over a DataLoader to get batches of inputs and targets." in first["missed"]
    assert card["candidate"] == "Dana" and card["recommendation"] == 4
    assert card["questions"][1]["source"] == "matched"


HOSTILE = (
    '<script>window.pwned=1</script><img src=x onerror="window.pwned=2"> '
    "[click](javascript:window.pwned=3) **bold** <iframe src=javascript:window.pwned=4></iframe> " + "x" * 3000
)


def _file_texts(page, app_url, files_selector: str) -> dict[str, str]:
    links = page.locator(f"{files_selector} a")
    links.first.wait_for()
    hrefs = [links.nth(i).get_attribute("href") for i in range(links.count())]
    return {h.rsplit(".", 1)[-1]: page.request.get(h if h.startswith("http") else app_url + h).text() for h in hrefs}


def _inert_in_markdown(md: str) -> bool:
    """Every line that carries the payload's HTML is in an indented (code) block or escaped."""
    lines = [line for line in md.splitlines() if "<script" in line or "onerror" in line]
    return bool(lines) and all(line.startswith("    ") or "&lt;" in line for line in lines)


def test_hostile_text_stays_text_in_every_view_and_export(app_url, page):
    dialogs = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    # Practice: the profile name, the answer, the summary and both exports.
    _start_practice(page, app_url, "<b>eve</b><script>window.pwned=5</script>")
    page.locator("#practice-answer textarea").fill(TENSOR_ANSWER + " " + HOSTILE)
    page.locator("#practice-submit").click()
    chat = page.locator("#practice-chat")
    chat.get_by_text("Answer it, retry the question").wait_for()
    assert "<script>window.pwned=1</script>" in chat.inner_text()
    assert chat.locator("script, img, iframe").count() == 0
    page.locator("#practice-end").click()
    page.locator("#practice-summary").get_by_text("Session summary").wait_for()
    files = _file_texts(page, app_url, "#practice-export")
    assert _inert_in_markdown(files["md"]) and HOSTILE in json.loads(files["json"])["turns"][0]["answer"]

    # Progress: the profile name is shown as text.
    page.get_by_role("tab", name="Progress").click()
    page.locator("#progress-profile input, #progress-profile textarea").first.fill(
        "<b>eve</b><script>window.pwned=5</script>"
    )
    page.locator("#progress-load").click()
    info = page.locator("#progress-info")
    info.get_by_text("answer(s)").wait_for()
    assert "<script>" in info.inner_text() and info.locator("script, b").count() == 0

    # Co-pilot: candidate, transcript, a typed question, notes, scorecard exports.
    page.get_by_role("tab", name="Co-pilot").click()
    page.locator("#copilot-candidate input, #copilot-candidate textarea").first.fill(HOSTILE[:120])
    pick = page.locator("#copilot-pick input")
    pick.click()
    pick.fill("training loop")
    page.get_by_role("option", name="training loop").first.click()
    page.locator("#copilot-add-bank").click()
    page.locator("#copilot-checklist").get_by_text("The loop iterates over a DataLoader").wait_for()
    page.locator("#copilot-transcript textarea").fill(
        "So first you iterate over the DataLoader to get batches of inputs and targets. " + HOSTILE
    )
    page.locator("#copilot-evidence").get_by_text("“So first you iterate over the DataLoader").wait_for()
    page.locator("#copilot-typed input, #copilot-typed textarea").first.fill(
        "<script>window.pwned=6</script> What is autograd?"
    )
    page.locator("#copilot-add-typed").click()
    page.locator("#copilot-plan").get_by_text("What is autograd?").wait_for()
    page.locator("#copilot-notes textarea").fill(HOSTILE[:200])
    page.locator("#copilot-export").click()
    files = _file_texts(page, app_url, "#copilot-files")
    assert _inert_in_markdown(files["md"])
    for view in ("#copilot-plan", "#copilot-evidence", "#copilot-checklist", "#copilot-flags", "#copilot-follow"):
        if page.locator(view).count():
            assert page.locator(view).locator("script, img, iframe").count() == 0

    assert page.evaluate("window.pwned === undefined") and not dialogs


def _sign_in(browser, app_url: str, user: str, password: str):
    context = browser.new_context()
    page = context.new_page()
    page.set_default_timeout(60_000)
    page.goto(app_url)
    page.get_by_label("username").fill(user)
    page.get_by_label("password").fill(password)
    page.get_by_role("button", name="Login").click()
    page.locator("#practice-start").wait_for()
    return context, page


def test_two_signed_in_users_each_see_only_their_own_history(browser, tmp_path, synced_index):
    users = tmp_path / "users.txt"
    users.write_text("# the hiring team\nann:ann-secret\nbob:bob-secret\n")
    with running_app(tmp_path / "home", synced_index, INTERVIEWER_AUTH_FILE=str(users)) as url:
        ann_ctx, ann = _sign_in(browser, url, "ann", "ann-secret")
        bob_ctx, bob = _sign_in(browser, url, "bob", "bob-secret")
        try:
            profile = ann.locator("#practice-profile input, #practice-profile textarea").first
            ann.wait_for_function(
                "document.querySelector('#practice-profile textarea, #practice-profile input').value === 'ann'"
            )
            assert profile.is_disabled()  # signed in, the profile is the user and cannot be changed
            ann.locator("#practice-order").get_by_text("bank order").click()
            ann.locator("#practice-start").click()
            ann.locator("#practice-chat").get_by_text("Hello ann").wait_for()
            ann.locator("#practice-answer textarea").fill("ANN-ONLY " + TENSOR_ANSWER)
            ann.locator("#practice-submit").click()
            ann.locator("#practice-chat").get_by_text("Answer it, retry the question").wait_for()

            for page, expected in ((ann, "**ann**: 1 answer(s)".replace("**", "")), (bob, "No attempts yet for bob")):
                page.get_by_role("tab", name="Progress").click()
                page.locator("#progress-load").click()
                page.locator("#progress-info").get_by_text(expected).wait_for()
            assert "ANN-ONLY" not in bob.content()
        finally:
            ann_ctx.close()
            bob_ctx.close()
