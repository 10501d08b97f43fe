"""Hostile input: the rubric loader, the seed importer, the scorer and the batch grader give a result
or a clear error for anything they are handed, never an unexpected exception and never a hang.

Property-based (hypothesis) with small example counts: every scoring call embeds on the CPU. The
loader and importer tests are `fresh_home`: they need no rubric index.
"""

from __future__ import annotations

import copy
import io
import json
import re
import string
import tempfile
import threading
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.configuration import set_hypothesis_home_dir

from interviewer.bank import ID_PATTERN, Bank, load_bank
from interviewer.errors import RubricError
from interviewer.grading import grade_file, grade_lines, parse_line
from interviewer.importer import import_document, write_drafts
from interviewer.scoring import Report, Scorer
from interviewer.settings import Settings

from .conftest import ROOT, SHARED

# Hypothesis caches under ./.hypothesis even without a database: keep the repository clean.
set_hypothesis_home_dir(tempfile.mkdtemp(prefix="interviewer-hypothesis-"))
HANG_SECONDS = 30  # far above any real run: only a hang (or a quadratic blow-up) gets near it
REAL_RUBRICS = sorted((ROOT / "rubrics" / "pytorch-interview").glob("*.yaml"))
REAL_DOCS = [yaml.safe_load(p.read_text(encoding="utf-8")) for p in REAL_RUBRICS]
BANK_IDS = [doc["id"] for doc in REAL_DOCS]
SEED_TEXTS = [p.read_text(encoding="utf-8") for p in sorted((SHARED / "seeds").glob("*.txt"))]
REQUIRED = ["id", "number", "question", "topic", "difficulty", "source", "model_answer", "covers"]


def fuzz_settings(examples: int):
    return settings(
        max_examples=examples,
        deadline=None,
        database=None,  # no .hypothesis folder in the repository
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large],
    )


def within(seconds: float, fn, *args, **kwargs):
    """Run `fn` in a daemon thread: its result or its exception, or a failure if it is still running.

    A call stuck in C code that holds the GIL (a backtracking regex) is only reported when it returns."""
    box: dict = {}

    def target():
        try:
            box["value"] = fn(*args, **kwargs)
        except BaseException as exc:  # re-raised below, in the test's thread
            box["error"] = exc

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"{fn.__name__} still running after {seconds} s: it hangs on this input"
    if "error" in box:
        raise box["error"]
    return box["value"]


# -- generators -----------------------------------------------------------------------------------
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda kids: st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=8), kids, max_size=4),
    max_leaves=12,
)
WRONG_VALUES = [None, 0, -1, 10**30, 1.5, float("nan"), True, "", "x" * 5000, "Not An Id!", [], [1, "a"], {}]


def _paths(node, prefix=()):
    yield prefix
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _paths(value, (*prefix, key))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _paths(value, (*prefix, i))


def mutate_doc(doc, rnd) -> dict:
    """A real rubric with one to three keys dropped, retyped or duplicated, at any depth."""
    doc = copy.deepcopy(doc)
    for _ in range(rnd.randint(1, 3)):
        paths = [p for p in _paths(doc) if p]
        if not paths:
            break
        path = rnd.choice(paths)
        parent = doc
        for key in path[:-1]:
            parent = parent[key]
        op = rnd.choice(["drop", "retype", "duplicate"])
        if op == "drop":
            del parent[path[-1]]
        elif op == "retype":
            parent[path[-1]] = copy.deepcopy(rnd.choice(WRONG_VALUES))
        elif isinstance(parent, list):
            parent.insert(path[-1], copy.deepcopy(parent[path[-1]]))  # a duplicated covers point or pitfall
        else:
            parent[path[-1]] = copy.deepcopy(parent[rnd.choice(list(parent))])  # a sibling's value
    return doc


def garble(data: bytes, rnd) -> bytes:
    """Byte-level damage: inserted junk, deleted runs, YAML punctuation in odd places, truncation."""
    data = bytearray(data)
    for _ in range(rnd.randint(1, 5)):
        i = rnd.randrange(len(data) + 1)
        op = rnd.randrange(4)
        if op == 0:
            data[i:i] = bytes(rnd.randrange(256) for _ in range(rnd.randint(1, 4)))
        elif op == 1:
            del data[i : i + rnd.randint(1, 40)]
        elif op == 2:
            junk = [b":", b"- ", b"\t", b"{", b"[", b"&a ", b"*a", b"!!int ", b"\n  ", b'"', b"'", b"\xff", b"? "]
            data[i:i] = rnd.choice(junk)
        else:
            del data[i:]
    return bytes(data)


