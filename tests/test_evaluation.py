import json

import pytest

from .conftest import SHARED, run_cli

DEV = SHARED / "data" / "pytorch_dev.jsonl"


@pytest.mark.skipif(not DEV.exists(), reason="the labelled dev set is not beside the checkout")
def test_eval_reports_the_metrics_and_guards_against_regressions():
    out = run_cli("eval", "--skip-mohler", "--json")
    assert out.returncode == 0, out.stderr
    dev = json.loads(out.stdout)["dev"]
    assert dev["answers"] == 80
    for part in ("covers", "omission", "misconception", "pitfalls"):
        assert {"precision", "recall", "f1"} <= set(dev[part])
    # Regression guards, well under the measured values (covers F1 0.85, Spearman 0.83).
    assert dev["covers"]["f1"] >= 0.80
    assert dev["spearman"] >= 0.70
    table = run_cli("eval", "--skip-mohler").stdout
    assert "| PyTorch dev (80 answers) | covers P / R / F1 |" in table
