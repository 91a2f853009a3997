r"""Task intercepts only: the baseline every other accuracy model is compared with.

Data: one row per model :math:`m` x task :math:`t` cell with :math:`n_{mt}` readable
self-predictions, :math:`k_{mt}` of them correct.

.. math::

    k_{mt} \sim \mathrm{Binomial}\big(n_{mt},\ \mathrm{logit}^{-1}(\alpha_t)\big),
    \qquad \alpha_t \sim \mathcal N(0, 1.5^2)

Every model is assumed equally good at a task: no scale term, no family, model or cell
effects (complete pooling across models, Gelman & Hill 2007, sec. 12.2). It exists to
be beaten: a leave-one-out comparison (``selfmodel.fitting.checks.loo`` / ``compare``) of
``scale`` or ``within_between`` against ``pooled`` *on the same cells* asks whether
anything about the models predicts held-out cells better than the task average.

With ``random_effects=True`` the model gets the family, model and cell effects of
``models/scale.py`` but still no scale term:

.. math::

    \mathrm{logit}\,p_{mt} = \alpha_t + u_{f[m]} + v_m + w_{mt},\quad
    u = \sigma_u z^u,\ v = \sigma_v z^v\ (z \sim \mathrm{ZeroSumNormal}(1)),\quad
    w_{mt} = \sigma_w z^w_{mt},\ z^w_{mt} \sim \mathcal N(0, 1)

which is the right null for "does scale predict held-out cells?": the comparison
``scale`` vs ``pooled(random_effects=True)`` differs only in
:math:`(\beta + \delta_t) x_m`.

Parameters
----------
alpha (task)
    logit accuracy on task :math:`t`, common to all models.
accuracy_task (task)
    :math:`\mathrm{logit}^{-1}(\alpha_t)` (deterministic).

There is no effect for a verdict: ``EFFECT`` and ``PER_TASK_EFFECT`` are ``None``.

Measured on the default data: ``docs/models.md`` (section ``pooled``).

References
----------
Gelman & Hill (2007), *Data Analysis Using Regression and Multilevel/Hierarchical
Models*, sec. 12.2 (complete pooling); Vehtari, Gelman & Gabry (2017), "Practical
Bayesian model evaluation using leave-one-out cross-validation and WAIC", *Statistics and
Computing* 27 (baselines in LOO comparisons).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pymc as pm

from selfmodel.models.graph import factorize, family_model_cell_effects, prior_rv
from selfmodel.models.spec import ModelSpec, Prior, merge_priors

NAME = "pooled"
SUMMARY = "baseline: task intercepts only (every model equally good at a task)"
#: A baseline has no effect for a verdict.
EFFECT = None
PER_TASK_EFFECT = None

DEFAULT_PRIORS: dict[str, Prior] = {
    "alpha": ("Normal", {"mu": 0.0, "sigma": 1.5}),  # task intercepts, logit accuracy
    # only with random_effects=True (same priors as models/scale.py):
    "sigma_family": ("HalfNormal", {"sigma": 0.5}),  # family intercepts (logit)
    "sigma_model": ("HalfNormal", {"sigma": 0.5}),  # model intercepts (logit)
    "sigma_cell": ("HalfNormal", {"sigma": 0.5}),  # model x task deviations
}

REQUIRED_COLUMNS = ("model", "family", "task", "n", "k")

#: What the pipeline does with this model (see ``models/spec.py``): the LOO baseline.
SPEC = ModelSpec(table="cells", role="baseline", loo="cell", sections=("sec-checks",))


def build(
    data: Any, priors: Mapping[str, Prior] | None = None, *, random_effects: bool = False
) -> pm.Model:
    """Build the PyMC model.

    Parameters
    ----------
    data
        A table (polars or pandas) with columns ``model, task, n, k`` (and ``family``
        with ``random_effects=True``).
    priors
        Overrides of :data:`DEFAULT_PRIORS` (same keys).
    random_effects
        Add the family, model and cell effects of ``models/scale.py`` (no scale term).

    Returns
    -------
    pymc.Model
        With coords ``task``, ``cell`` (and ``family``, ``model`` with
        ``random_effects=True``) and the observed ``k`` (on ``cell``).
    """
    p = merge_priors(DEFAULT_PRIORS, priors)
    task_idx, tasks = factorize(data["task"])
    model_idx, models = factorize(data["model"])
    n = np.asarray(data["n"], dtype="int64")
    k = np.asarray(data["k"], dtype="int64")
    cells = [f"{m}|{t}" for m, t in zip(data["model"], data["task"], strict=True)]
    coords: dict[str, list[str]] = {"task": tasks, "cell": cells}
    if random_effects:
        fam_idx, families = factorize(data["family"])
        coords |= {"family": families, "model": models}
    with pm.Model(coords=coords) as model:
        alpha = prior_rv("alpha", p["alpha"], dims="task")
        pm.Deterministic("accuracy_task", pm.math.invlogit(alpha), dims="task")
        eta = alpha[task_idx]
        if random_effects:
            u, v, s_cell, z_cell = family_model_cell_effects(p, len(families), len(models))
            eta = eta + u[fam_idx] + v[model_idx] + s_cell * z_cell
        pm.Binomial("k", n=n, logit_p=eta, observed=k, dims="cell")
    return model