BILLION_LAUGHS = "a: &a [x,x,x,x,x,x,x,x,x]\n" + "".join(
    f"{b}: &{b} [{', '.join([f'*{a}'] * 9)}]\n" for a, b in zip("abcdefg", "bcdefgh", strict=True)
)
NASTY_YAML = [
    "",
    "~",
    "- a\n- b\n",
    "just a string",
    "id: x\ndate: 2001-02-30\n",  # PyYAML raises a plain ValueError building this date
    "number: !!int abc\n",
    "number: !!float abc\n",
    "number: " + "9" * 5000 + "\n",  # over Python's 4300-digit limit for int()
    "id: !!binary 'abc%'\n",
    "id: !!python/object/apply:os.system ['true']\n",
    "a: " + "[" * 3000 + "]" * 3000,
    "{a: " * 2000 + "1" + "}" * 2000,
    "id: x\nfollow_ups: &a [*a]\n",
    BILLION_LAUGHS + "follow_ups: *h\n",
    "id: a\x00b\n",
    "<<: 5\n",
    "? [a, b]\n: c\n",
    "id: *nowhere\n",
    "---\nid: a\n---\nid: b\n",
    "%YAML 9.9\n---\nid: a\n",
    "\ufeffid: a\n",
    "id:\ta\n\tnumber: 1\n",
    "question: " + "x" * 1_000_000 + "\n",
    "1: 2\n.inf: 3\nnull: 4\n",
    "number: .nan\ncovers: .inf\n",
]


@st.composite
def rubric_file_bytes(draw) -> bytes:
    kind = draw(st.integers(0, 6))
    if kind == 0:
        return draw(st.binary(max_size=300))
    if kind == 1:
        return draw(st.text(max_size=300)).encode("utf-8", "surrogatepass")
    if kind == 2:
        return yaml.safe_dump(draw(json_values), allow_unicode=True).encode("utf-8", "surrogatepass")
    if kind == 3:
        doc = mutate_doc(draw(st.sampled_from(REAL_DOCS)), draw(st.randoms(use_true_random=False)))
        return yaml.safe_dump(doc, allow_unicode=True, sort_keys=False).encode("utf-8", "surrogatepass")
    if kind == 4:
        real = draw(st.sampled_from(REAL_RUBRICS)).read_bytes()
        return garble(real, draw(st.randoms(use_true_random=False)))
    if kind == 5:
        return draw(st.sampled_from(NASTY_YAML)).encode("utf-8")
    return draw(st.sampled_from(REAL_RUBRICS)).read_bytes()  # valid, and a duplicate id when drawn twice


def check_bank(bank: Bank, files: list[Path]) -> None:
    assert isinstance(bank, Bank)
    names = {str(p) for p in files}
    # Every file gives exactly one question or one error: nothing is lost, nothing hides the others.
    assert len(bank.questions) + len(bank.errors) == len(files)
    for err in bank.errors:
        assert isinstance(err, RubricError)
        assert err.path in names
        assert str(err).startswith(err.path) and len(str(err)) > len(err.path) + 2
    for q in bank.questions:
        assert re.fullmatch(ID_PATTERN, q.id) and bank.get(q.id) is q


# -- 1. the rubric loader -------------------------------------------------------------------------
@pytest.mark.fresh_home
@fuzz_settings(120)
@given(st.lists(rubric_file_bytes(), min_size=1, max_size=4))
def test_load_bank_gives_a_bank_and_named_problems_for_any_files(contents):
    with tempfile.TemporaryDirectory() as tmp:
        files = []
        for i, data in enumerate(contents):
            path = Path(tmp) / f"q{i}.{'yml' if i % 2 else 'yaml'}"
            path.write_bytes(data)
            files.append(path)
        check_bank(within(HANG_SECONDS, load_bank, Path(tmp)), files)


@pytest.mark.fresh_home
@pytest.mark.parametrize("text", NASTY_YAML, ids=range(len(NASTY_YAML)))
def test_load_bank_reports_each_nasty_yaml_file(tmp_path, text):
    path = tmp_path / "nasty.yaml"
    path.write_text(text, encoding="utf-8")
    check_bank(within(HANG_SECONDS, load_bank, tmp_path), [path])


