"""The decorrelated basis of task slopes and family/model intercepts (``slope_basis``).

Used by ``models/scale.py`` and ``models/sdt.py``; the measurements that chose it are in
their docstrings.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pymc as pm

from selfmodel.models.spec import Prior


@dataclass(frozen=True)
class SlopeNames:
    """Variable names of one linear predictor's task slopes and family/model intercepts."""

    slopes: str  # task slopes (dims task)
    mean: str  # their average over tasks
    family: str  # family intercepts u (dims family)
    model: str  # model intercepts v (dims model)
    prefix: str = ""  # prefix of the new free variables (``slope_total`` ...)


def model_level(model_idx: np.ndarray, x: np.ndarray, fam_of_cell: np.ndarray,
                n_models: int) -> tuple[np.ndarray, np.ndarray]:
    """Per model (in code order): its ``x`` and its family code, from per-cell arrays."""
    x_model = np.zeros(n_models)
    x_model[model_idx] = x
    fam_of_model = np.zeros(n_models, dtype="int64")
    fam_of_model[model_idx] = fam_of_cell
    return x_model, fam_of_model


def decorrelatable(prior: Prior, x_model: np.ndarray, fam_of_model: np.ndarray) -> bool:
    """Whether :func:`decorrelated_slopes` applies.

    It needs a Normal task-slope prior and an ``x`` that varies between models.
    """
    d_u, d_v = shift_direction(x_model, fam_of_model)
    return prior[0] == "Normal" and x_model.size >= 2 and float(d_u @ d_u + d_v @ d_v) > 0.0


def shift_direction(x_model: np.ndarray, fam_of_model: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The direction along which a slope trades against the family and model intercepts.

    Family part: the family means of ``x``, centred over families; model part: ``x`` minus
    its family mean.
    """
    n_fam = int(fam_of_model.max()) + 1 if fam_of_model.size else 0
    counts = np.bincount(fam_of_model, minlength=n_fam).astype(float)
    fam_mean = np.bincount(fam_of_model, weights=x_model, minlength=n_fam) / np.maximum(counts, 1)
    d_u = fam_mean - fam_mean.mean() if n_fam >= 2 else np.zeros(n_fam)
    return d_u, x_model - fam_mean[fam_of_model]


def decorrelated_slopes(
    names: SlopeNames,
    prior: Prior,
    sigmas: tuple[Any, Any],
    x_model: np.ndarray,
    fam_of_model: np.ndarray,
    n_tasks: int,
    centred: bool,
) -> tuple[Any, Any, Any]:
    r"""Task slopes ``b`` and family/model intercepts ``u``, ``v`` in the decorrelated basis.

    A common shift of the task slopes by :math:`-c` and of the intercepts by :math:`c`
    times the direction of :func:`shift_direction` (family means of :math:`x` on ``u``,
    within-family deviations on ``v``) leaves the linear predictor unchanged up to a
    constant, so the data pin down :math:`\bar g = \bar b + c` (the total slope) while
    :math:`\bar b` and :math:`c` are set by their priors: a narrow ridge in the plain
    coordinates. Here :math:`\bar g` is a coordinate, drawn from its marginal prior;
    :math:`c` (the intercepts' component along the direction, independent of the rest of
    them a priori) is drawn from its conditional prior given :math:`\bar g` as
    ``z_{prefix}slope_shift``; the task deviations
    :math:`b_t - \bar b \sim \mathrm{ZeroSumNormal}(\sigma_b)`; the rest of ``u`` and ``v``
    as in the plain form (``centred`` or non-centred). The prior of ``(b, u, v)`` is
    exactly the plain one (independent ``Normal(mu, sigma_b)`` slopes, zero-sum family and
    model intercepts), so the posterior is too; only the sampler's geometry differs.
    """
    import pytensor.tensor as pt

    sigma_family, sigma_model = sigmas
    mu, s_b = float(prior[1].get("mu", 0.0)), float(prior[1]["sigma"])
    d_u_np, d_v_np = shift_direction(x_model, fam_of_model)
    has_u = d_u_np.size >= 2
    # one graph constant each, and no scalar computed from the data outside the graph, so
    # that new data of the same shape keep the compiled structure (analysis/fitting/compile_cache.py)
    d_u, d_v = pt.as_tensor(d_u_np), pt.as_tensor(d_v_np)
    prec = pt.dot(d_v, d_v) / pt.sqr(sigma_model)  # prior precision of c
    if has_u:
        prec = prec + pt.dot(d_u, d_u) / pt.sqr(sigma_family)
    s_c2 = 1.0 / prec
    var_bbar = s_b**2 / n_tasks
    p = names.prefix
    gbar = pm.Normal(f"z_{p}slope_total", mu, pt.sqrt(var_bbar + s_c2))
    shrink = s_c2 / (var_bbar + s_c2)
    z_c = pm.Normal(f"z_{p}slope_shift", 0.0, 1.0)
    c = shrink * (gbar - mu) + pt.sqrt(shrink * var_bbar) * z_c
    if n_tasks >= 2:
        dev = pm.ZeroSumNormal(f"z_{p}slope_deviation", sigma=s_b, dims="task")
    else:
        dev = pt.zeros(n_tasks)
    slopes = pm.Deterministic(names.slopes, gbar + dev - c, dims="task")
    pm.Deterministic(names.mean, pt.mean(slopes))

    def free(name: str, sigma: Any, dim: str) -> Any:
        if centred:
            return pm.ZeroSumNormal(f"z_{name}_free", sigma=sigma, dims=dim)
        return sigma * pm.ZeroSumNormal(f"z_{name}", sigma=1.0, dims=dim)

    v0 = free(names.model, sigma_model, "model")
    c0 = pt.dot(d_v, v0) / pt.sqr(sigma_model)
    if has_u:
        u0 = free(names.family, sigma_family, "family")
        c0 = (c0 + pt.dot(d_u, u0) / pt.sqr(sigma_family)) * s_c2
        u = pm.Deterministic(names.family, u0 + d_u * (c - c0), dims="family")
    else:
        c0 = c0 * s_c2
        u = pm.Deterministic(names.family, pt.zeros(d_u_np.size), dims="family")
    v = pm.Deterministic(names.model, v0 + d_v * (c - c0), dims="model")
    return slopes, u, v
