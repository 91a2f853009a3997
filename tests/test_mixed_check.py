"""The mixed predictive check (analysis/mixed_check.py) can fail: a planted outlying family is
flagged and a well-specified data set passes.

Fast tests use a posterior concentrated at the true parameters (the check's own power, no
sampler); the slow test fits the scale model and checks the fitted posterior.
"""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from analysis.mixed_check import mixed_check_of_fit, mixed_predictive_check

TASKS = ["a", "b"]
TRUTH = {"alpha": np.array([0.3, -0.2]), "slope_task": np.array([0.2, 0.1]),
         "sigma_family": 0.3, "sigma_model": 0.2, "sigma_cell": 0.15}


def simulate(seed: int, *, outlier: float = 0.0, n_fam: int = 6, per_fam: int = 4) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    u = rng.normal(0, TRUTH["sigma_family"], n_fam)
    u[0] += outlier  # the planted misspecification: one family far outside the population
    for f in range(n_fam):
        for j in range(per_fam):
            m = f"f{f}m{j}"
            x = rng.uniform(-1.2, 1.2)
            v = rng.normal(0, TRUTH["sigma_model"])
            for t, task in enumerate(TASKS):
                eta = (TRUTH["alpha"][t] + TRUTH["slope_task"][t] * x + u[f] + v
                       + rng.normal(0, TRUTH["sigma_cell"]))
                n = 300
                rows.append((m, f"fam{f}", task, x, n, int(rng.binomial(n, 1 / (1 + np.exp(-eta))))))
    return pl.DataFrame(rows, schema=["model", "family", "task", "x", "n", "k"], orient="row")


def _point_draws(s: int = 2000) -> dict[str, np.ndarray]:
    return {k: (np.tile(v, (s, 1)) if np.ndim(v) else np.full(s, v)) for k, v in TRUTH.items()}


def _check(cells: pl.DataFrame) -> dict:
    cols = {c: cells[c].to_list() for c in cells.columns}
    return mixed_predictive_check(_point_draws(), cols, TASKS, seed=7)


def test_well_specified_data_pass():
    for seed in (1, 2, 3, 4, 5):
        out = _check(simulate(seed))
        assert out["passed"], (seed, out["overall"], out["flagged"])


def test_an_outlying_family_is_flagged():
    out = _check(simulate(1, outlier=2.0))
    assert not out["passed"]
    fam = {r["family"]: r for r in out["by_family"]}
    assert fam["fam0"]["flagged"]
    assert not any(r["flagged"] for name, r in fam.items() if name != "fam0")
    lo, hi = fam["fam0"]["replicated_accuracy_94"]
    assert fam["fam0"]["observed_accuracy"] > hi


@pytest.mark.slow
def test_fitted_scale_model_flags_the_outlying_family_and_passes_without_it():
    from analysis.fit import SamplerSettings, fit

    settings = SamplerSettings(draws=500, tune=1000, chains=2, cores=2, target_accept=0.95)
    good = simulate(4)
    out = mixed_check_of_fit(fit("scale", good, seed=1, settings=settings), good, seed=3)
    assert out["status"] == "estimated" and out["passed"], out["flagged"]
    bad = simulate(4, outlier=2.5)
    out = mixed_check_of_fit(fit("scale", bad, seed=1, settings=settings), bad, seed=3)
    assert not out["passed"]
    assert any(f["kind"] == "family" and f["group"] == "fam0" for f in out["flagged"])
