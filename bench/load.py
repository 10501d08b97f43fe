"""Many candidates at once: full practice sessions through the app's HTTP API.

Starts one `python app.py` on a free loopback port with a fresh data directory and runs 1, 5, 20 and
50 simulated candidates side by side, each a `gradio_client.Client` (its own Gradio session, so its
own gr.State) doing a whole session: start, submit an answer to each question, next, end. The answers
are the labelled development answers for the question asked, with fillers ("um", "so", ...) put in at
random per candidate, so that no two candidates send the same sentences and the app's embedding cache
cannot answer for the model. Candidates do not pause to think: this is the worst case for the queue.
No LLM is configured (follow-ups come from the rubric), so the numbers are the app's own.

The baseline is a second app with INTERVIEWER_BATCH_SCORING=0 (each answer scored on its own) running
the same ladder with the same answers, in the same run. `--soak-minutes M` then keeps a few candidates
busy for M minutes on a fresh app and reports its memory every minute.

    python -m bench load [--max-seconds 480] [--soak-minutes 0] [--no-ladder]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared"
DEV = SHARED / "data" / "pytorch_dev.jsonl"
sys.path.insert(0, str(ROOT))

from bench.common import percentile, print_grid  # noqa: E402
from tests.conftest import free_port, stop, wait_for_port  # noqa: E402

LEVELS = ((1, 3), (5, 3), (20, 3), (50, 1))  # (candidates, questions each): 50 answer one, to fit the cap
CALL_TIMEOUT = 180.0  # seconds one request may take, queueing included
FILLERS = ("um,", "uh,", "so", "like,", "basically", "I mean,", "you know,", "right,", "kind of", "actually,")
# Settings that would send follow-ups to an LLM: the bench measures the app, not an LLM server.
DROPPED_ENV = ("OPENAI_BASE_URL", "OPENAI_API_KEY", "INTERVIEWER_LLM_MODEL", "INTERVIEWER_BATCH_SCORING")


@dataclass
class Tally:
    """What the candidates of one level (or the soak) saw; their threads add to it."""

    latencies: list[float] = field(default_factory=list)
    sessions: int = 0
    requests: int = 0
    errors: list[str] = field(default_factory=list)
    cut: int = 0  # sessions stopped early by the time cap (not errors: nothing failed)
    max_place: int = 0  # the furthest back in Gradio's queue a request was told it stood (1 = next)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def error(self, message: str) -> None:
        with self.lock:
            self.errors.append(message)


class App:
    """`python app.py` on a free port; always stopped (killed if need be) on leaving the block."""

    def __init__(self, home: Path, name: str, batch: bool):
        self.home, self.name, self.batch = home, name, batch
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = home / f"app-{name}.log"
        self.proc: subprocess.Popen | None = None

    def __enter__(self) -> App:
        tmp = self.home / "tmp"
        tmp.mkdir(exist_ok=True)
        env = {k: v for k, v in os.environ.items() if k not in DROPPED_ENV}
        env |= {
            "INTERVIEWER_HOME": str(self.home),
            "INTERVIEWER_BATCH_SCORING": "1" if self.batch else "0",
            "GRADIO_SERVER_NAME": "127.0.0.1",
            "GRADIO_SERVER_PORT": str(self.port),
            "GRADIO_ANALYTICS_ENABLED": "False",
            "GRADIO_TEMP_DIR": str(tmp),
            "TMPDIR": str(tmp),
        }
        with open(self.log, "wb") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "app.py"], cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT
            )
        try:
            wait_for_port(self.port, self.proc, timeout=300)  # a fresh home embeds the bank first
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc) -> None:
        if self.proc is not None and self.proc.poll() is None:
            stop(self.proc, timeout=15)

    def cpu_seconds(self) -> float:
        """CPU time the app process has used so far (user + system), from /proc (Linux)."""
        fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def rss_mb(self) -> float:
        """Resident memory of the app process, from /proc (Linux)."""
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
        return float("nan")


def load_answers() -> dict[str, list[str]]:
    answers: dict[str, list[str]] = {}
    for line in DEV.read_text(encoding="utf-8").splitlines():
        if line.strip():
            row = json.loads(line)
            answers.setdefault(row["question_id"], []).append(row["answer"])
    return answers


def candidate_answer(text: str, rng: random.Random) -> str:
    """The answer as this candidate says it: fillers at random word boundaries, about one in eight."""
    out = []
    for word in text.split(" "):
        if rng.random() < 0.12:
            out.append(rng.choice(FILLERS))
        out.append(word)
    return " ".join(out)


def _text(message: dict) -> str:
    content = message.get("content")
    if isinstance(content, list):
        return " ".join(part.get("text", "") for part in content if isinstance(part, dict))
    return str(content or "")


def call(client, *args, api_name: str, tally: Tally, deadline: float):
    """One request, waited for with a timeout; records the queue place the server reports meanwhile."""
    from gradio_client.utils import Status

    limit = max(5.0, min(CALL_TIMEOUT, deadline + 60 - time.monotonic()))
    with tally.lock:
        tally.requests += 1
    job = client.submit(*args, api_name=api_name)
    end = time.monotonic() + limit
    while not job.done():
        if time.monotonic() > end:
            job.cancel()
            raise TimeoutError(f"{api_name} got no answer in {limit:.0f} s")
        status = job.status()
        if status.code == Status.IN_QUEUE and status.rank is not None:
            with tally.lock:
                tally.max_place = max(tally.max_place, status.rank + 1)
        time.sleep(0.05)
    return job.result(timeout=5)


def run_session(client, seed: int, questions: int, tally: Tally, deadline: float, bank_ids, answers) -> None:
    """One candidate's session, start to summary; any failure is counted, never raised."""
    rng = random.Random(seed)
    try:
        start = (f"load-{seed}", ["All topics"], "any", questions, "bank order")
        chat, _ = call(client, *start, api_name="/on_start", tally=tally, deadline=deadline)
        for _ in range(questions):
            if time.monotonic() > deadline:
                with tally.lock:
                    tally.cut += 1
                return
            asked = _text(chat[-1])
            qid = next((i for text, i in bank_ids.items() if text in asked), None)
            if qid not in answers:
                raise RuntimeError(f"no development answers for the question asked: {asked[:80]!r}")
            text = candidate_answer(rng.choice(answers[qid]), rng)
            t = time.perf_counter()
            chat, _, _ = call(client, text, chat, api_name="/on_submit", tally=tally, deadline=deadline)
            latency = time.perf_counter() - t
            if not any("**Score" in _text(m) for m in chat[-3:]):
                raise RuntimeError(f"no score in the feedback: {_text(chat[-1])[:120]!r}")
            with tally.lock:
                tally.latencies.append(latency)
            chat, _ = call(client, chat, api_name="/on_next", tally=tally, deadline=deadline)
        summary = call(client, api_name="/on_end", tally=tally, deadline=deadline)
        if "Session summary" not in summary[0]:
            raise RuntimeError(f"no summary at the end: {summary[0][:120]!r}")
        with tally.lock:
            tally.sessions += 1
    except Exception as exc:
        tally.error(f"{type(exc).__name__}: {exc}")


