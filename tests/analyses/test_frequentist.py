"""Frequentist cross-checks: reference numbers, exact tests, behaviour under a null, default data."""

from __future__ import annotations

import itertools
import json
import time
from pathlib import Path
from unittest import mock

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from statsmodels.stats.multitest import multipletests

from selfmodel.analyses.frequentist import (
    correlations,
    crosscheck_table,
    glm_slope,
    holm,
    meta_regression,
    permutation_slope_test,
    permutation_test,
    run_frequentist,
    two_stage,
    wild_bootstrap,
)
from selfmodel.records.cells import build_cells, derived_models
from selfmodel.records.contract import SCALE_EXCLUSION_REASON
from selfmodel.records.ingest import ingest
from selfmodel.records.registry import load_registry
from selfmodel.records.simulate import simulate_scale_cells

ROOT = Path(__file__).resolve().parents[2]
REF_DIR = ROOT / "tests" / "reference"
REF = json.loads((REF_DIR / "frequentist_small.json").read_text())


@pytest.fixture(scope="module")
def small() -> pl.DataFrame:
    """Six models x two tasks, x centred (tests/reference/frequentist_small.csv)."""
    return pl.read_csv(REF_DIR / "frequentist_small.csv")


@pytest.fixture(scope="module")
def default_cells() -> pl.DataFrame:
    records = ingest([ROOT / "data_raw" / "records.csv"]).records
    return build_cells(records, load_registry(ROOT / "data_raw" / "registry.csv"), scale="params")


@pytest.fixture(scope="module")
def default_freq(default_cells: pl.DataFrame) -> dict:
    t0 = time.perf_counter()
    derived = derived_models(load_registry(ROOT / "data_raw" / "registry.csv"))
    out = run_frequentist(default_cells, seed=20261130, derived=derived)
    out["_seconds"] = time.perf_counter() - t0
    return out


# --------------------------------------------------------------------------- GLM


@pytest.mark.parametrize("design", ["common", "task_slopes"])
def test_glm_cluster_se_matches_hand_sandwich(small: pl.DataFrame, design: str) -> None:
    """Slope and CR1 cluster SE against a hand-computed sandwich
    G/(G-1) (N-1)/(N-K) H^-1 (sum_g s_g s_g') H^-1 with a Newton-Raphson MLE, and the model-based
    SE sqrt(diag H^-1); t(G-1) interval and p-value.

    Source: tests/reference/make_frequentist_reference.py -> frequentist_small.json (numpy only;
    statsmodels' own cluster SE is stored beside it and agrees to 1e-12).
    """
    ref = REF[design]
    assert ref["se_cluster_hand"] == pytest.approx(ref["se_cluster_statsmodels"], rel=1e-10)
    out = glm_slope(small, task_slopes=design == "task_slopes")
    s = out["slope"]
    assert s["estimate"] == pytest.approx(ref["slope"], abs=1e-9)
    assert s["se"] == pytest.approx(ref["se_cluster_hand"], rel=1e-8)
    assert out["slope_naive"]["se"] == pytest.approx(ref["se_naive"], rel=1e-8)
    assert s["p_value"] == pytest.approx(ref["p_cluster_t"], rel=1e-6)
    assert [s["ci_low"], s["ci_high"]] == pytest.approx(ref["ci_cluster_t"], rel=1e-7)
    assert s["df"] == REF["G"] - 1
    if design == "task_slopes":
        per = out["per_task"]
        est = [per["t1"]["estimate"], per["t2"]["estimate"]]
        assert est == pytest.approx(ref["task_slopes"], abs=1e-9)
        assert [per["t1"]["se"], per["t2"]["se"]] == pytest.approx(ref["task_se_cluster"], rel=1e-8)


