"""d' where the data carry none (issue 28.2, issue 30.5): constant responders, one-outcome cells.

A model that says "I will be right" on every item has kappa 0 and balanced accuracy 0.5;
the log-linear correction applied to unequal signal and noise counts gave it a positive d'
(0.94 for 950 / 50 trials). Every d' of the package goes through
``selfmodel.analyses.skill.sdt_arrays``; the signal-detection model's table leaves out the cells
whose d' their data cannot inform, and a task left without such a cell is
``not_estimable`` with the reason, never ``no_credible_effect``.
"""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
import xarray as xr
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import norm

from selfmodel import models as model_registry
from selfmodel.analyses.rescoring import _advantages, pair_scores
from selfmodel.analyses.skill import (
    binary_metrics,
    excluded_sdt_cells,
    sdt_arrays,
    sdt_cells,
    sdt_loglinear,
    skill_from_cells,
)
from selfmodel.common import arviz_ops
from selfmodel.decisions.hypotheses import DecisionRule
from selfmodel.fitting.sampling import Fit
from selfmodel.pipeline.model_stage import declared_decisions
from selfmodel.robustness.sdt_crosscheck import sdt_crosscheck, sdt_values

trials = st.integers(min_value=1, max_value=5000)


def _old_loglinear(h: int, s: int, f: int, n: int) -> float:
    """The correction as it was applied before (every cell, constant responders included)."""
    return float(norm.ppf((h + 0.5) / (s + 1)) - norm.ppf((f + 0.5) / (n + 1)))


def test_the_old_correction_gave_a_constant_responder_skill() -> None:
    """The defect: always 'yes' on 950 signal and 50 noise trials had d' +0.94."""
    assert _old_loglinear(950, 950, 50, 50) == pytest.approx(0.9426, abs=1e-4)
    m = binary_metrics(950, 0, 50, 0)
    assert m["kappa"] == 0.0 and m["balanced_accuracy"] == 0.5
    assert m["dprime"] == 0.0 and m["criterion"] is None
    assert "constant responder" in m["sdt_note"]


@settings(max_examples=200, deadline=None)
@given(ns=trials, nn=trials, yes=st.booleans())
def test_a_constant_responder_has_dprime_zero(ns: int, nn: int, yes: bool) -> None:
    h, fa = (ns, nn) if yes else (0, 0)
    m = binary_metrics(h, ns - h, fa, nn - fa)
    assert m["dprime"] == 0.0 and m["criterion"] is None
    assert m["kappa"] == pytest.approx(0.0, abs=1e-12) and m["balanced_accuracy"] == 0.5
    assert sdt_loglinear(h, ns, fa, nn) == (0.0, None)
    d, c = sdt_arrays(np.array([h]), np.array([ns]), np.array([fa]), np.array([nn]))
    assert d[0] == 0.0 and np.isnan(c[0])
    # bootstrap-weighted (float) counts are recognised too
    w = 1.7
    d, _ = sdt_arrays(np.array([h * w]), np.array([ns * w]), np.array([fa * w]), np.array([nn * w]))
    assert d[0] == 0.0


@settings(max_examples=100, deadline=None)
@given(ns=trials, k=st.integers(0, 5000))
def test_a_missing_rate_gives_no_dprime_with_the_reason(ns: int, k: int) -> None:
    """Every outcome true: the false-alarm rate does not exist (and symmetrically)."""
    h = min(k, ns)
    m = binary_metrics(h, ns - h, 0, 0)
    assert m["dprime"] is None and m["criterion"] is None
    assert m["sdt_note"] == "no outcome-false trial: the false-alarm rate does not exist"
    m = binary_metrics(0, 0, h, ns - h)
    assert m["dprime"] is None and m["criterion"] is None
    assert m["sdt_note"] == "no outcome-true trial: the hit rate does not exist"


def _cells() -> pl.DataFrame:
    rows = [  # model, task, n_signal, n_noise, hits, false_alarms
        ("ok", "t", 50, 50, 40, 10),
        ("yes", "t", 950, 50, 950, 50),
        ("no", "t", 30, 70, 0, 0),
        ("alltrue", "t", 80, 0, 60, 0),
        ("allfalse", "t", 0, 80, 0, 20),
    ]
    return pl.DataFrame(
        [{"model": m, "task": t, "family": m, "x": float(i), "binary": True, "n": s + n,
          "k": h + (n - f), "n_signal": s, "n_noise": n, "hits": h, "false_alarms": f}
         for i, (m, t, s, n, h, f) in enumerate(rows)]
    )


