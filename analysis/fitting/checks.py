r"""Model checks for a fitted model: prior predictive, posterior predictive, LOO, comparison.

Every function takes the model *module* (``models.get(name)``) and the table the model
was built on, rebuilds the ``pm.Model`` (with the priors and options recorded in the
fit's provenance) and returns a JSON-serialisable dict (floats, ints, lists, ``None``
for non-finite numbers) for ``results.json``.

The observed variables of every model in ``models/`` are binomial counts; the checks read
each one's trial counts :math:`n` and success probability :math:`p` off the PyMC graph,
so they work for any model with binomial likelihoods (one or several observed variables,
e.g. ``hits`` and ``false_alarms`` in ``models/sdt.py``).

What each check computes (prior and posterior predictive, PSIS-LOO, comparison), with its
sources, and how saved checks are reused: ``docs/fitting.md``.
"""

from __future__ import annotations

import hashlib
import logging
import warnings
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pymc as pm
import xarray as xr
from numpy.typing import NDArray

from selfmodel import models
from selfmodel.common import arviz_ops
from selfmodel.fitting.sampling import cached_json, frame_sha256, package_versions, source_sha256

#: Quantiles reported for implied prior distributions.
QUANTILES = (0.01, 0.05, 0.25, 0.5, 0.75, 0.95, 0.99)
#: Pareto-k above which a PSIS-LOO point is unreliable (Vehtari et al. 2024).
PARETO_K_BAD = 0.7


def _num(x: Any) -> float | None:
    f = float(x)
    return f if np.isfinite(f) else None


def _check_sources() -> list[Path]:
    """Code a saved check depends on: this module and every model module."""
    return [Path(__file__), *sorted(Path(models.__file__).parent.glob("*.py"))]


def _cached(
    check: str,
    cache_dir: Path | str | None,
    module: Any,
    data: Any,
    args: Mapping[str, Any],
    compute: Callable[[], dict[str, Any]],
    fit: Any = None,
) -> dict[str, Any]:
    """Run ``compute`` through :func:`selfmodel.fitting.sampling.cached_json` (or directly).

    Not saved without ``cache_dir``, for a table that is not a polars frame, or when a
    ``fit`` is involved that has no provenance ``cache_key``.
    """
    import polars as pl

    fit_key = None
    if fit is not None:
        fit_key = (getattr(fit, "provenance", None) or {}).get("cache_key")
        if not fit_key:
            cache_dir = None
    if cache_dir is None or not isinstance(data, pl.DataFrame):
        return compute()

    name = getattr(module, "NAME", module.__name__)
    key = {
        "check": check,
        "model": name,
        "fit": fit_key,
        "data_sha256": frame_sha256(data),
        "args": dict(args),
        "sources": source_sha256(_check_sources()),
        "versions": package_versions(("scipy", "xarray")),
    }
    return cached_json(cache_dir, f"{name}-{check}", key, compute)


def _priors_options(fit: Any) -> tuple[dict[str, Any] | None, dict[str, Any]]:
    prov = getattr(fit, "provenance", {}) or {}
    priors = prov.get("priors")
    if priors is not None:
        priors = {k: (v[0], dict(v[1])) for k, v in priors.items()}
    return priors, dict(prov.get("options") or {})


def _rebuild(module: Any, data: Any, priors: Mapping[str, Any] | None, options: Mapping[str, Any]) -> Any:
    cols = [c for c in module.REQUIRED_COLUMNS if c in data.columns]
    used = data.select(cols) if hasattr(data, "select") else data[cols]
    return module.build(used, priors=priors, **dict(options))


def _binomials(pm_model: Any) -> list[tuple[str, Any, Any, np.ndarray]]:
    """(name, n tensor, p tensor, observed values) of each observed binomial variable."""
    out = []
    for rv in pm_model.observed_RVs:
        op_name = type(rv.owner.op).__name__
        if "Binomial" not in op_name:
            raise TypeError(f"checks support binomial likelihoods; '{rv.name}' is {op_name}")
        *_, n_t, p_t = rv.owner.inputs
        obs = np.asarray(pm_model.rvs_to_values[rv].eval())
        out.append((rv.name, n_t, p_t, obs))
    return out


