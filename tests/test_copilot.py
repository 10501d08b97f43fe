"""The co-pilot's core: matching typed questions, live checklist updates, human marks, the scorecard."""

import json

import pytest

from interviewer import copilot

from .conftest import run_cli

PART_ONE = "So first you iterate over the DataLoader to get batches of inputs and targets."
PART_TWO = (
    " Then the forward pass gives outputs = model(inputs), the criterion computes the loss, "
    "optimizer.zero_grad() clears the old gradients, loss.backward() computes new ones and "
    "optimizer.step() updates the weights."
)


def test_a_bank_question_typed_differently_is_matched(service):
    item, notice = copilot.plan_from_text(service, "How would you save and later load a PyTorch model's weights?")
    assert item.source == "matched" and item.rubric.question_id == "save-load"
    assert item.match_similarity >= copilot.MATCH_THRESHOLD and "save-load" in notice


def test_a_question_far_from_the_bank_gets_a_provisional_checklist_with_origins(service):
    item, notice = copilot.plan_from_text(service, "Describe a time you disagreed with a colleague about a deadline.")
    assert item.source == "provisional" and "No close match" in notice
    assert len(item.rubric.covers) >= 3
    assert all(item.origins[p.id] for p in item.rubric.covers)


def test_too_short_a_typed_question_is_refused_with_a_message(service):
    with pytest.raises(ValueError, match="whole question"):
        copilot.plan_from_text(service, "why?")


def test_the_checklist_grows_with_the_transcript(service):
    item = copilot.plan_from_bank(service, "training-loop")
    copilot.update(service, item, PART_ONE)
    first = {r["id"]: r["final"] for r in copilot.checklist(item)}
    copilot.update(service, item, PART_ONE + PART_TWO)
    second = {r["id"]: r["final"] for r in copilot.checklist(item)}
    assert first["training-loop.c1"] and not first["training-loop.c4"]
    assert second["training-loop.c4"] and second["training-loop.c5"]
    assert item.suggestions == [] or all(s["text"].endswith("?") for s in item.suggestions)
    copilot.update(service, item, "")
    assert item.report is None and all(not r["final"] for r in copilot.checklist(item))


def test_the_interviewers_marks_survive_later_updates_and_show_in_the_scorecard(service):
    interview = copilot.Interview("Dana", "ML engineer")
    item = copilot.plan_from_bank(service, "training-loop")
    interview.questions.append(item)
    copilot.update(service, item, PART_ONE)
    machine = [r["id"] for r in copilot.checklist(item) if r["machine"]]
    copilot.set_marks(item, [*machine, "training-loop.c5"])  # the interviewer heard the update step
    copilot.set_marks(item, [m for m in [*machine, "training-loop.c5"] if m != "training-loop.c1"])
    copilot.update(service, item, PART_ONE + " And that's the loop.")
    rows = {r["id"]: r for r in copilot.checklist(item)}
    assert rows["training-loop.c5"]["final"] and rows["training-loop.c5"]["interviewer"] is True
    assert not rows["training-loop.c1"]["final"] and rows["training-loop.c1"]["machine"]
    interview.recommendation = 4
    card = copilot.scorecard(interview)
    assert card["questions"][0]["interviewer_marks"] == {"training-loop.c1": False, "training-loop.c5": True}
    assert card["recommendation"] == 4
    md = copilot.scorecard_markdown(interview)
    assert "(interviewer)" in md and "Recommendation (interviewer): 4 / 5" in md


def test_dismissed_flags_stay_dismissed(service):
    item = copilot.plan_from_bank(service, "tensors-vs-numpy")
    copilot.update(service, item, "NumPy arrays can run directly on the GPU, you just pass the device.")
    raised = copilot.flags(item)
    assert any(f["id"] == "tensors-vs-numpy.p2" for f in raised)
    copilot.dismiss_flags(item, ["tensors-vs-numpy.p2"])
    copilot.update(service, item, "NumPy arrays can run directly on the GPU, you just pass the device. Yes.")
    assert next(f for f in copilot.flags(item) if f["id"] == "tensors-vs-numpy.p2")["dismissed"]


def test_the_same_transcript_gives_the_same_checklist_as_the_score_command(service):
    transcript = PART_ONE + PART_TWO
    item = copilot.update(service, copilot.plan_from_bank(service, "training-loop"), transcript)
    out = run_cli("score", "--question", "training-loop", "--answer", transcript, "--json", "--no-llm")
    report = json.loads(out.stdout)
    assert [r["final"] for r in copilot.checklist(item)] == [c["covered"] for c in report["covers"]]
    assert [r["evidence"] for r in copilot.checklist(item)] == [c["evidence"] for c in report["covers"]]
    assert [f["id"] for f in copilot.flags(item)] == [p["id"] for p in report["pitfalls"] if p["flagged"]]


def test_scorecards_are_saved_and_read_back(home, service):
    from interviewer.history import History

    history = History(home / "history.sqlite3")
    interview = copilot.Interview("Dana")
    interview.questions.append(copilot.plan_from_bank(service, "no-grad"))
    history.save_scorecard(interview.id, "local", "Dana", copilot.scorecard(interview))
    interview.recommendation = 3
    history.save_scorecard(interview.id, "local", "Dana", copilot.scorecard(interview))
    cards = History(home / "history.sqlite3").scorecards("local")
    assert len(cards) == 1 and cards[0]["recommendation"] == 3
    assert History(home / "history.sqlite3").scorecards("someone-else") == []


def test_a_transcript_that_jumps_to_another_planned_question_raises_a_notice(service):
    interview = copilot.Interview()
    loop = copilot.plan_from_bank(service, "training-loop")
    saving = copilot.plan_from_bank(service, "save-load")
    interview.questions += [loop, saving]
    copilot.update(service, loop, PART_ONE)
    assert copilot.detect_jump(service, interview, loop) is None
    copilot.update(service, loop, PART_ONE + " To save it you call torch.save on the model's state_dict.")
    notice = copilot.detect_jump(service, interview, loop)
    assert notice and "question 2" in notice