def make_client(url: str):
    from gradio_client import Client

    # A busy app answers the config request slowly: wait as long as for any other request.
    return Client(
        url, verbose=False, download_files=False, analytics_enabled=False, httpx_kwargs={"timeout": CALL_TIMEOUT}
    )


def run_level(app: App, n: int, questions: int, deadline: float, bank_ids, answers, seed: int) -> dict:
    """n candidates side by side, each a full session; clients connect before the clock starts."""
    tally = Tally()

    def connect(_):
        try:
            return make_client(app.url)
        except Exception as exc:
            tally.error(f"connect: {type(exc).__name__}: {exc}")

    with ThreadPoolExecutor(min(n, 8)) as pool:
        clients = [c for c in pool.map(connect, range(n)) if c is not None]
    start, cpu = time.perf_counter(), app.cpu_seconds()
    try:
        with ThreadPoolExecutor(n) as pool:
            for i, client in enumerate(clients):
                pool.submit(run_session, client, seed + i, questions, tally, deadline, bank_ids, answers)
    finally:
        for client in clients:
            client.close()
    wall, cpu = time.perf_counter() - start, app.cpu_seconds() - cpu
    lat = tally.latencies
    return {
        "candidates": n,
        "questions": questions,
        "sessions": f"{tally.sessions}/{n}",
        "answers": len(lat),
        "requests": tally.requests,
        "answers/s": round(len(lat) / wall, 2),
        "p50 (s)": round(percentile(lat, 0.5), 2) if lat else None,
        "p95 (s)": round(percentile(lat, 0.95), 2) if lat else None,
        "errors": len(tally.errors),
        "max queue place": tally.max_place,
        "app CPU s/answer": round(cpu / len(lat), 2) if lat else None,
        "cut by cap": tally.cut,
        "wall (s)": round(wall, 1),
        "error messages": sorted(set(tally.errors))[:5],
    }


def run_ladder(app: App, deadline: float, bank_ids, answers) -> list[dict]:
    # One untimed session first: the first request of a process pays for warming the model and Gradio.
    run_level(app, 1, 1, deadline, bank_ids, answers, seed=1)
    results = []
    for level, (n, questions) in enumerate(LEVELS):
        if deadline - time.monotonic() < 15:
            results.append({"candidates": n, "questions": questions, "sessions": "skipped: time cap", "skipped": True})
            continue
        print(f"  {app.name}: {n} candidates x {questions} questions ...", flush=True)
        results.append(run_level(app, n, questions, deadline, bank_ids, answers, seed=1000 * (level + 1)))
    return results