def test_task_slope_mean_is_mean_of_separate_task_fits(small: pl.DataFrame) -> None:
    """With task intercepts and task slopes the binomial likelihood factorises over tasks, so
    the sum-to-zero 'slope' must equal the average of per-task GLM slopes fitted separately."""
    out = glm_slope(small, task_slopes=True)
    sep = [glm_slope(small.filter(pl.col("task") == t))["slope"]["estimate"] for t in ("t1", "t2")]
    assert out["slope"]["estimate"] == pytest.approx(np.mean(sep), abs=1e-8)
    assert out["per_task"]["t1"]["estimate"] == pytest.approx(sep[0], abs=1e-8)


def test_not_estimable_with_two_models(small: pl.DataFrame) -> None:
    two = small.filter(pl.col("model").is_in(["m1", "m2"]))
    assert glm_slope(two)["estimable"] is False
    out = run_frequentist(two, seed=1)
    assert out["estimable"] is False and "at least 3" in out["reason"]
    rows = crosscheck_table(out, {"mean": 0.1, "hdi_low": 0.0, "hdi_high": 0.2})
    assert rows[0]["agrees"] is None and "not run" in rows[0]["note"]


def test_models_without_scale_variable_are_listed(small: pl.DataFrame) -> None:
    closed = pl.DataFrame({"model": ["z", "z"], "family": ["q", "q"], "task": ["t1", "t2"],
                           "n": [100, 100], "k": [70, 60], "x": [None, None]},
                          schema_overrides={"x": pl.Float64})
    out = run_frequentist(pl.concat([small, closed]), seed=1, reps=999)
    assert out["models_without_scale_variable"] == ["z"] and out["n_models"] == 6


def test_unbalanced_cells_are_handled_and_labelled(small: pl.DataFrame) -> None:
    """A task seen by only two models has no slope of its own: it leaves the task-slope designs
    (listed in tasks_excluded) instead of producing a zero or negative variance; a model missing
    a task leaves the per-model pooled analyses (models_dropped), and the cross-check says so."""
    extra = pl.DataFrame({"model": ["m1", "m2"], "family": ["a", "a"], "task": ["t3", "t3"],
                          "n": [50, 50], "k": [30, 35], "x": [-1.2, -0.7]})
    cells = pl.concat([small.filter(~((pl.col("model") == "m6") & (pl.col("task") == "t2"))),
                       extra])
    out = run_frequentist(cells, seed=2)
    assert out["glm_task_slopes"]["tasks_excluded"] == ["t3"]
    assert set(out["glm_task_slopes"]["per_task"]) == {"t1", "t2"}
    assert out["two_stage"]["pooled"]["models_dropped"] == ["m6"]
    assert out["two_stage"]["pooled"]["tasks_used"] == ["t1", "t2"]
    assert out["holm"]["permutation"]["t3"] is None
    rows = crosscheck_table(out, {"mean": 0.2, "hdi_low": 0.0, "hdi_high": 0.4, "hdi_prob": 0.94})
    assert "tasks left out: t3" in rows[0]["method"]
    assert "models dropped: m6" in rows[4]["method"]
    json.dumps(out)


# --------------------------------------------------------------------------- wild bootstrap


@pytest.mark.parametrize("design", ["common", "task_slopes"])
def test_wild_bootstrap_exact_p_matches_loop(small: pl.DataFrame, design: str) -> None:
    """Restricted wild score bootstrap with all 2^6 Rademacher sign vectors against an explicit
    loop over sign vectors with an independent Newton-Raphson restricted fit.

    Source: tests/reference/make_frequentist_reference.py -> frequentist_small.json.
    """
    out = wild_bootstrap(small, seed=0, task_slopes=design == "task_slopes",
                         weights="rademacher", per_task=False, ci=False)
    assert out["enumerated"] and out["reps"] == 64
    assert out["slope"]["score_t"] == pytest.approx(REF[design]["wild_score_t"], rel=1e-8)
    assert out["slope"]["p_value"] == pytest.approx(REF[design]["wild_p_exact"], abs=1e-12)


