"""Skill beyond base rates: reference values, properties and recovery on the default data."""

from __future__ import annotations

import json
from pathlib import Path
from statistics import NormalDist

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import mannwhitneyu
from statsmodels.stats.inter_rater import cohens_kappa

from selfmodel.analyses import describe
from selfmodel.analyses.skill import (
    auroc,
    binary_metrics,
    calibration_curve,
    confidence_calibration,
    confidence_metrics,
    sdt_loglinear,
    skill_from_cells,
    skill_table,
)
from selfmodel.records.cells import to_cells
from selfmodel.records.ingest import ingest

ROOT = Path(__file__).resolve().parents[2]
REFERENCE = json.loads((ROOT / "tests" / "reference" / "skill_small.json").read_text())

counts = st.integers(min_value=0, max_value=200)


def _records(pred: list[str | None], outc: list[str], conf: list[float | None] | None = None,
             model: str = "m", task: str = "t") -> pl.DataFrame:
    n = len(outc)
    correct = [None if p is None else p == o for p, o in zip(pred, outc, strict=True)]
    return pl.DataFrame(
        {
            "model": [model] * n,
            "task": [task] * n,
            "item_id": [f"i{i}" for i in range(n)],
            "prediction": pred,
            "outcome": outc,
            "correct": correct,
            "predictor": [model] * n,
            "confidence": conf if conf is not None else [None] * n,
            "status": ["ok" if p is not None else "unparsed" for p in pred],
        },
        schema_overrides={"confidence": pl.Float64, "prediction": pl.Utf8},
    )


@pytest.fixture(scope="module")
def default_records() -> pl.DataFrame:
    return ingest([ROOT / "data_raw" / "records.csv"]).records


# --------------------------------------------------------------------------- reference values


@pytest.mark.parametrize("ref", REFERENCE["tables"], ids=lambda r: str(r["counts"]))
def test_table_metrics_match_reference(ref: dict) -> None:
    """Kappa vs statsmodels.stats.inter_rater.cohens_kappa; d' and c vs statistics.NormalDist
    with the log-linear correction; balanced accuracy by definition.

    Source: tests/reference/make_skill_reference.py -> skill_small.json.
    """
    m = binary_metrics(*ref["counts"])
    for key in ("kappa", "balanced_accuracy", "dprime", "criterion", "accuracy", "mode_baseline"):
        if ref[key] is None:
            assert m[key] is None, key
        else:
            assert m[key] == pytest.approx(ref[key], abs=1e-12), key


def test_confidence_metrics_match_reference() -> None:
    """AUROC vs scipy.stats.mannwhitneyu U / (n1 n0); Brier and ECE by definition.

    Source: tests/reference/make_skill_reference.py -> skill_small.json.
    """
    inp = REFERENCE["inputs"]
    pred, outc = np.array(inp["prediction"], bool), np.array(inp["outcome"], bool)
    m = confidence_metrics(pred, outc, np.array(inp["confidence"]))
    for key, value in REFERENCE["confidence"].items():
        assert m[key] == pytest.approx(value, abs=1e-12), key


def test_sdt_loglinear_hand_value() -> None:
    """Hautus (1995) log-linear rule: H' = (45 + .5)/(50 + 1), F' = (20 + .5)/(50 + 1); z by the
    standard library's NormalDist."""
    z = NormalDist().inv_cdf
    d, c = sdt_loglinear(45, 50, 20, 50)
    assert d == pytest.approx(z(45.5 / 51) - z(20.5 / 51), abs=1e-12)
    assert c == pytest.approx(-(z(45.5 / 51) + z(20.5 / 51)) / 2, abs=1e-12)
    assert sdt_loglinear(3, 0, 1, 5) == (None, None)


def test_auroc_ties_count_half() -> None:
    """Definition: P(score_pos > score_neg) + 0.5 P(equal), by brute force over pairs."""
    rng = np.random.default_rng(3)
    s = rng.integers(0, 4, 60).astype(float)
    y = rng.random(60) < 0.4
    pairs = [(a > b) + 0.5 * (a == b) for a in s[y] for b in s[~y]]
    assert auroc(s, y) == pytest.approx(np.mean(pairs), abs=1e-12)


# --------------------------------------------------------------------------- properties


@given(h=counts, m=counts, f=counts, c=counts)
@settings(max_examples=200, deadline=None)
def test_metric_bounds(h: int, m: int, f: int, c: int) -> None:
    r = binary_metrics(h, m, f, c)
    if r["n"] == 0:
        assert r["accuracy"] is None
        return
    if r["balanced_accuracy"] is not None:
        assert 0.0 <= r["balanced_accuracy"] <= 1.0
    if r["kappa"] is not None:
        assert -1.0 - 1e-12 <= r["kappa"] <= 1.0 + 1e-12
    assert 0.5 <= r["mode_baseline"] <= 1.0
    assert -1.0 <= r["skill_over_mode"] <= 1.0 - r["mode_baseline"] + 1e-12
    if r["skill_score"] is not None:
        assert r["skill_score"] <= 1.0 + 1e-12