@pytest.mark.fresh_home
def test_fuzzed_real_rubrics_load_or_name_the_field(tmp_path):
    """Every real rubric with each top-level key dropped or retyped: it loads, or one error names the
    file and the field (a dropped required key is named exactly)."""
    path = tmp_path / "q.yaml"
    for n, (source, doc) in enumerate(zip(REAL_RUBRICS, REAL_DOCS, strict=True)):
        variants = [(key, {k: v for k, v in doc.items() if k != key}, key in REQUIRED) for key in doc]
        # one wrong value per key, rotating through WRONG_VALUES from file to file (all of them take 12 s)
        wrong = [WRONG_VALUES[(n + i) % len(WRONG_VALUES)] for i in range(len(doc))]
        variants += [(key, {**doc, key: value}, False) for key, value in zip(doc, wrong, strict=True)]
        for key, variant, dropped_required in variants:
            path.write_text(yaml.safe_dump(variant, allow_unicode=True, sort_keys=False), encoding="utf-8")
            bank = load_bank(tmp_path)
            check_bank(bank, [path])
            if bank.errors:
                err = bank.errors[0]
                where = f"{source.name} with {key!r} changed: {err}"
                assert err.field is None or err.field == key or err.field.startswith(key + "."), where
                if dropped_required:
                    assert err.field == key and "required" in str(err), where


@pytest.mark.fresh_home
def test_duplicate_ids_keep_the_first_and_name_the_second(tmp_path):
    for name in ("a.yaml", "b.yaml", "c.yml"):
        (tmp_path / name).write_bytes(REAL_RUBRICS[0].read_bytes())
    bank = load_bank(tmp_path)
    assert [q.id for q in bank.questions] == [BANK_IDS[0]]
    assert len(bank.errors) == 2 and all("duplicate question id" in str(e) for e in bank.errors)


# -- 2. the seed importer -------------------------------------------------------------------------
SEED_FRAGMENTS = [
    "What a strong answer covers",
    "WHAT A STRONG ANSWER COVERS:",
    "Where people lose the point",
    "where people lose the point :",
    "• Explain that",
    "• ×Failing to mention",
    "- ",
    "* x",
    "1. What is a tensor?",
    "0. ?",
    "999) What?",
    "2. Next question",
    "1.",
    "12) ",
    "    code = line(x)",
    "```",
    "Explain:",
    "",
    "   ",
    "\t\t",
]


def mutate_lines(text: str, rnd) -> str:
    lines = text.splitlines()
    for _ in range(rnd.randint(1, 8)):
        i = rnd.randrange(len(lines) + 1)
        op = rnd.randrange(6)
        if op == 0 and lines:
            del lines[min(i, len(lines) - 1)]
        elif op == 1 and lines:
            lines.insert(i, rnd.choice(lines))  # repeated headings and question numbers
        elif op == 2:
            lines.insert(i, rnd.choice(SEED_FRAGMENTS))
        elif op == 3 and len(lines) > 1:
            j = rnd.randrange(len(lines))
            i = min(i, len(lines) - 1)
            lines[i], lines[j] = lines[j], lines[i]
        elif op == 4:
            lines = lines[:i]
        elif lines:
            k = min(i, len(lines) - 1)
            lines[k] = lines[k].upper() if rnd.random() < 0.5 else lines[k][: rnd.randrange(len(lines[k]) + 1)]
    return "\n".join(lines)


seed_documents = st.one_of(
    st.text(max_size=400),
    st.lists(st.sampled_from(SEED_FRAGMENTS) | st.text(max_size=30), max_size=25).map("\n".join),
    st.builds(mutate_lines, st.sampled_from(SEED_TEXTS), st.randoms(use_true_random=False)),
)


def check_drafts(drafts: list[dict], source: str, out_dir: Path) -> None:
    assert isinstance(drafts, list) and drafts
    ids = [d["id"] for d in drafts]
    assert len(set(ids)) == len(ids)
    for d in drafts:
        assert re.fullmatch(ID_PATTERN, d["id"]), d["id"]
        assert isinstance(d["number"], int) and d["source"] == source
        assert d["covers"], d
        for part, letter in (("covers", "c"), ("pitfalls", "p")):
            assert [x["id"] for x in d[part]] == [f"{d['id']}.{letter}{n}" for n in range(1, len(d[part]) + 1)]
    # The drafts a person reviews are exactly what was imported.
    paths = write_drafts(drafts, out_dir)
    assert [yaml.safe_load(p.read_text(encoding="utf-8")) for p in paths] == drafts


