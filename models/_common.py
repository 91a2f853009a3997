"""Helpers shared by the model files: the declaration types, priors from dicts, index arrays.

Every model file declares what it is in one :class:`ModelSpec` called ``SPEC`` beside
``build()`` and ``DEFAULT_PRIORS``; the pipeline (``analysis/models_stage.py``) reads only
these declarations, never a model's name (see ``docs/registry.md``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import pandas as pd
import pymc as pm

#: A prior: (PyMC distribution name, keyword arguments).
Prior = tuple[str, dict[str, float]]

#: The data tables a model can be fitted to (built by ``analysis/tables.py``):
#: ``cells`` model x task counts of the models with the scale variable; ``binary_cells`` the
#: cells of binary tasks with signal/noise counts; ``item_cells`` model x item counts;
#: ``pair_cells`` predictor x target x task counts; ``training_pairs`` the discordant-item
#: counts of each derived checkpoint against its base (``analysis/training.py``).
Table = Literal["cells", "binary_cells", "item_cells", "pair_cells", "training_pairs"]
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