def _labels(pm_model: Any, name: str, size: int) -> list[str]:
    dims = pm_model.named_vars_to_dims.get(name)
    if dims and len(dims) == 1 and dims[0] in pm_model.coords:
        return [str(c) for c in pm_model.coords[dims[0]]]
    return [str(i) for i in range(size)]


def _dist_summary(values: np.ndarray) -> dict[str, Any]:
    v = np.asarray(values, dtype=float).ravel()
    v = v[np.isfinite(v)]
    return {
        "mean": _num(v.mean()),
        "quantiles": {f"{q:g}": _num(np.quantile(v, q)) for q in QUANTILES},
        "share_below_0.05": _num(np.mean(v < 0.05)),
        "share_above_0.95": _num(np.mean(v > 0.95)),
    }


def _accuracy(module: Any, probs: Mapping[str, np.ndarray], data: Any) -> np.ndarray | None:
    hook = getattr(module, "implied_accuracy", None)
    if hook is not None:
        return np.asarray(hook(probs, data))
    if len(probs) == 1:
        return next(iter(probs.values()))
    return None


def prior_predictive(
    module: Any,
    data: Any,
    *,
    seed: int,
    draws: int = 500,
    priors: Mapping[str, Any] | None = None,
    options: Mapping[str, Any] | None = None,
    cache_dir: Path | str | None = None,
) -> dict[str, Any]:
    """Summarise what the priors imply about cell accuracy before seeing the data.

    Parameters
    ----------
    module
        A model module (``models.get(name)``).
    data
        The table the model is built on.
    seed
        Seed of the prior draws.
    draws
        Number of prior draws.
    priors, options
        Prior overrides and ``build`` options, as for ``selfmodel.fitting.sampling.fit``.
    cache_dir
        Save the result here and reuse it while the inputs are unchanged
        (``docs/fitting.md``); ``None`` computes it.

    Returns
    -------
    dict
        ``draws``; ``accuracy`` (implied prior on per-cell accuracy: ``mean``,
        ``quantiles``, ``share_below_0.05``, ``share_above_0.95``; ``None`` when the model
        has no single notion of accuracy); ``by_variable`` (the same for the success
        probability of each observed variable, e.g. hit and false-alarm rates); ``effect``
        (quantiles of the prior on ``module.EFFECT``, or ``None``).
    """
    args = {"seed": seed, "draws": draws, "priors": priors, "options": options}
    return _cached(
        "prior_predictive", cache_dir, module, data, args,
        lambda: _prior_predictive(module, data, seed=seed, draws=draws, priors=priors,
                                  options=options),
    )


def _prior_predictive(
    module: Any,
    data: Any,
    *,
    seed: int,
    draws: int,
    priors: Mapping[str, Any] | None,
    options: Mapping[str, Any] | None,
) -> dict[str, Any]:
    pm_model = _rebuild(module, data, priors, options or {})
    bins = _binomials(pm_model)
    targets = [p_t for _, _, p_t, _ in bins]
    effect = getattr(module, "EFFECT", None)
    if effect:
        targets.append(pm_model[effect])
    drawn = pm.draw(targets, draws=draws, random_seed=seed)
    probs = {name: np.asarray(d) for (name, *_), d in zip(bins, drawn, strict=False)}
    acc = _accuracy(module, probs, data)
    out: dict[str, Any] = {
        "draws": int(draws),
        "seed": int(seed),
        "accuracy": _dist_summary(acc) if acc is not None else None,
        "by_variable": {name: _dist_summary(p) for name, p in probs.items()},
        "effect": None,
    }
    if effect:
        e = np.asarray(drawn[-1], dtype=float).ravel()
        out["effect"] = {
            "name": effect,
            "quantiles": {f"{q:g}": _num(np.quantile(e, q)) for q in QUANTILES},
        }
    return out


