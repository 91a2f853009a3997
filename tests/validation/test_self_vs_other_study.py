"""The self-vs-other study (validation/self_vs_other_study.py, issue 28.6): its generator has
the truth it claims (exactly 0 under the nulls, though skill grows with size), one data set is
decided and counted, and the shipped summary is the summary of the committed records."""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "validation"))
import self_vs_other_study as svo  # noqa: E402

from selfmodel.analyses.rescoring import OPERATING_CHARACTERISTICS_DATA  # noqa: E402
from selfmodel.common.paths import shipped_study  # noqa: E402


def test_the_null_has_no_self_advantage_although_skill_grows_with_size():
    rng = np.random.default_rng(1)
    _, x, _ = svo.design()
    par = svo.model_params("null", rng, x)
    pred, out = svo.behave(rng, par, svo._difficulty(rng, 60_000, None), None)
    adv = svo._advantage(svo._scores(pred, out))
    assert np.abs(adv["dprime"]).max() < 0.05 and np.abs(adv["accuracy"]).max() < 0.01
    # ... while the bigger models predict every model's outcomes better (the confound)
    self_d = np.diag(svo._scores(pred, out)["d_self"])
    assert np.corrcoef(x, self_d)[0, 1] > 0.5
    t = svo.truths("truth", reps=4, n_items=8_000)
    assert t["mean"]["dprime"] > 0.1 and t["slope"]["dprime"] > 0.05
    assert svo.truths("null")["mean"] == dict.fromkeys(svo.MEANS, 0.0)


def test_records_are_what_the_estimator_reads_and_one_data_set_is_counted():
    rec, scale, _ = svo.generate("clustered_declared", svo.FIRST_SEED)
    assert rec.height == 16 * svo.N_ITEMS and "cluster" in rec.columns
    assert rec["cluster"].n_unique() < svo.N_ITEMS / 2.5  # clusters of 3-5 items
    assert "cluster" not in svo.generate("misspecified", svo.FIRST_SEED)[0].columns
    assert len(scale) == 16
    row = svo.one("misspecified", svo.FIRST_SEED, svo.truths("misspecified"))
    assert row["status"] == "estimated" and row["n_clusters"] == svo.N_ITEMS  # undeclared: items
    assert set(row["means"]) == set(svo.MEANS) and set(row["slopes"]) == set(svo.SLOPES)
    assert row["models"]["dprime"]["n"] == 16
    declared = svo.one("clustered_declared", svo.FIRST_SEED, svo.truths("clustered_declared"))
    assert declared["n_clusters"] < svo.N_ITEMS / 2.5
    s = svo.summarise_arm([row, declared | {"arm": "misspecified"}], "misspecified")
    assert s["n"] == 2 and s["means"]["dprime"]["positive"]["n"] == 2
    assert s["headline"]["measure"].startswith("mean d'") and s["check"] == "misspecified"


def test_shipped_summary_is_that_of_the_committed_records():
    shipped = shipped_study(OPERATING_CHARACTERISTICS_DATA)
    assert shipped["available"]
    lines = ROOT / shipped["source"]
    assert hashlib.sha256(lines.read_bytes()).hexdigest() == shipped["source_sha256"]
    runs = [json.loads(x) for x in lines.read_text().splitlines()]
    again = {arm: svo.summarise_arm([r for r in runs if r["arm"] == arm], arm) for arm in shipped["arms"]}
    assert json.loads(json.dumps(again)) == shipped["arms"]