def test_wild_bootstrap_ci_inverts_the_test(small: pl.DataFrame) -> None:
    """The interval ends are where the bootstrap p-value crosses 1 - level: p > 0.05 just
    inside, <= 0.05 just outside; p = 1 at the estimate."""
    out = wild_bootstrap(small, seed=5, weights="webb", reps=1999, per_task=False)
    s = out["slope"]
    lo, hi, est = s["ci_low"], s["ci_high"], s["estimate"]
    assert lo < est < hi

    def p(b0: float) -> float:
        r = wild_bootstrap(small, seed=5, weights="webb", reps=1999, per_task=False, ci=False,
                           beta0=b0)
        return r["slope"]["p_value"]

    assert p(est) == 1.0
    width = hi - lo
    assert p(lo + 0.01 * width) > 0.05 and p(lo - 0.01 * width) <= 0.05
    assert p(hi - 0.01 * width) > 0.05 and p(hi + 0.01 * width) <= 0.05


def test_wild_bootstrap_seeded(small: pl.DataFrame) -> None:
    a = wild_bootstrap(small, seed=3, weights="webb", reps=499, ci=False)
    b = wild_bootstrap(small, seed=3, weights="webb", reps=499, ci=False)
    c = wild_bootstrap(small, seed=4, weights="webb", reps=499, ci=False)
    assert a == b
    assert a["slope"]["p_value"] != c["slope"]["p_value"]
    assert wild_bootstrap(small, seed=3, ci=False)["weights"] == "webb"  # auto: G = 6 < 12


@pytest.mark.slow
@pytest.mark.ci
def test_wild_bootstrap_null_rejection_rate() -> None:
    """Under a null slope (beta = 0, no task slope spread; family, model and cell effects as in
    models/scale.py) the wild bootstrap p-value is roughly uniform: over 100 simulated data sets
    the 5% rejection rate lies in [0, 0.10] and the 20% rate in [0.10, 0.30]. Under beta = 0.8
    it must reject most of the time (power > 0.6), so the test can fail both ways. Measured:
    0.04 at 5% (12 models, enumerated Rademacher); about 3 s."""
    p_null, p_alt = [], []
    for s in range(100):
        cells, _ = simulate_scale_cells(seed=5000 + s, beta=0.0, sigma_task_slope=0.0,
                                        n_families=4, sizes_per_family=3)
        out = wild_bootstrap(cells, seed=s, per_task=False, ci=False)
        p_null.append(out["slope"]["p_value"])
    for s in range(30):
        cells, _ = simulate_scale_cells(seed=9000 + s, beta=0.8, sigma_task_slope=0.0,
                                        n_families=4, sizes_per_family=3)
        out = wild_bootstrap(cells, seed=s, per_task=False, ci=False)
        p_alt.append(out["slope"]["p_value"])
    p_null_arr = np.array(p_null)
    assert 0.0 <= np.mean(p_null_arr < 0.05) <= 0.10
    assert 0.10 <= np.mean(p_null_arr < 0.20) <= 0.30
    assert np.mean(np.array(p_alt) < 0.05) > 0.6


# --------------------------------------------------------------------------- two-stage


def test_two_stage_matches_hand_dl_and_knapp_hartung(small: pl.DataFrame) -> None:
    """DerSimonian-Laird tau^2 for meta-regression (tr P denominator) and the Knapp-Hartung SE.

    Source: tests/reference/make_frequentist_reference.py -> frequentist_small.json.
    """
    out = two_stage(small)["pooled"]
    ref = REF["two_stage"]
    assert ref["tau2_dl"] > 0  # the data are heterogeneous enough to exercise tau^2
    assert out["tau2"] == pytest.approx(ref["tau2_dl"], rel=1e-8)
    assert out["slope"]["estimate"] == pytest.approx(ref["slope"], rel=1e-8)
    assert out["slope"]["se"] == pytest.approx(ref["se_kh"], rel=1e-8)
    assert out["slope"]["df"] == REF["G"] - 2


