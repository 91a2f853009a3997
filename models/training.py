r"""Training effect: each trained checkpoint against its base on the same items.

A *derived checkpoint* :math:`T_p` (registry ``base_model``) was made from a base :math:`B_p`
by an intervention (registry ``intervention``) that trained on some tasks and held out the
others (registry ``trained_tasks``). An *arm* :math:`j` is one intervention x task, with its
status (trained or held out) fixed by the design. Both checkpoints answered the same items.

Data: one row per pair :math:`p` x task x comparison (``analysis.training.training_table``),
counting the items on which the two scorings being compared disagree:

``gain`` (the training effect)
    scoring 1 = :math:`T_p`'s self-prediction against its own outcome, scoring 0 =
    :math:`B_p`'s against its own; :math:`k` items where only :math:`T_p` is right out of
    :math:`n` where exactly one is right.
``privileged`` (self-gain minus other-gain)
    scoring 1 = :math:`T_p`'s self-prediction against :math:`T_p`'s outcome, scoring 0 = the
    same prediction against :math:`B_p`'s outcome on the item (the base as the "other").

Paired at the item level: with an item effect :math:`e_i` on the logit of "scoring is
right", shared by the two scorings of the item, the conditional likelihood given that
exactly one is right does not involve :math:`e_i` (McNemar; Breslow & Day 1980, ch. 7), so
item difficulty cancels without a distribution for it:

.. math::

    k_{pj} &\sim \mathrm{Binomial}\big(n_{pj},\ \mathrm{logit}^{-1}(\Delta_{pj})\big),
        \qquad \Delta_{pj} = \delta_j + \sigma_\Delta\, z_{pj},\quad
        z_{j\cdot} \sim \mathrm{ZeroSumNormal}(1) \text{ over pairs} \\
    k^{priv}_{pt} &\sim \mathrm{Binomial}\big(n^{priv}_{pt},\
        \mathrm{logit}^{-1}(\pi_p)\big),
        \qquad \pi_p = \bar\pi + \sigma_\pi\, z^{\pi}_p,\quad
        z^{\pi} \sim \mathrm{ZeroSumNormal}(1)

Parameters
----------
delta (arm)
    the **training effect** of arm :math:`j`: conditional log odds ratio of a correct
    self-prediction after vs before training on the same item, averaged over the pairs
    of the intervention (zero-sum deviations, so it is their in-sample mean). Each arm has
    its own prior; trained and held-out tasks are never pooled.
delta_pair (arm, pair)
    the pair's own effect :math:`\Delta_{pj}`, partially pooled across families by
    :math:`\sigma_\Delta`.
trained_effect, held_out_effect
    unweighted means of ``delta`` over the trained arms and over the held-out arms
    (transfer); each is absent when the design has no arm of that kind.
pi (pair)
    the **privileged-access contrast** of pair :math:`p`: log odds that :math:`T_p`'s
    prediction matches its own outcome rather than its base's, on items where the two
    outcomes differ. On the accuracy scale, self-gain minus other-gain is
    :math:`A(T\to T) - A(T\to B) = \{A(T\to T) - A(B\to B)\} - \{A(T\to B) - A(B\to B)\}`,
    which is zero exactly when :math:`\pi_p = 0`. :math:`\pi_p > 0`: the checkpoint knows
    its own (new) behaviour better than its base's (introspection-like); :math:`\pi_p \le 0`
    within the interval: the gain is as large for predicting the base (behavioural
    knowledge). One :math:`\pi_p` per pair over all tasks.
pi_mean
    :math:`\bar\pi`, the mean over pairs.

Assumptions: items are independent given the pair; the effect is constant over the items
of a pair x task (the conditional log odds ratio is the Mantel-Haenszel-type common effect);
a pair with a single family has no deviation (a zero-sum effect of one level is 0).

Measured on the default data (``data_raw/``: four trained checkpoints, one per open family,
trained on ``refusal``, with ``difficulty`` and ``word_association`` held out; truth in
``truth.json["training"]``; nutpie, 4 chains x 2000 draws after 1000 tuning): R-hat 1.004,
minimum bulk ESS 1589, no divergence, E-BFMI 0.69; all seven 94% HDIs (three arms, four
contrasts) cover the truth, the trained task is ``improves``, both held-out tasks
``no_credible_effect``, and the checkpoint built without privileged access
(``cirrus-14b-rl``, true contrast 0) is the only one not ``improves``. The report's "Did
training help?" section shows the numbers; ``tests/test_training.py`` (slow) repeats the
check on a fresh simulation.

References
----------
Breslow & Day (1980), *Statistical Methods in Cancer Research I*, ch. 7 (conditional
likelihood for matched pairs); Zeng, Assis & Wang (2026), "Evaluating and Improving LLM
Self-Modeling" (the design: base and trained checkpoints, trained and held-out tasks, and
the question whether a gain is privileged access).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pymc as pm
import pytensor.tensor as pt

from models._common import ModelSpec, Prior, factorize, merge_priors, prior_rv

NAME = "training"
SUMMARY = "trained checkpoint vs its base on the same items: training effect per task, transfer, privileged access"
#: No verdict variable: ``analysis/training.py`` decides ``delta`` (per arm),
#: ``trained_effect``, ``held_out_effect``, ``pi`` and ``pi_mean`` itself.
EFFECT = None
PER_TASK_EFFECT = None

DEFAULT_PRIORS: dict[str, Prior] = {
    "delta": ("Normal", {"mu": 0.0, "sigma": 1.0}),  # training effect per arm, log odds ratio
    "sigma_delta": ("HalfNormal", {"sigma": 0.5}),  # pair (family) deviations of the effect
    "pi_mean": ("Normal", {"mu": 0.0, "sigma": 1.0}),  # mean privileged-access contrast (logit)
    "sigma_pi": ("HalfNormal", {"sigma": 0.5}),  # pair deviations of the contrast
}

REQUIRED_COLUMNS = ("model", "task", "arm", "status", "comparison", "n", "k")


def unfit_reason(data: Any) -> str | None:
    """Why the table cannot identify the training effect, or ``None``."""
    if len(data) == 0:
        return "the registry declares no derived checkpoint with records on shared items"
    gain = data.filter(data["comparison"] == "gain") if hasattr(data, "filter") else data
    if int(np.asarray(gain["n"]).sum()) == 0:
        return "no item on which a checkpoint and its base disagree"
    return None


#: What the pipeline does with this model: fitted and decided by ``analysis/training.py``
#: (the training effect is not a scale slope, so it has no per-10x ROPE and no LOO).
SPEC = ModelSpec(
    table="training_pairs",
    role="companion",
    decides=(),
    slope_priors={"delta": ("delta", None)},
    loo=None,
    sections=("sec-training",),
    unfit_reason=unfit_reason,
)


def build(data: Any, priors: Mapping[str, Prior] | None = None) -> pm.Model:
    """Build the PyMC model.

    Parameters
    ----------
    data
        Rows ``model`` (the trained checkpoint = the pair), ``task``, ``arm``, ``status``
        (``trained``/``held_out``), ``comparison`` (``gain``/``privileged``), ``n``, ``k``
        (``analysis.training.training_table``).
    priors
        Overrides of :data:`DEFAULT_PRIORS`.

    Returns
    -------
    pymc.Model
        With coords ``arm``, ``pair``, ``row`` and the observed ``k`` (on ``row``).
    """
    p = merge_priors(DEFAULT_PRIORS, priors)
    comp = np.asarray(data["comparison"]).astype(str)
    pair_col = np.asarray(data["model"]).astype(str)
    arm_col = np.asarray(data["arm"]).astype(str)
    status_col = np.asarray(data["status"]).astype(str)
    n = np.asarray(data["n"], dtype="int64")
    k = np.asarray(data["k"], dtype="int64")
    g, v = comp == "gain", comp == "privileged"
    if not g.any():
        raise ValueError("training model needs 'gain' rows (a checkpoint and its base)")
    _, pairs = factorize(pair_col)
    pair_index = {name: i for i, name in enumerate(pairs)}
    _, arms = factorize(arm_col[g])
    status_of = {a: s for a, s in zip(arm_col[g], status_col[g], strict=True)}
    trained = np.array([status_of[a] == "trained" for a in arms])
    arm_pos = {a: i for i, a in enumerate(arms)}
    coords = {
        "arm": arms,
        "pair": pairs,
        "row": [f"{a}|{b}|{c}" for a, b, c in zip(pair_col, arm_col, comp, strict=True)],
    }
    row_pair = np.array([pair_index[x] for x in pair_col])
    with pm.Model(coords=coords) as model:
        delta = prior_rv("delta", p["delta"], dims="arm")
        s_d = prior_rv("sigma_delta", p["sigma_delta"])
        if len(pairs) >= 2:
            z = pm.ZeroSumNormal("z_delta", sigma=1.0, dims=("arm", "pair"))
            dev = s_d * z
        else:
            dev = pt.zeros((len(arms), 1))
        delta_pair = pm.Deterministic("delta_pair", delta[:, None] + dev, dims=("arm", "pair"))
        if trained.any():
            pm.Deterministic("trained_effect", delta[np.flatnonzero(trained)].mean())
        if (~trained).any():
            pm.Deterministic("held_out_effect", delta[np.flatnonzero(~trained)].mean())
        # gain rows read delta_pair[arm, pair]; privileged rows read pi[pair]
        row_arm = np.array([arm_pos.get(a, 0) for a in arm_col])
        eta = delta_pair[row_arm, row_pair]
        if v.any():
            pi_mean = prior_rv("pi_mean", p["pi_mean"])
            s_p = prior_rv("sigma_pi", p["sigma_pi"])
            if len(pairs) >= 2:
                z_pi = pm.ZeroSumNormal("z_pi", sigma=1.0, dims="pair")
                pi = pm.Deterministic("pi", pi_mean + s_p * z_pi, dims="pair")
            else:
                pi = pm.Deterministic("pi", pi_mean + pt.zeros(1), dims="pair")
            eta = pt.where(g, eta, pi[row_pair])
        pm.Binomial("k", n=n, logit_p=eta, observed=k, dims="row")
    return model
