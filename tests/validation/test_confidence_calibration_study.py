"""The confidence-calibration study (validation/confidence_calibration_study.py): its generator has
the truth it claims, a data set is decided and counted, and the shipped summary is the
summary of the committed records."""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "validation"))
import confidence_calibration_study as ccs  # noqa: E402

from selfmodel.analyses.confidence_calibration import (  # noqa: E402
    OPERATING_CHARACTERISTICS_DATA,
    forecasts,
    metrics,
)
from selfmodel.common.paths import shipped_study  # noqa: E402


def test_generator_records_are_what_the_estimator_reads_and_the_truth_orders_the_groups():
    rec = ccs.generate("truth", seed=1)
    f = forecasts(rec)
    assert f.height == 4 * ccs.N_ITEMS  # every record readable: 2 models x 2 conditions x items
    assert set(np.round(f["p"].to_numpy() * 20, 6) % 1) == {0.0}  # stated on a 0.05 grid
    t = ccs.truths("truth", n=100_000)
    # model b is better calibrated than a in both conditions; the second condition is worse
    for cond in ccs.CONDITIONS:
        assert abs(t[("b", cond)]["overconfidence"]) < abs(t[("a", cond)]["overconfidence"])
        assert t[("b", cond)]["ece_stated_probability"] < t[("a", cond)]["ece_stated_probability"]
    assert t[("a", "second")]["overconfidence"] > t[("a", "first")]["overconfidence"]
    # the population truth is what large samples of the generator give (Bernoulli noise averages out)
    big = forecasts(ccs.generate("truth", seed=2, n_items=100_000))
    g = big.filter((big["model"] == "a") & (big["condition"] == "first"))
    got = metrics(g["p"].to_numpy(), g["y"].to_numpy().astype(float))
    assert abs(got["overconfidence"] - t[("a", "first")]["overconfidence"]) < 0.01
    assert abs(got["brier"] - t[("a", "first")]["brier"]) < 0.01
    # null arms: every group alike
    n = ccs.truths("null", n=100_000)
    assert len({round(v["overconfidence"], 2) for v in n.values()}) == 1


def test_one_data_set_decides_twelve_contrasts_and_the_summary_counts_them():
    t = ccs.truths("truth", n=50_000)
    run = ccs.one("truth", 9000, t)
    assert len(run["contrasts"]) == 12  # 2 model pairs + 2 condition pairs, x 3 metrics
    assert all(c["truth"] != 0.0 for c in run["contrasts"])
    null = ccs.one("null", 9000, ccs.truths("null", n=50_000))
    s = ccs.summarise([run, null])
    assert s["truth"]["n_datasets"] == 1 and s["null"]["per_contrast_credible"]["n"] == 12
    assert sum(v["contrasts"] for v in s["truth"]["coverage"].values()) == 12


def test_shipped_summary_is_that_of_the_committed_records():
    shipped = shipped_study(OPERATING_CHARACTERISTICS_DATA)
    assert shipped["available"]
    lines = ROOT / shipped["source"]
    assert hashlib.sha256(lines.read_bytes()).hexdigest() == shipped["source_sha256"]
    runs = [json.loads(x) for x in lines.read_text().splitlines()]
    assert json.loads(json.dumps(ccs.summarise(runs))) == shipped["arms"]