def test_meta_regression_homogeneous_has_zero_tau2() -> None:
    x = np.linspace(-1, 1, 8)
    r = meta_regression(0.3 + 0.5 * x, np.full(8, 0.02), x)
    assert r["tau2"] == 0.0 and r["slope"]["estimate"] == pytest.approx(0.5)


# --------------------------------------------------------------------------- permutation


def test_permutation_exact_tiny_example() -> None:
    """Four models, y = x: only the identity and the reversal reach |slope| = 1, so the exact
    two-sided p-value is 2 / 4! = 1/12 (hand count)."""
    r = permutation_slope_test(np.arange(4.0), np.arange(4.0), seed=0)
    assert r["exact"] and r["n_permutations"] == 24
    assert r["p_value"] == pytest.approx(1 / 12, abs=1e-15)


def test_permutation_exact_matches_brute_force(small: pl.DataFrame) -> None:
    """Exact p over all 720 permutations of six models vs a np.polyfit loop.

    Source: tests/reference/make_frequentist_reference.py -> frequentist_small.json.
    """
    out = permutation_test(small, seed=0)["pooled"]
    assert out["exact"] and out["n_permutations"] == REF["permutation"]["n"]
    assert out["statistic"] == pytest.approx(REF["permutation"]["slope"], rel=1e-10)
    assert out["p_value"] == pytest.approx(REF["permutation"]["p_exact"], abs=1e-12)


def test_permutation_random_is_seeded_and_valid() -> None:
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=12), rng.normal(size=12)
    a = permutation_slope_test(y, x, seed=1, permutations=999)
    assert not a["exact"] and a == permutation_slope_test(y, x, seed=1, permutations=999)
    assert 1 / 1000 <= a["p_value"] <= 1.0
    full = [abs(np.polyfit(x[list(p)], y, 1)[0]) for p in itertools.islice(
        itertools.permutations(range(12)), 1)]
    assert full[0] == pytest.approx(abs(a["statistic"]))


# --------------------------------------------------------------------------- correlations, Holm


def test_correlations_match_definitions(small: pl.DataFrame) -> None:
    """Pearson r and Spearman rho (Pearson on mid-ranks) of pooled accuracy with x.

    Source: tests/reference/make_frequentist_reference.py -> frequentist_small.json.
    """
    out = correlations(small)["pooled"]
    assert out["pearson_r"] == pytest.approx(REF["correlations"]["pearson_r"], rel=1e-10)
    assert out["spearman_rho"] == pytest.approx(REF["correlations"]["spearman_rho"], rel=1e-10)


def test_holm_reference() -> None:
    """Source: statsmodels.stats.multitest.multipletests(method="holm") via
    tests/reference/make_frequentist_reference.py."""
    p = REF["holm"]["p"]
    got = holm({str(i): v for i, v in enumerate(p)})
    assert [got[str(i)] for i in range(len(p))] == pytest.approx(REF["holm"]["adjusted"], abs=1e-15)


@given(st.lists(st.floats(0.0, 1.0, allow_nan=False), min_size=1, max_size=12))
@settings(max_examples=20, deadline=None)
def test_holm_matches_statsmodels(p: list[float]) -> None:
    """Holm against statsmodels.stats.multitest.multipletests(method="holm") on any p-values.

    multipletests calls gc.collect() on each call (0.1-0.3 s in a test process full of
    objects); it is switched off here, which changes no number.
    """
    got = holm({f"k{i}": v for i, v in enumerate(p)})
    with mock.patch("gc.collect", return_value=0):
        ref = multipletests(p, method="holm")[1]
    assert [got[f"k{i}"] for i in range(len(p))] == pytest.approx(list(ref), abs=1e-12)


def test_holm_skips_missing() -> None:
    assert holm({"a": None, "b": 0.02}) == {"a": None, "b": 0.02}


# --------------------------------------------------------------------------- default data


