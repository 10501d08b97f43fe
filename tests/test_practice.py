import json
import sqlite3

import pytest

from interviewer.bank import load_bank
from interviewer.history import Attempt, History, HistoryUnavailable, progress
from interviewer.practice import (
    PracticeSession,
    Turn,
    export_json,
    export_markdown,
    follow_up_rubric,
    plan_questions,
    record,
)
from interviewer.scoring import Rubric


@pytest.fixture(scope="module")
def bank():
    return load_bank()


def _attempt(qid, topic, score, missed=(), kind="answer"):
    covers = [
        {"id": f"{qid}.c1", "text": "point one", "covered": "c1" not in missed},
        {"id": f"{qid}.c2", "text": "point two", "covered": "c2" not in missed},
    ]
    return Attempt("ann", "s1", qid, topic, "Q?", "A.", score, score / 20, {"covers": covers}, kind=kind)


def test_bank_order_and_filters(bank):
    assert plan_questions(bank, count=3, order="bank order") == ["tensors-vs-numpy", "autograd", "requires-grad"]
    cnn = plan_questions(bank, topics=["cnn"], count=50, order="random", seed=1)
    assert cnn and all(bank.get(q).topic == "cnn" for q in cnn)
    assert plan_questions(bank, topics=["cnn"], difficulty="hard", count=5) == [] or all(
        bank.get(q).difficulty == "hard" for q in plan_questions(bank, topics=["cnn"], difficulty="hard")
    )


def test_adaptive_puts_new_questions_first_and_weakest_topics_first(bank):
    past = [_attempt("autograd", "autograd", 20, missed=("c1", "c2")), _attempt("optimizers", "optimization", 90)]
    plan = plan_questions(bank, topics=["autograd", "optimization"], count=10, order="adaptive", past=past, seed=0)
    assert "autograd" not in plan[:-2] and "optimizers" not in plan[:-2]  # repeats come last
    new = [q for q in plan if q not in ("autograd", "optimizers")]
    assert bank.get(new[0]).topic == "autograd"  # the weakest topic first
    assert plan[-2:] == ["autograd", "optimizers"]  # the weaker repeat before the stronger


def test_history_saves_reads_deletes_and_summarises(home):
    history = History(home / "history.sqlite3")
    history.save(_attempt("autograd", "autograd", 40, missed=("c2",)))
    history.save(_attempt("autograd", "autograd", 60, missed=("c2",)))
    history.save(_attempt("no-grad", "autograd", 80, missed=("c2",), kind="follow_up"))
    other = _attempt("no-grad", "autograd", 99)
    other.profile = "bob"
    history.save(other)
    again = History(home / "history.sqlite3")  # as after a restart
    mine = again.attempts("ann")
    assert [a.score for a in mine] == [40, 60, 80]
    p = progress(mine)
    assert p.attempts == 2 and p.by_topic == {"autograd": 50.0}
    assert p.most_missed[0][0] == "autograd.c2" and p.most_missed[0][2] == 2
    assert again.delete_profile("ann") == 3
    assert again.attempts("ann") == [] and len(again.attempts("bob")) == 1


def test_a_locked_database_keeps_the_attempt_and_saves_it_later(home):
    path = home / "history.sqlite3"
    history = History(path)
    history.save(_attempt("autograd", "autograd", 10))
    blocker = sqlite3.connect(path)
    blocker.execute("BEGIN EXCLUSIVE")
    with pytest.raises(HistoryUnavailable) as err:
        history.save(_attempt("autograd", "autograd", 20))
    assert "kept" in str(err.value)
    assert len(history.pending) == 1
    blocker.rollback()
    blocker.close()
    history.save(_attempt("autograd", "autograd", 30))
    assert [a.score for a in history.attempts("ann")] == [10, 20, 30]


def test_record_tells_the_user_when_saving_failed(home, bank):
    history = History(home / "history.sqlite3")
    history.attempts("ann")  # creates the database file
    (home / "history.sqlite3").chmod(0o444)
    (home).chmod(0o555)
    try:
        session = PracticeSession("ann", ["autograd"])
        report = {"score": 50, "grade": 2.5, "covers": [], "pitfalls": []}
        note = record(history, session, bank.get("autograd"), Turn("autograd", "answer", "Q", "A", report))
    finally:
        home.chmod(0o755)
        (home / "history.sqlite3").chmod(0o644)
    if note is None:  # root ignores file modes: then the write really went through
        assert History(home / "history.sqlite3").attempts("ann")
    else:
        assert "Not saved yet" in note and len(session.turns) == 1 and history.pending


def test_follow_up_is_scored_against_the_points_the_first_answer_missed(bank):
    rubric = Rubric.from_question(bank.get("training-loop"))
    first = {"covers": [{"covered": c} for c in (True, True, True, False, False)]}
    sub = follow_up_rubric(rubric, first)
    assert [p.id for p in sub.covers] == ["training-loop.c4", "training-loop.c5"]


def test_exports_hold_everything_and_render_candidate_text_inertly(bank):
    session = PracticeSession("ann", ["autograd"])
    report = {
        "score": 55,
        "grade": 2.8,
        "covers": [{"id": "autograd.c1", "text": "Graph.", "covered": True}],
        "pitfalls": [],
        "follow_up": {"text": "Why?", "source": "rubric"},
    }
    session.turns.append(
        Turn(
            "autograd",
            "answer",
            "What is autograd?",
            "<script>alert(1)</script>\n# heading",
            report,
            transcript="uh <script>",
            delivery={"summary": "120 wpm"},
        )
    )
    md = export_markdown(session, bank)
    assert "    <script>alert(1)</script>" in md and "    # heading" in md  # indented: a code block
    assert "What is autograd?" in md and "score 55/100" in md and "120 wpm" in md
    data = json.loads(export_json(session, bank))
    assert data["turns"][0]["answer"].startswith("<script>") and data["turns"][0]["transcript"] == "uh <script>"
    assert data["summary"]["by_topic"] == {"autograd": 55.0}
