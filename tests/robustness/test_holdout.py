"""Leave-one-group-out comparison (analysis/robustness/holdout.py)."""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import polars as pl
import pytest
from scipy.stats import binom

from selfmodel.robustness.holdout import heldout_log_density, leave_group_out


def test_density_without_random_effects_is_the_binomial():
    d = {"alpha": np.zeros((10, 1)), "slope_task": np.full((10, 1), 0.5),
         "sigma_family": np.full(10, 1e-9), "sigma_model": np.full(10, 1e-9), "sigma_cell": np.full(10, 1e-9)}
    held = {"model": ["m"], "family": ["f"], "task": ["t"], "x": [1.0], "n": [50], "k": [30]}
    p = 1 / (1 + math.exp(-0.5))
    assert heldout_log_density(d, held, ["t"], seed=0) == pytest.approx(binom.logpmf(30, 50, p), abs=1e-6)
    assert heldout_log_density(d, held, ["other"], seed=0) is None


def _draws(slope: float) -> dict:
    s = 400
    return {"alpha": np.zeros((s, 1)), "slope_task": np.full((s, 1), slope),
            "sigma_family": np.full(s, 0.1), "sigma_model": np.full(s, 0.1), "sigma_cell": np.full(s, 0.05)}


def test_a_real_slope_makes_the_scale_model_predict_new_models_better(monkeypatch):
    import selfmodel.robustness.holdout as h

    rng = np.random.default_rng(0)
    rows = []
    for m in range(8):
        x = -1.5 + 3 * m / 7
        p = 1 / (1 + math.exp(-(0.8 * x)))
        rows.append({"model": f"m{m}", "family": f"f{m}", "task": "t", "x": x, "n": 300,
                     "k": int(rng.binomial(300, p))})
    cells = pl.DataFrame(rows)
    # stand-in refits: the model with the scale term knows the slope, the other has none
    refits = {"with": SimpleNamespace(idata=0.8, diagnostics={"passed": True}),
              "without": SimpleNamespace(idata=0.0, diagnostics={"passed": True})}
    monkeypatch.setattr(h, "draws_from_fit", lambda slope: (_draws(slope), ["t"]))
    out = leave_group_out(cells, group="model", fit_without=lambda name, rest: refits[name],
                          with_name="with", without_name="without", seed=1)
    assert out["n_groups"] == 8 and out["elpd_diff"] > 4 and out["elpd_diff"] > 2 * out["se"]
    assert "the model with the scale term predicts held-out models better" in out["sentence"]
    # no slope in the truth: the comparison does not prefer the scale model
    flat = cells.with_columns(pl.Series("k", rng.binomial(300, 0.5, 8)))
    out = leave_group_out(flat, group="model", fit_without=lambda name, rest: refits[name],
                          with_name="with", without_name="without", seed=1)
    assert out["elpd_diff"] < 0
