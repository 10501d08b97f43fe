"""Scoring requests from many sessions, gathered into batches.

On a CPU, embedding twenty answers' sentences in one call is several times faster than twenty calls
side by side (they fight over the same cores and each pads its own short batch). A `ScoreBatcher`
lets every session call `score()` as if it were alone: one worker thread takes whatever is waiting,
scores it with `Scorer.score_many`, and hands each caller its own report or its own error.
"""

from __future__ import annotations

import queue
import threading
from dataclasses import dataclass, field

import numpy as np

from .errors import InterviewerError
from .scoring import Report, Rubric, Scorer


class ScoringTimeout(InterviewerError):
    """An answer waited too long for the scorer (the app is overloaded)."""


@dataclass
class _Job:
    rubric: Rubric
    answer: str
    vectors: dict[str, np.ndarray] | None
    done: threading.Event = field(default_factory=threading.Event)
    report: Report | None = None
    error: BaseException | None = None
    abandoned: bool = False  # the caller stopped waiting: don't spend the model on it


_STOP = object()


class ScoreBatcher:
    """Scores answers submitted from many threads in shared batches, one worker thread.

    The worker starts on the first request. A job that fails is retried alone so that its error
    reaches only its own caller; the worker itself never dies of a scoring error."""

    def __init__(self, scorer: Scorer, max_batch: int = 32, timeout: float = 120.0):
        self.scorer = scorer
        self.max_batch = max_batch
        self.timeout = timeout
        self._jobs: queue.Queue = queue.Queue()
        self._worker: threading.Thread | None = None
        self._closed = False
        self._lock = threading.Lock()

    def score(self, rubric: Rubric, answer: str, vectors: dict[str, np.ndarray] | None = None) -> Report:
        """Score one answer in the next batch; raises what scoring it raised, or ScoringTimeout."""
        job = _Job(rubric, answer, vectors)
        with self._lock:
            if self._closed:  # shutting down: no worker to wait for, score here
                return self.scorer.score(rubric, answer, vectors)
            if self._worker is None:
                self._worker = threading.Thread(target=self._run, name="score-batcher", daemon=True)
                self._worker.start()
            self._jobs.put(job)
        if not job.done.wait(self.timeout):
            job.abandoned = True
            raise ScoringTimeout(
                f"Scoring took longer than {self.timeout:.0f} s because the app is busy; submit the answer again."
            )
        if job.error is not None:
            raise job.error
        return job.report

    @property
    def running(self) -> bool:
        """Whether the worker thread is alive (it starts on the first request)."""
        return self._worker is not None and self._worker.is_alive()

    def close(self, timeout: float = 10.0) -> None:
        """Finish the jobs already submitted, then stop the worker."""
        with self._lock:
            self._closed = True
            worker = self._worker
            self._jobs.put(_STOP)
        if worker is not None:
            worker.join(timeout)

    def _run(self) -> None:
        while True:
            first = self._jobs.get()
            if first is _STOP:
                return
            batch, stop = [first], False
            while len(batch) < self.max_batch:
                try:
                    job = self._jobs.get_nowait()
                except queue.Empty:
                    break
                if job is _STOP:
                    stop = True
                    break
                batch.append(job)
            self._score([j for j in batch if not j.abandoned])
            if stop:
                return

    def _score(self, batch: list[_Job]) -> None:
        try:
            try:
                reports = self.scorer.score_many([(j.rubric, j.answer, j.vectors) for j in batch])
            except Exception:
                # Someone's job failed the batch: score each alone (the batch's vectors are cached by now),
                # so the error goes to its own caller and the others still get their reports.
                for job in batch:
                    try:
                        job.report = self.scorer.score(job.rubric, job.answer, job.vectors)
                    except Exception as exc:
                        job.error = exc
                    job.done.set()
                return
            for job, report in zip(batch, reports, strict=True):
                job.report = report
                job.done.set()
        except BaseException as exc:  # never leave a caller waiting for the full timeout
            for job in batch:
                if not job.done.is_set():
                    job.error = exc
                    job.done.set()
            if not isinstance(exc, Exception):
                raise