def _thin(idata: arviz_ops.InferenceData, max_draws: int | None) -> arviz_ops.InferenceData:
    post = arviz_ops.posterior(idata)
    total = post.sizes["chain"] * post.sizes["draw"]
    if max_draws is None or total <= max_draws:
        return arviz_ops.from_datasets(posterior=post)
    step = int(np.ceil(total / max_draws))
    return arviz_ops.from_datasets(posterior=post.isel(draw=slice(None, None, step)))


def _group_codes(data: Any, group_by: Sequence[str] | None, size: int) -> tuple[np.ndarray, list[str]]:
    if not group_by:
        return np.arange(size), []
    keys = ["|".join(str(v) for v in row) for row in zip(*(list(data[c]) for c in group_by), strict=True)]
    labels = sorted(set(keys))
    index = {k: i for i, k in enumerate(labels)}
    return np.array([index[k] for k in keys]), labels


def _sum_groups(values: np.ndarray, codes: np.ndarray, n_groups: int) -> np.ndarray:
    """Sum the last axis of ``values`` within groups (``codes`` gives each entry's group)."""
    onehot = np.zeros((codes.size, n_groups))
    onehot[np.arange(codes.size), codes] = 1.0
    return np.asarray(values, dtype=float) @ onehot


def posterior_predictive(
    fit: Any,
    module: Any,
    data: Any,
    *,
    seed: int,
    interval_prob: float = 0.94,
    max_draws: int | None = 1000,
    group_by: Sequence[str] | None = None,
    cache_dir: Path | str | None = None,
) -> dict[str, Any]:
    """Posterior predictive check of the observed counts.

    Parameters
    ----------
    fit
        An ``selfmodel.fitting.sampling.Fit`` (its ``idata["posterior"]`` and the priors and options in
        its ``provenance``).
    module
        The model module the fit came from.
    data
        The table the model was fitted to.
    seed
        Seed of the replicated data.
    interval_prob
        Probability of the central predictive interval per cell.
    max_draws
        Thin the posterior to at most this many draws (``None``: all).
    group_by
        Columns of ``data`` to sum observed and replicated counts over before checking
        (e.g. ``("model", "task")`` for the per-item rows of ``models/items.py``).
    cache_dir
        Save the result here and reuse it while the fit and the inputs are unchanged
        (``docs/fitting.md``); ``None`` computes it.

    Returns
    -------
    dict
        ``cells`` (list of {``variable``, ``cell``, ``n``, ``observed``, ``mean``,
        ``low``, ``high``, ``covered``}), ``coverage`` (share of cells covered),
        ``chi2_p_value``, ``by_variable`` ({name: {``coverage``, ``chi2_p_value``}}),
        ``interval_prob``, ``draws``.
    """
    args = {"seed": seed, "interval_prob": interval_prob, "max_draws": max_draws,
            "group_by": list(group_by) if group_by else None}
    return _cached(
        "posterior_predictive", cache_dir, module, data, args,
        lambda: _posterior_predictive(fit, module, data, seed=seed, interval_prob=interval_prob,
                                      max_draws=max_draws, group_by=group_by),
        fit=fit,
    )


