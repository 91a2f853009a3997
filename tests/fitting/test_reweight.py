"""Prior variants by PSIS reweighting (analysis/fitting/reweight.py), against exact answers.

A conjugate normal model (known data variance, normal prior on the mean) has a closed-form
posterior under every prior, so a reweighted variant can be checked against the truth, and
a prior the main draws cannot represent must fall back to a refit.
"""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytest
import xarray as xr
from arviz_stats.base import array_stats

from selfmodel.fitting.reweight import k_threshold, log_prior_ratio, resample


def _posterior(prior_sd: float, ybar: float, n: int, rng: np.random.Generator, shape=(4, 2000)):
    prec = 1 / prior_sd**2 + n
    mean, sd = ybar * n / prec, prec**-0.5
    return mean, sd, rng.normal(mean, sd, size=shape)


def _model(prior_sd: float):
    with pm.Model() as m:
        pm.Normal("mu", mu=0.0, sigma=prior_sd)
        pm.HalfNormal("s", sigma=1.0)
    return m


@pytest.mark.parametrize("factor", [0.5, 2.0])
def test_reweighted_posterior_matches_the_exact_one(factor):
    rng = np.random.default_rng(3)
    _, _, draws = _posterior(1.0, ybar=1.2, n=4, rng=rng)
    post = xr.Dataset({"mu": (("chain", "draw"), draws),
                       "s": (("chain", "draw"), np.abs(rng.normal(size=draws.shape)))})
    old = {"mu": ("Normal", {"mu": 0.0, "sigma": 1.0}), "s": ("HalfNormal", {"sigma": 1.0})}
    new = {"mu": ("Normal", {"mu": 0.0, "sigma": factor}), "s": ("HalfNormal", {"sigma": 1.0})}
    lw, why = log_prior_ratio(post, old, new, _model(1.0), _model(factor))
    assert why is None and lw.shape == (4, 2000)
    smoothed, k = array_stats.psislw(-lw.ravel())
    assert k < k_threshold(lw.size)
    got = resample(post, np.asarray(smoothed), seed=1)["mu"].values
    mean, sd, _ = _posterior(factor, ybar=1.2, n=4, rng=rng)
    assert abs(got.mean() - mean) < 4 * sd / np.sqrt(2000)
    assert abs(got.std() - sd) < 0.05 * sd
    assert abs(post["mu"].values.mean() - mean) > 10 * sd / np.sqrt(8000)  # it did move


def test_far_prior_gives_a_large_pareto_k():
    rng = np.random.default_rng(4)
    _, _, draws = _posterior(1.0, ybar=1.2, n=4, rng=rng)
    post = xr.Dataset({"mu": (("chain", "draw"), draws)})
    old = {"mu": ("Normal", {"mu": 0.0, "sigma": 1.0})}
    new = {"mu": ("Normal", {"mu": 0.0, "sigma": 0.02})}  # all mass near 0: few main draws
    with pm.Model() as m_old:
        pm.Normal("mu", 0.0, 1.0)
    with pm.Model() as m_new:
        pm.Normal("mu", 0.0, 0.02)
    lw, _ = log_prior_ratio(post, old, new, m_old, m_new)
    _, k = array_stats.psislw(-lw.ravel())
    assert k > k_threshold(lw.size)


def test_a_prior_with_random_parameters_is_not_reweighted():
    post = xr.Dataset({"a": (("chain", "draw"), np.zeros((2, 10))),
                       "b": (("chain", "draw"), np.ones((2, 10)))})

    def model(sd):
        with pm.Model() as m:
            a = pm.Normal("a", 0.0, 1.0)
            pm.Normal("b", a, sd)
        return m

    lw, why = log_prior_ratio(post, {"b": ("Normal", {"sigma": 1.0})},
                              {"b": ("Normal", {"sigma": 2.0})}, model(1.0), model(2.0))
    assert lw is None and "not a free variable's own prior" in why


def test_resample_keeps_shape_and_follows_weights():
    post = xr.Dataset({"x": (("chain", "draw", "t"), np.arange(24.0).reshape(2, 4, 3))})
    lw = np.full(8, -np.inf)
    lw[5] = 0.0  # all weight on pooled draw 5
    out = resample(post, lw, seed=0)
    assert out["x"].shape == (2, 4, 3)
    assert (out["x"].values == post["x"].values.reshape(8, 3)[5]).all()


