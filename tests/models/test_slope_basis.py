"""The decorrelated slope basis (``selfmodel.models.decorrelation.decorrelated_slopes``): same model, new geometry.

``models/scale.py`` and ``models/sdt.py`` draw the task slopes and the family and model
intercepts in a basis where the data-informed total slope is a coordinate and the shift
that trades the slope against the intercepts is drawn from its conditional prior. Checked
here: the prior of the model's own quantities is the plain one; the likelihood does not
move along the shift (so that coordinate is decorrelated from the data by construction);
the fallback to the plain basis where the construction does not apply.
"""

from __future__ import annotations

import numpy as np
import polars as pl
import pymc as pm
import pytest

import selfmodel.models.scale as scale
import selfmodel.models.sdt as sdt
from selfmodel.models.decorrelation import decorrelatable, shift_direction
from selfmodel.records.simulate import simulate_scale_cells


def _cells(families: int = 3, sizes: int = 3) -> pl.DataFrame:
    data, _ = simulate_scale_cells(seed=5, n_families=families, sizes_per_family=sizes,
                                   n_tasks=3, n_per_cell=200)
    return data


def _per_model(data: pl.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    per = data.group_by("model").agg(pl.col("x").first(), pl.col("family").first()).sort("model")
    fams = sorted(set(per["family"]))
    return per["x"].to_numpy(), np.array([fams.index(f) for f in per["family"]])


def _draws(model: pm.Model, names: list[str], n: int = 40_000) -> np.ndarray:
    drawn = pm.draw([model[v] for v in names], draws=n, random_seed=11)
    return np.column_stack([np.asarray(d).reshape(n, -1) for d in drawn])


@pytest.mark.ci  # 40,000 prior draws through a numba-compiled graph
@pytest.mark.parametrize("priors", [None, {"slope_task": ("Normal", {"mu": 0.2, "sigma": 0.4})}])
def test_scale_prior_is_the_plain_prior(priors) -> None:
    """Means and covariances of slopes, intercepts and their sds agree within MC error."""
    data = _cells()
    names = ["slope_task", "beta", "u_family", "v_model", "sigma_family", "sigma_model"]
    plain = _draws(scale.build(data, priors, slope_basis="plain"), names)
    deco = _draws(scale.build(data, priors), names)
    assert "z_slope_total" in scale.build(data, priors).named_vars  # the new basis is used
    sd = plain.std(0)
    np.testing.assert_allclose(deco.mean(0), plain.mean(0), atol=0.03 * sd.max())
    np.testing.assert_allclose(deco.std(0), sd, rtol=0.03)
    np.testing.assert_allclose(np.corrcoef(deco.T), np.corrcoef(plain.T), atol=0.03)
    # the trade-off direction: a priori the slope is uncorrelated with the intercepts along it
    x, fam = _per_model(data)
    d_u, d_v = shift_direction(x, fam)
    shift = deco[:, 4:7] @ d_u + deco[:, 7:16] @ d_v
    assert abs(np.corrcoef(deco[:, 3], shift)[0, 1]) < 0.03


def test_scale_likelihood_does_not_move_along_the_shift() -> None:
    """The observed counts' log likelihood is the same at any value of the shift coordinate."""
    data = _cells()  # equal family sizes: x and its family means are centred exactly
    model = scale.build(data)
    loglik = model.compile_fn(model.logp(vars=model.observed_RVs, sum=True),
                              inputs=model.value_vars, on_unused_input="ignore",
                              mode="FAST_COMPILE")
    point = model.initial_point(random_seed=3)
    rng = np.random.default_rng(3)
    for key in point:
        point[key] = point[key] + 0.3 * rng.normal(size=np.shape(point[key]))
    values = []
    for shift in (-2.0, 0.0, 3.0):
        point["z_slope_shift"] = np.asarray(shift)
        values.append(float(loglik(point)))
    np.testing.assert_allclose(values, values[1], rtol=1e-12)
    # ... while the slope itself moves with it: it is the shift that trades against beta
    beta = model.compile_fn(model["beta"], inputs=model.value_vars,
                            on_unused_input="ignore", mode="FAST_COMPILE")
    point["z_slope_shift"] = np.asarray(0.0)
    b0 = float(beta(point))
    point["z_slope_shift"] = np.asarray(1.0)
    assert abs(float(beta(point)) - b0) > 1e-4


def test_plain_basis_where_the_construction_does_not_apply() -> None:
    data = _cells()
    student = {"slope_task": ("StudentT", {"nu": 3.0, "mu": 0.0, "sigma": 1.0})}
    assert "z_slope_total" not in scale.build(data, student).named_vars
    assert "z_slope_total" not in scale.build(data, task_slopes="pooled").named_vars
    same_x = data.with_columns(pl.lit(0.0).alias("x"))
    x, fam = _per_model(same_x)
    assert not decorrelatable(scale.DEFAULT_PRIORS["slope_task"], x, fam)
    assert "z_slope_total" not in scale.build(same_x).named_vars


@pytest.mark.ci  # 30,000 prior draws through a numba-compiled graph
def test_sdt_prior_is_the_plain_prior() -> None:
    cells = _cells().with_columns(
        (pl.col("n") // 2).alias("n_signal"), (pl.col("n") - pl.col("n") // 2).alias("n_noise"),
        (pl.col("k") // 2).alias("hits"), (pl.col("k") // 4).alias("false_alarms"),
    )
    # intercepts standardised by their sds: given the sds, their prior is ZeroSumNormal(1)
    names = ["criterion_slope_task", "u_criterion_family", "v_criterion_model",
             "dprime_slope_task", "v_dprime_model", "sigma_criterion_family",
             "sigma_criterion_model", "sigma_dprime_model"]

    def standardised(model: pm.Model) -> np.ndarray:
        d = _draws(model, names, 30_000)
        return np.column_stack([d[:, :3], d[:, 3:6] / d[:, [27]], d[:, 6:15] / d[:, [28]],
                                d[:, 15:18], d[:, 18:27] / d[:, [29]]])

    plain = standardised(sdt.build(cells, slope_basis="plain"))
    deco_model = sdt.build(cells)
    assert {"z_criterion_slope_total", "z_dprime_slope_total"} <= set(deco_model.named_vars)
    deco = standardised(deco_model)
    np.testing.assert_allclose(deco.std(0), plain.std(0), rtol=0.03)
    # 729 correlations, each with a Monte Carlo sd of about 0.008 for the difference
    np.testing.assert_allclose(np.corrcoef(deco.T), np.corrcoef(plain.T), atol=0.045)
