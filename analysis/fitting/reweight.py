"""Prior-sensitivity variants by importance reweighting of the main fit (refit as fallback).

A variant is refitted only when the reweighting cannot be trusted.

A prior variant (every prior ``sigma`` halved or doubled, ``selfmodel.models.spec.scale_priors``)
has the same likelihood as the main fit; only the prior changes. Its posterior is therefore
the main posterior reweighted by ``p_new(theta) / p_old(theta)`` (importance sampling with
the main posterior as the proposal). The log ratio is summed over the variables whose prior
changed; each must be a free variable of the model whose prior has no random parameters
(a root prior such as ``sigma_family ~ HalfNormal(0.5)``), so its density is exactly the
prior named in the model's ``DEFAULT_PRIORS``. The raw ratios are stabilised by Pareto
smoothing (PSIS; Vehtari, Simpson, Gelman, Yao & Gabry 2024, "Pareto smoothed importance
sampling", JMLR 25(72)), whose fitted tail shape ``k`` says whether the estimate is
reliable: with ``S`` draws the threshold is ``min(1 - 1/log10(S), 0.7)`` (same paper,
sec. 3). Above it -- the variant's posterior lies where the main fit has too few draws --
the variant is refitted by :func:`selfmodel.fitting.sampling.fit` as before, and the reason is recorded.

The reweighted draws are the main draws resampled (systematic resampling, seeded) in
proportion to the smoothed weights, so every summary (decision, HDI, per task) is computed
by the same code as for a refit. The sampler diagnostics are the main fit's (the draws are
its draws). ``prior_variant`` records what was done in the variant fit's provenance under
``prior_variant``: ``method`` (``psis`` or ``refit``), ``pareto_k``, ``k_threshold`` and,
for a refit, ``reason``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import polars as pl
import pymc as pm
import xarray as xr
from arviz_stats.base import array_stats
from pytensor.graph.traversal import ancestors

from selfmodel import models as model_registry
from selfmodel.common import arviz_ops
from selfmodel.fitting.fitter import Fitter
from selfmodel.fitting.sampling import Fit

__all__ = ["k_threshold", "log_prior_ratio", "prior_variant", "resample"]


def k_threshold(n_draws: int) -> float:
    """Largest Pareto ``k`` at which PSIS with ``n_draws`` draws is reliable."""
    return min(1.0 - 1.0 / math.log10(n_draws), 0.7)


def _root_prior(model: Any, name: str) -> bool:
    """``name`` is a free variable of ``model`` whose prior has no random parameters."""
    rv = next((v for v in model.free_RVs if v.name == name), None)
    if rv is None:
        return False
    randoms = {*model.free_RVs, *model.observed_RVs}
    return not any(a in randoms for a in ancestors(rv.owner.inputs))


def log_prior_ratio(
    posterior: xr.Dataset, old: Mapping[str, Any], new: Mapping[str, Any],
    old_model: Any, new_model: Any,
) -> tuple[np.ndarray | None, str | None]:
    """``log p_new - log p_old`` per draw (chain x draw), or ``None`` and the reason.

    ``old``/``new`` are ``(distribution, params)`` priors by variable name; only the
    variables whose prior differs enter, each with the density its model gives it
    (``old_model``/``new_model``: the PyMC models built with either set of priors).
    """
    total = np.zeros((posterior.sizes["chain"], posterior.sizes["draw"]))
    for name in sorted(new):
        if old.get(name) == new[name]:
            continue
        if name not in new_model.named_vars:
            continue  # a prior this form of the model does not use
        if name not in posterior:
            return None, f"the main fit has no draws of '{name}'"
        if not (_root_prior(new_model, name) and _root_prior(old_model, name)):
            return None, f"the prior of '{name}' is not a free variable's own prior"
        values = np.asarray(posterior[name].values, dtype=float)
        diff = (pm.logp(new_model[name], values) - pm.logp(old_model[name], values)).eval()
        diff = np.broadcast_to(np.asarray(diff, dtype=float), values.shape)
        total += diff.reshape(total.shape + (-1,)).sum(axis=-1)
    return total, None


def resample(posterior: xr.Dataset, log_weights: np.ndarray, seed: int) -> xr.Dataset:
    """The draws resampled systematically in proportion to ``exp(log_weights)``.

    Same chains x draws shape as ``posterior``; chain ``c`` keeps the resampled draws
    ``c*D .. (c+1)*D - 1`` of the pooled order.
    """
    lw = np.asarray(log_weights, dtype=float).ravel()
    w = np.exp(lw - lw.max())
    w /= w.sum()
    n = w.size
    u = (np.random.default_rng(seed).random() + np.arange(n)) / n
    idx = np.minimum(np.searchsorted(np.cumsum(w), u), n - 1)
    chains, draws = posterior.sizes["chain"], posterior.sizes["draw"]
    out = {}
    for name, da in posterior.data_vars.items():
        dims = [d for d in da.dims if d not in ("chain", "draw")]
        arr = da.transpose("chain", "draw", *dims).values
        flat = arr.reshape((n, *arr.shape[2:]))[idx]
        out[name] = (("chain", "draw", *dims), flat.reshape((chains, draws, *arr.shape[2:])))
    return xr.Dataset(out, coords=posterior.coords, attrs=posterior.attrs)


def _reweighted(main: Fit, priors: Mapping[str, Any], data: pl.DataFrame,
                options: Mapping[str, Any] | None, seed: int) -> tuple[Fit | None, dict[str, Any]]:
    module = model_registry.get(main.model)
    old = {**module.DEFAULT_PRIORS, **{k: tuple(v) for k, v in
                                       (main.provenance.get("priors") or {}).items()}}
    new = {**old, **priors}
    # the densities are those of the form of the model in which each prior is a free
    # variable's own (SPEC.prior_density_options): the same prior in other coordinates
    opts = {**(options or {}), **module.SPEC.prior_density_options}
    post = arviz_ops.posterior(main.idata)
    lw, why = log_prior_ratio(post, old, new, module.build(data, priors=dict(old), **opts),
                              module.build(data, priors=dict(new), **opts))
    if lw is None:
        return None, {"method": "refit", "reason": why}
    # psislw takes log-likelihoods (PSIS-LOO's weights are their negatives): pass -log ratio
    smoothed, k = array_stats.psislw(-lw.ravel())
    k, thr = float(k), k_threshold(lw.size)
    info = {"method": "psis", "pareto_k": round(k, 3), "k_threshold": round(thr, 3)}
    if not math.isfinite(k) or k > thr:
        return None, {**info, "method": "refit",
                      "reason": f"Pareto k {k:.2f} above {thr:.2f}: reweighting unreliable"}
    idata = arviz_ops.from_datasets(posterior=resample(post, np.asarray(smoothed), seed))
    prov = {**main.provenance, "priors": {k_: [v[0], v[1]] for k_, v in sorted(new.items())},
            "cache_key": None, "prior_variant": info}
    return Fit(main.model, idata, dict(main.diagnostics), prov, reused=main.reused), info


def prior_variant(
    main: Fit,
    data: pl.DataFrame,
    *,
    priors: Mapping[str, Any],
    fitter: Fitter,
    options: Mapping[str, Any] | None = None,
) -> Fit:
    """The fit of ``main.model`` with ``priors``: reweighted from ``main``, else refitted.

    ``main`` must be the fit of the same data, options, sampler settings and seed with the
    model's default priors; ``fitter`` has that seed (also the resampling's) and settings,
    and the fit cache and progress line of the refit. Returns a
    :class:`~selfmodel.fitting.sampling.Fit` whose provenance has ``prior_variant`` (module docstring).
    """
    got, info = _reweighted(main, priors, data, options, fitter.seed)
    if got is not None:
        fitter.progress(
            f"prior sensitivity: '{main.model}' reweighted (PSIS, Pareto k {info['pareto_k']:.2f})")
        return got
    refit = fitter.fit(main.model, data, priors=priors, options=options,
                       why=f"prior sensitivity: refitting '{main.model}' ({info['reason']})")
    refit.provenance["prior_variant"] = info
    return refit
