"""The scorer with the real bundled model and a real Chroma index on disk."""

import json
import logging
import os
import shutil
import stat
import subprocess
import sys

import numpy as np
import pytest

from interviewer.embeddings import Embedder
from interviewer.scoring import Scorer
from interviewer.service import inline_rubric
from interviewer.text import content_stems, negate, polarity_stems, term_positions

from .conftest import ROOT, run_cli

STRONG_TRAINING_LOOP = """\
For each epoch I iterate over the DataLoader to get batches of inputs and targets.
I run the forward pass, outputs = model(inputs), and compute the loss with criterion(outputs, targets).
Then optimizer.zero_grad() clears the old gradients, loss.backward() computes the gradients of the loss
with respect to the parameters, and optimizer.step() updates the parameters using those gradients.
"""


def _assert_evidence_is_quoted_from(report, answer):
    for item in [*report.covers, *report.pitfalls]:
        if item.evidence is not None:
            assert item.evidence in answer, item.id


def test_a_strong_answer_covers_every_point_with_evidence_from_the_answer(service):
    report = service.score("training-loop", STRONG_TRAINING_LOOP)
    assert [c.covered for c in report.covers] == [True] * 5
    _assert_evidence_is_quoted_from(report, STRONG_TRAINING_LOOP)
    assert "backward" in report.covers[3].evidence
    assert not any(p.flagged for p in report.pitfalls)
    assert report.score >= 70 and report.grade >= 3.5


def test_an_off_topic_answer_covers_nothing_and_scores_low(service):
    answer = "I mostly use Keras. Our team deploys models on Kubernetes and tracks experiments in a spreadsheet."
    report = service.score("training-loop", answer)
    assert not any(c.covered for c in report.covers)
    assert report.score < 30
    flagged = {p.id for p in report.pitfalls if p.flagged}
    assert "training-loop.p1" in flagged  # zero_grad never mentioned: an omission


def test_a_correct_negation_is_not_flagged_but_the_misconception_is(service):
    correct = "NumPy cannot use the GPU by itself; for GPU arrays you need another library such as CuPy."
    wrong = "NumPy arrays can run directly on the GPU, you just pass the device when you create the array."
    ok = {p.id: p for p in service.score("tensors-vs-numpy", correct).pitfalls}
    bad = {p.id: p for p in service.score("tensors-vs-numpy", wrong).pitfalls}
    assert not ok["tensors-vs-numpy.p2"].flagged
    assert bad["tensors-vs-numpy.p2"].flagged
    assert bad["tensors-vs-numpy.p2"].evidence in wrong
    assert "CPU" in bad["tensors-vs-numpy.p2"].correction


def _flag(service, question_id, answer, pitfall_id):
    return {p.id: p for p in service.score(question_id, answer).pitfalls}[pitfall_id]


def test_a_claim_that_names_calls_in_prose_is_compared_and_only_is_not_a_denial(service):
    wrong_modes = "model.eval() switches off gradient tracking, and model.train() switches it back on."
    right_modes = (
        "model.eval() only changes how dropout and batch norm behave; it does not switch off gradient tracking."
    )
    assert _flag(service, "train-vs-eval", wrong_modes, "train-vs-eval.p2").flagged
    assert not _flag(service, "train-vs-eval", right_modes, "train-vs-eval.p2").flagged
    no_grad = (
        "In the training loop you can run the forward pass under torch.no_grad() to save memory "
        "and still call backward afterwards."
    )
    assert _flag(service, "no-grad", no_grad, "no-grad.p1").flagged
    # "only" restricts, it does not deny: this asserts that moving the model is enough.
    only = (
        "Once the model is on the GPU, the inputs get moved over automatically, so you only need .cuda() on the model."
    )
    pit = _flag(service, "gpu-device", only, "gpu-device.p1")
    assert pit.flagged and pit.evidence in only


