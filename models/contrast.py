r"""Named contrasts between conditions, models and tasks: a hierarchical logistic model.

For study designs the scale model cannot answer (two closed models without sizes, a
prompting or reasoning condition): is one condition better than another, one model better
than another, one task easier? Every model, task and condition may be a level of its own;
no size is needed.

Data: one row per model :math:`m` x task :math:`t` x condition :math:`c` x item :math:`i`
with :math:`n` readable self-predictions of the item (repeats summed) and :math:`k` of them
correct (``analysis/records/cells.py::to_condition_cells`` builds it from the records; a
study without a ``condition`` column has one condition).

.. math::

    k_{mtci} &\sim \mathrm{Binomial}\big(n_{mtci},\ \mathrm{logit}^{-1}(\eta_{mtci})\big) \\
    \eta_{mtci} &= \alpha + \tau_t + \mu_m + \gamma_c + w_{mtc} + u_{ti} \\
    \tau, \mu, \gamma &\sim \mathrm{ZeroSumNormal}(1) \text{ (each over its levels)} \\
    w_{mtc} &= \sigma_w\, z^w_{mtc},\quad u_{ti} = \sigma_u\, z^u_{ti},\quad
    z \sim \mathcal N(0, 1)

The decided quantities are named differences of levels, in logits of self-prediction
accuracy, each a deterministic with its own dimension:

.. math::

    \mathrm{contrast\_condition}_{a \to b} = \gamma_b - \gamma_a,\quad
    \mathrm{contrast\_model}_{a \to b} = \mu_b - \mu_a,\quad
    \mathrm{contrast\_task}_{a \to b} = \tau_b - \tau_a

for every pair of levels :math:`a < b` (sorted names), labelled ``"b - a"``.

Parameters
----------
alpha
    logit accuracy of the average cell.
tau (task), mu (model), gamma (condition)
    zero-sum level effects. With two or three levels a spread cannot be learned from the
    data, so each has a fixed scale of 1 logit (``DEFAULT_PRIORS``: a difference of two
    levels then has prior sd about 1.4 logits) rather than a fitted sd; a factor with one
    level has no effect (0).
w (model x task x condition)
    cell deviations: how much a model's condition effect differs from the average one. They
    are what makes the model hierarchical in the sense that matters: a condition contrast
    must stand out against the disagreement between models (and tasks), not only against
    the binomial noise of thousands of records. With few cells the data barely inform
    :math:`\sigma_w`, and its prior says how large that disagreement may be.
u (task x item)
    item effects, shared by every model and condition that answered the item: the design
    is paired, and repeats of an item (``sample``) are not independent evidence.

Identification: the main effects are zero-sum, so :math:`\alpha` is the grand mean; the
cell effects are not zero-sum, so a contrast's posterior includes the uncertainty of the
cell effects' average (the contrast is that of the population of cells the models' cells
are drawn from). Non-centred throughout: levels and cells are few and weakly informed.

Measured on simulated data: ``docs/models.md`` (section ``contrast``).

References
----------
Gelman & Hill (2007), *Data Analysis Using Regression and Multilevel/Hierarchical Models*,
ch. 13 (varying intercepts for crossed factors); Kruschke (2018), "Rejecting or accepting
parameter values in Bayesian estimation", *AMPPS* 1 (HDI + ROPE decisions).
"""

from __future__ import annotations

from collections.abc import Mapping
from itertools import combinations
from typing import Any

import numpy as np
import pymc as pm
import pytensor.tensor as pt

from selfmodel.models.graph import factorize, prior_rv
from selfmodel.models.spec import ModelSpec, Prior, merge_priors

NAME = "contrast"
SUMMARY = "named contrasts between conditions, models and tasks (no size needed)"
#: The contrasts are decided by ``analysis/analyses/contrasts.py`` (one decision per named pair).
EFFECT = None
PER_TASK_EFFECT = None

DEFAULT_PRIORS: dict[str, Prior] = {
    "alpha": ("Normal", {"mu": 0.0, "sigma": 1.5}),  # grand mean, logit accuracy
    "tau": ("ZeroSumNormal", {"sigma": 1.0}),  # task effects (logit), zero-sum
    "mu": ("ZeroSumNormal", {"sigma": 1.0}),  # model effects (logit), zero-sum
    "gamma": ("ZeroSumNormal", {"sigma": 1.0}),  # condition effects (logit), zero-sum
    "sigma_cell": ("HalfNormal", {"sigma": 0.3}),  # model x task x condition deviations
    "sigma_item": ("HalfNormal", {"sigma": 1.0}),  # item effects (logit)
}