@given(ns=st.integers(1, 200), nn=st.integers(1, 200), say_yes=st.booleans())
@settings(max_examples=100, deadline=None)
def test_constant_predictor_has_no_skill(ns: int, nn: int, say_yes: bool) -> None:
    """A predictor that always says the same thing: kappa 0, balanced accuracy 1/2,
    no skill over the mode baseline."""
    r = binary_metrics(ns, 0, nn, 0) if say_yes else binary_metrics(0, ns, 0, nn)
    assert r["kappa"] == pytest.approx(0.0, abs=1e-12)
    assert r["balanced_accuracy"] == 0.5
    assert r["skill_over_mode"] <= 1e-12


@given(h=counts, m=counts, f=counts, c=counts)
@settings(max_examples=100, deadline=None)
def test_kappa_matches_statsmodels(h: int, m: int, f: int, c: int) -> None:
    """Cohen's kappa agrees with statsmodels.stats.inter_rater.cohens_kappa on any 2x2 table."""
    r = binary_metrics(h, m, f, c)
    if r["kappa"] is None:
        return
    table = np.array([[h, f], [m, c]], dtype=float)
    assert r["kappa"] == pytest.approx(float(cohens_kappa(table, return_results=False)), abs=1e-9)


@given(h=counts, m=counts, f=counts, c=counts)
@settings(max_examples=100, deadline=None)
def test_flipping_predictions_flips_sdt(h: int, m: int, f: int, c: int) -> None:
    """Swapping yes/no predictions negates d' and c and reflects balanced accuracy about 1/2."""
    a, b = binary_metrics(h, m, f, c), binary_metrics(m, h, c, f)
    if a["dprime"] is None:
        assert b["dprime"] is None
        return
    assert b["dprime"] == pytest.approx(-a["dprime"], abs=1e-9)
    if a["criterion"] is None:  # a constant responder (d' 0, no criterion) stays one
        assert b["criterion"] is None and a["dprime"] == b["dprime"] == 0
    else:
        assert b["criterion"] == pytest.approx(-a["criterion"], abs=1e-9)
    assert b["balanced_accuracy"] == pytest.approx(1 - a["balanced_accuracy"], abs=1e-12)


# a grid of 1001 values: ties are common and no transform underflows
scores = st.lists(st.integers(0, 1000).map(lambda i: i / 1000), min_size=2, max_size=60)


@given(data=st.data(), s=scores)
@settings(max_examples=100, deadline=None)
def test_auroc_invariant_to_monotone_transforms(data: st.DataObject, s: list[float]) -> None:
    y = data.draw(st.lists(st.booleans(), min_size=len(s), max_size=len(s)))
    a = auroc(s, y)
    if a is None:
        assert all(y) or not any(y)
        return
    arr = np.array(s)
    assert 0.0 <= a <= 1.0
    for g in (lambda v: v**3, lambda v: np.exp(5 * v), lambda v: np.log1p(v) * 7 - 2):
        assert auroc(g(arr), y) == pytest.approx(a, abs=1e-12)
    assert auroc(-arr, y) == pytest.approx(1 - a, abs=1e-12)
    u = mannwhitneyu(arr[np.array(y)], arr[~np.array(y)]).statistic
    assert a == pytest.approx(u / (sum(y) * (len(y) - sum(y))), abs=1e-12)


@given(data=st.data(), q=scores)
@settings(max_examples=100, deadline=None)
def test_brier_and_calibration_identities(data: st.DataObject, q: list[float]) -> None:
    """Brier of confidence vs correctness equals Brier of implied P(true) vs outcome; bins
    partition the records; one bin gives |mean confidence - accuracy|."""
    n = len(q)
    yhat = np.array(data.draw(st.lists(st.booleans(), min_size=n, max_size=n)))
    y = np.array(data.draw(st.lists(st.booleans(), min_size=n, max_size=n)))
    conf = np.array(q)
    m = confidence_metrics(yhat, y, conf)
    s = np.where(yhat, conf, 1 - conf)
    assert m["brier"] == pytest.approx(float(np.mean((s - y) ** 2)), abs=1e-12)
    curve = calibration_curve(conf, yhat == y)
    assert sum(curve["bin_n"]) == n and len(curve["bin_edges"]) == 11
    assert 0.0 <= curve["ece"] <= 1.0
    one = calibration_curve(conf, yhat == y, n_bins=1)
    assert one["ece"] == pytest.approx(abs(conf.mean() - np.mean(yhat == y)), abs=1e-12)


def test_calibrated_confidence_has_small_ece() -> None:
    """Confidence read as P(prediction right): correct ~ Bernoulli(confidence) is calibrated
    (ECE ~ 0), whereas the same numbers misread as P(outcome true) would not be."""
    rng = np.random.default_rng(11)
    conf = rng.uniform(0.5, 1.0, 20000)
    correct = rng.random(20000) < conf
    yhat = rng.random(20000) < 0.5
    y = np.where(correct, yhat, ~yhat)
    m = confidence_metrics(yhat, y, conf)
    assert m["ece"] < 0.02
    assert abs(m["overconfidence"]) < 0.01
    assert m["auroc_type2"] > 0.6
    misread = calibration_curve(conf, y)  # confidence taken as P(true): wrong semantics
    assert misread["ece"] > 0.1


