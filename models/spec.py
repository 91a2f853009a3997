"""What a model file declares: :class:`ModelSpec` and its parts, and priors as dicts.

Every model file declares what it is in one :class:`ModelSpec` called ``SPEC`` beside
``build()`` and ``DEFAULT_PRIORS``; the pipeline (``analysis/pipeline/model_stage.py``) reads
only these declarations, never a model's name (see ``docs/registry.md``). The helpers that
build a model's PyMC graph are in :mod:`selfmodel.models.graph`.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

#: A prior: (PyMC distribution name, keyword arguments).
Prior = tuple[str, dict[str, float]]

#: The data tables a model can be fitted to (built by ``analysis/analyses/model_inputs.py``):
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
    comparison on simulated data. ``beside_verdict`` (a label) puts the effect beside the
    verdict's slope in the report's richer-models table.
    """

    key: str
    variable: str
    per_task: str | None = None
    direction: Literal["increase", "decrease"] = "increase"
    name_parameter: bool = False
    truth: tuple[str, str] | None = None
    #: A scale slope the report sets beside the verdict's (its richer-models table), with
    #: this label; ``None``: not such a slope.
    beside_verdict: str | None = None


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
