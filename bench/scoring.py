"""Scoring speed and memory: warm latency against its floor, batch throughput, cold start, peak RSS.

The floor is the time to embed the same answer's units once with the same model, measured in the
same run: the scorer can't beat it, so the ratio shows what scoring adds on top of the model.
"""

from __future__ import annotations

import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared"
sys.path.insert(0, str(ROOT))

from bench.common import percentile, print_table  # noqa: E402

ANSWER_150 = (
    "A training step starts by taking a batch of inputs and targets from the DataLoader, which batches and "
    "shuffles the Dataset. The forward pass runs the model on the inputs to get predictions, and the loss "
    "function compares them with the targets, for example cross entropy for classification. Before the "
    "backward pass I call optimizer.zero_grad(), because PyTorch accumulates gradients in the .grad fields "
    "by default. Then loss.backward() walks the autograd graph from the loss back to the parameters and "
    "applies the chain rule. If training is unstable I clip the gradient norm right after backward. "
    "Finally optimizer.step() updates every parameter from its gradient, with SGD or Adam. During "
    "validation I switch to model.eval() and wrap the loop in torch.no_grad(), so dropout and batch norm "
    "behave and no graph is built, which saves memory. At the end of each epoch I save the state_dict "
    "when the validation loss improves."
)


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def cold_start(home: str) -> tuple[float, float]:
    """A fresh process: import, load the model, open the (already synced) index, score once. Returns its
    seconds to the first score and its peak RSS in MB (what the app holds for the model: this bench's own
    process also loads torch for the baselines)."""
    code = (
        "import time; t=time.perf_counter(); from interviewer.service import Interviewer; "
        "Interviewer().score('training-loop', 'zero_grad, backward, step'); s = time.perf_counter() - t; "
        # VmHWM, not ru_maxrss: a child's ru_maxrss starts from its parent's peak on Linux.
        "hwm = [l for l in open('/proc/self/status') if l.startswith('VmHWM')][0].split()[1]; "
        "print(s, int(hwm) / 1024.0)"
    )
    env = {**os.environ, "INTERVIEWER_HOME": home}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=ROOT, check=True)
    seconds, rss = out.stdout.strip().splitlines()[-1].split()
    return float(seconds), float(rss)


def device_name(embedder) -> str:
    if embedder.device.startswith("cuda"):
        import torch

        return f"{embedder.device} ({torch.cuda.get_device_name()})"
    return embedder.device