def _posterior_predictive(
    fit: Any,
    module: Any,
    data: Any,
    *,
    seed: int,
    interval_prob: float,
    max_draws: int | None,
    group_by: Sequence[str] | None,
) -> dict[str, Any]:
    priors, options = _priors_options(fit)
    pm_model = _rebuild(module, data, priors, options)
    bins = _binomials(pm_model)
    with pm_model:
        for name, _, p_t, _ in bins:
            pm.Deterministic(f"_p_{name}", p_t)
    idata = _thin(fit.idata, max_draws)
    names = [b[0] for b in bins]
    pymc_log = logging.getLogger("pymc")
    level = pymc_log.level
    pymc_log.setLevel(logging.WARNING)  # not "Sampling: [k]" on the console of every run
    try:
        pp = pm.sample_posterior_predictive(
            idata, model=pm_model, var_names=names + [f"_p_{n}" for n in names],
            random_seed=seed, progressbar=False, return_inferencedata=False,
        )
    finally:
        pymc_log.setLevel(level)
    lo_q, hi_q = (1 - interval_prob) / 2, 1 - (1 - interval_prob) / 2
    cells: list[dict[str, Any]] = []
    by_var: dict[str, Any] = {}
    # chi-square discrepancy per posterior draw, summed over the observed variables
    t_rep_total: NDArray[np.float64] | float = 0.0
    t_obs_total: NDArray[np.float64] | float = 0.0
    for name, n_t, _, obs in bins:
        n = np.broadcast_to(np.asarray(n_t.eval(), dtype=float), obs.shape)
        y_rep = np.asarray(pp[name], dtype=float).reshape(-1, obs.size)
        p = np.asarray(pp[f"_p_{name}"], dtype=float).reshape(-1, obs.size)
        codes, glabels = _group_codes(data, group_by, obs.size)
        labels = glabels or _labels(pm_model, name, obs.size)
        n_groups = len(labels)
        y_obs = _sum_groups(obs.astype(float)[None, :], codes, n_groups)[0]
        y_rep_g = _sum_groups(y_rep, codes, n_groups)
        n_g = _sum_groups(n[None, :], codes, n_groups)[0]
        mu = _sum_groups(n * p, codes, n_groups)
        var = _sum_groups(n * p * (1 - p), codes, n_groups)
        ok = var > 0
        safe = np.where(ok, var, 1.0)
        t_obs = np.where(ok, (y_obs[None, :] - mu) ** 2 / safe, 0.0).sum(axis=1)
        t_rep = np.where(ok, (y_rep_g - mu) ** 2 / safe, 0.0).sum(axis=1)
        t_obs_total = t_obs_total + t_obs
        t_rep_total = t_rep_total + t_rep
        low = np.quantile(y_rep_g, lo_q, axis=0)
        high = np.quantile(y_rep_g, hi_q, axis=0)
        covered = (y_obs >= low) & (y_obs <= high)
        for g in range(n_groups):
            cells.append({
                "variable": name, "cell": labels[g], "n": int(n_g[g]), "observed": int(y_obs[g]),
                "mean": _num(y_rep_g[:, g].mean()), "low": _num(low[g]), "high": _num(high[g]),
                "covered": bool(covered[g]),
            })
        by_var[name] = {"coverage": _num(covered.mean()), "chi2_p_value": _num(np.mean(t_rep >= t_obs))}
    return {
        "interval_prob": float(interval_prob),
        "draws": int(y_rep.shape[0]),
        "seed": int(seed),
        "group_by": list(group_by) if group_by else None,
        "cells": cells,
        "coverage": _num(np.mean([c["covered"] for c in cells])),
        "chi2_p_value": _num(np.mean(np.asarray(t_rep_total) >= np.asarray(t_obs_total))),
        "by_variable": by_var,
    }


def _observed_digest(bins: Sequence[tuple[str, Any, Any, np.ndarray]]) -> str:
    """Hash of the observed counts and trials (what LOO predicts), order-sensitive."""
    h = hashlib.sha256()
    for _, n_t, _, obs in sorted(bins, key=lambda b: b[0]):
        n = np.broadcast_to(np.asarray(n_t.eval(), dtype="int64"), obs.shape)
        h.update(np.ascontiguousarray(obs, dtype="int64").tobytes())
        h.update(np.ascontiguousarray(n, dtype="int64").tobytes())
    return h.hexdigest()


#: Gauss-Hermite nodes of the adaptive quadrature in :func:`integrated_binomial_loglik`.
GH_NODES = 40


