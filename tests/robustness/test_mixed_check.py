"""The mixed predictive check (analysis/robustness/mixed_check.py) can fail: a planted outlying family is
flagged and a well-specified data set passes.

Fast tests use a posterior concentrated at the true parameters (the check's own power, no
sampler); the slow test fits the scale model and checks the fitted posterior.
"""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from selfmodel.robustness.mixed_check import mixed_predictive_check

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
def test_fitted_scale_model_absorbs_an_outlier_in_sample_and_the_holdout_flags_it():
    """Measured: fitted to data with one family +2.5 logits out, the in-sample mixed check
    passes (sigma_family inflates to take the outlier in); refitted without that family, the
    held-out check flags it. With no outlier the held-out family passes."""
    from selfmodel.fitting.sampling import SamplerSettings, fit
    from selfmodel.robustness.mixed_check import draws_from_fit, holdout_group_check

    settings = SamplerSettings(draws=500, tune=1000, chains=2, cores=2, target_accept=0.95)
    for outlier, flagged in ((2.5, True), (0.0, False)):
        cells = simulate(4, outlier=outlier)
        rest = cells.filter(pl.col("family") != "fam0")
        held = cells.filter(pl.col("family") == "fam0")
        draws, tasks = draws_from_fit(fit("scale", rest, seed=1, settings=settings).idata)
        out = holdout_group_check(draws, {c: held[c].to_list() for c in held.columns}, tasks, seed=3)
        assert out["flagged"] is flagged, out


def test_holdout_check_flags_the_outlier_from_draws_that_never_saw_it():
    from selfmodel.robustness.mixed_check import holdout_group_check

    cells = simulate(1, outlier=2.0)
    fam0 = cells.filter(pl.col("family") == "fam0")
    cols = {c: fam0[c].to_list() for c in fam0.columns}
    out = holdout_group_check(_point_draws(), cols, TASKS, seed=1)
    assert out["flagged"] and out["observed_accuracy"] > out["replicated_accuracy_94"][1]
    ok = simulate(1).filter(pl.col("family") == "fam0")
    out = holdout_group_check(_point_draws(), {c: ok[c].to_list() for c in ok.columns}, TASKS, seed=1)
    assert not out["flagged"]
    out = holdout_group_check(_point_draws(), {c: ok[c].to_list() for c in ok.columns}, ["zz"], seed=1)
    assert out["status"] == "not_estimable" and out["cells_without_task"] == ok.height
