import json

import pytest

from interviewer.bank import load_bank
from interviewer.importer import import_document

from .conftest import ROOT, SHARED, run_cli

SEED_IDS = [
    "tensors-vs-numpy",
    "autograd",
    "requires-grad",
    "module-vs-functional",
    "custom-module",
    "training-loop",
    "optimizers",
    "loss-functions",
    "dataset-dataloader",
    "gpu-device",
    "save-load",
    "no-grad",
    "transfer-learning",
    "data-augmentation",
    "gradient-clipping",
    "train-vs-eval",
]

GOOD = """\
id: {qid}
number: 1
question: What does this thing do in PyTorch?
topic: tensors
difficulty: easy
source: test.txt
model_answer: It does the thing, and that is all.
covers:
  - id: {qid}.c1
    text: It does the thing.
pitfalls:
  - id: {qid}.p1
    kind: omission
    text: Forgetting the thing.
"""


def test_bundled_bank_loads_66_questions_without_errors():
    bank = load_bank()
    assert bank.errors == []
    assert len(bank) == 66


def test_seed_rubric_questions_keep_the_seeds_order_numbers_and_ids():
    bank = load_bank()
    seed = [q for q in bank.questions if q.source == "000_b0d200684633144c.txt"]
    assert [q.id for q in seed] == SEED_IDS
    for q in seed:
        assert len(q.covers) == (5 if q.id == "training-loop" else 4), q.id
        assert [p.id for p in q.covers] == [f"{q.id}.c{n}" for n in range(1, len(q.covers) + 1)]
        assert [p.id for p in q.pitfalls] == [f"{q.id}.p1", f"{q.id}.p2"]
        for p in q.pitfalls:
            if p.kind == "misconception":
                assert p.claim and p.correction, p.id


def test_faq_questions_have_2_to_5_points_and_1_to_2_pitfalls():
    faq = [q for q in load_bank().questions if q.source == "001_90ab0edd7e9d8ffc.txt"]
    assert [q.number for q in faq] == list(range(1, 51))
    for q in faq:
        assert 2 <= len(q.covers) <= 5, q.id
        assert 1 <= len(q.pitfalls) <= 2, q.id
    curated = {q.id for q in faq if q.curation}
    assert {"checking-gpu-usage", "installing-pytorch", "sigmoid-activation", "variable-and-autograd"} <= curated


def test_rubric_text_states_facts_instead_of_instructing_the_candidate():
    for q in load_bank().questions:
        for p in q.covers:
            assert not p.text.lower().startswith(("explain", "describe", "mention", "highlight", "discuss")), p.id