def _prior_draws_as_fit(module, data, n_chains: int = 4, n_draws: int = 2000):
    """A :class:`Fit` whose "posterior" is the model's prior (no data): a known target."""
    from selfmodel.common import arviz_ops
    from selfmodel.fitting.sampling import Fit

    m = module.build(data)
    names = [v.name for v in (*m.free_RVs, *m.deterministics)]
    drawn = pm.draw([m[v] for v in names], draws=n_chains * n_draws, random_seed=11)
    post = {n: (("chain", "draw", *m.named_vars_to_dims.get(n, ())),
                np.asarray(d).reshape(n_chains, n_draws, *np.shape(d)[1:]))
            for n, d in zip(names, drawn, strict=True)}
    ds = xr.Dataset(post, coords={k: list(v) for k, v in m.coords.items()})
    prov = {"priors": {k: [v[0], v[1]] for k, v in module.DEFAULT_PRIORS.items()}}
    return Fit(module.NAME, arviz_ops.from_datasets(posterior=ds), {"passed": True}, prov)


def test_decorrelated_basis_is_reweighted_with_the_plain_basis_densities():
    """The default (decorrelated) scale model's task slopes are deterministics, yet a prior
    variant is reweighted: the densities are taken in the plain basis, the same prior
    (``SPEC.prior_density_options``). Checked against the exact answer: with the prior as
    the "posterior", halving every prior scale must give the halved prior (its slope sd 0.5
    per task, drawn from the x0.5 model); doubling it cannot be represented and refits."""
    import selfmodel.models.scale as scale
    from selfmodel.fitting.reweight import _reweighted
    from selfmodel.models.spec import scale_priors
    from selfmodel.records.simulate import simulate_scale_cells

    data, _ = simulate_scale_cells(seed=5, n_families=3, sizes_per_family=3, n_tasks=3,
                                   n_per_cell=200)
    main = _prior_draws_as_fit(scale, data)
    assert "slope_task" not in {v.name for v in scale.build(data).free_RVs}  # decorrelated
    half = scale_priors(scale.DEFAULT_PRIORS, 0.5)
    got, info = _reweighted(main, half, data, None, seed=1)
    assert got is not None and info["method"] == "psis", info
    exact = pm.draw(scale.build(data, half)["slope_task"], draws=20_000, random_seed=2)
    sd = got.idata["posterior"]["slope_task"].values.reshape(-1, 3).std(0)
    np.testing.assert_allclose(sd, exact.std(0), rtol=0.06)
    assert np.all(sd < 0.6)  # it moved from the main draws' sd of 1
    got2, info2 = _reweighted(main, scale_priors(scale.DEFAULT_PRIORS, 2.0), data, None, seed=1)
    assert got2 is None and info2["method"] == "refit" and "Pareto k" in info2["reason"]


def test_within_between_priors_are_reweighted_in_the_plain_form():
    """In the sampled (exact) form beta_between is a deterministic, so its prior cannot be
    evaluated as a free variable's own; in the form SPEC.prior_density_options names it is,
    and the log ratio of the x2 variant is the sum of the closed-form log density ratios."""
    from scipy import stats

    from selfmodel.models import within_between
    from selfmodel.models.spec import scale_priors
    from tests.models.test_models import _cells

    old = dict(within_between.DEFAULT_PRIORS)
    new = scale_priors(old, 2.0)
    rng = np.random.default_rng(3)
    tasks = sorted(set(_cells()["task"].to_list()))
    values = {name: np.abs(rng.normal(0.3, 0.2, (2, 5))) for name in old if name != "alpha"}
    values["alpha"] = rng.normal(0.0, 1.0, (2, 5, len(tasks)))
    post = xr.Dataset({k: (("chain", "draw", "task") if v.ndim == 3 else ("chain", "draw"), v)
                       for k, v in values.items()}, coords={"task": tasks})

    def build(priors, **opts):
        return within_between.build(_cells(), priors=priors, **opts)

    lw, why = log_prior_ratio(post, old, new, build(old), build(new))
    assert lw is None and "'beta_between'" in why
    opts = within_between.SPEC.prior_density_options
    lw, why = log_prior_ratio(post, old, new, build(old, **opts), build(new, **opts))
    assert why is None
    expected = np.zeros((2, 5))
    for name, (dist, kw) in old.items():
        v = values[name]
        s_old, s_new = kw["sigma"], new[name][1]["sigma"]
        if dist == "Normal":
            mu = kw.get("mu", 0.0)
            d = stats.norm.logpdf(v, mu, s_new) - stats.norm.logpdf(v, mu, s_old)
        else:
            assert dist == "HalfNormal"
            d = stats.halfnorm.logpdf(v, scale=s_new) - stats.halfnorm.logpdf(v, scale=s_old)
        expected += d.reshape(2, 5, -1).sum(axis=-1)
    np.testing.assert_allclose(lw, expected, rtol=1e-6)  # PyTensor's and SciPy's log densities agree to ~2e-8
