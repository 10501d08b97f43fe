"""Would a cross-encoder fine-tuned for polarity sharpen the misconception flags?

`python -m bench.fit_polarity` answers with measurements, not a shipped model (about 15 minutes on a
2-core CPU). It fine-tunes the bundled all-MiniLM-L6-v2's top two layers and a three-way head
(entails, contradicts, neither) as a cross-encoder that reads a claim and a sentence together, which
cosine similarity and negation counting cannot do. The training pairs:

- SemEval-2013's student answers (`../shared/benchmarks/semeval2013/train_3way.csv`) from four fifths
  of its questions, each with up to two best reference answers, labelled correct (entails),
  contradictory or incorrect (neither);
- unless `--no-bank`, pairs drawn from the bank's rubrics so the model knows their words:
  each phrasing of a wrong claim entails the others; its correction, and its grammatical negation,
  contradict it; another misconception of the same question is neither; a covers point entails itself
  and is contradicted by its negation. No labelled interview answer is used.

It reports macro-F1 on the held-out fifth of SemEval's questions, then asks the model, for each
misconception the scorer flags on the dev set, whether the flagged unit contradicts the claim it is
closest to: a filter that helps withdraws the false flags (units that deny the claim) and keeps the
true ones. The table gives the separation as ROC AUC (0.5 is chance) and the flags withdrawn when the
model finds contradiction likelier than entailment.
"""

from __future__ import annotations

import argparse
import csv
import itertools
import os
import random
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
SEMEVAL = ROOT.parent / "shared" / "benchmarks" / "semeval2013" / "train_3way.csv"
sys.path.insert(0, str(ROOT))

from bench.common import dev_flags, print_grid  # noqa: E402

DEV = ROOT.parent / "shared" / "data" / "pytorch_dev.jsonl"
ENTAILS, CONTRADICTS, NEITHER = 0, 1, 2

SEMEVAL_LABELS = {"correct": ENTAILS, "contradictory": CONTRADICTS, "incorrect": NEITHER}
TUNED_LAYERS = 2
BATCH = 32
EPOCHS = 2


def semeval_pairs(rows: list[dict], questions: set[str]) -> list[tuple[str, str, int]]:
    """(reference, answer, label) for the answers to `questions`, against up to two best references."""
    pairs = []
    for row in rows:
        if row["question_id"] not in questions:
            continue
        refs = [r.split("] ", 1)[-1].strip() for r in row["all_reference_answers"].split(" || ") if "[BEST]" in r]
        for ref in (refs or [row["reference_answer"]])[:2]:
            pairs.append((ref, row["student_answer"], SEMEVAL_LABELS[row["label"]]))
    return pairs


def bank_pairs(bank, rnd: random.Random) -> list[tuple[str, str, int]]:
    """Pairs from the rubrics' own sentences (see the module's docstring). Code phrasings are left out,
    as the scorer leaves them out; a negation that could only be "It is not true that ..." too."""
    from interviewer.text import negate

    def denial(text: str) -> str | None:
        negated = negate(text)
        return None if negated.startswith("It is not true that") else negated

    pairs = []
    for q in bank.questions:
        wrong = [p for p in q.pitfalls if p.kind == "misconception" and p.claim]
        for p in wrong:
            claims = [c for c in [p.claim, *p.claims] if "`" not in c]
            pairs += [(a, b, ENTAILS) for a, b in itertools.permutations(claims, 2)]
            for claim in claims:
                if p.correction:
                    pairs += [(claim, p.correction, CONTRADICTS), (p.correction, claim, CONTRADICTS)]
                if negated := denial(claim):
                    pairs += [(claim, negated, CONTRADICTS), (negated, claim, CONTRADICTS)]
            for other in wrong:
                if other is not p:
                    pairs += [(c, rnd.choice([other.claim, *other.claims]), NEITHER) for c in claims[:2]]
        for point in q.covers:
            pairs.append((point.text, point.text, ENTAILS))
            if negated := denial(point.text):
                pairs.append((point.text, negated, CONTRADICTS))
    return pairs


def cross_encoder(encoder):
    """`encoder`, then the mean of the pair's token states through a linear head over the three labels."""
    import torch

    class CrossEncoder(torch.nn.Module):
        def __init__(self, encoder):
            super().__init__()
            self.encoder = encoder
            self.head = torch.nn.Linear(encoder.config.hidden_size, 3)

        def forward(self, input_ids, token_type_ids, attention_mask):
            hidden = self.encoder(
                input_ids=input_ids, token_type_ids=token_type_ids, attention_mask=attention_mask
            ).last_hidden_state
            weights = attention_mask.unsqueeze(-1).to(hidden.dtype)
            return self.head((hidden * weights).sum(1) / weights.sum(1))

    return CrossEncoder(encoder)


