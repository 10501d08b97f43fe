"""Co-pilot checklist latency: a transcript growing to 300 words in 20-word steps.

Each step is what the app does when the transcript box changes: re-score the whole transcript
(sentences seen before come from the embedding cache) and rebuild the checklist. The baseline is
the same update with a cold cache (every unit embedded again), measured in the same run.
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.common import percentile, print_table  # noqa: E402

TRANSCRIPT = (
    "Okay so the training loop. First you iterate over the DataLoader, which gives you batches of inputs and "
    "targets, already shuffled if you asked for that. For each batch you do the forward pass, outputs equals "
    "model of inputs, and then the criterion compares the outputs with the targets to give you the loss. "
    "Before the backward pass you call optimizer zero grad, because PyTorch accumulates gradients in the grad "
    "fields and you do not want last batch's gradients mixed in. Then loss backward walks the graph back from "
    "the loss and fills in the gradient of every parameter that requires grad. If training is unstable you can "
    "clip the gradient norm at that point. Then optimizer step updates each parameter from its gradient, with "
    "SGD or Adam or whatever you chose. At the end of the epoch you switch to eval mode and run validation "
    "under no grad, so dropout and batch norm behave and no graph is built. You log the validation loss and "
    "save the state dict when it improves, and then you go back to train mode for the next epoch. That is "
    "basically it, plus a learning rate scheduler step per epoch if you use one, and moving each batch to the "
    "same device as the model before the forward pass. Oh and one more thing about the order: step has to "
    "come after backward, because step reads the gradients that backward wrote, and zero grad has to come "
    "before backward or at the very start of the iteration, otherwise you wipe the gradients you just "
    "computed. For mixed precision you would wrap the forward pass in autocast and use a grad scaler, which "
    "scales the loss before backward and unscales before clipping and stepping. And if the batches are too "
    "big for memory you can accumulate gradients over several small batches and only call step and zero grad "
    "every few iterations, dividing the loss by the number of accumulation steps so the scale stays the same."
)


def main(rounds: int = 5) -> None:
    from interviewer import copilot
    from interviewer.service import Interviewer

    os.environ["INTERVIEWER_HOME"] = tempfile.mkdtemp(prefix="interviewer-bench-copilot-")
    svc = Interviewer()
    svc.ensure_index()
    words = TRANSCRIPT.split()[:300]
    assert len(words) == 300, len(words)
    steps = [" ".join(words[:n]) for n in range(20, 301, 20)]
    copilot.update(svc, copilot.plan_from_bank(svc, "training-loop"), steps[0])  # warm the model
    warm, cold = [], []
    for _ in range(rounds):
        svc.embedder._cache.clear()
        item = copilot.plan_from_bank(svc, "training-loop")
        for text in steps:
            t = time.perf_counter()
            copilot.update(svc, item, text)
            copilot.checklist(item)
            warm.append(time.perf_counter() - t)
        for text in steps[-3:]:
            svc.embedder._cache.clear()
            t = time.perf_counter()
            copilot.update(svc, item, text)
            copilot.checklist(item)
            cold.append(time.perf_counter() - t)
    rows = [
        ("steps per round", f"{len(steps)} (20 to {len(words)} words)", ""),
        ("update p50 (ms)", f"{percentile(warm, 0.5) * 1000:.0f}", "as the transcript grows"),
        ("update p95 (ms)", f"{percentile(warm, 0.95) * 1000:.0f}", ""),
        (
            "baseline: cold update of 260-300 words, median (ms)",
            f"{statistics.median(cold) * 1000:.0f}",
            "every unit embedded again",
        ),
        ("ratio p95 / cold", f"{percentile(warm, 0.95) / statistics.median(cold):.2f}", ""),
    ]
    print_table("Co-pilot checklist update latency", rows)


if __name__ == "__main__":
    main()