def test_the_sdt_table_keeps_only_cells_whose_dprime_the_data_inform() -> None:
    cells = _cells()
    assert sdt_cells(cells)["model"].to_list() == ["ok"]
    reasons = {e["model"]: e["reason"] for e in excluded_sdt_cells(cells)}
    assert set(reasons) == {"yes", "no", "alltrue", "allfalse"}
    assert "constant responder (every prediction 'true')" in reasons["yes"]
    assert "constant responder (every prediction 'false')" in reasons["no"]
    assert reasons["alltrue"] == "no outcome-false trial: the false-alarm rate does not exist"
    assert reasons["allfalse"] == "no outcome-true trial: the hit rate does not exist"


def test_skill_rows_and_crosscheck_agree_on_the_constant_responder() -> None:
    cells = _cells()
    rows = {r["model"]: r for r in skill_from_cells(cells)}
    assert rows["yes"]["dprime"] == 0.0 and rows["no"]["dprime"] == 0.0
    assert rows["alltrue"]["dprime"] is None
    vals = sdt_values(cells)
    assert vals["model"].to_list() == ["ok"]  # as in the SDT model: no constant responder
    out = sdt_crosscheck(cells, None, seed=1)
    assert {e["model"] for e in out["excluded_cells"]} == {"yes", "no", "alltrue", "allfalse"}


def test_rescoring_gives_a_constant_predictor_dprime_zero() -> None:
    """Self vs other: a model predicting 'true' on every item has d' 0 against anyone."""
    rng = np.random.default_rng(0)
    n_items = 200
    o = (rng.random((3, n_items)) < 0.8).astype(float)
    p = np.vstack([np.ones(n_items), o[1], (rng.random(n_items) < 0.5).astype(float)])
    ok = np.ones_like(p, dtype=bool)
    s = pair_scores(p, o, ok, o, ok, np.ones(n_items))
    assert s["d_self"][0, 0] == 0.0 and np.all(s["d_cross"][0] == 0.0)
    adv = _advantages(s, ~np.eye(3, dtype=bool))
    assert adv["dprime"][0] == 0.0
    # one outcome only on the shared items: no d', the pair is left out (not a silent 0)
    o1 = o.copy()
    o1[2] = 1.0
    s = pair_scores(p, o1, ok, o1, ok, np.ones(n_items))
    assert np.isnan(s["d_cross"][1, 2]) and np.isnan(s["d_self"][2, 2])
    adv = _advantages(s, ~np.eye(3, dtype=bool))
    assert np.isnan(adv["dprime"][2]) and np.isfinite(adv["dprime"][1])


def _sdt_fit(tasks: list[str], seed: int = 0) -> Fit:
    rng = np.random.default_rng(seed)
    draws = rng.normal(0.3, 0.2, (2, 200, len(tasks)))
    post = xr.Dataset({
        "beta_dprime": (("chain", "draw"), draws.mean(-1)),
        "dprime_slope_task": (("chain", "draw", "task"), draws),
        "beta_criterion": (("chain", "draw"), draws.mean(-1)),
        "criterion_slope_task": (("chain", "draw", "task"), draws),
    }, coords={"chain": [0, 1], "draw": np.arange(200), "task": tasks})
    return Fit("sdt", arviz_ops.from_datasets(posterior=post), {"passed": True}, {})


def test_a_task_whose_outcomes_are_all_true_is_not_estimable_with_the_reason() -> None:
    """Issue 30.5: with every outcome of a task true, its d' and criterion slopes are
    not_estimable with the reason, not no_credible_effect."""
    ok_rows = [{"model": f"m{i}", "task": "a", "family": f"f{i}", "x": float(i), "binary": True,
                "n": 100, "k": 60, "n_signal": 50, "n_noise": 50, "hits": 30, "false_alarms": 10}
               for i in range(4)]
    true_rows = [{**r, "task": "b", "n_noise": 0, "false_alarms": 0, "n_signal": 100, "hits": 70}
                 for r in ok_rows]
    cells = pl.DataFrame(ok_rows + true_rows)
    data = sdt_cells(cells)
    assert data["task"].unique().to_list() == ["a"]
    module = model_registry.get("sdt")
    out = declared_decisions(module, _sdt_fit(["a"]), data, rule=DecisionRule(), tasks=["a", "b"],
                             excluded=excluded_sdt_cells(cells))
    for key in ("sensitivity", "bias"):
        b = out[key]["per_task"]["b"]
        assert b["decision"] == "not_estimable"
        assert "false-alarm rate does not exist" in b["reason"]
        assert out[key]["per_task"]["a"]["decision"] != "not_estimable"
    # every task all-true: no table, no fit, every decision not_estimable with the reason
    only_true = pl.DataFrame(true_rows)
    out = declared_decisions(module, None, sdt_cells(only_true), rule=DecisionRule(), tasks=["b"],
                             excluded=excluded_sdt_cells(only_true), reason="not fitted")
    assert out["sensitivity"]["decision"] == "not_estimable"
    assert "false-alarm rate does not exist" in out["sensitivity"]["per_task"]["b"]["reason"]