def train(pairs: list[tuple[str, str, int]], seed: int = 0):
    """The cross-encoder fine-tuned on `pairs`: the top TUNED_LAYERS layers and the head learn, the rest
    stays the bundled model's. Classes are weighted by their inverse frequency."""
    import torch
    from transformers import AutoModel, AutoTokenizer

    from interviewer.embeddings import bundled_model_path

    torch.manual_seed(seed)
    rnd = random.Random(seed)
    base = bundled_model_path()
    tokenizer = AutoTokenizer.from_pretrained(str(base), local_files_only=True)
    model = cross_encoder(AutoModel.from_pretrained(str(base), local_files_only=True, dtype=torch.float32))
    layers = model.encoder.encoder.layer
    for param in model.encoder.parameters():
        param.requires_grad = False
    tuned = [p for layer in layers[len(layers) - TUNED_LAYERS :] for p in layer.parameters()]
    for param in tuned:
        param.requires_grad = True
    optimiser = torch.optim.AdamW(
        [{"params": tuned, "lr": 5e-5}, {"params": model.head.parameters(), "lr": 1e-3}], weight_decay=0.01
    )
    counts = np.bincount([label for _, _, label in pairs], minlength=3)
    loss_of = torch.nn.CrossEntropyLoss(weight=torch.tensor(len(pairs) / (3 * counts), dtype=torch.float32))
    order = list(pairs)
    per_epoch = len(order) // BATCH
    started = time.perf_counter()
    model.train()
    for step in range(EPOCHS * per_epoch):
        if step % per_epoch == 0:
            rnd.shuffle(order)
        batch = order[(step % per_epoch) * BATCH : (step % per_epoch + 1) * BATCH]
        loss = loss_of(logits_of(model, tokenizer, batch), torch.tensor([label for _, _, label in batch]))
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
        if step % 100 == 0:
            elapsed = time.perf_counter() - started
            print(f"step {step}/{EPOCHS * per_epoch}  loss {loss.item():.3f}  {elapsed:.0f} s", flush=True)
    return model.eval(), tokenizer


def logits_of(model, tokenizer, pairs: list[tuple[str, str, int]]):
    """The model's logits for a batch of (first, second, label) pairs, read together as BERT pairs."""
    enc = tokenizer(
        [a for a, _, _ in pairs],
        [b for _, b, _ in pairs],
        padding=True,
        truncation=True,
        max_length=128,
        return_tensors="pt",
    )
    return model(enc["input_ids"], enc["token_type_ids"], enc["attention_mask"])


def predict(model, tokenizer, pairs: list[tuple[str, str, int]]) -> np.ndarray:
    """P(entails), P(contradicts), P(neither) for each pair."""
    import torch

    out = []
    with torch.no_grad():
        for i in range(0, len(pairs), 128):
            out.append(torch.softmax(logits_of(model, tokenizer, pairs[i : i + 128]), -1).numpy())
    return np.concatenate(out)


def nearest_claims(svc) -> list[tuple[str, str, bool]]:
    """(claim, unit, true?) for each misconception the scorer flags on the dev set: the flagged unit and
    the prose phrasing of the wrong claim it is closest to."""
    flags = []
    for unit, claims, true in dev_flags(svc, DEV):
        prose = [c for c in claims if "`" not in c]
        vectors = svc.embedder.embed([unit, *prose])
        flags.append((prose[int(np.argmax(vectors[1:] @ vectors[0]))], unit, true))
    return flags


def main() -> None:
    from sklearn.metrics import f1_score, roc_auc_score

    parser = argparse.ArgumentParser(prog="python -m bench.fit_polarity", description=__doc__.splitlines()[0])
    parser.add_argument("--no-bank", dest="bank", action="store_false", help="train on SemEval's pairs alone")
    args = parser.parse_args()

    os.environ.setdefault("INTERVIEWER_HOME", tempfile.mkdtemp(prefix="interviewer-fit-"))
    from interviewer.service import Interviewer

    svc = Interviewer()
    svc.ensure_index()
    rnd = random.Random(0)
    with SEMEVAL.open(encoding="utf-8", newline="") as fh:
        rows = list(csv.DictReader(fh))
    questions = sorted({r["question_id"] for r in rows})
    rnd.shuffle(questions)
    held = set(questions[: len(questions) // 5])
    train_pairs = semeval_pairs(rows, set(questions) - held)
    if args.bank:
        train_pairs += bank_pairs(svc.bank, rnd)
    print(f"{len(train_pairs)} training pairs", flush=True)
    model, tokenizer = train(train_pairs)
    name = "SemEval + bank pairs" if args.bank else "SemEval alone"

    test = semeval_pairs(rows, held)
    truth = np.array([label for _, _, label in test])
    guess = predict(model, tokenizer, test).argmax(1)
    two_way = truth != NEITHER
    f1_two = f1_score(truth[two_way], np.where(guess[two_way] == CONTRADICTS, CONTRADICTS, ENTAILS), average="macro")
    print_grid(
        f"SemEval-2013, {len(held)} held-out questions ({len(test)} pairs): macro-F1",
        ["trained on", "3-way", "correct vs contradictory"],
        [[name, f"{f1_score(truth, guess, average='macro'):.3f}", f"{f1_two:.3f}"]],
    )

    flags = nearest_claims(svc)
    true = np.array([t for _, _, t in flags])
    probs = predict(model, tokenizer, [(claim, unit, 0) for claim, unit, _ in flags])
    withdrawn = probs[:, CONTRADICTS] > probs[:, ENTAILS]
    print_grid(
        f"Dev set: the scorer's {len(flags)} misconception flags ({true.sum()} true, {(~true).sum()} false)",
        ["trained on", "AUC, false vs true flags", "withdrawn: true", "withdrawn: false"],
        [
            [
                name,
                f"{roc_auc_score(~true, probs[:, CONTRADICTS] - probs[:, ENTAILS]):.2f}",
                str(int((withdrawn & true).sum())),
                str(int((withdrawn & ~true).sum())),
            ]
        ],
    )
    svc.close()


if __name__ == "__main__":
    main()
