import json

from .conftest import run_cli


def test_grade_scores_good_lines_and_reports_bad_ones_by_number(tmp_path):
    lines = [
        json.dumps({"id": "a", "question_id": "no-grad", "answer": "torch.no_grad() turns off gradient tracking."}),
        "{not json",
        json.dumps({"id": "b", "answer": "no question"}),
        json.dumps({"id": "c", "question_id": "does-not-exist", "answer": "x"}),
        "",
        json.dumps(
            {
                "id": "d",
                "question": "What is a stack?",
                "covers": ["A stack is last-in first-out."],
                "answer": "A stack is LIFO: the last item pushed is the first popped.",
            }
        ),
        json.dumps(
            {
                "id": "e",
                "question": "What is a queue?",
                "reference": "A queue is first-in first-out.",
                "answer": "",
                "pitfalls": [{"text": "A queue is last-in first-out.", "kind": "misconception"}],
            }
        ),
    ]
    src = tmp_path / "in.jsonl"
    src.write_text("\n".join(lines) + "\n", encoding="utf-8")
    out = tmp_path / "out.jsonl"
    result = run_cli("grade", str(src), "-o", str(out))
    assert result.returncode == 0, result.stderr
    graded = [json.loads(line) for line in out.read_text().splitlines()]
    assert [g["id"] for g in graded] == ["a", "d", "e"]
    assert graded[0]["question_id"] == "no-grad" and graded[0]["covers"][0]["id"] == "no-grad.c1"
    assert graded[1]["covers"][0]["covered"]
    assert graded[2]["score"] == 0
    assert "line 2: skipped: not valid JSON" in result.stderr
    assert "line 3: skipped" in result.stderr and "question_id" in result.stderr
    assert "line 4: skipped: unknown question_id 'does-not-exist'" in result.stderr
    assert "Graded 3 answer(s); skipped 3 bad line(s)." in result.stderr