def test_default_data_runtime_and_json(default_freq: dict, default_cells: pl.DataFrame) -> None:
    """run_frequentist on data_raw takes seconds (measured ~0.6 s on 2 shared cores) and is a
    deterministic function of the cells and the seed."""
    seconds = default_freq.pop("_seconds")
    assert seconds < 15
    json.dumps(default_freq)
    reg = load_registry(ROOT / "data_raw" / "registry.csv")
    derived = derived_models(reg)
    assert run_frequentist(default_cells, seed=20261130, derived=derived) == default_freq
    # expected from the registry: sized models that are not derived checkpoints are in the
    # slope, one cell per task; unsized ones and derived checkpoints are listed apart
    sized = reg.filter(pl.col("params_b").is_not_null() & pl.col("base_model").is_null())
    n_tasks = default_cells["task"].n_unique()
    assert default_freq["n_models"] == sized.height
    assert default_freq["n_cells"] == sized.height * n_tasks
    unsized = sorted(reg.filter(pl.col("params_b").is_null())["model"].to_list())
    assert unsized and derived
    assert default_freq["models_without_scale_variable"] == unsized
    assert default_freq["excluded_derived_checkpoints"] == {
        "models": derived, "reason": SCALE_EXCLUSION_REASON
    }
    # without the registry's list they would still be reported, only under the other reason
    plain = run_frequentist(default_cells, seed=20261130, reps=99, permutations=99)
    assert plain["models_without_scale_variable"] == sorted(unsized + derived)
    assert "excluded_derived_checkpoints" not in plain
    wild = default_freq["wild_bootstrap"]
    assert wild["enumerated"] and wild["reps"] == 2**14


def test_default_data_recovers_truth(default_freq: dict) -> None:
    """The true accuracy slope of data_raw (truth.json 'accuracy_slope' = 0.173, the
    least-squares projection of analysis/records/simulate.py) lies inside the cluster-robust GLM, wild
    bootstrap and two-stage intervals; the naive GLM interval is much narrower than the
    cluster-robust one (records are not independent evidence about the slope)."""
    truth = json.loads((ROOT / "data_raw" / "truth.json").read_text())["accuracy_slope"]
    g = default_freq["glm_task_slopes"]
    wild, two = default_freq["wild_bootstrap"], default_freq["two_stage"]
    for s in (g["slope"], wild["slope"], two["pooled"]["slope"]):
        assert s["ci_low"] < truth < s["ci_high"]
    naive_w = g["slope_naive"]["ci_high"] - g["slope_naive"]["ci_low"]
    assert naive_w < 0.6 * (g["slope"]["ci_high"] - g["slope"]["ci_low"])


def test_crosscheck_against_bayesian_effect(default_freq: dict) -> None:
    """Bayesian numbers from `selfmodel run` on data_raw (mean 0.198, 94% HDI [0.069, 0.326];
    per task from the same results.json). Every interval method agrees; the naive GLM does not
    (its CI is >2x narrower than the HDI) and says why. A Bayesian effect far away disagrees."""
    bayes = {
        "mean": 0.19787, "hdi_low": 0.068575, "hdi_high": 0.325938, "hdi_prob": 0.94,
        "per_task": {
            "difficulty": {"mean": 0.294084, "hdi_low": 0.113517, "hdi_high": 0.466822,
                           "hdi_prob": 0.94},
            "refusal": {"mean": 0.156871, "hdi_low": -0.013885, "hdi_high": 0.323044,
                        "hdi_prob": 0.94},
            "word_association": {"mean": 0.142655, "hdi_low": -0.025677, "hdi_high": 0.297787,
                                 "hdi_prob": 0.94},
        },
    }
    rows = crosscheck_table(default_freq, bayes)
    json.dumps(rows)
    assert {r["effect"] for r in rows} == {"overall", "difficulty", "refusal", "word_association"}
    naive = [r for r in rows if "records independent" in r["method"]]
    assert len(naive) == 1 and naive[0]["agrees"] is False
    assert "independent" in naive[0]["note"] and "narrower" in naive[0]["note"]
    others = [r for r in rows if r is not naive[0]]
    assert all(r["agrees"] for r in others), [(r["method"], r["note"]) for r in others]
    assert all(r["note"] is None for r in others)
    far = crosscheck_table(default_freq,
                           {"mean": -0.5, "hdi_low": -0.7, "hdi_high": -0.3, "hdi_prob": 0.94})
    glm_row = far[0]
    assert glm_row["agrees"] is False and "sign verdict differs" in glm_row["note"]
    missing = crosscheck_table(default_freq, {"mean": None, "hdi_low": None, "hdi_high": None})
    assert all(r["agrees"] is None for r in missing)