def import_or_error(path: Path):
    try:
        return within(HANG_SECONDS, import_document, path)
    except RubricError as exc:
        assert exc.path == str(path) and len(str(exc)) > len(str(path)) + 2
        return None


@pytest.mark.fresh_home
@fuzz_settings(150)
@given(seed_documents)
def test_import_document_gives_drafts_or_a_rubric_error(text):
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "seed.txt"
        path.write_text(text, encoding="utf-8")
        drafts = import_or_error(path)
        if drafts is not None:
            check_drafts(drafts, path.name, Path(tmp) / "drafts")


@pytest.mark.fresh_home
@fuzz_settings(40)
@given(st.binary(max_size=400))
def test_import_document_takes_any_bytes(data):
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "seed.md"
        path.write_bytes(data)
        drafts = import_or_error(path)
        if drafts is not None:
            check_drafts(drafts, path.name, Path(tmp) / "drafts")


LONG = 200_000
PATHOLOGICAL_SEEDS = {
    "numbered line with a long inner space run": "1. What is it" + " " * LONG + "x?",
    "heading with a long space run": "What a strong answer covers" + " " * LONG + "x",
    "pitfall heading with a long space run": "Where people lose the point" + " " * LONG + "x",
    "long bullet": "What a strong answer covers\n- " + "a" * LONG,
    "many numbered lines": "\n".join(f"{n}. Question {n}?" for n in range(1, 1000)) * 20,
}


@pytest.mark.fresh_home
@pytest.mark.parametrize("text", PATHOLOGICAL_SEEDS.values(), ids=PATHOLOGICAL_SEEDS.keys())
def test_import_document_does_not_hang_on_huge_lines(tmp_path, text):
    path = tmp_path / "seed.txt"
    path.write_text(text, encoding="utf-8")
    drafts = import_or_error(path)
    if drafts is not None:
        check_drafts(drafts, path.name, tmp_path / "drafts")


@pytest.mark.fresh_home
def test_import_document_names_a_missing_or_unreadable_file(tmp_path):
    for path in (tmp_path / "missing.txt", tmp_path):
        with pytest.raises(RubricError) as err:
            import_document(path)
        assert err.value.path == str(path)


# -- 3. the scorer --------------------------------------------------------------------------------
ANSWER_FRAGMENTS = [
    "<script>alert('x')</script>",
    '<img src=x onerror="alert(1)">',
    "javascript:alert(document.cookie)",
    "```python\nimport torch\nx = torch.zeros(3, requires_grad=True)\n```",
    "```",
    "    for p in model.parameters(): p.grad = None",
    "# Heading\n## Sub",
    "**bold** _it_ `code` ~~strike~~",
    "[link](http://example.com) ![img](x.png)",
    "> quoted\n> more",
    "- item one\n- item two\n  - nested",
    "1. step()\n2. backward()\n3. zero_grad()",
    "| a | b |\n|---|---|\n| 1 | 2 |",
    "\x00",
    "\u202eevil\u202c",
    "مرحبا بالعالم، هذا جواب",
    "שלום עולם",
    "😀👍🏽🇫🇷👨‍👩‍👧",
    "\u200b\u200d\ufeff",
    "\r\n",
    "\t",
    "...?!",
    " -- ",
    " — ",
    "NumPy arrays can run on the GPU directly.",
    "Autograd does not track operations on tensors.",
    "You cannot call backward() twice.",
    "${{7*7}} {{7*7}} %s%n",
    "'; DROP TABLE answers; --",
    "\\",
    "a" * 10_000,
    "é" * 3000,
]
answers = st.one_of(
    st.text(max_size=200),
    st.lists(st.sampled_from(ANSWER_FRAGMENTS) | st.text(max_size=30), min_size=1, max_size=8).map(" ".join),
    st.lists(st.sampled_from(ANSWER_FRAGMENTS), min_size=1, max_size=4).map("\n\n".join),
    st.text(alphabet=string.punctuation, max_size=100),
    st.text(alphabet=" \t\n\r\x0b\x0c\x1c\x85\u00a0\u2028\u3000", max_size=100),
    st.text(alphabet=st.characters(categories=["Cs", "Cc", "Cf", "So"]), min_size=1, max_size=40),
)
PATHOLOGICAL_ANSWERS = {
    "100k-char word": "x" * 100_000,
    "indented 100k-char word": "    " + "a" * 100_000,
    "indented calls never closed": "    " + "f(" * 50_000,
    "sentence with a 100k space run": "Autograd records the operations" + " " * 100_000 + "on tensors.",
    "sentence with a 100k tab run and a dash": "Autograd records" + "\t" * 100_000 + "x - y and more words here.",
    "claim then a 100k token": "NumPy arrays can run on the GPU directly " + "a" * 100_000 + "1",
    "5000 short sentences": " ".join(f"Point {n} holds." for n in range(5000)),
    "only NUL bytes": "\x00" * 50_000,
    "only newlines": "\n" * 50_000,
    "lone surrogates": "Tensors run on GPUs \ud800 and \udfff track gradients.",
}