def test_cli_list_json_and_show_json():
    listed = run_cli("bank", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    rows = json.loads(listed.stdout)
    assert len(rows) == 66 and rows[0]["id"] == "tensors-vs-numpy"
    shown = run_cli("bank", "show", "autograd", "--json")
    q = json.loads(shown.stdout)
    assert q["id"] == "autograd" and q["topic"]
    assert q["covers"][0]["id"] == "autograd.c1" and q["covers"][0]["text"]
    assert {"id", "text", "kind"} <= set(q["pitfalls"][0])
    by_topic = json.loads(run_cli("bank", "list", "--topic", "cnn", "--json").stdout)
    assert by_topic and all(r["topic"] == "cnn" for r in by_topic)


def test_cli_show_unknown_question_says_how_to_find_one():
    out = run_cli("bank", "show", "no-such-question")
    assert out.returncode != 0
    assert "no-such-question" in out.stderr and "bank list" in out.stderr


@pytest.mark.parametrize(
    ("name", "content", "expected"),
    [
        ("malformed.yaml", "id: broken\nquestion: [unclosed\n", "malformed YAML at line"),
        ("nocovers.yaml", GOOD.format(qid="nocovers").split("covers:")[0] + "covers: []\n", "covers"),
        ("nokind.yaml", GOOD.format(qid="nokind").replace("    kind: omission\n", ""), "kind"),
        ("latin1.yaml", None, "not UTF-8"),
    ],
)
def test_each_bad_file_gets_one_message_naming_file_and_field_and_the_rest_loads(tmp_path, name, content, expected):
    (tmp_path / "good.yaml").write_text(GOOD.format(qid="good"), encoding="utf-8")
    bad = tmp_path / name
    if content is None:
        bad.write_bytes(
            GOOD.format(qid="latin").replace("the thing.", "the thing — café.").encode("latin-1", "replace")
        )
    else:
        bad.write_text(content, encoding="utf-8")
    bank = load_bank(tmp_path)
    assert [q.id for q in bank.questions] == ["good"]
    assert len(bank.errors) == 1
    message = str(bank.errors[0])
    assert name in message and expected in message
    out = run_cli("bank", "validate", str(tmp_path))
    assert out.returncode == 1
    assert name in out.stderr and expected in out.stderr


def test_duplicate_question_id_is_reported_with_both_files(tmp_path):
    (tmp_path / "a.yaml").write_text(GOOD.format(qid="twice"), encoding="utf-8")
    (tmp_path / "b.yaml").write_text(GOOD.format(qid="twice"), encoding="utf-8")
    bank = load_bank(tmp_path)
    assert len(bank.questions) == 1
    assert "duplicate question id" in str(bank.errors[0]) and "a.yaml" in str(bank.errors[0])


def test_validate_passes_on_the_bundled_bank():
    out = run_cli("bank", "validate")
    assert out.returncode == 0, out.stderr
    assert "66 questions" in out.stdout


def test_importer_reads_the_rubric_block_seed():
    drafts = import_document(SHARED / "seeds" / "000_b0d200684633144c.txt")
    assert len(drafts) == 16
    assert [len(d["covers"]) for d in drafts] == [4, 4, 4, 4, 4, 5, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4]
    assert all(len(d["pitfalls"]) == 2 for d in drafts)
    assert drafts[0]["pitfalls"][0]["kind"] == "omission"  # "Failing to mention ..."
    assert drafts[0]["pitfalls"][1]["kind"] == "misconception"  # "Incorrectly stating ..."
    assert not drafts[0]["covers"][0]["text"].lower().startswith("explain")


def test_importer_reads_the_numbered_qa_seed_and_keeps_numbered_steps_in_their_answer():
    drafts = import_document(SHARED / "seeds" / "001_90ab0edd7e9d8ffc.txt")
    assert len(drafts) == 50
    assert drafts[0]["question"] == "What is PyTorch?"
    derivatives = drafts[7]
    assert derivatives["number"] == 8 and "Derivatives" in derivatives["question"]
    assert len({d["id"] for d in drafts}) == 50


def test_import_cli_writes_drafts_that_validate_after_review(tmp_path):
    out_dir = tmp_path / "drafts"
    out = run_cli("bank", "import", str(SHARED / "seeds" / "001_90ab0edd7e9d8ffc.txt"), "-o", str(out_dir))
    assert out.returncode == 0, out.stderr
    files = sorted(out_dir.glob("*.yaml"))
    assert len(files) == 50
    # Drafts are for review: the topic is a TODO that validation catches, and nothing else is broken.
    bank = load_bank(out_dir)
    assert bank.errors and all("topic" in str(e) for e in bank.errors)


def test_import_rejects_a_document_in_neither_format(tmp_path):
    doc = tmp_path / "notes.txt"
    doc.write_text("just some prose without questions\n", encoding="utf-8")
    out = run_cli("bank", "import", str(doc))
    assert out.returncode == 2
    assert "notes.txt" in out.stderr and "numbered questions" in out.stderr


def test_rubric_dir_setting_points_the_cli_at_another_bank(tmp_path):
    (tmp_path / "one.yaml").write_text(GOOD.format(qid="only-one"), encoding="utf-8")
    out = run_cli("bank", "list", "--json", env={"INTERVIEWER_RUBRICS": str(tmp_path)})
    assert [r["id"] for r in json.loads(out.stdout)] == ["only-one"]
    assert ROOT.exists()
