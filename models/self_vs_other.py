r"""Privileged self-knowledge: a model predicting *itself* vs others predicting it.

Cross-prediction designs (Binder et al. 2024) ask predictor model :math:`p` to predict
the behaviour of target model :math:`m`; self-prediction is the diagonal :math:`p = m`.
A model can be good at predicting itself for two uninteresting reasons: its behaviour is
easy to predict (a target effect: everyone predicts it well), or it is a good predictor
of anyone (a predictor effect). The *privileged-access* effect is what is left on the
diagonal after both.

Data: one row per predictor :math:`p` x target :math:`m` x task :math:`t` with
:math:`n_{pmt}` readable predictions, :math:`k_{pmt}` correct
(``selfmodel.records.cells.to_pair_cells``).

.. math::

    k_{pmt} &\sim \mathrm{Binomial}\big(n_{pmt},\ \mathrm{logit}^{-1}(\eta_{pmt})\big) \\
    \eta_{pmt} &= \alpha_t + a_m + b_p + (\gamma + \epsilon_t)\,[p = m] + w_{pmt} \\
    a = \sigma_a z^{a},\ b &= \sigma_b z^{b},\ \epsilon = \sigma_\epsilon z^{\epsilon},\quad
    z^{a}, z^{b}, z^{\epsilon} \sim \mathrm{ZeroSumNormal}(1) \\
    w_{pmt} &= \sigma_w z^{w}_{pmt},\quad z^{w}_{pmt} \sim \mathcal N(0, 1)

Parameters
----------
alpha (task)
    logit accuracy of an average predictor on an average *other* target on task :math:`t`.
gamma
    the **self-knowledge effect**: extra logit accuracy when the predictor is the target,
    beyond the target's predictability and the predictor's general skill; the unweighted
    mean over tasks. This is ``EFFECT``.
gamma_task (task)
    task-specific effect :math:`\gamma + \epsilon_t` (``PER_TASK_EFFECT``).
a_target (target), b_predictor (predictor)
    how predictable a model's behaviour is, and how good a predictor a model is.
w (pair)
    predictor x target x task deviations. Without them every record would count as
    independent evidence about :math:`\gamma`, and :math:`\gamma` would be as certain as
    if there were thousands of models; with them the diagonal is judged against the
    spread of the off-diagonal pairs.

Identification needs each predictor to predict at least one other target (else its
:math:`b_p` and the diagonal are confounded) and targets predicted by others; ``build``
raises when there is no self pair or no cross pair. Predictor-target similarity (siblings
of one family predicting each other) is not modelled: :math:`\gamma` then includes
whatever a sibling would share.

Measured on simulated cross-prediction data: ``docs/models.md`` (section ``self_vs_other``).

References
----------
Binder et al. (2024), "Looking Inward: Language Models Can Learn About Themselves by
Introspection", arXiv:2410.13787 (the self vs cross-prediction design); Kenny & La Voie
(1984), "The social relations model", *Advances in Experimental Social Psychology* 18
(actor/partner/relationship decomposition, here predictor/target/pair).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pymc as pm

from selfmodel.models.graph import factorize, prior_rv, zero_sum_effect
from selfmodel.models.spec import Effect, ModelSpec, Prior, merge_priors

NAME = "self_vs_other"
SUMMARY = "cross-prediction: target, predictor and pair effects plus the self (p == m) effect"
#: Variables the decision rules read.
EFFECT = "gamma"
PER_TASK_EFFECT = "gamma_task"

DEFAULT_PRIORS: dict[str, Prior] = {
    "alpha": ("Normal", {"mu": 0.0, "sigma": 1.5}),  # task intercepts, logit accuracy
    "gamma": ("Normal", {"mu": 0.0, "sigma": 1.0}),  # logit gain when predicting oneself
    "sigma_gamma_task": ("HalfNormal", {"sigma": 0.5}),  # task deviations of gamma
    "sigma_target": ("HalfNormal", {"sigma": 0.5}),  # target predictability (logit)
    "sigma_predictor": ("HalfNormal", {"sigma": 0.5}),  # predictor skill (logit)
    "sigma_pair": ("HalfNormal", {"sigma": 0.5}),  # predictor x target x task deviations
}

REQUIRED_COLUMNS = ("predictor", "model", "task", "n", "k")


def unfit_reason(data: Any) -> str | None:
    """Why ``data`` (pair cells) cannot identify the self effect, or ``None``."""
    if data["is_self"].n_unique() >= 2:
        return None
    if data["is_self"].all():
        return "the records have no cross-predictions (every predictor is the model itself)"
    return "the records have no self-predictions"


#: What the pipeline does with this model (see ``models/spec.py``): the self-knowledge
#: advantage (positive: a model predicts itself better than other models predict it).
SPEC = ModelSpec(
    table="pair_cells",
    decides=(Effect("effect", EFFECT, PER_TASK_EFFECT, name_parameter=True),),
    slope_priors={"gamma": ("gamma", None), "gamma_task": ("gamma", "sigma_gamma_task")},
    loo=None,
    sections=("sec-richer", "sec-checks"),
    unfit_reason=unfit_reason,
)


def build(data: Any, priors: Mapping[str, Prior] | None = None) -> pm.Model:
    """Build the PyMC model.

    Parameters
    ----------
    data
        A table (polars or pandas) with columns ``predictor, model, task, n, k``
        (``selfmodel.records.cells.to_pair_cells``); ``model`` is the target.
    priors
        Overrides of :data:`DEFAULT_PRIORS` (same keys).

    Returns
    -------
    pymc.Model
        With coords ``task``, ``target``, ``predictor``, ``pair`` and the observed ``k``
        (on ``pair``).
    """
    p = merge_priors(DEFAULT_PRIORS, priors)
    pred_col = np.asarray(data["predictor"]).astype(str)
    targ_col = np.asarray(data["model"]).astype(str)
    task_col = np.asarray(data["task"]).astype(str)
    task_idx, tasks = factorize(task_col)
    targ_idx, targets = factorize(targ_col)
    pred_idx, predictors = factorize(pred_col)
    is_self = (pred_col == targ_col).astype(float)
    if is_self.sum() == 0 or is_self.sum() == len(is_self):
        raise ValueError(
            "self_vs_other model needs both self-predictions (predictor == model) and "
            "cross-predictions (predictor != model)"
        )
    n = np.asarray(data["n"], dtype="int64")
    k = np.asarray(data["k"], dtype="int64")
    pairs = [f"{a}>{b}|{t}" for a, b, t in zip(pred_col, targ_col, task_col, strict=True)]
    coords = {"task": tasks, "target": targets, "predictor": predictors, "pair": pairs}
    with pm.Model(coords=coords) as model:
        self_flag = pm.Data("is_self", is_self, dims="pair")
        alpha = prior_rv("alpha", p["alpha"], dims="task")
        gamma = prior_rv("gamma", p["gamma"])
        s_eps = prior_rv("sigma_gamma_task", p["sigma_gamma_task"])
        eps = zero_sum_effect("epsilon", s_eps, "task", len(tasks))
        gamma_t = pm.Deterministic("gamma_task", gamma + eps, dims="task")
        s_a = prior_rv("sigma_target", p["sigma_target"])
        a = zero_sum_effect("a_target", s_a, "target", len(targets))
        s_b = prior_rv("sigma_predictor", p["sigma_predictor"])
        b = zero_sum_effect("b_predictor", s_b, "predictor", len(predictors))
        s_w = prior_rv("sigma_pair", p["sigma_pair"])
        z_w = pm.Normal("z_pair", 0.0, 1.0, dims="pair")
        eta = (
            alpha[task_idx] + a[targ_idx] + b[pred_idx]
            + gamma_t[task_idx] * self_flag + s_w * z_w
        )
        pm.Binomial("k", n=n, logit_p=eta, observed=k, dims="pair")
    return model