@pytest.mark.parametrize(
    ("question_id", "pitfall_id", "denial", "assertion"),
    [
        # "define-by-run ... a fresh one every iteration" is the correction's wording, though MiniLM puts
        # the sentence nearer the claim "you define the graph first ..., it's define-and-run".
        (
            "autograd",
            "autograd.p1",
            "It's define-by-run rather than define-then-run: the graph is built as the forward code executes, "
            "and a fresh one every iteration.",
            "PyTorch builds the computation graph once when you define the model and then reuses it for every batch.",
        ),
        # Two cues, an even count like a plain assertion, but "don't" falls on writing 'cuda:0'.
        (
            "gpu-device",
            "gpu-device.p2",
            "I don't write 'cuda:0' everywhere in the code, because then it crashes on a machine without GPU, "
            "and when I want to use the second GPU I must change many lines.",
            "I just write .to('cuda:0') everywhere in the code, it's the simplest way to use the GPU.",
        ),
        # One cue each, as in the claim "after model.eval() you don't need torch.no_grad()", on other words.
        (
            "train-vs-eval",
            "train-vs-eval.p2",
            "For gradients you still want `torch.no_grad()` during evaluation; `eval()` doesn't disable autograd.",
            "After model.eval() you don't need torch.no_grad() any more, the gradients are already off.",
        ),
        # "instead of" denies what follows it without flipping the sentence.
        (
            "loss-functions",
            "loss-functions.p1",
            "Two output units with CrossEntropyLoss work for a binary task: a softmax instead of one sigmoid output.",
            "For a binary task I put a sigmoid on one output unit and use nn.CrossEntropyLoss instead of BCELoss.",
        ),
    ],
    ids=["correction-words", "two-cues", "cues-on-other-words", "instead-of"],
)
def test_a_denial_of_the_wrong_claim_is_not_flagged_and_the_claim_is(
    service, question_id, pitfall_id, denial, assertion
):
    assert not _flag(service, question_id, denial, pitfall_id).flagged
    assert _flag(service, question_id, assertion, pitfall_id).flagged


@pytest.mark.parametrize(
    ("text", "denied", "asserted"),
    [
        (
            "I don't write 'cuda:0' everywhere, because it crashes on a machine without a GPU",
            {"write", "cuda", "gpu"},
            {"crash", "machine"},
        ),
        # A cue denies the verb and its object; the rest of its clause is neither denied nor asserted.
        ("nothing gets calculated inside the block", {"gets", "calculat"}, set()),
        # The brackets of a call do not end the clause.
        ("you don't need torch.no_grad() during eval", {"need", "torch", "grad"}, set()),
        # "instead of" and "rather than" deny what follows them.
        ("a softmax over two classes instead of one sigmoid output", {"sigmoid", "output"}, {"softmax", "class"}),
        # A word used both ways is neither.
        ("the weights get a gradient but the inputs get no gradient", set(), {"weight", "get", "input"}),
    ],
)
def test_polarity_stems_are_the_words_a_cue_falls_on_and_those_it_does_not(text, denied, asserted):
    assert polarity_stems(text) == (frozenset(denied), frozenset(asserted))


def test_step_before_backward_in_code_is_flagged_with_both_calls_in_the_evidence(service):
    answer = (
        "My loop:\n\n```python\nfor x, y in loader:\n    optimizer.zero_grad()\n    loss = criterion(model(x), y)\n"
        "    optimizer.step()\n    loss.backward()\n```\n"
    )
    pit = {p.id: p for p in service.score("training-loop", answer).pitfalls}["training-loop.p2"]
    assert pit.flagged
    assert "step" in pit.evidence and "backward" in pit.evidence
    assert pit.evidence in answer


def test_prose_that_names_calls_out_of_order_but_means_the_right_order_is_not_flagged(service):
    answer = "You call clip_grad_norm_ once loss.backward() has filled in the grads, right before optimizer.step()."
    pit = {p.id: p for p in service.score("gradient-clipping", answer).pitfalls}["gradient-clipping.p2"]
    assert not pit.flagged


def test_a_point_stated_the_other_way_round_is_contradicted_not_covered(embedder):
    rubric = inline_rubric("numpy", "Can NumPy arrays run on a GPU?", covers=["NumPy arrays cannot run on the GPU."])
    report = Scorer(embedder).score(rubric, "NumPy arrays can run on the GPU.")
    point = report.covers[0]
    assert point.contradicted and not point.covered
    assert point.evidence == "NumPy arrays can run on the GPU."


