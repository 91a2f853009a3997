"""Helpers shared by the model files: the declaration types, priors from dicts, index arrays.

Every model file declares what it is in one :class:`ModelSpec` called ``SPEC`` beside
``build()`` and ``DEFAULT_PRIORS``; the pipeline (``analysis/models_stage.py``) reads only
these declarations, never a model's name (see ``docs/registry.md``).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import pandas as pd
import pymc as pm

#: A prior: (PyMC distribution name, keyword arguments).
Prior = tuple[str, dict[str, float]]

#: The data tables a model can be fitted to (built by ``analysis/analyses/tables.py``):
#: ``cells`` model x task counts of the models with the scale variable; ``binary_cells`` the
#: cells of binary tasks with signal/noise counts; ``item_cells`` model x item counts;
#: ``pair_cells`` predictor x target x task counts; ``training_pairs`` the discordant-item
#: counts of each derived checkpoint against its base (``analysis/analyses/training.py``);
#: ``condition_cells`` model x task x condition x item counts (``models/contrast.py``).
Table = Literal[
    "cells", "binary_cells", "item_cells", "pair_cells", "training_pairs", "condition_cells"
]
Role = Literal["verdict", "baseline", "companion"]


@dataclass(frozen=True)
class Effect:
    """One effect the pipeline decides with the declared rule.

    ``key`` names the decision in the model's ``model_zoo`` entry of ``results.json``;
    ``variable`` is the posterior variable of the overall effect and ``per_task`` the one
    with a ``task`` dimension (``None``: no per-task decisions). ``direction`` is the
    direction that means "improves". ``name_parameter`` adds ``"parameter": variable`` to
    the decision. ``truth`` = (row label, ``truth.json`` key) adds a row to the truth
    comparison on simulated data.
    """

    key: str
    variable: str
    per_task: str | None = None
    direction: Literal["increase", "decrease"] = "increase"
    name_parameter: bool = False
    truth: tuple[str, str] | None = None


@dataclass(frozen=True)
class Curves:
    """A posterior curve ``inverse_link(intercept + slope * x)`` per task."""

    intercept: str
    slope: str
    link: Literal["logit", "identity"] = "logit"


@dataclass(frozen=True)
class Headline:
    """A top-level ``results.json`` section made of this model's decisions.

    The section is ``{"fit_model", "units", <each Effect.key>, "finding"[, "curves"]}``.
    """

    key: str
    units: str
    curves: Curves | None = None


@dataclass(frozen=True)
class Comparison:
    """The same model without its effect, for the LOO comparison of the effect term."""

    model: str
    options: Mapping[str, Any] = field(default_factory=dict)
    label: str = ""


@dataclass(frozen=True)
class SamplingNeeds:
    """How a model's sampling departs from the run's settings, where measured to need it.

    ``draws`` and ``tune`` multiply the run's (so ``--preset exploratory`` and ``--draws``
    scale too), ``target_accept`` is a floor. The fit's provenance records the settings
    actually used, and the model's docstring the measurement behind them.
    """

    draws: float = 1.0
    tune: float = 1.0
    target_accept: float = 0.0


@dataclass(frozen=True)
class ModelSpec:
    """What a model is, for the pipeline.

    Attributes
    ----------
    table
        The data table it is fitted to (:data:`Table`).
    role
        ``verdict`` (the model whose effect is the run's verdict; exactly one),
        ``baseline`` (no effect) or ``companion``.
    decides
        The effects decided with the declared rule (:class:`Effect`).
    slope_priors
        Slope variable -> (prior key of the mean slope, prior key of the task-deviation sd
        or ``None``; or ``(key, "mean")`` for the average over tasks of independent
        ``Normal`` task slopes whose prior is ``key``): the closed-form slope priors the
        Bayes factors and the prior sensitivity read.
    loo
        The unit PSIS-LOO is computed on (``"cell"``), or ``None`` when the model observes
        other counts than the cells (not comparable).
    sections
        Report sections it feeds (anchors in ``reports/self_modeling.qmd``).
    headline
        A top-level ``results.json`` section built from its decisions (:class:`Headline`).
    without_effect
        The model without the effect term for the LOO comparison (verdict model only).
    unfit_reason
        ``table -> reason`` when the table cannot identify the model (``None``: it can).
    prior_density_options
        ``build`` options under which the model has the *same* prior with every prior of
        ``DEFAULT_PRIORS`` on a free variable of its own (e.g. ``slope_basis="plain"``: the
        decorrelated basis samples other coordinates of the same prior, and its task slopes
        are deterministics). Prior-sensitivity reweighting computes the prior densities of
        the posterior draws in that form (``selfmodel.fitting.reweight``).
    sampling
        What this model's sampling needs beyond the run's settings (:class:`SamplingNeeds`).
    """

    table: Table = "cells"
    role: Role = "companion"
    decides: tuple[Effect, ...] = ()
    slope_priors: Mapping[str, tuple[str, str | None]] = field(default_factory=dict)
    loo: Literal["cell"] | None = None
    sections: tuple[str, ...] = ("sec-checks",)
    headline: Headline | None = None
    without_effect: Comparison | None = None
    unfit_reason: Callable[[Any], str | None] | None = None
    prior_density_options: Mapping[str, Any] = field(default_factory=dict)
    sampling: SamplingNeeds = field(default_factory=SamplingNeeds)


@dataclass(frozen=True)
class Declaration:
    """What a model is under the build options it was fitted with (issue 28.5).

    ``equations`` is the body of a LaTeX ``aligned`` block, ``prose`` says what the symbols
    are, ``priors`` holds the prior of every variable the built model has under these
    options (and of no other), ``options`` the options with their defaults filled in. The
    report's model section prints these and nothing typed by hand.
    """

    options: dict[str, Any]
    equations: str
    prose: str
    priors: dict[str, Prior]


def build_options(build: Callable[..., Any], options: Mapping[str, Any] | None) -> dict[str, Any]:
    """``options`` with the defaults of ``build``'s keyword-only parameters filled in."""
    params = inspect.signature(build).parameters
    out = {n: p.default for n, p in params.items() if p.kind is inspect.Parameter.KEYWORD_ONLY}
    for k, v in (options or {}).items():
        if k not in out:
            raise KeyError(f"unknown option '{k}'; build() takes {sorted(out)}")
        out[k] = v
    return out


def declared_priors(defaults: Mapping[str, Prior], used: Iterable[str],
                    given: Mapping[str, Any] | None) -> dict[str, Prior]:
    """The priors of the variables ``used``: ``defaults``, overridden by ``given``.

    ``given`` may be a fit's provenance priors (``[dist, params]`` lists), which can hold
    priors of variables the options leave out; those are dropped.
    """
    out: dict[str, Prior] = {}
    for k in used:
        dist, params = (given or {}).get(k) or defaults[k]
        out[k] = (str(dist), dict(params))
    return out


def merge_priors(
    defaults: Mapping[str, Prior], overrides: Mapping[str, Prior] | None
) -> dict[str, Prior]:
    """Return ``defaults`` updated with ``overrides``; unknown names are an error."""
    merged = dict(defaults)
    for name, prior in (overrides or {}).items():
        if name not in defaults:
            raise KeyError(f"unknown prior '{name}'; this model has {sorted(defaults)}")
        merged[name] = prior
    return merged


def scale_priors(priors: Mapping[str, Prior], factor: float) -> dict[str, Prior]:
    """Multiply every prior's scale (``sigma``) by ``factor``; used for prior sensitivity."""
    out: dict[str, Prior] = {}
    for name, (dist, kw) in priors.items():
        kw2 = dict(kw)
        if "sigma" in kw2:
            kw2["sigma"] = kw2["sigma"] * factor
        out[name] = (dist, kw2)
    return out


def prior_rv(name: str, prior: Prior, **kwargs: Any) -> Any:
    """Create the PyMC random variable ``name`` from a ``(dist, params)`` prior."""
    dist, params = prior
    return getattr(pm, dist)(name, **params, **kwargs)


def factorize(values: Any) -> tuple[np.ndarray, list[str]]:
    """Integer codes and sorted labels for a column of strings."""
    codes, uniques = pd.factorize(pd.Series(list(values), dtype="string"), sort=True)
    return codes.astype("int64"), [str(u) for u in uniques]


def zero_sum_effect(name: str, sigma: Any, dim: str, size: int) -> Any:
    """Non-centred zero-sum group effect ``sigma * z`` with ``z ~ ZeroSumNormal(1)``.

    A dimension with a single level has no deviation to estimate: the effect is 0.
    """
    import pytensor.tensor as pt

    if size < 2:
        return pm.Deterministic(name, pt.zeros(size), dims=dim)
    z = pm.ZeroSumNormal(f"z_{name}", sigma=1.0, dims=dim)
    return pm.Deterministic(name, sigma * z, dims=dim)


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
