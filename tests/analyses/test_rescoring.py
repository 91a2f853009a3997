"""Self versus other by rescoring (analysis/analyses/rescoring.py) on simulated data with known truth.

Outcomes of model ``m`` on item ``i`` are ``1[a_i + u_mi + e > 0]`` (``a`` shared by all
models, ``u`` the model's own idiosyncrasy); predictions are ``1[a_i + g_m u_mi + e' > 0]``.
``g_m = 0`` is the null of no privileged access (a model knows only which items are hard for
everyone); ``g_m > 0`` plants a self advantage, and ``g_m`` rising with size plants a slope.
"""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from selfmodel.analyses.rescoring import self_vs_other_rescored, task_sentence


def simulate(g: np.ndarray, *, n_items: int = 400, seed: int = 0, task: str = "t") -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    n_models = g.size
    clusters = np.arange(n_items) // 4
    a = rng.normal(0, 1, n_items)
    u = rng.normal(0, 1, (n_models, n_items))
    y = a + u + rng.normal(0, 0.5, (n_models, n_items)) > 0
    yhat = a + g[:, None] * u + rng.normal(0, 0.7, (n_models, n_items)) > 0
    rows = []
    for m in range(n_models):
        for i in range(n_items):
            rows.append((f"m{m:02d}", task, f"i{i}", f"c{clusters[i]}", str(bool(yhat[m, i])).lower(),
                         str(bool(y[m, i])).lower()))
    df = pl.DataFrame(rows, schema=["model", "task", "item_id", "cluster", "prediction", "outcome"],
                      orient="row")
    return df.with_columns(
        (pl.col("prediction") == pl.col("outcome")).alias("correct"),
        pl.lit(None, dtype=pl.String).alias("predictor"),
        pl.lit("ok").alias("status"),
    )


SIZES = {f"m{m:02d}": float(x) for m, x in enumerate(np.linspace(0, 2.5, 10))}


def _task(records: pl.DataFrame) -> dict:
    return self_vs_other_rescored(records, SIZES, seed=3, n_boot=300)["per_task"]["t"]


def test_planted_self_advantage_is_recovered():
    res = _task(simulate(np.full(10, 0.8), seed=1))
    d = res["summary"]["dprime"]
    assert d["mean_direction"] == "positive"
    assert d["mean_advantage_ci"][0] > 0.1
    assert d["n_models_positive"] >= 8
    assert res["summary"]["dprime_target"]["mean_direction"] == "positive"
    assert "predict themselves better" in res["sentence"]


def test_null_self_advantage_is_not_declared():
    res = _task(simulate(np.zeros(10), seed=2))
    d = res["summary"]["dprime"]
    assert d["mean_direction"] == "unclear"
    assert d["n_models_positive"] <= 2
    assert d["slope_on_scale"]["direction"] == "unclear"
    assert "do not show whether" in res["sentence"]


def test_planted_slope_on_scale_is_recovered_and_null_slope_is_not():
    g = np.linspace(0.0, 1.2, 10)  # privileged access grows with log10 size
    res = _task(simulate(g, seed=4))
    sl = res["summary"]["dprime"]["slope_on_scale"]
    assert sl["direction"] == "positive" and sl["slope"] > 0
    assert "grows with scale" in res["sentence"]
    flat = _task(simulate(np.full(10, 0.6), seed=5))["summary"]["dprime"]["slope_on_scale"]
    assert flat["direction"] != "positive"


def test_self_scores_match_direct_computation():
    rec = simulate(np.full(3, 0.5), n_items=60, seed=6)
    res = self_vs_other_rescored(rec, {}, seed=0, n_boot=20)["per_task"]["t"]
    r0 = res["models"][0]
    a = rec.filter(pl.col("model") == "m00")
    b = rec.filter(pl.col("model") == "m01")
    c = rec.filter(pl.col("model") == "m02")
    self_acc = a["correct"].mean()
    cross = [(a["prediction"] == o["outcome"]).mean() for o in (b, c)]
    assert r0["self_accuracy"] == pytest.approx(self_acc)
    assert r0["other_accuracy"] == pytest.approx(np.mean(cross))
    assert r0["advantage_accuracy"] == pytest.approx(self_acc - np.mean(cross))
    # no sizes: the slope is not estimable and the sentence says why
    assert res["summary"]["dprime"]["slope_on_scale"]["direction"] == "not_estimable"
    assert "not estimable" in res["sentence"]