def run_soak(app: App, minutes: float, bank_ids, answers, candidates: int = 4) -> list[dict]:
    """A steady load for `minutes`; the app's memory at the start, every minute, and at the end."""
    tally = Tally()
    deadline = time.monotonic() + minutes * 60
    counter = iter(range(10**9))
    seed_lock = threading.Lock()

    def candidate() -> None:
        while time.monotonic() < deadline:
            with seed_lock:
                seed = 10**6 + next(counter)
            try:
                client = make_client(app.url)
            except Exception as exc:
                tally.error(f"connect: {exc}")
                continue
            try:
                run_session(client, seed, 3, tally, deadline, bank_ids, answers)
            finally:
                client.close()

    samples = [_sample("0 (start)", app, tally)]
    workers = [threading.Thread(target=candidate, daemon=True) for _ in range(candidates)]
    for w in workers:
        w.start()
    next_sample, minute = time.monotonic() + 60, 0
    while any(w.is_alive() for w in workers):
        time.sleep(0.5)
        if time.monotonic() >= next_sample and time.monotonic() < deadline:
            minute += 1
            samples.append(_sample(str(minute), app, tally))
            next_sample += 60
    for w in workers:
        w.join(CALL_TIMEOUT)
    samples.append(_sample(f"end ({minutes:g})", app, tally))
    return samples


def _sample(label: str, app: App, tally: Tally) -> dict:
    with tally.lock:
        answers, errors = len(tally.latencies), len(tally.errors)
    return {"minute": label, "RSS (MB)": round(app.rss_mb()), "answers": answers, "errors": errors}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench load", description=__doc__.splitlines()[0])
    parser.add_argument("--max-seconds", type=float, default=480, help="cap on the ladder, app start-ups included")
    parser.add_argument("--soak-minutes", type=float, default=0, help="steady load for this long after the ladder")
    parser.add_argument("--no-ladder", action="store_true", help="only the soak")
    args = parser.parse_args(argv)
    if not DEV.exists():
        print(f"\n## Load benchmark\n\nskipped: no {DEV}")
        return
    from interviewer.bank import get_bank

    bank_ids = {q.question: q.id for q in get_bank(None).questions}
    answers = load_answers()
    home = Path(tempfile.mkdtemp(prefix="interviewer-bench-load-"))
    results: dict = {"cpu cores": os.cpu_count(), "concurrency": os.environ.get("INTERVIEWER_CONCURRENCY", "16")}
    cap = time.monotonic() + args.max_seconds
    try:
        if not args.no_ladder:
            # Batched first: its start embeds the bank into the shared home, which the baseline then reuses.
            for name, batch, share in (("batched", True, 0.45), ("baseline", False, 1.0)):
                deadline = time.monotonic() + share * (cap - time.monotonic())
                with App(home, name, batch) as app:
                    results[name] = run_ladder(app, deadline, bank_ids, answers)
            _print_ladder(results)
        if args.soak_minutes > 0:
            print(f"  soak: {args.soak_minutes:g} min ...", flush=True)
            with App(home, "soak", batch=True) as app:
                results["soak"] = run_soak(app, args.soak_minutes, bank_ids, answers)
            headers = ["minute", "RSS (MB)", "answers", "errors"]
            rows = [[str(s[h]) for h in headers] for s in results["soak"]]
            print_grid(f"Soak: 4 candidates for {args.soak_minutes:g} min, app memory", headers, rows)
    finally:
        for log in home.glob("app-*.log"):
            results.setdefault("logs", {})[log.stem] = log.read_text(errors="replace")[-2000:]
        shutil.rmtree(home, ignore_errors=True)
    out = ROOT / "bench" / "results"
    out.mkdir(exist_ok=True)
    (out / "load.json").write_text(json.dumps(results, indent=2))


def _print_ladder(results: dict) -> None:
    headers = ["candidates", "questions", "sessions", "answers", "answers/s", "p50 (s)", "p95 (s)", "errors"]
    headers += ["max queue place", "app CPU s/answer", "cut by cap"]
    for name in ("batched", "baseline"):
        rows = [[str(r.get(h, "")) for h in headers] for r in results[name]]
        title = "batch scoring on" if name == "batched" else "baseline: INTERVIEWER_BATCH_SCORING=0"
        print_grid(f"Load: practice sessions over HTTP, {title}", headers, rows)
        for r in results[name]:
            for message in r.get("error messages", []):
                print(f"- {name}, {r['candidates']} candidates: {message}")
    rows = []
    for b, s in zip(results["batched"], results["baseline"], strict=True):
        if "skipped" in b or "skipped" in s or not s["answers/s"] or not b["p95 (s)"]:
            rows.append([str(b["candidates"]), "skipped", "", "", "", "", ""])
            continue
        rows.append(
            [
                str(b["candidates"]),
                f"{b['answers/s']}",
                f"{s['answers/s']}",
                f"{b['answers/s'] / s['answers/s']:.2f}x",
                f"{b['p95 (s)']}",
                f"{s['p95 (s)']}",
                f"{s['p95 (s)'] / b['p95 (s)']:.2f}x",
            ]
        )
    headers = ["candidates", "answers/s batched", "answers/s baseline", "throughput ratio"]
    headers += ["p95 batched (s)", "p95 baseline (s)", "p95 baseline / batched"]
    print_grid("Load: batch scoring against the baseline (same run)", headers, rows)


if __name__ == "__main__":
    main()