# --------------------------------------------------------------------------- small designs


def _cells(rows: list[tuple[str, str, float, int, int]]) -> pl.DataFrame:
    return pl.DataFrame(
        rows, schema=["model", "task", "x", "n", "k"], orient="row"
    ).with_columns(pl.col("x").cast(pl.Float64), pl.col("n").cast(pl.Int64),
                   pl.col("k").cast(pl.Int64), family=pl.col("model"))


def test_wild_bootstrap_needs_six_clusters_and_the_rest_still_runs() -> None:
    """Three sized models, one task of 10 items: the bootstrap is skipped with its reason."""
    from selfmodel.analyses.frequentist import MIN_CLUSTERS_WILD

    cells = _cells([("a", "t", -1.0, 10, 5), ("b", "t", 0.0, 10, 7), ("c", "t", 1.0, 10, 10)])
    out = run_frequentist(cells, seed=1)
    assert out["estimable"] is True
    wild = out["wild_bootstrap"]
    assert wild["estimable"] is False
    assert f"at least {MIN_CLUSTERS_WILD}" in wild["reason"] and "0.25" in wild["reason"]
    assert out["glm_task_slopes"]["estimable"] is True
    assert out["two_stage"]["estimable"] is True
    effect = {"mean": 0.5, "hdi_low": -1.0, "hdi_high": 2.0, "hdi_prob": 0.94, "per_task": {}}
    rows = crosscheck_table(out, effect)
    wild_rows = [r for r in rows if "wild" in r["method"]]
    assert wild_rows and all(r["note"] == wild["reason"] for r in wild_rows)
    assert any(r["estimate"] is not None for r in rows)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.filterwarnings("ignore::statsmodels.tools.sm_exceptions.PerfectSeparationWarning")
@pytest.mark.filterwarnings("ignore::statsmodels.tools.sm_exceptions.ConvergenceWarning")
def test_separated_design_does_not_crash_the_bootstrap() -> None:
    """Six models, the three largest always right: the CI inversion meets singular fits."""
    cells = _cells([(f"m{i}", "t", float(i), 10, k) for i, k in enumerate([1, 5, 9, 10, 10, 10])])
    out = run_frequentist(cells, seed=1)
    wild = out["wild_bootstrap"]
    assert wild["estimable"] is True
    assert wild["slope"]["p_value"] is not None


def test_a_numerical_failure_makes_one_method_not_estimable(
    small: pl.DataFrame, monkeypatch: pytest.MonkeyPatch
) -> None:
    import importlib

    freq = importlib.import_module("selfmodel.analyses.frequentist.wild_bootstrap")

    def singular(*_a, **_k):
        raise np.linalg.LinAlgError("Singular matrix")

    monkeypatch.setattr(freq, "_cluster_contrib", singular)
    out = run_frequentist(small, seed=1)
    assert out["wild_bootstrap"] == {
        "estimable": False,
        "reason": "the wild cluster bootstrap failed numerically on this design "
        "(LinAlgError: Singular matrix)",
    }
    assert out["glm_task_slopes"]["estimable"] is True
    assert out["holm"]["wild_bootstrap"] == {}
    rows = crosscheck_table(out, {"mean": 0.1, "hdi_low": -0.1, "hdi_high": 0.3,
                                  "hdi_prob": 0.94, "per_task": {}})
    assert any("Singular matrix" in (r["note"] or "") for r in rows if "wild" in r["method"])