@pytest.mark.parametrize(
    ("statement", "opposite"),
    [
        ("NumPy arrays cannot run on the GPU.", "NumPy arrays can run on the GPU."),
        ("Autograd is PyTorch's differentiation engine.", "Autograd is not PyTorch's differentiation engine."),
        ("A tensor has a shape and a dtype.", "A tensor does not have a shape and a dtype."),
        ("The weights have been updated.", "The weights have not been updated."),
        ("Dataset and DataLoader do the same job", "Dataset and DataLoader do not do the same job"),
        # A verb in -s reads like a plural noun ("the gradients solves"): the whole statement is denied.
        ("clipping the gradients solves it", "It is not true that clipping the gradients solves it"),
        # The only auxiliary is in a subordinate clause: denying it would not deny the statement.
        (
            "once the model is on the GPU it moves the inputs",
            "It is not true that once the model is on the GPU it moves the inputs",
        ),
        ("there's no need for a device variable", "It is not true that there's no need for a device variable"),
        (
            "stack as many transforms as you can, more is better",
            "It is not true that stack as many transforms as you can, more is better",
        ),
    ],
)
def test_negate_gives_a_grammatical_opposite(statement, opposite):
    assert negate(statement) == opposite


@pytest.mark.parametrize(
    ("text", "term", "found"),
    [
        ("optimizer.zero_grad()", "zero_grad", True),
        ("then I call zero grad on the optimizer", "zero_grad", True),  # a transcript has no underscores
        ("save the state dict", "state_dict", True),
        ("switch to model eval for validation", "model.eval", True),
        ("zero gradients everywhere", "zero_grad", False),
        ("a frozen grad", "zero_grad", False),
    ],
)
def test_key_terms_are_found_as_typed_and_as_spoken(text, term, found):
    assert bool(term_positions(text, term)) is found


def test_an_identifiers_parts_are_content_words_as_a_transcript_says_them():
    assert content_stems("call `optimizer.zero_grad()`") == content_stems("call optimizer zero grad")


class ExplodingEmbedder(Embedder):
    def embed_batch(self, texts):
        raise AssertionError("the model must not be touched for an empty answer")


@pytest.mark.parametrize("answer", ["", "   \n\t "])
def test_an_empty_answer_scores_zero_with_a_message_without_touching_the_model(answer):
    rubric = inline_rubric("q", "What is a tensor?", covers=["A tensor is a multi-dimensional array."])
    report = Scorer(ExplodingEmbedder()).score(rubric, answer)
    assert report.score == 0 and report.grade == 0.0
    assert "empty" in report.message


def test_a_very_long_answer_is_cut_at_the_limit_with_a_visible_note(embedder):
    rubric = inline_rubric("q", "What is a tensor?", covers=["A tensor is a multi-dimensional array."])
    answer = "A tensor is a multi-dimensional array. " + "filler words go on and on. " * 2000
    report = Scorer(embedder, max_words=500).score(rubric, answer)
    assert report.truncated and "500 words" in report.message
    assert report.covers[0].covered


def test_score_cli_json_has_the_contract_other_tools_rely_on(tmp_path):
    answer_file = tmp_path / "answer.txt"
    answer_file.write_text(
        "autograd records operations on tensors in a dynamic graph and backward() applies "
        "the chain rule to get gradients of leaf tensors with requires_grad=True."
    )
    out = run_cli("score", "--question", "autograd", "--answer-file", str(answer_file), "--json")
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert report["question_id"] == "autograd"
    assert 0 <= report["score"] <= 100 and 0.0 <= report["grade"] <= 5.0
    cover = report["covers"][0]
    assert set(cover) >= {"id", "index", "text", "covered", "contradicted", "strength", "evidence"}
    assert cover["id"] == "autograd.c1" and cover["index"] == 1 and 0.0 <= cover["strength"] <= 1.0
    pit = report["pitfalls"][0]
    assert set(pit) >= {"id", "index", "text", "kind", "flagged", "evidence", "correction"}
    assert pit["kind"] in ("omission", "misconception")
    assert report["follow_up"]["source"] == "rubric" and report["follow_up"]["text"].endswith("?")