def integrated_binomial_loglik(
    y: np.ndarray, n: np.ndarray, eta0: np.ndarray, scale: np.ndarray, *, nodes: int = GH_NODES
) -> np.ndarray:
    r"""Log of :math:`\int \mathrm{Bin}(y \mid n, \mathrm{logit}^{-1}(\eta_0 + s z))\,\phi(z)\,dz`.

    The binomial likelihood of one cell with its own normal effect :math:`s z` integrated
    out, by adaptive Gauss-Hermite quadrature (Liu & Pierce 1994): the integrand is
    centred on its mode (Newton's method; it is log-concave) and scaled by its curvature
    there, so ``nodes`` points suffice even when :math:`n` is large and the integrand is
    sharp. With the default 40 nodes the error against brute-force quadrature is below
    1e-5 for the cases in ``tests/fitting/test_checks.py`` (including :math:`y = n` with
    :math:`s = 3`, where the integrand is most skewed). Arrays broadcast; the result has
    their common shape.

    Examples
    --------
    >>> import numpy as np
    >>> from scipy.special import expit, gammaln
    >>> z = np.linspace(-8, 8, 20001)
    >>> f = gammaln(101) - gammaln(31) - gammaln(71) + 30 * np.log(expit(0.5 + 0.8 * z)) \
    ...     + 70 * np.log(expit(-0.5 - 0.8 * z)) - z**2 / 2 - 0.5 * np.log(2 * np.pi)
    >>> brute = np.log(np.trapezoid(np.exp(f), z))
    >>> bool(abs(integrated_binomial_loglik(np.array(30), np.array(100), 0.5, 0.8) - brute) < 1e-6)
    True
    """
    from scipy.special import gammaln, log_expit, logsumexp

    y, n, eta0, scale = np.broadcast_arrays(
        np.asarray(y, float), np.asarray(n, float), np.asarray(eta0, float), np.asarray(scale, float)
    )

    def g(z: np.ndarray) -> np.ndarray:
        eta = eta0 + scale * z
        return y * log_expit(eta) + (n - y) * log_expit(-eta) - 0.5 * z**2

    z = np.zeros_like(eta0)
    for _ in range(100):
        p = np.exp(log_expit(eta0 + scale * z))
        grad = scale * (y - n * p) - z
        hess = -(scale**2) * n * p * (1 - p) - 1.0
        step = np.clip(-grad / hess, -1.0, 1.0)
        z = z + step
        if np.max(np.abs(step)) < 1e-10:
            break
    p = np.exp(log_expit(eta0 + scale * z))
    tau = 1.0 / np.sqrt(scale**2 * n * p * (1 - p) + 1.0)
    t, w = np.polynomial.hermite.hermgauss(nodes)
    shape = (nodes,) + (1,) * z.ndim
    vals = g(z[None] + tau[None] * t.reshape(shape)) + (np.log(w) + t**2).reshape(shape)
    const = gammaln(n + 1) - gammaln(y + 1) - gammaln(n - y + 1) - 0.5 * np.log(2 * np.pi)
    return const + np.log(tau) + logsumexp(vals, axis=0)


def _cell_effect(pm_model: Any, obs_name: str) -> Any | None:
    """The free ``z_*`` standard-normal RV on the observed variable's own dimension."""
    dims = pm_model.named_vars_to_dims.get(obs_name)
    found = []
    for rv in pm_model.free_RVs:
        if not rv.name.startswith("z_") or pm_model.named_vars_to_dims.get(rv.name) != dims:
            continue
        if type(rv.owner.op).__name__ != "NormalRV":
            continue
        mu, sigma = (np.asarray(v.eval()) for v in rv.owner.inputs[-2:])
        if np.all(mu == 0) and np.all(sigma == 1):
            found.append(rv)
    return found[0] if len(found) == 1 else None