# --------------------------------------------------------------------------- tables


def test_skill_table_constant_yes_model_and_nonbinary_cell() -> None:
    yes = _records(["true"] * 8, ["true"] * 6 + ["false"] * 2, [0.9] * 8)
    text = _records(["cat", "dog", None], ["cat", "cow", "dog"], model="m", task="words")
    rows = {r["task"]: r for r in skill_table(pl.concat([yes, text]))}
    r = rows["t"]
    assert r["accuracy"] == 0.75 and r["mode_baseline"] == 0.75
    assert r["kappa"] == 0.0 and r["balanced_accuracy"] == 0.5 and r["skill_over_mode"] == 0.0
    assert r["n_confidence"] == 8 and r["auroc"] == 0.5
    w = rows["words"]
    assert w["binary"] is False and w["n"] == 2 and w["accuracy"] == 0.5
    assert w["kappa"] is None and w["dprime"] is None and w["brier"] is None
    json.dumps(rows)


def test_skill_table_ignores_cross_predictions_and_unreadable() -> None:
    own = _records(["true", "false", None], ["true", "false", "true"], [0.8, 0.7, None])
    other = _records(["false", "false"], ["true", "true"], [0.9, 0.9]).with_columns(
        pl.lit("other").alias("predictor")
    )
    (row,) = skill_table(pl.concat([own, other]))
    assert row["n"] == 2 and row["accuracy"] == 1.0 and row["n_confidence"] == 2


def test_skill_table_agrees_with_describe_on_default_data(default_records: pl.DataFrame) -> None:
    """Accuracy, rates and the mode baseline match selfmodel.analyses.describe on the same cells."""
    rows = skill_table(default_records)
    ref = {(r["model"], r["task"]): r for r in describe.by_model_task(to_cells(default_records))}
    n_pairs = default_records.select("model", "task").unique().height
    assert len(rows) == len(ref) == n_pairs
    for r in rows:
        d = ref[(r["model"], r["task"])]
        assert r["accuracy"] == pytest.approx(d["accuracy"], abs=1e-6)
        assert r["hit_rate"] == pytest.approx(d["hit_rate"], abs=1e-6)
        assert r["false_alarm_rate"] == pytest.approx(d["false_alarm_rate"], abs=1e-6)
        assert r["mode_baseline"] == pytest.approx(d["baseline_accuracy"], abs=1e-6)
    assert skill_from_cells(to_cells(default_records))[0].keys() <= rows[0].keys()
    json.dumps(rows)


def test_sdt_recovers_simulated_dprime(default_records: pl.DataFrame) -> None:
    """The default data are drawn from an equal-variance SDT rule with known d' and c per cell
    (data_raw/truth.json, analysis/records/simulate.py). With ~250 items a cell's d' has SE ~0.2:
    the estimates must track the truth (r > 0.8 for d', > 0.9 for c) without bias (|mean error|
    < 0.08)."""
    truth = json.loads((ROOT / "data_raw" / "truth.json").read_text())
    true = {(c["model"], c["task"]): c for c in truth["cells"]}
    # truth.json lists the cells of the base models; derived checkpoints (registry base_model)
    # are generated from their base (truth["training"]) and have no cell of their own there
    derived = set(truth["training"]["checkpoints"])
    every = skill_table(default_records)
    assert {r["model"] for r in every if (r["model"], r["task"]) not in true} == derived
    rows = [r for r in every if r["model"] not in derived]
    assert len(rows) == len(true)
    est_d = np.array([r["dprime"] for r in rows])
    est_c = np.array([r["criterion"] for r in rows])
    tru_d = np.array([true[(r["model"], r["task"])]["dprime"] for r in rows])
    tru_c = np.array([true[(r["model"], r["task"])]["criterion"] for r in rows])
    assert np.corrcoef(est_d, tru_d)[0, 1] > 0.8
    assert np.corrcoef(est_c, tru_c)[0, 1] > 0.9
    assert abs(np.mean(est_d - tru_d)) < 0.08
    assert abs(np.mean(est_c - tru_c)) < 0.08


def test_confidence_calibration_structure(default_records: pl.DataFrame) -> None:
    cal = confidence_calibration(default_records)
    assert len(cal["bin_edges"]) == 11 and "prediction is right" in cal["semantics"]
    pairs = default_records.select("model", "task").unique()
    assert len(cal["cells"]) == pairs.height and len(cal["models"]) == pairs["model"].n_unique()
    rows = {(r["model"], r["task"]): r for r in skill_table(default_records)}
    for c in cal["cells"]:
        row = rows[(c["model"], c["task"])]
        assert sum(c["bin_n"]) == c["n"] == row["n_confidence"]
        assert c["ece"] == pytest.approx(row["ece"], abs=1e-12)
    json.dumps(cal)
