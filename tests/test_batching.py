"""Scoring answers from many sessions in shared batches: same reports, errors to their own caller."""

import json
import threading

import numpy as np
import pytest

from interviewer.batching import ScoreBatcher, ScoringTimeout
from interviewer.scoring import Scorer
from interviewer.service import inline_rubric

from .conftest import SHARED

DEV = SHARED / "data" / "pytorch_dev.jsonl"


class GatedScorer(Scorer):
    """The real scorer, whose first batch waits for `release`, so the next requests queue up behind it."""

    def __init__(self, embedder):
        super().__init__(embedder)
        self.release = threading.Event()
        self.batch_sizes: list[int] = []

    def score_many(self, jobs, chunk=256):
        if not self.batch_sizes:
            self.release.wait(30)
        self.batch_sizes.append(len(jobs))
        return super().score_many(jobs, chunk)


def _dev_answers(n: int) -> list[dict]:
    if not DEV.exists():
        pytest.skip(f"no {DEV}")
    rows = [json.loads(line) for line in DEV.read_text(encoding="utf-8").splitlines() if line.strip()]
    return rows[::5][:n]  # one answer per question


def _in_threads(batcher: ScoreBatcher, jobs: list, started: threading.Barrier | None = None) -> list:
    results: list = [None] * len(jobs)

    def call(i, job):
        if started is not None:
            started.wait(30)
        try:
            results[i] = batcher.score(*job)
        except Exception as exc:
            results[i] = exc

    threads = [threading.Thread(target=call, args=(i, job)) for i, job in enumerate(jobs)]
    for t in threads:
        t.start()
    return threads, results


def _summary(report) -> tuple:
    return (
        report.question_id,
        [c.covered for c in report.covers],
        [c.evidence for c in report.covers],
        [p.flagged for p in report.pitfalls],
    )


def _dev_jobs(service, n: int) -> list[tuple]:
    service.ensure_index()
    return [
        (service.rubric(r["question_id"]), r["answer"], service.store.vectors_for(r["question_id"]))
        for r in _dev_answers(n)
    ]


def _all_at_once(service, jobs: list[tuple]) -> tuple[GatedScorer, ScoreBatcher, list]:
    """Submit every job from its own thread while the scorer is held, then let it go: one batch's worth."""
    scorer = GatedScorer(service.embedder)
    batcher = ScoreBatcher(scorer)
    started = threading.Barrier(len(jobs) + 1)
    threads, results = _in_threads(batcher, jobs, started)
    started.wait(30)
    threading.Timer(0.5, scorer.release.set).start()
    for t in threads:
        t.join(60)
    return scorer, batcher, results


def test_concurrent_answers_are_scored_together_and_get_the_same_reports_as_one_by_one(service):
    jobs = _dev_jobs(service, 10)
    expected = [service.scorer.score(*job) for job in jobs]
    service.embedder._cache.clear()  # the batch must embed the answers itself, not read them back

    scorer, batcher, results = _all_at_once(service, jobs)
    batcher.close()

    # Padding differs between a batch and a lone answer, so the floats may differ in the last digits.
    assert [_summary(r) for r in results] == [_summary(r) for r in expected]
    assert [r.raw for r in results] == pytest.approx([r.raw for r in expected], abs=0.05)
    assert sum(scorer.batch_sizes) == len(jobs) and max(scorer.batch_sizes) > 1
    assert not batcher.running


def test_an_error_in_one_answer_reaches_only_its_caller_and_the_worker_keeps_going(service):
    good = _dev_jobs(service, 4)
    # A stored vector of the wrong size: scoring this one answer fails inside the shared batch.
    broken = (inline_rubric("broken", "What is a tensor?", covers=["A tensor is an array."]), "An array.", None)
    broken_vectors = {"broken.c1": np.zeros(3, dtype=np.float32)}
    broken = (broken[0], broken[1], broken_vectors)
    jobs = [good[0], good[1], broken, good[2], good[3]]

    _, batcher, results = _all_at_once(service, jobs)

    assert isinstance(results[2], ValueError)
    for job, result in zip(jobs, results, strict=True):
        if job is not broken:
            assert result.question_id == job[0].question_id and 0 <= result.score <= 100
    again = batcher.score(*good[0])
    assert again.score == results[0].score
    batcher.close()
    assert not batcher.running
    assert batcher.score(*good[1]).score == results[1].score  # closed: scored in the caller's thread


def test_a_caller_stops_waiting_after_the_timeout_with_an_error_that_says_what_to_do(embedder):
    scorer = GatedScorer(embedder)
    batcher = ScoreBatcher(scorer, timeout=0.3)
    rubric = inline_rubric("t", "What is a tensor?", covers=["A tensor is a multi-dimensional array."])
    with pytest.raises(ScoringTimeout, match="submit the answer again"):
        batcher.score(rubric, "A tensor is an n-dimensional array.")
    scorer.release.set()
    batcher.close()
    assert not batcher.running


def test_batch_scoring_can_be_switched_off(monkeypatch):
    from interviewer.service import Interviewer
    from interviewer.settings import Settings

    monkeypatch.setenv("INTERVIEWER_BATCH_SCORING", "0")
    svc = Interviewer(Settings())
    assert svc.batcher is None
    rubric = inline_rubric("t", "What is a tensor?", covers=["A tensor is a multi-dimensional array."])
    assert svc.score_rubric(rubric, "A tensor is a multi-dimensional array.").covers[0].covered
