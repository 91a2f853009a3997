"""The training study at the pipeline's settings (validation/training_study.py, issue 28.6):
its independent generator has the truth it claims, a data set is reduced, fitted and counted
as the pipeline would, a failed fit is never a finding, and the shipped summary is the summary
of the committed records."""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "validation"))
import training_generator as gen  # noqa: E402
import training_study as ts  # noqa: E402

from selfmodel.analyses.training import OPERATING_CHARACTERISTICS_DATA, training_table  # noqa: E402
from selfmodel.common.paths import shipped_study  # noqa: E402
from selfmodel.decisions.hypotheses import DecisionRule  # noqa: E402
from selfmodel.fitting.sampling import SamplerSettings  # noqa: E402


def test_generator_reduces_as_ingested_records_and_has_the_truth_it_claims():
    records, registry, fams = gen.generate("truth", seed=3)
    table = training_table(records, registry, list(gen.TASKS))
    assert table.height == len(gen.FAMILIES) * len(gen.TASKS)
    assert set(table.filter(table["status"] == "trained")["task"]) == {"refusal"}
    t = gen.truths("truth", fams, seed=3, n=60_000)
    # known gains on the trained task, a quarter of them held out: positive and ordered
    for q in ("accuracy", "dprime"):
        assert t[f"{q}:trained"] > t[f"{q}:held_out"] > 0.02
    assert t["criterion:trained"] > 0.05
    # the null arms' exact 0 is what large samples give: base and checkpoint are exchangeable
    _, _, null_fams = gen.generate("null", seed=3)
    assert all(g == (0.0, 0.0) for f in null_fams.values() for g in f.gain.values())
    numeric = gen.truths("truth", null_fams, seed=4, n=100_000)  # "truth" forces the computation
    assert max(abs(v) for v in numeric.values()) < 0.03
    assert set(gen.truths("null", null_fams, seed=4).values()) == {0.0}


def test_one_data_set_is_fitted_at_the_pipeline_settings_and_counted(fake_nutpie):
    assert ts.settings() == SamplerSettings()  # the training model asks for nothing beyond the run's
    row = ts.one("misspecified", ts.FIRST_SEED, DecisionRule())
    assert fake_nutpie["sample"] == 1
    assert len(row["quantities"]) == 15  # accuracy, d', criterion x (trained, held-out, 3 tasks)
    assert {q["truth"] for q in row["quantities"].values()} == {0.0}
    assert row["sampler"]["draws"] == SamplerSettings().draws and row["versions"]["pymc"]
    # a failed fit is never a finding; coverage is counted among the fits that passed
    ok = json.loads(json.dumps(row))
    ok["passed"] = True
    ok["quantities"]["accuracy:trained"] |= {"decision": "improves", "covered": False}
    failed = json.loads(json.dumps(ok))
    failed["passed"] = False
    s = ts.summarise_arm([ok, failed], "misspecified")
    q = s["quantities"]["accuracy:trained"]
    assert s["failed_gate"] == 1 and q["false_credible"]["k"] == 1 and q["false_credible"]["n"] == 2
    assert q["false_improves"]["k"] == 1 and q["coverage"] == {**q["coverage"], "k": 0, "n": 1}
    assert s["any_false_credible"]["k"] == 1 and not s["complete"]
    # one trained task: the trained mean is that task's decision, named so pooled rates count it once
    assert s["same_as"]["accuracy:trained"] == "accuracy:task:refusal" and "accuracy:held_out" not in s["same_as"]
    assert s["coverage_pooled"]["n"] == 12  # the passed fit's 15 quantities, 3 of them repeats
    tru = ts.summarise_arm([ok | {"arm": "truth"}], "truth")
    assert tru["quantities"]["accuracy:trained"]["power_improves"]["k"] == 1
    assert "false_credible" not in tru["quantities"]["accuracy:trained"]


def test_shipped_summary_is_that_of_the_committed_records():
    shipped = shipped_study(OPERATING_CHARACTERISTICS_DATA, "training study")
    assert shipped["available"]
    lines = ROOT / shipped["source"]
    assert hashlib.sha256(lines.read_bytes()).hexdigest() == shipped["source_sha256"]
    rows = [json.loads(x) for x in lines.read_text().splitlines()]
    again = {arm: ts.summarise_arm([r for r in rows if r["arm"] == arm], arm) for arm in shipped["arms"]}
    assert json.loads(json.dumps(again)) == shipped["arms"]
    assert all(json.loads(json.dumps(ts.settings().__dict__))[k] == v for k, v in shipped["settings"].items())
