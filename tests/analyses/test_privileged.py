"""Privileged access from real cross-predictions (issue 28.1): ``selfmodel.analyses.privileged``.

Fast: the contrast's counts on hand-made items; ``not_estimable`` (never rescoring) without
the checkpoint's predictions of its base; cross-predictions survive ingest; the report's
text follows the decision; a small run of ``validation/privileged_access.py`` on fresh
seeds; the shipped operating-characteristics study is the committed one and meets the issue's bar.
No model is compiled or sampled here (the estimator is a cluster bootstrap).
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from selfmodel.analyses.privileged import (
    OPERATING_CHARACTERISTICS_DATA,
    operating_characteristics,
    privileged_access,
)
from selfmodel.analyses.training import derived_checkpoints
from selfmodel.decisions.hypotheses import DecisionRule
from selfmodel.records.ingest import ingest
from selfmodel.records.registry import load_registry
from selfmodel.report.sections.privileged import privileged_markdown

ROOT = Path(__file__).resolve().parents[2]
VALIDATION = ROOT / "validation"


def _script(name: str):
    """A module of ``validation/`` (its folder on the path, as when the script runs)."""
    if str(VALIDATION) not in sys.path:
        sys.path.insert(0, str(VALIDATION))
    return importlib.import_module(name)


CK = [{"model": "t", "base_model": "b", "family": "f", "trained_tasks": ["x"]}]


def _hand_records(tt, bb, tb, *, cross: bool = True) -> pl.DataFrame:
    """Items of task x with the given correctness of t->t, b->b and t->b (clusters of 2)."""
    n = len(tt)
    rows = []
    for pred, target, ys in (("t", "t", tt), ("b", "b", bb), ("t", "b", tb)):
        if not cross and pred != target:
            continue
        rows += [{"model": target, "predictor": pred, "task": "x", "item_id": f"i{i}",
                  "cluster": f"c{i // 2}", "correct": bool(y), "status": "ok", "sample": 0}
                 for i, y in enumerate(ys)]
    assert len(rows) == (3 if cross else 2) * n
    return pl.DataFrame(rows)


def test_point_estimates_are_the_paired_log_odds_ratios():
    """Self-gain lor(t->t vs b->b), other-gain lor(t->b vs b->b), contrast their difference."""
    rng = np.random.default_rng(4)
    tt, bb, tb = (rng.random(60) < p for p in (0.8, 0.6, 0.65))
    out = privileged_access(_hand_records(tt, bb, tb), CK, rule=DecisionRule(), seed=1,
                            n_boot=200)
    e = out["per_checkpoint"][0]

    def lor(a, b):
        return np.log(np.sum(a & ~b) + 0.5) - np.log(np.sum(~a & b) + 0.5)

    assert e["self_gain"] == pytest.approx(lor(tt, bb))
    assert e["other_gain"] == pytest.approx(lor(tb, bb))
    assert e["estimate"] == pytest.approx(lor(tt, bb) - lor(tb, bb))
    assert e["n_items"] == 60 and e["n_clusters"] == 30
    assert e["hdi_low"] < e["estimate"] < e["hdi_high"]
    assert e["self_gain_accuracy"] == pytest.approx(tt.mean() - bb.mean())
    # no held-out task: not estimable with the count, never a number
    assert e["held_out"]["decision"] == "not_estimable" and e["held_out"]["n_items"] == 0


def test_without_cross_predictions_it_is_not_estimable_and_never_rescored():
    rng = np.random.default_rng(5)
    tt, bb = rng.random(80) < 0.9, rng.random(80) < 0.5
    out = privileged_access(_hand_records(tt, bb, bb, cross=False), CK, rule=DecisionRule(),
                            seed=1, n_boot=200)
    assert out["available"] is False
    assert out["mean"]["decision"] == "not_estimable"
    (e,) = out["per_checkpoint"]
    assert e["decision"] == "not_estimable" and e["mean"] is None
    assert "predictor = 't'" in e["reason"] and "rescoring" in e["reason"]
    assert "checkpoints: t" in out["reason"]
    text = privileged_markdown({"privileged_access": out})
    assert "Not estimable" in text and "|" not in text.split("Operating characteristics")[0]


def test_the_default_data_have_no_cross_predictions_so_not_estimable():
    res = ingest([ROOT / "data_raw" / "records.csv"], registry=ROOT / "data_raw" / "registry.csv")
    cks = derived_checkpoints(load_registry(ROOT / "data_raw" / "registry.csv"))
    out = privileged_access(res.records, cks, rule=DecisionRule(), seed=1, n_boot=50)
    assert not out["available"] and len(out["per_checkpoint"]) == len(cks) == 4
    assert {e["decision"] for e in out["per_checkpoint"]} == {"not_estimable"}


def test_cross_predictions_survive_ingest_and_give_the_same_decision(tmp_path):
    gen = _script("privileged_generator")
    rec, cks = gen.generate(gen.Design(), 7)
    rec.write_csv(tmp_path / "r.csv")
    gen.registry_frame(cks).write_csv(tmp_path / "reg.csv")
    res = ingest([tmp_path / "r.csv"], registry=tmp_path / "reg.csv")
    assert res.records.height == rec.height
    via = privileged_access(res.records, derived_checkpoints(load_registry(tmp_path / "reg.csv")),
                            rule=DecisionRule(), seed=2, n_boot=300)
    direct = privileged_access(rec, cks, rule=DecisionRule(), seed=2, n_boot=300)
    assert ([e["estimate"] for e in via["per_checkpoint"]]
            == [e["estimate"] for e in direct["per_checkpoint"]])
    # the base predicting its checkpoint is another predictor of both targets
    assert [v["predictor"] for v in via["per_checkpoint"][0]["vs_other_predictors"]] == [
        "full-base"]


def test_report_text_follows_the_decision():
    gen = _script("privileged_generator")
    rec, cks = gen.generate(gen.Design(), 8)
    out = privileged_access(rec, cks, rule=DecisionRule(), seed=3, n_boot=300)
    text = privileged_markdown({"privileged_access": out})
    e = out["per_checkpoint"][0]
    assert f"{e['estimate']:+.2f}" in text and str(e["n_items"]) in text
    flipped = json.loads(json.dumps(out))
    flipped["per_checkpoint"][0].update(decision="worsens", reading="READING-CHANGED")
    other = privileged_markdown({"privileged_access": flipped})
    assert "READING\\-CHANGED" in other and "READING" not in text
    assert "worsens" in other
    assert privileged_markdown(None).startswith("Not estimated")
    # the words are the rule's, on bootstrap replicates: said beside them, not a posterior
    assert out["decision_basis"].startswith("the declared rule applied to cluster-bootstrap")
    assert "**Decisions from a bootstrap.**" in text and "not to posterior draws" in text


def test_a_small_operating_characteristics_run_orders_the_families_and_keeps_the_null():
    """Fresh seeds (900+), 12 data sets per arm, the pipeline's defaults: the fully
    privileged family positive in at least 9 (shipped: 98%), none positive in at most 2
    (more than 2 of 12 has probability 0.02 at a 5% rate), ordered in at least 8 (shipped:
    81%), and at most 4 of 36 checkpoints positive under the misspecified null (more than 4
    of 36 has probability 0.03 at a 5% rate)."""
    study = _script("privileged_access")
    rule = DecisionRule()
    arms = study.arms()
    truth = [study.one(arms["truth"], 900 + i, rule) for i in range(12)]
    s = study.summarise(arms["truth"], truth, {"full": 0.6, "half": 0.3, "none": 0.0})
    assert s["n_errors"] == 0
    assert s["families"]["full"]["positive"]["k"] >= 9, s["families"]["full"]
    assert s["families"]["none"]["positive"]["k"] <= 2, s["families"]["none"]
    assert s["ordered_full_half_none"]["k"] >= 8, s["ordered_full_half_none"]
    null = [study.one(arms["misspecified_null"], 950 + i, rule) for i in range(12)]
    sn = study.summarise(arms["misspecified_null"], null, dict.fromkeys("abc", 0.0))
    assert sn["positive_pooled"]["k"] <= 4, sn["positive_pooled"]


def test_shipped_operating_characteristics_are_the_committed_study_and_meet_the_bar():
    """The package data equals ``validation/results/privileged_access.json``; at least 200
    data sets in each null arm, positive rate at most 5% (failed data sets reported), the
    fully privileged family positive more often than the one without, and ordered."""
    shipped = operating_characteristics()
    assert shipped["available"], shipped
    committed = json.loads((VALIDATION / "results" / "privileged_access.json").read_text())
    assert json.loads(OPERATING_CHARACTERISTICS_DATA.read_text()) == committed
    for arm in ("null", "misspecified_null"):
        a = committed["arms"][arm]
        assert a["n_datasets"] >= 200 and "n_errors" in a
        assert a["positive_pooled"]["rate"] <= 0.05, a["positive_pooled"]
        assert all("failed" in f for f in a["families"].values())
    for arm in ("truth", "misspecified_truth"):
        f = committed["arms"][arm]["families"]
        assert f["full"]["positive"]["rate"] > 0.5 > f["none"]["positive"]["rate"]
        assert committed["arms"][arm]["ordered_full_half_none"]["rate"] > 0.5
    assert committed["versions"]["numpy"] and committed["command"].startswith("validation/")


def test_operating_characteristics_without_the_file_say_so(tmp_path):
    out = operating_characteristics(tmp_path / "privileged_operating_characteristics.json")
    assert out == {"available": False,
                   "reason": "no operating-characteristics study shipped (privileged_operating_characteristics.json)"}


def test_no_discordant_item_is_not_estimable_not_practically_null():
    """All predictions right for everyone: the gains carry no information."""
    ones = np.ones(40, dtype=bool)
    out = privileged_access(_hand_records(ones, ones, ones), CK, rule=DecisionRule(), seed=1,
                            n_boot=100)
    e = out["per_checkpoint"][0]
    assert e["decision"] == "not_estimable" and "no item" in e["reason"]
    assert out["mean"]["decision"] == "not_estimable" and not out["available"]


def test_training_effect_carries_the_decision_even_without_a_fit():
    """The training model is not fitted (no item where checkpoint and base disagree), yet
    ``training_effect.privileged_access`` is there, decided from the records."""
    from selfmodel.analyses.training import training_effect
    from selfmodel.fitting.fitter import Fitter

    ones = np.ones(30, dtype=bool)
    rec = _hand_records(ones, ones, ones).with_columns(
        pl.lit("true").alias("prediction"), pl.lit("true").alias("outcome"))
    reg = pl.DataFrame({"model": ["b", "t"], "family": ["f", "f"], "base_model": [None, "b"],
                        "intervention": [None, "iv"], "trained_tasks": [None, "x"]})
    out = training_effect(rec, reg, ["x"], rule=DecisionRule(), fitter=Fitter(1))
    assert out["available"] is False and "disagree" in out["reason"]
    pa = out["privileged_access"]
    assert pa["per_checkpoint"][0]["decision"] == "not_estimable"
    assert "Not estimable" in privileged_markdown(out)


def test_no_checkpoint_says_so():
    out = privileged_access(_hand_records([True], [True], [True]), [], rule=DecisionRule(),
                            seed=1, n_boot=10)
    assert not out["available"] and "no derived checkpoint" in out["reason"]