def _integrated_loglik(
    pm_model: Any, posterior: Any, bins: Sequence[tuple[str, Any, Any, np.ndarray]]
) -> tuple[np.ndarray, str] | None:
    """Pointwise log likelihood (chain, draw, cell) with the cell effect integrated out.

    Applies when there is one observed binomial with a logit link whose linear predictor
    contains exactly one standard-normal effect per observation (``z_cell``, ``z_pair``)
    entering linearly; returns ``None`` otherwise.
    """
    from pymc.model.transform.conditioning import remove_value_transforms

    if len(bins) != 1:
        return None
    name, n_t, _, obs = bins[0]
    z_rv = _cell_effect(pm_model, name)
    if z_rv is None:
        return None
    umodel = remove_value_transforms(pm_model)
    p_t = umodel[name].owner.inputs[-1]
    if type(getattr(p_t.owner.op, "scalar_op", None)).__name__ != "Sigmoid":
        return None
    (eta,) = umodel.replace_rvs_by_values([p_t.owner.inputs[0]])
    fn = umodel.compile_fn(outs=eta, inputs=umodel.value_vars, on_unused_input="ignore")
    free = [v.name for v in umodel.value_vars]
    n_chain, n_draw = posterior.sizes["chain"], posterior.sizes["draw"]
    arrays = {v: posterior[v].values.reshape(n_chain * n_draw, *posterior[v].shape[2:]) for v in free}
    zname = z_rv.name
    size = obs.size
    eta0 = np.empty((n_chain * n_draw, size))
    slope = np.empty_like(eta0)
    for i in range(n_chain * n_draw):
        point = {v: arrays[v][i] for v in free}
        point[zname] = np.zeros(size)
        eta0[i] = fn(point)
        point[zname] = np.ones(size)
        slope[i] = fn(point) - eta0[i]
        if i < 3:  # the effect must enter linearly
            point[zname] = -np.ones(size)
            if not np.allclose(fn(point), eta0[i] - slope[i], atol=1e-8):
                return None
    n = np.broadcast_to(np.asarray(n_t.eval(), dtype=float), obs.shape)
    ll = integrated_binomial_loglik(obs[None, :], n[None, :], eta0, slope)
    return ll.reshape(n_chain, n_draw, size), zname


def loo(
    fit: Any,
    module: Any,
    data: Any,
    *,
    max_draws: int | None = None,
    integrate: bool = True,
    cache_dir: Path | str | None = None,
) -> dict[str, Any]:
    """PSIS-LOO of a fitted model, pointwise over its observed dimension.

    Parameters
    ----------
    fit
        An ``selfmodel.fitting.sampling.Fit``.
    module
        The model module the fit came from.
    data
        The table the model was fitted to.
    max_draws
        Thin the posterior to at most this many draws before computing the log
        likelihood (memory: draws x observations); ``None`` uses all draws.
    integrate
        Integrate a per-observation standard-normal effect (``z_cell`` of ``scale``,
        ``within_between``, ``pooled(random_effects=True)``; ``z_pair`` of
        ``self_vs_other``) out of each point's likelihood before PSIS ("integrated
        LOO", Vehtari et al. 2016; Merkle, Furr & Rabe-Hesketh 2019). The estimand is
        unchanged (the predictive density of a held-out cell), but plain PSIS fails
        there: each cell's own effect is informed only by that cell, so leaving it out
        moves the posterior too far for importance sampling (most Pareto k > 0.7).
        Models with several observed variables (``sdt``) or no such effect use plain
        PSIS-LOO.
    cache_dir
        The folder of saved results, as for :func:`posterior_predictive`.

    Returns
    -------
    dict
        ``elpd_loo``, ``se``, ``p_loo``, ``n_data_points``, ``n_samples``, ``good_k``
        (ArviZ's sample-size dependent threshold), ``n_high_k`` (Pareto k > 0.7),
        ``max_k``, ``warning``, ``observed`` (variables summed per point),
        ``integrated`` (the effect integrated out, or ``None``), ``labels``,
        ``pareto_k`` and ``elpd_i`` (pointwise lists) and ``observed_sha256`` (used by
        :func:`compare` to refuse comparisons across different data).
    """
    args = {"max_draws": max_draws, "integrate": integrate}
    return _cached(
        "loo", cache_dir, module, data, args,
        lambda: _loo(fit, module, data, max_draws=max_draws, integrate=integrate),
        fit=fit,
    )