def check_report(report: Report, answer: str) -> None:
    assert isinstance(report, Report)
    assert 0 <= report.score <= 100 and report.grade == round(report.score / 20.0, 1)
    for item in [*report.covers, *report.pitfalls]:
        if item.evidence is not None:
            assert item.evidence in answer
        if item.evidence_span is not None:
            a, b = item.evidence_span
            assert answer[a:b] == item.evidence
    json.dumps(report.to_dict())


@pytest.fixture
def service(home, synced_index):
    from interviewer.service import Interviewer

    svc = Interviewer(Settings())
    svc.ensure_index()
    return svc


@fuzz_settings(40)
@given(qid=st.sampled_from(BANK_IDS), answer=answers)
def test_score_any_answer_gives_a_report_with_quoted_evidence(service, qid, answer):
    check_report(within(HANG_SECONDS, service.score, qid, answer, use_llm=False), answer)


@pytest.mark.parametrize("answer", PATHOLOGICAL_ANSWERS.values(), ids=PATHOLOGICAL_ANSWERS.keys())
def test_scorer_does_not_hang_on_pathological_answers(service, answer):
    rubric = service.rubric("tensors-vs-numpy")  # has a misconception pitfall about the GPU
    stored = service.store.vectors_for(rubric.question_id)
    check_report(within(HANG_SECONDS, Scorer(service.embedder).score, rubric, answer, stored), answer)


# -- 4. the batch grader --------------------------------------------------------------------------
pitfall_rows = st.fixed_dictionaries(
    {},
    optional={
        "text": st.text(max_size=40) | json_values,
        "kind": st.sampled_from(["omission", "misconception"]) | json_values,
        "claim": st.text(max_size=40) | json_values,
        "correction": st.text(max_size=40) | json_values,
        "expects": st.text(max_size=40) | json_values,
    },
)
grade_rows = st.fixed_dictionaries(
    {"id": json_values},
    optional={
        "question_id": st.sampled_from(BANK_IDS) | st.text(max_size=12) | json_values,
        "answer": answers | st.sampled_from(["word " * 20_000, "z" * 200_000]) | json_values,
        "question": st.text(max_size=60) | json_values,
        "covers": st.lists(st.text(max_size=60), max_size=3) | json_values,
        "pitfalls": st.lists(pitfall_rows, max_size=2) | json_values,
        "reference": st.text(max_size=80) | json_values,
    },
)
valid_rows = st.fixed_dictionaries(
    {"id": st.text(max_size=8), "answer": answers},
    optional={"question_id": st.sampled_from(BANK_IDS)},
).flatmap(
    lambda row: (
        st.just(row)
        if "question_id" in row
        else st.fixed_dictionaries(
            {**{k: st.just(v) for k, v in row.items()}, "question": st.text(min_size=1, max_size=60)},
            optional={
                "covers": st.lists(st.text(max_size=60), min_size=1, max_size=3),
                "reference": st.text(max_size=80),
                "pitfalls": st.lists(
                    st.fixed_dictionaries(
                        {"text": st.text(max_size=40), "kind": st.sampled_from(["omission", "misconception"])},
                        optional={"claim": st.text(max_size=40), "correction": st.text(max_size=40)},
                    ),
                    max_size=2,
                ),
            },
        )
    )
)
NASTY_JSON_LINES = [
    "[" * 100_000,
    '{"id": ' + "1" * 5000 + ', "answer": "x", "question": "q?", "covers": ["a point"]}',
    '{"id": 1, "answer": "\\ud800", "question": "q?", "covers": ["a \\udfff point"]}',
    '{"id": 1e999, "answer": "x", "reference": "A reference answer."}',
    '{"id": NaN, "answer": "x", "reference": "A reference answer."}',
    '{"id": 1, "id": 2, "answer": "x", "reference": "A reference answer."}',
    '{"id": 1, "answer": "x", "covers": []}',
    '{"id": 1, "answer": "x", "reference": "   "}',
    '{"id": 1, "answer": "x", "question": "q", "pitfalls": [{"text": "t", "claim": {"a": 1}}]}',
    '{"id": 1, "answer": "x", "question": "q", "pitfalls": [{"text": "t", "kind": ["omission"]}]}',
    '{"id": 1, "answer": "x", "reference": 5}',
    '{"id": 1, "answer": "x", "reference": ["a", "b"]}',
    "\ufeff{}",
    "null",
    '"just a string"',
]
jsonl_lines = st.one_of(
    valid_rows.map(json.dumps),
    valid_rows.map(lambda row: json.dumps(row, ensure_ascii=False)),
    grade_rows.map(json.dumps),
    grade_rows.map(lambda row: json.dumps(row, ensure_ascii=False)),
    json_values.map(json.dumps),
    st.text(max_size=80),
    st.sampled_from(NASTY_JSON_LINES),
)
_SKIPPED = re.compile(r"line (\d+): skipped: (.+)")