def test_unshared_or_non_binary_tasks_are_not_estimable_with_a_reason():
    one = simulate(np.zeros(1), n_items=50)
    res = self_vs_other_rescored(one, {}, seed=0, n_boot=10)["per_task"]["t"]
    assert res["status"] == "not_estimable" and "share" in res["reason"]
    cat = simulate(np.zeros(3), n_items=30).with_columns(pl.lit("lion").alias("outcome"))
    res = self_vs_other_rescored(cat, {}, seed=0, n_boot=10)["per_task"]["t"]
    assert res["status"] == "not_estimable" and "true/false" in res["reason"]
    assert task_sentence(res).startswith("Not estimable")


def test_cross_prediction_records_are_used_directly():
    rec = simulate(np.zeros(2), n_items=40)
    cross = rec.filter(pl.col("model") == "m01").with_columns(
        pl.lit("m00").alias("predictor"), pl.lit(False).alias("correct")
    )
    out = self_vs_other_rescored(pl.concat([rec, cross]), {}, seed=0, n_boot=10)
    rows = [r for r in out["cross_prediction"] if r["predictor"] == "m00"]
    assert len(rows) == 1 and rows[0]["other_accuracy"] == 0.0
    assert rows[0]["advantage_accuracy"] == pytest.approx(
        rec.filter(pl.col("model") == "m00")["correct"].mean()
    )
    assert self_vs_other_rescored(rec, {}, seed=0, n_boot=10)["cross_prediction"] is None


def test_every_task_entry_has_its_sentence():
    one = simulate(np.zeros(1), n_items=50)
    out = self_vs_other_rescored(one, {}, seed=0, n_boot=10)["per_task"]["t"]
    assert out["sentence"].startswith("Not estimable")


def test_a_constant_responder_is_flagged_and_not_counted_in_accuracy():
    """A model that always says "I will be right" and mostly is: its accuracy self advantage
    is its base rate against the others' (+0.3 here), not self-knowledge; it is flagged and
    left out of the accuracy counts, while d' (0 for it) counts it."""
    rng = np.random.default_rng(5)
    records = simulate(np.zeros(10), seed=4)
    n = records.filter(pl.col("model") == "m00").height
    often_true = rng.random(n) < 0.8
    near = rng.random(n) < 0.97
    m00 = records.filter(pl.col("model") == "m00").with_columns(
        pl.lit("true").alias("prediction"),
        pl.Series("outcome", np.where(often_true, "true", "false")))
    m01 = records.filter(pl.col("model") == "m01").with_columns(
        pl.Series("prediction", np.where(near, "true", "false")),
        pl.Series("outcome", np.where(often_true, "true", "false")))
    rest = records.filter(~pl.col("model").is_in(["m00", "m01"]))
    fixed = pl.concat([m00, m01, rest]).with_columns(
        (pl.col("prediction") == pl.col("outcome")).alias("correct"))
    res = _task(fixed)
    rows = {r["model"]: r for r in res["models"]}
    assert rows["m00"]["responder"] == "constant" and rows["m00"]["prediction_true_share"] == 1.0
    assert rows["m01"]["responder"] == "near_constant"
    assert rows["m02"]["responder"] == "varied" and rows["m02"]["responder_note"] is None
    assert rows["m00"]["advantage_accuracy_ci"][0] > 0.1  # what a count would have credited
    acc = res["summary"]["accuracy"]
    assert acc["n_models_compared"] == 10 and acc["n_models_counted"] == 8
    assert {m["model"] for m in acc["models_not_counted"]} == {"m00", "m01"}
    assert all("base rate" in m["reason"] for m in acc["models_not_counted"])
    d = res["summary"]["dprime"]
    assert d["n_models_counted"] == 10 and d["models_not_counted"] == []


def test_the_report_marks_the_constant_responders_and_says_why(tmp_path):
    from selfmodel.report.sections import self_other
    from selfmodel.report.sections.common import Report

    records = simulate(np.zeros(6), seed=4, n_items=200).with_columns(
        pl.when(pl.col("model") == "m00").then(pl.lit("true")).otherwise(pl.col("prediction"))
        .alias("prediction"))
    section = self_vs_other_rescored(records, SIZES, seed=3, n_boot=50)
    text = self_other.tables(Report({"self_vs_other_rescored": section}, {}, None, tmp_path, 6.3, 8.5))
    assert "† m00 (constant, 100.0% of its predictions `true`)" in text
    assert "Accuracy counts 5 of 6 models." in text
    assert text.count(" †") == 1