def export_seconds(home: str) -> float:
    """A fresh process exports the encoder to ONNX, as on the first start with a new data directory."""
    code = (
        "import time; from interviewer.embeddings import SentenceTransformerEmbedder, _export_onnx; "
        "m = SentenceTransformerEmbedder(cache_dir=None).model; t = time.perf_counter(); "
        f"_export_onnx(m[0].auto_model, __import__('pathlib').Path({home!r}) / 'timing.onnx'); "
        "print(time.perf_counter() - t)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    return float(out.stdout.strip().splitlines()[-1])


def scoring_service():
    """(score(answer), embedder, scorer, seconds to sync the index) for the training-loop question. Where
    Chroma is not installed (a GPU machine gets only what the scorer needs), the rubric's sentences are
    embedded by the scorer instead of read from the index; seconds is None then."""
    from interviewer.service import Interviewer

    svc = Interviewer()
    try:
        import chromadb  # noqa: F401
    except ImportError:
        from interviewer.bank import get_bank
        from interviewer.scoring import Rubric
        from interviewer.store import question_items

        question = get_bank().get("training-loop")
        rubric = Rubric.from_question(question)
        # The vectors the index would hold for this question, embedded once here as a sync would.
        items = list(question_items(question))
        stored = dict(zip([i.id for i in items], svc.embedder.embed([i.text for i in items]), strict=True))
        return (lambda answer: svc.scorer.score(rubric, answer, stored)), svc.embedder, svc.scorer, None
    t0 = time.perf_counter()
    svc.ensure_index()
    sync_s = time.perf_counter() - t0
    return (lambda answer: svc.score("training-loop", answer)), svc.embedder, svc.scorer, sync_s


def main(repeats: int = 30) -> None:
    from interviewer.text import split_units

    home = tempfile.mkdtemp(prefix="interviewer-bench-")
    os.environ["INTERVIEWER_HOME"] = home
    score, embedder, scorer, sync_s = scoring_service()
    split = split_units(ANSWER_150)
    every_unit = [u.text for u in split]
    # What the scorer embeds: a window of two sentences, and the whole answer, get the sum of their
    # sentences' vectors instead.
    units = [u.text for u in split if u.kind != "window"]
    score(ANSWER_150)  # warm: model loaded, rubric vectors cached

    def cold(work, arg) -> float:
        """Seconds `work(arg)` takes with no vector cached, as for a new answer."""
        embedder._cache.clear()
        t = time.perf_counter()
        work(arg)
        return time.perf_counter() - t

    def cold_with(runtime: str, texts: list[str]) -> float:
        """`cold` embedding with another of the embedder's runtimes, for the baselines."""
        used = embedder.runtime
        embedder.runtime = runtime
        try:
            return cold(embedder.embed_batch, texts)
        finally:
            embedder.runtime = used

    runtime = getattr(embedder, "runtime", "padded")
    # Baselines on this device: packed rows through torch (when ONNX is in use), and the model's own encode.
    baselines = {"packed": [], "padded": []} if runtime == "onnx" else {"padded": []} if runtime == "packed" else {}
    latencies, floors, every, whole = [], [], [], []
    for _ in range(repeats):
        latencies.append(cold(score, ANSWER_150))
        floors.append(cold(embedder.embed, units))
        every.append(cold(embedder.embed, every_unit))
        whole.append(cold(embedder.embed, [ANSWER_150]))
        for name, times in baselines.items():
            times.append(cold_with(name, units))
    p50, p95, floor = percentile(latencies, 0.5), percentile(latencies, 0.95), statistics.median(floors)

    rows = [
        ("answer", f"{len(ANSWER_150.split())} words, {len(every_unit)} units, {len(units)} embedded", ""),
        ("device, runtime", f"{device_name(embedder)}, {runtime}", ""),
        (
            "index sync from empty (s)",
            f"{sync_s:.1f}" if sync_s is not None else "n/a: no chromadb here",
            "" if sync_s is not None else "the rubric's vectors embedded once, as the index holds them",
        ),
        ("score warm p50 (ms)", f"{p50 * 1000:.0f}", "target <= 60"),
        ("score warm p95 (ms)", f"{p95 * 1000:.0f}", ""),
        ("floor: embed the units once (ms)", f"{floor * 1000:.0f}", "baseline"),
        ("ratio p50 / floor", f"{p50 / floor:.2f}", "target <= 1.5"),
        ("embed every unit, windows too (ms)", f"{statistics.median(every) * 1000:.0f}", "what windows cost embedded"),
        ("embed the whole answer in one pass (ms)", f"{statistics.median(whole) * 1000:.0f}", "not done: summed"),
    ]
    labels = {
        "packed": ("embed the units with torch, packed (ms)", "ONNX Runtime's baseline"),
        "padded": ("embed the units with torch, padded (ms)", "packing's baseline"),
    }
    for name, times in baselines.items():
        label, note = labels[name]
        ratio = f", floor x{statistics.median(times) / floor:.2f}"
        rows.append((label, f"{statistics.median(times) * 1000:.0f}", note + ratio))

    mohler = SHARED / "benchmarks" / "mohler" / "mohler_2273.csv"
    if mohler.exists():
        from interviewer.evaluation import load_mohler
        from interviewer.service import inline_rubric

        data = load_mohler(mohler)
        rubrics = {}
        for r in data:
            rubrics.setdefault(
                r["question_id"], inline_rubric(r["question_id"], r["question"], reference=r["reference_answer"])
            )
        jobs = [(rubrics[r["question_id"]], r["student_answer_clean"] or r["student_answer"], None) for r in data]
        embedder._cache.clear()
        t = time.perf_counter()
        scorer.score_many(jobs)
        rate = len(jobs) / (time.perf_counter() - t)
        rows.append(("grade throughput, Mohler 2273 (answers/s)", f"{rate:.1f}", "target >= 40"))
    else:
        rows.append(("grade throughput", "skipped: no ../shared/benchmarks/mohler", ""))

    if sync_s is not None:
        start_s, start_rss = cold_start(home)
        rows.append(("cold start to first score (s)", f"{start_s:.1f}", "the ONNX file exists"))
        rows.append(("peak RSS of that fresh process (MB)", f"{start_rss:.0f}", "the scorer as the app holds it"))
    if runtime == "onnx":
        rows.append(("ONNX export (s)", f"{export_seconds(home):.1f}", "once per model, on the first start"))
    rows.append(("peak RSS, this process (MB)", f"{peak_rss_mb():.0f}", "target < 1500; torch loaded too"))

    print_table("Scoring benchmark", rows)
    out = ROOT / "bench" / "results"
    out.mkdir(exist_ok=True)
    (out / "scoring.json").write_text(json.dumps({n: v for n, v, _ in rows}, indent=2))


if __name__ == "__main__":
    main()