def grade_and_check(service, lines: list[str], batch: int) -> None:
    errors = io.StringIO()
    results = within(HANG_SECONDS * 4, lambda: list(grade_lines(service, iter(lines), batch=batch, errors=errors)))
    skipped = []
    for out in errors.getvalue().splitlines():
        m = _SKIPPED.fullmatch(out)
        assert m, f"not a one-line 'line N: skipped: why' message: {out!r}"
        skipped.append(int(m.group(1)))
    nonblank = [n for n, line in enumerate(lines, 1) if line.strip()]
    assert len(set(skipped)) == len(skipped) and set(skipped) <= set(nonblank)
    good = [n for n in nonblank if n not in skipped]
    # Every non-blank line is graded or skipped by its number, and results keep the input order.
    assert len(results) == len(good)
    for n, result in zip(good, results, strict=True):
        row = json.loads(lines[n - 1])
        assert json.dumps(result["id"]) == json.dumps(row["id"])
        assert 0 <= result["score"] <= 100
        for item in [*result["covers"], *result["pitfalls"]]:
            assert item["evidence"] is None or item["evidence"] in row["answer"]
        json.dumps(result)


@fuzz_settings(40)
@given(lines=st.lists(jsonl_lines, min_size=1, max_size=6), batch=st.integers(1, 4))
def test_grade_lines_grades_or_skips_every_line_by_number(service, lines, batch):
    grade_and_check(service, lines, batch)


def test_grade_lines_survives_the_nasty_lines(service):
    grade_and_check(service, NASTY_JSON_LINES, batch=3)


@fuzz_settings(60)
@given(row=grade_rows)
def test_parse_line_accepts_a_row_or_says_what_to_fix(service, row):
    """A bad row is a ValueError whose message names the field; never a TypeError or a KeyError."""
    try:
        _, rubric, answer = parse_line(service, 1, json.dumps(row))
    except ValueError as exc:
        assert re.search(r"`\w+`|question_id|JSON|kind", str(exc)), str(exc)
        return
    assert isinstance(answer, str) and rubric.covers
    for pit in rubric.pitfalls:
        for text in (pit.text, pit.claim, pit.correction, pit.expects):
            assert text is None or isinstance(text, str)


def test_grade_file_counts_lines_as_an_editor_does(tmp_path):
    """A JSONL line is ended by a newline only: U+2028, U+0085 and the like inside a JSON string are
    answer text, and a line number names the line a person sees."""
    rows = [
        {"id": "sep", "question_id": BANK_IDS[0], "answer": "Tensors\u2028run on GPUs\u2029and\x85track gradients."},
        {"id": "ok", "question_id": BANK_IDS[1], "answer": "Autograd records operations."},
    ]
    lines = [json.dumps(rows[0], ensure_ascii=False), '{"id": "bad\x1c"', json.dumps(rows[1], ensure_ascii=False)]
    src = tmp_path / "in.jsonl"
    src.write_text("\n".join(lines) + "\n", encoding="utf-8")
    out = tmp_path / "out.jsonl"
    summary = within(HANG_SECONDS * 4, grade_file, src, out, Settings(), progress=False)
    assert summary == {"graded": 2, "skipped": 1}
    assert [json.loads(line)["id"] for line in out.read_text(encoding="utf-8").splitlines()] == ["sep", "ok"]