def test_score_cli_explains_an_unknown_question_and_an_unreadable_file():
    out = run_cli("score", "--question", "nope", "--answer", "x")
    assert out.returncode == 2 and "bank list" in out.stderr
    out = run_cli("score", "--question", "autograd", "--answer-file", "/nonexistent/answer.txt")
    assert out.returncode == 2 and "Cannot read" in out.stderr


def test_follow_up_targets_the_most_important_gap_without_giving_the_answer(service):
    answer = "You loop over the DataLoader and call model(inputs) to get outputs."
    report = service.score("training-loop", answer)
    follow = report.follow_up
    assert follow["source"] == "rubric"
    assert follow["target"].startswith("training-loop.")
    missed_texts = [c.text for c in report.covers if not c.covered]
    assert all(text not in follow["text"] for text in missed_texts)


def test_embedder_caches_repeated_texts_and_returns_unit_vectors(embedder):
    first = embedder.embed(["a tensor is an array", "gradients flow backwards"])
    again = embedder.embed(["gradients flow backwards"])
    assert np.allclose(first[1], again[0])
    assert np.allclose(np.linalg.norm(first, axis=1), 1.0, atol=1e-4)


def _packing_texts() -> list[str]:
    from bench.scoring import ANSWER_150
    from interviewer.text import split_units

    texts = [u.text for u in split_units(ANSWER_150) if u.kind != "window"]
    return [*texts, ANSWER_150 * 3, "ok", "é, ü and 日本語 in one line", "x = torch.zeros(3, requires_grad=True)"]


def _vectors_with(embedder, runtime: str, texts: list[str]) -> np.ndarray:
    used = embedder.runtime
    embedder.runtime = runtime
    try:
        return embedder.embed_batch(texts)
    finally:
        embedder.runtime = used


def test_onnx_and_packed_rows_give_the_models_own_vectors(embedder):
    texts = _packing_texts()
    assert embedder.runtime == "onnx"  # on a CPU, with onnxruntime installed
    padded = _vectors_with(embedder, "padded", texts)  # the model's own encode
    for runtime in ("onnx", "packed"):
        vectors = _vectors_with(embedder, runtime, texts)
        assert vectors.shape == padded.shape
        assert np.min(np.sum(vectors * padded, axis=1)) > 0.9999, runtime  # the long one is cut at 128 tokens


def test_the_app_process_never_imports_torch_the_first_start_exports_in_a_child(embedder, tmp_path):
    texts = _packing_texts()
    code = (
        "import json, sys; from interviewer.embeddings import SentenceTransformerEmbedder; "
        f"e = SentenceTransformerEmbedder(cache_dir={str(tmp_path)!r}); "
        f"v = e.embed({texts!r}).tolist(); "
        "print(json.dumps([e.runtime, 'torch' in sys.modules, 'sentence_transformers' in sys.modules, v]))"
    )
    for start in ("first, exporting", "second, export in place"):
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
        runtime, torch_loaded, st_loaded, vectors = json.loads(out.stdout.strip().splitlines()[-1])
        assert (runtime, torch_loaded, st_loaded) == ("onnx", False, False), start
        assert np.min(np.sum(np.asarray(vectors) * embedder.embed(texts), axis=1)) > 0.9999, start
        assert len(list(tmp_path.glob("*.onnx"))) == 1 and len(list(tmp_path.glob("*.json"))) == 1
    # Readable by the other users of a shared models folder as far as the umask allows (not mkstemp's 0600).
    umask = os.umask(0)
    os.umask(umask)
    for export in [*tmp_path.glob("*.onnx"), *tmp_path.glob("*.json")]:
        assert stat.S_IMODE(export.stat().st_mode) == 0o666 & ~umask, export.name
    assert not list(tmp_path.glob("*.part"))  # pathlib's glob matches the hidden temporary names too


