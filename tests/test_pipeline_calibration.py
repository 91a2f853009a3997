"""The calibration study of this analysis (validation/pipeline_calibration.py): its designs,
its counting (a fit failing diagnostics is never a false 'improves'), and a --quick smoke run."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "validation"))
import pipeline_calibration as pc  # noqa: E402


def test_seb_design_has_two_tasks_and_unequal_cells():
    d = pc.seb_design()
    tasks = {}
    for _m, t, n in d.cells:
        tasks.setdefault(t, []).append(n)
    assert sorted(tasks) == ["refusal", "word_association"]
    assert sorted(len(v) for v in tasks.values()) == [19, 22]
    assert max(tasks["word_association"]) > 2 * min(tasks["refusal"])
    top = sorted(d.models, key=lambda r: -r[2])[:3]
    assert {f for _, f, _ in top} == {"deepseek"}


@pytest.mark.parametrize("effect", ["accuracy", "dprime"])
def test_null_data_sets_have_the_models_columns(effect):
    data = pc.simulate(pc.seb_design(), effect, seed=1)
    cols = {"accuracy": {"n", "k"}, "dprime": {"n_signal", "n_noise", "hits", "false_alarms"}}[effect]
    assert cols <= set(data.columns) and data.height == 41
    assert abs(data.unique("model")["x"].mean()) < 1e-9  # centred on the models


def test_failed_diagnostics_are_not_findings_and_rates_have_intervals():
    rec = lambda passed, dec, cov: {  # noqa: E731
        "diagnostics_passed": passed,
        "overall": pc._record({"decision": dec, "hdi_low": -1 if cov else 0.2, "hdi_high": 1,
                               "mean": 0.0}, passed),
        "per_task": {}}
    s = pc.summarise([rec(False, "improves", False), rec(True, "improves", False)]
                     + [rec(True, "no_credible_effect", True)] * 18)
    assert s["diagnostics_failed"] == 1
    assert s["overall"]["false_improves"] == pytest.approx(1 / 20)
    lo, hi = s["overall"]["false_improves_ci"]
    assert lo < 0.05 < hi
    assert s["overall"]["hdi94_coverage"] == pytest.approx(18 / 20)
    assert s["overall"]["meets_targets"] is False  # coverage 90% < 91%


@pytest.mark.slow
def test_quick_smoke_run_writes_and_resumes(tmp_path):
    assert pc.main(["--quick", "--arms", "seb:accuracy", "--out", str(tmp_path)]) == 0
    s = json.loads((tmp_path / "pipeline_calibration.json").read_text())
    arm = s["arms"]["seb:accuracy"]
    assert arm["n"] == 2 and set(arm) >= {"overall", "refusal", "word_association"}
    lines = (tmp_path / "seb-accuracy.jsonl").read_text().splitlines()
    assert pc.main(["--quick", "--arms", "seb:accuracy", "--out", str(tmp_path)]) == 0
    assert (tmp_path / "seb-accuracy.jsonl").read_text().splitlines() == lines  # resumed, no refit