REQUIRED_COLUMNS = ("model", "task", "condition", "item_id", "n", "k")

#: The factors whose levels are contrasted, and their coordinate / effect names.
FACTORS: tuple[tuple[str, str], ...] = (("condition", "gamma"), ("model", "mu"), ("task", "tau"))

SPEC = ModelSpec(table="condition_cells", role="companion", sections=("sec-contrasts",))


def pairs(levels: list[str]) -> list[tuple[int, int, str]]:
    """Every pair of levels ``a < b`` as ``(index a, index b, "b - a")``.

    >>> pairs(["after", "before", "none"])
    [(0, 1, 'before - after'), (0, 2, 'none - after'), (1, 2, 'none - before')]
    """
    return [(i, j, f"{levels[j]} - {levels[i]}") for i, j in combinations(range(len(levels)), 2)]


def _level_effect(name: str, prior: Prior, dim: str, size: int) -> Any:
    """The effect ``name`` over ``size`` levels with its prior (0 for one level)."""
    if size < 2:
        return pm.Deterministic(name, pt.zeros(size), dims=dim)
    return prior_rv(name, prior, dims=dim)


def build(data: Any, priors: Mapping[str, Prior] | None = None) -> pm.Model:
    """Build the PyMC model.

    Parameters
    ----------
    data
        A table (polars or pandas) with columns ``model, task, condition, item_id, n, k``
        (``condition`` text; one value when the study has one condition).
    priors
        Overrides of :data:`DEFAULT_PRIORS` (same keys).

    Returns
    -------
    pymc.Model
        Coords ``task``, ``model``, ``condition``, ``cell``, ``item``, ``obs`` and one
        ``<factor>_pair`` per factor with two or more levels; deterministics
        ``contrast_<factor>`` on those pair dimensions.
    """
    p = merge_priors(DEFAULT_PRIORS, priors)
    n = np.asarray(data["n"], dtype="int64")
    k = np.asarray(data["k"], dtype="int64")
    if n.size == 0:
        raise ValueError("contrast model: no rows with readable self-predictions")
    idx: dict[str, np.ndarray] = {}
    coords: dict[str, list[str]] = {}
    for factor, _ in FACTORS:
        idx[factor], coords[factor] = factorize(data[factor])
    cell_labels = [f"{m}|{t}|{c}" for m, t, c in
                   zip(data["model"], data["task"], data["condition"], strict=True)]
    item_labels = [f"{t}|{i}" for t, i in zip(data["task"], data["item_id"], strict=True)]
    cell_idx, coords["cell"] = factorize(cell_labels)
    item_idx, coords["item"] = factorize(item_labels)
    coords["obs"] = [str(i) for i in range(n.size)]
    level_pairs = {f: pairs(coords[f]) for f, _ in FACTORS}
    for factor, found in level_pairs.items():
        if found:
            coords[f"{factor}_pair"] = [label for _, _, label in found]
    with pm.Model(coords=coords) as model:
        alpha = prior_rv("alpha", p["alpha"])
        eta = alpha + pt.zeros(n.size)
        for factor, effect in FACTORS:
            levels = _level_effect(effect, p[effect], factor, len(coords[factor]))
            if len(coords[factor]) > 1:  # a one-level factor adds 0 (and no index array)
                eta = eta + levels[idx[factor]]
            if level_pairs[factor]:
                a = np.array([i for i, _, _ in level_pairs[factor]])
                b = np.array([j for _, j, _ in level_pairs[factor]])
                pm.Deterministic(f"contrast_{factor}", levels[b] - levels[a],
                                 dims=f"{factor}_pair")
        s_cell = prior_rv("sigma_cell", p["sigma_cell"])
        z_cell = pm.Normal("z_cell", 0.0, 1.0, dims="cell")
        s_item = prior_rv("sigma_item", p["sigma_item"])
        z_item = pm.Normal("z_item", 0.0, 1.0, dims="item")
        eta = eta + s_cell * z_cell[cell_idx] + s_item * z_item[item_idx]
        pm.Binomial("k", n=n, logit_p=eta, observed=k, dims="obs")
    return model