def _loo(fit: Any, module: Any, data: Any, *, max_draws: int | None, integrate: bool
         ) -> dict[str, Any]:
    priors, options = _priors_options(fit)
    pm_model = _rebuild(module, data, priors, options)
    bins = _binomials(pm_model)
    idata = _thin(fit.idata, max_draws)
    ll = pm.compute_log_likelihood(
        idata, model=pm_model, extend_inferencedata=False, progressbar=False
    )
    names = [b[0] for b in bins]
    dims = {tuple(ll[n].dims[2:]) for n in names}
    if len(dims) != 1:
        raise ValueError(f"observed variables {names} are on different dimensions {sorted(dims)}")
    total = sum(ll[n] for n in names)
    integrated = _integrated_loglik(pm_model, arviz_ops.posterior(idata), bins) if integrate else None
    if integrated is not None:
        total = total.copy(data=integrated[0])
    ll_ds = xr.Dataset({"ll": total})
    with warnings.catch_warnings():
        # high Pareto k is reported in the result (n_high_k, warning), not as a warning
        warnings.filterwarnings("ignore", message=".*Pareto.*", category=UserWarning)
        res = arviz_ops.loo(arviz_ops.posterior(idata), ll_ds, "ll")
    k = res["pareto_k"]
    size = int(k.size)
    dim = next(iter(dims))
    labels = (
        [str(c) for c in total.coords[dim[0]].values] if len(dim) == 1 else [str(i) for i in range(size)]
    )
    return {
        "elpd_loo": _num(res["elpd_loo"]),
        "se": _num(res["se"]),
        "p_loo": _num(res["p_loo"]),
        "n_data_points": res["n_data_points"],
        "n_samples": res["n_samples"],
        "good_k": _num(res["good_k"]),
        "n_high_k": int(np.sum(k > PARETO_K_BAD)),
        "max_k": _num(np.max(k)),
        "warning": res["warning"],
        "observed": names,
        "integrated": integrated[1] if integrated is not None else None,
        "labels": labels,
        "pareto_k": [_num(v) for v in k],
        "elpd_i": [_num(v) for v in res["loo_i"]],
        "observed_sha256": _observed_digest(bins),
    }


def compare(loos: Mapping[str, Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Rank models by ELPD, as ``az.compare`` does (stacking weights).

    Parameters
    ----------
    loos
        ``{model label: loo(...) result}``; all must be computed on the same observations
        (same observed variables, counts and trials, in the same order).

    Returns
    -------
    list of dict
        One row per model, best first: ``model``, ``rank``, ``elpd_loo``, ``p_loo``,
        ``elpd_diff`` (to the best), ``dse`` (standard error of the difference, from the
        pointwise differences), ``se``, ``weight`` (stacking), ``warning``, ``n_high_k``.

    Raises
    ------
    ValueError
        With fewer than two models, or models fitted to different observations (e.g.
        ``sdt`` predicts hits and false alarms, ``scale`` correct counts: their ELPDs
        are on different data and cannot be compared).
    """
    if len(loos) < 2:
        raise ValueError("compare needs at least two loo results")
    digests = {name: d["observed_sha256"] for name, d in loos.items()}
    if len(set(digests.values())) != 1:
        groups: dict[str, list[str]] = {}
        for name, dg in digests.items():
            groups.setdefault(dg, []).append(name)
        raise ValueError(
            "LOO results are on different observations and cannot be compared: "
            + "; ".join(", ".join(sorted(g)) for g in groups.values())
            + ". Fit the models to the same cells (same observed counts)."
        )
    table = arviz_ops.compare({name: arviz_ops.elpd_data(d) for name, d in loos.items()})
    rows = []
    for name, r in table.iterrows():
        rows.append({
            "model": str(name),
            "rank": int(r["rank"]),
            "elpd_loo": _num(r["elpd_loo"]),
            "p_loo": _num(r["p_loo"]),
            "elpd_diff": _num(r["elpd_diff"]),
            "dse": _num(r["dse"]),
            "se": _num(r["se"]),
            "weight": _num(r["weight"]),
            "warning": bool(loos[str(name)]["warning"]),
            "n_high_k": int(loos[str(name)]["n_high_k"]),
        })
    return rows
