"""Savage-Dickey Bayes factors and the closed-form prior density of a slope at 0."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from selfmodel.decisions.hypotheses.declared import slope_priors

#: Bayes factors beyond ``BF_CAP`` (or below ``1 / BF_CAP``) are reported as bounds.
BF_CAP = 1000.0
#: Fewer posterior draws than this within one KDE bandwidth of the null point: tail. The
#: density estimate at 0 rests on about these draws (relative error ~ 1/sqrt(count), ~14%).
MIN_DRAWS_NEAR_ZERO = 50


# --------------------------------------------------------------------------- Savage-Dickey


def savage_dickey(
    draws: np.ndarray,
    prior_sd: float | None = None,
    prior_mu: float = 0.0,
    *,
    prior_density0: float | None = None,
    point: float = 0.0,
) -> dict[str, Any]:
    r"""Savage-Dickey Bayes factor :math:`\mathrm{BF}_{10}` of a point null :math:`\theta = 0`.

    Parameters
    ----------
    draws
        Posterior draws of :math:`\theta` (any shape; flattened).
    prior_sd, prior_mu
        A normal prior :math:`N(\mu, \sigma^2)` of :math:`\theta`; its density at ``point``
        is the numerator.
    prior_density0
        The prior density at ``point`` when the prior is not a plain normal (overrides
        ``prior_sd``/``prior_mu``).
    point
        The null value (0).

    Returns
    -------
    dict
        ``bf_10`` (capped to ``[1/BF_CAP, BF_CAP]``), ``bf_01``, ``bf_10_estimate``
        (uncapped), ``display`` (``">1000"`` when bounded), ``bounded``, ``reliable``,
        ``method`` (``kde`` or ``normal_tail``), ``prior_density_0``,
        ``posterior_density_0`` (the one used), ``posterior_density_0_kde``,
        ``posterior_density_0_normal``, ``draws_near_0`` (within one bandwidth of 0),
        ``relative_error_approx`` (:math:`1/\sqrt{\text{draws near 0}}`, a rough guide to
        the Monte Carlo error of the KDE estimate), ``bandwidth``.

    Examples
    --------
    Conjugate normal case: prior :math:`N(0, 1)`, posterior :math:`N(0.3, 0.2^2)`:

    >>> from scipy.stats import norm
    >>> rng = np.random.default_rng(1)
    >>> sd = savage_dickey(rng.normal(0.3, 0.2, 20000), prior_sd=1.0)
    >>> exact = norm.pdf(0, 0, 1) / norm.pdf(0, 0.3, 0.2)
    >>> bool(abs(sd["bf_10"] / exact - 1) < 0.05), sd["method"]
    (True, 'kde')
    """
    from scipy.stats import gaussian_kde, norm

    flat = np.asarray(draws, dtype=float).ravel()
    flat = flat[np.isfinite(flat)]
    if prior_density0 is None:
        if prior_sd is None or not prior_sd > 0:
            raise ValueError("give prior_sd > 0 or prior_density0")
        prior_density0 = float(norm.pdf(point, prior_mu, prior_sd))
    if flat.size < 2 or np.std(flat) == 0:
        raise ValueError("savage_dickey needs at least two distinct posterior draws")
    mean, sd = float(np.mean(flat)), float(np.std(flat, ddof=1))
    kde = gaussian_kde(flat)
    bandwidth = float(kde.factor * sd)
    near = int(np.sum(np.abs(flat - point) <= bandwidth))
    dens_kde = float(kde(point)[0])
    dens_norm = float(norm.pdf(point, mean, sd))
    tail = near < MIN_DRAWS_NEAR_ZERO
    post0 = dens_norm if tail else dens_kde
    with np.errstate(divide="ignore", over="ignore"):
        est = float(prior_density0 / post0) if post0 > 0 else math.inf
    bounded = est > BF_CAP or est < 1 / BF_CAP
    bf = min(max(est, 1 / BF_CAP), BF_CAP)
    if est > BF_CAP:
        display = f">{BF_CAP:g}"
    elif est < 1 / BF_CAP:
        display = f"<{1 / BF_CAP:g}"
    else:
        display = f"{est:.3g}" if not tail else f"~{est:.2g}"
    return {
        "bf_10": bf,
        "bf_01": 1.0 / bf,
        "bf_10_estimate": est,
        "display": display,
        "bounded": bool(bounded),
        "reliable": not tail,
        "method": "normal_tail" if tail else "kde",
        "prior_density_0": float(prior_density0),
        "posterior_density_0": float(post0),
        "posterior_density_0_kde": dens_kde,
        "posterior_density_0_normal": dens_norm,
        "draws_near_0": near,
        "relative_error_approx": (1.0 / math.sqrt(near)) if near else None,
        "bandwidth": bandwidth,
        "point": float(point),
    }


def _prior_pdf(prior: Sequence[Any]) -> Any:
    """Vectorised density of a ``(dist, params)`` prior (scipy for common ones, else PyMC)."""
    from scipy import stats

    dist, params = prior[0], dict(prior[1])
    if dist == "Normal":
        return stats.norm(params.get("mu", 0.0), params["sigma"]).pdf
    if dist == "HalfNormal":
        return stats.halfnorm(scale=params["sigma"]).pdf
    if dist == "Exponential":
        return stats.expon(scale=1.0 / params["lam"]).pdf
    if dist == "HalfCauchy":
        return stats.halfcauchy(scale=params["beta"]).pdf
    if dist == "StudentT":
        return stats.t(params["nu"], params.get("mu", 0.0), params["sigma"]).pdf

    import pymc as pm
    import pytensor.tensor as pt

    v = pt.dvector("v")
    fn = pm.compile([v], pm.logp(getattr(pm, dist).dist(**params), v))
    return lambda x: np.exp(fn(np.atleast_1d(np.asarray(x, dtype=float))))


def slope_prior_density(
    model: str, base: str, priors: Mapping[str, Sequence[Any]], *, n_tasks: int, point: float = 0.0
) -> tuple[float | None, str]:
    r"""Prior density at ``point`` of a slope parameter, and how it was obtained.

    Parameters
    ----------
    model, base
        Model name and variable (a key of :func:`slope_priors`).
    priors
        The fit's priors (``{name: (dist, params)}``).
    n_tasks
        Number of tasks :math:`T` (a task slope's deviation has variance
        :math:`\sigma_\delta^2 (T-1)/T` under ``ZeroSumNormal``; none when :math:`T = 1`).

    Returns
    -------
    density, note
        ``None`` and the reason when the density is not available in closed form.

    Examples
    --------
    >>> from selfmodel.models.scale import DEFAULT_PRIORS
    >>> round(slope_prior_density("scale", "beta", DEFAULT_PRIORS, n_tasks=3)[0], 4)  # N(0, 1/sqrt(3))
    0.691
    >>> round(slope_prior_density("scale", "slope_task", DEFAULT_PRIORS, n_tasks=3)[0], 4)
    0.3989
    """
    from scipy import integrate, stats

    spec = slope_priors(model).get(base)
    if spec is None:
        if base in priors:
            return float(_prior_pdf(priors[base])(point)), f"prior {priors[base][0]} of '{base}'"
        return None, f"no closed-form prior for '{base}' of model '{model}'"
    mean_key, dev_key = spec
    mean_prior = priors[mean_key]
    if dev_key == "mean":  # the average over tasks of independent Normal task slopes
        if mean_prior[0] != "Normal":
            return None, f"average of task slopes needs a Normal prior on '{mean_key}'"
        mu, s0 = float(mean_prior[1].get("mu", 0.0)), float(mean_prior[1]["sigma"])
        sd = s0 / math.sqrt(max(n_tasks, 1))
        return float(stats.norm.pdf(point, mu, sd)), (
            f"average over {n_tasks} task(s) of independent {mean_prior[0]} priors '{mean_key}'"
        )
    if dev_key is None or n_tasks < 2:
        return float(_prior_pdf(mean_prior)(point)), f"prior {mean_prior[0]} of '{mean_key}'"
    if mean_prior[0] != "Normal":
        return None, f"task-slope prior needs a Normal prior on '{mean_key}' (has {mean_prior[0]})"
    mu, sb = float(mean_prior[1].get("mu", 0.0)), float(mean_prior[1]["sigma"])
    sigma_pdf = _prior_pdf(priors[dev_key])
    frac = (n_tasks - 1) / n_tasks

    def integrand(s: float) -> float:
        return float(stats.norm.pdf(point, mu, math.sqrt(sb**2 + frac * s**2)) * sigma_pdf(s))

    val, _err = integrate.quad(integrand, 0.0, math.inf, limit=200)
    return float(val), (
        f"scale mixture: Normal '{mean_key}' + ZeroSumNormal deviation ({n_tasks} tasks) "
        f"with sd '{dev_key}', integrated by quadrature"
    )