def test_a_damaged_onnx_export_falls_back_to_torch_and_is_exported_again(embedder, tmp_path, caplog):
    from interviewer.embeddings import SentenceTransformerEmbedder

    texts = _packing_texts()
    first = SentenceTransformerEmbedder(cache_dir=tmp_path)
    assert first.runtime == "onnx"
    [export] = tmp_path.glob("*.onnx")
    export.write_bytes(export.read_bytes()[:1000])  # as if the disk filled up during a copy

    damaged = SentenceTransformerEmbedder(cache_dir=tmp_path)
    assert damaged.runtime == "packed"
    assert "ONNX Runtime not used" in caplog.text
    assert np.min(np.sum(damaged.embed(texts) * embedder.embed(texts), axis=1)) > 0.9999
    assert SentenceTransformerEmbedder(cache_dir=tmp_path).runtime == "onnx"  # the next start exports again


def test_an_export_that_cannot_be_written_says_why_and_embeds_with_torch(tmp_path, caplog):
    from interviewer.embeddings import SentenceTransformerEmbedder

    blocked = tmp_path / "models"
    blocked.write_text("a file where the export folder should be")
    chosen = SentenceTransformerEmbedder(cache_dir=blocked)
    assert chosen.runtime == "packed"
    assert "ONNX Runtime not used" in caplog.text and "the export failed" in caplog.text
    assert chosen.embed(["still scored"]).shape == (1, 384)


def test_a_model_that_cannot_be_exported_is_not_tried_again_at_every_start(tmp_path, caplog):
    from interviewer.embeddings import SentenceTransformerEmbedder, bundled_model_path

    # A CLS-pooled copy of the bundled model: its vector is not a mean of token states, so it can't be packed.
    model = tmp_path / "cls-model"
    shutil.copytree(bundled_model_path(), model)
    pooling = model / "1_Pooling" / "config.json"
    config = json.loads(pooling.read_text())
    pooling.write_text(json.dumps({**config, "pooling_mode_cls_token": True, "pooling_mode_mean_tokens": False}))
    caplog.set_level(logging.INFO, logger="interviewer.embeddings")
    starts = [SentenceTransformerEmbedder(model, cache_dir=tmp_path / "models") for _ in range(2)]
    assert [e.runtime for e in starts] == ["padded", "padded"]
    assert caplog.text.count("Exporting cls-model") == 1  # the second start spent no child process
    assert caplog.text.count("can't be encoded in packed rows") == 2  # each start says why
    assert "to try again" in caplog.text
    assert starts[1].embed(["still scored"]).shape == (1, 384)


def test_an_export_that_fails_to_write_is_tried_again_at_the_next_start(tmp_path, caplog):
    from interviewer.embeddings import SentenceTransformerEmbedder

    first = SentenceTransformerEmbedder(cache_dir=tmp_path)
    target = tmp_path / f"{first.name}-{first._export_key()}.onnx"
    (target / "in-the-way").mkdir(parents=True)  # the child's final rename fails: an OSError, not the model's fault
    assert first.runtime == "packed"
    assert "ONNX Runtime not used" in caplog.text and "Error" in caplog.text
    assert not list(tmp_path.glob("*.failed"))  # not remembered: the next start tries again
    shutil.rmtree(target)
    assert SentenceTransformerEmbedder(cache_dir=tmp_path).runtime == "onnx"


def test_the_torch_runtime_setting_keeps_onnx_out(tmp_path):
    from interviewer.embeddings import get_embedder
    from interviewer.settings import Settings

    chosen = get_embedder(Settings(env={"INTERVIEWER_HOME": str(tmp_path), "INTERVIEWER_EMBED_RUNTIME": "torch"}))
    assert chosen.runtime == "packed"
    assert not (tmp_path / "models").exists()


def test_pack_rows_places_every_text_once_in_rows_of_about_equal_length():
    from interviewer.embeddings import pack_rows

    lengths = [44, 37, 32, 30, 26, 26, 23, 21, 19, 15, 128, 3]
    rows = pack_rows(lengths, capacity=128)
    assert sorted(i for row in rows for i in row) == list(range(len(lengths)))
    loads = [sum(lengths[i] for i in row) for row in rows]
    assert len(rows) == 4  # ceil(404 / 128)
    assert max(loads) - min(loads) <= max(lengths)
    assert pack_rows([]) == []
