r"""Training effect: each trained checkpoint against its base on the same items.

A *derived checkpoint* :math:`T_p` (registry ``base_model``) was made from a base :math:`B_p`
by an intervention (registry ``intervention``) that trained on some tasks and held out the
others (registry ``trained_tasks``). An *arm* :math:`j` is one intervention x task, with its
status (trained or held out) fixed by the design. Both checkpoints answered the same items.

Data: one row per pair :math:`p` x task (``selfmodel.analyses.training.training_table``),
counting the items on which the two scorings compared disagree:

``gain`` (the training effect)
    scoring 1 = :math:`T_p`'s self-prediction against its own outcome, scoring 0 =
    :math:`B_p`'s against its own; :math:`k` items where only :math:`T_p` is right out of
    :math:`n` where exactly one is right.

The rows also carry the signal-detection counts of both checkpoints (below).

Privileged access is not a term of this model: it is decided from real cross-predictions by
``selfmodel.analyses.privileged`` (a difference in differences, no fit).

Paired at the item level: with an item effect :math:`e_i` on the logit of "scoring is
right", shared by the two scorings of the item, the conditional likelihood given that
exactly one is right does not involve :math:`e_i` (McNemar; Breslow & Day 1980, ch. 7), so
item difficulty cancels without a distribution for it:

.. math::

    k_{pj} &\sim \mathrm{Binomial}\big(n_{pj},\ \mathrm{logit}^{-1}(\Delta_{pj})\big),
        \qquad \Delta_{pj} = \delta_j + \sigma_\Delta\, z_{pj},\quad
        z_{j\cdot} \sim \mathrm{ZeroSumNormal}(1) \text{ over pairs}

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

Signal detection: d' and criterion (``gain`` rows carry the counts)
--------------------------------------------------------------------
On the same shared items, each checkpoint's binary self-predictions against its *own*
outcomes give hits :math:`H` of :math:`S` signal items (outcome true) and false alarms
:math:`F` of :math:`N` noise items, for the base (:math:`B`) and the checkpoint
(:math:`T`), with the equal-variance model of ``models/sdt.py``:

.. math::

    H^{B}_{pt} &\sim \mathrm{Bin}\big(S^{B}_{pt}, \Phi(\tfrac12 d_{pt} - c_{pt})\big),\quad
    F^{B}_{pt} \sim \mathrm{Bin}\big(N^{B}_{pt}, \Phi(-\tfrac12 d_{pt} - c_{pt})\big) \\
    H^{T}_{pt}, F^{T}_{pt} &: \text{the same with } d_{pt} + D_{pj},\ c_{pt} + C_{pj},
    \qquad D_{pj} = \delta^{d}_j + \sigma_{D} z^{D}_{pj},\ C_{pj} = \delta^{c}_j +
    \sigma_{C} z^{C}_{pj}

``dprime_base``, ``criterion_base`` (cell = pair x task)
    the base's :math:`d_{pt}`, :math:`c_{pt}`: one free pair of nuisance parameters per
    cell, so the effects are within-pair changes on the same items.
``dprime_effect``, ``criterion_effect`` (arm); ``*_effect_pair`` (arm, pair)
    the **training effect on sensitivity and on the criterion** of arm :math:`j` (the
    in-sample mean over pairs, as for ``delta``), and each pair's own change.
``trained_dprime_effect``, ``held_out_dprime_effect`` (and ``*_criterion_effect``)
    unweighted means over the trained and over the held-out arms, never pooled.

Pairing here is by *item set*, not conditional on the item: the two checkpoints' outcomes
differ on some items, so signal and noise items are each checkpoint's own, and the hit and
false-alarm counts of the two are treated as independent binomials. Their positive
item-level dependence (same items, mostly the same outcomes) is left out, which can only
widen the interval of the difference. An arm whose shared items have no binary
prediction with both outcomes is ``not_estimable`` (``selfmodel.analyses.training``).

What is and is not modelled
---------------------------
Modelled: item difficulty cancels from the accuracy effect (conditional likelihood); the
d'/criterion effects compare the two checkpoints on the same item set; effects vary by pair around the arm (partial pooling across families,
one pair per family in the default data); trained and held-out tasks have separate effects.
Not modelled: item-level dependence between base and checkpoint in the signal-detection
part (handled conservatively, as above); repeated samples beyond their counts; any change of
the effect with scale (checkpoints are not on the scale axis); confidence ratings.

Assumptions: items are independent given the pair; the effect is constant over the items
of a pair x task (the conditional log odds ratio is the Mantel-Haenszel-type common effect);
a pair with a single family has no deviation (a zero-sum effect of one level is 0).

Measured on the default data (four trained checkpoints): ``docs/models.md`` (section
``training``); the report's "Did training help?" section shows the numbers,
``tests/analyses/test_training.py`` (slow) repeats the check on a fresh simulation and
``validation/training_null.py`` measures the false ``improves`` rate under a null effect.


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

from selfmodel.models.graph import factorize, prior_rv
from selfmodel.models.sdt import probit_logit
from selfmodel.models.spec import ModelSpec, Prior, merge_priors

NAME = "training"
SUMMARY = "trained checkpoint vs its base on the same items: training effect per task, transfer, d' and criterion"
#: No verdict variable: ``analysis/analyses/training.py`` decides ``delta`` (per arm),
#: ``trained_effect``, ``held_out_effect`` and the d'/criterion effects itself.
EFFECT = None
PER_TASK_EFFECT = None

DEFAULT_PRIORS: dict[str, Prior] = {
    "delta": ("Normal", {"mu": 0.0, "sigma": 1.0}),  # training effect per arm, log odds ratio
    "sigma_delta": ("HalfNormal", {"sigma": 0.5}),  # pair (family) deviations of the effect
    # signal detection (the same scale as models/sdt.py: d' and criterion units)
    "dprime_base": ("Normal", {"mu": 0.5, "sigma": 1.5}),  # base d' per pair x task
    "criterion_base": ("Normal", {"mu": 0.0, "sigma": 1.0}),  # base criterion per pair x task
    "dprime_effect": ("Normal", {"mu": 0.0, "sigma": 1.0}),  # change in d' per arm
    "criterion_effect": ("Normal", {"mu": 0.0, "sigma": 1.0}),  # change in criterion per arm
    "sigma_dprime_effect": ("HalfNormal", {"sigma": 0.5}),
    "sigma_criterion_effect": ("HalfNormal", {"sigma": 0.5}),
}

#: The signal-detection counts of both checkpoints (optional columns).
SDT_COLUMNS = (
    "n_signal_base", "n_noise_base", "hits_base", "false_alarms_base",
    "n_signal_trained", "n_noise_trained", "hits_trained", "false_alarms_trained",
)
#: The input columns (``weight``, always 1.0 on ``gain`` rows, is kept so that a table's
#: content hash, and with it the saved fit's key, is what it was).
REQUIRED_COLUMNS = ("model", "task", "arm", "status", "comparison", "n", "k", "weight", *SDT_COLUMNS)


def unfit_reason(data: Any) -> str | None:
    """Why the table cannot identify the training effect, or ``None``."""
    if len(data) == 0:
        return "the registry declares no derived checkpoint with records on shared items"
    gain = data.filter(data["comparison"] == "gain") if hasattr(data, "filter") else data
    if int(np.asarray(gain["n"]).sum()) == 0:
        return "no item on which a checkpoint and its base disagree"
    return None


#: What the pipeline does with this model: fitted and decided by ``analysis/analyses/training.py``
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


def _pair_effect(name: str, mean: Any, sigma: Any, n_arms: int, n_pairs: int) -> Any:
    """``mean[arm] + sigma * z[arm, pair]`` (zero-sum over pairs; none with one pair)."""
    if n_pairs >= 2:
        z = pm.ZeroSumNormal(f"z_{name}", sigma=1.0, dims=("arm", "pair"))
        return mean[:, None] + sigma * z
    return mean[:, None] + pt.zeros((n_arms, 1))


def _means(name: str, effect: Any, trained: np.ndarray) -> None:
    """``trained_<name>`` and ``held_out_<name>``: unweighted means over each kind of arm."""
    if trained.any():
        pm.Deterministic(f"trained_{name}", effect[np.flatnonzero(trained)].mean())
    if (~trained).any():
        pm.Deterministic(f"held_out_{name}", effect[np.flatnonzero(~trained)].mean())


def _sdt_block(data: Any, cell_arm: np.ndarray, cell_pair: np.ndarray,
               trained: np.ndarray, p: Mapping[str, Prior], n_pairs: int) -> None:
    """Hits and false alarms of base and checkpoint on the shared items (``gain`` rows)."""
    col = {c: np.asarray(data[c], dtype="int64") for c in SDT_COLUMNS}
    d_b = prior_rv("dprime_base", p["dprime_base"], dims="cell")
    c_b = prior_rv("criterion_base", p["criterion_base"], dims="cell")
    shift = {}
    for side in ("dprime", "criterion"):
        eff = prior_rv(f"{side}_effect", p[f"{side}_effect"], dims="arm")
        s = prior_rv(f"sigma_{side}_effect", p[f"sigma_{side}_effect"])
        pair = pm.Deterministic(
            f"{side}_effect_pair",
            _pair_effect(f"{side}_effect", eff, s, len(trained), n_pairs), dims=("arm", "pair"),
        )
        _means(f"{side}_effect", eff, trained)
        shift[side] = pair[cell_arm, cell_pair]
    for who, d, c in (("base", d_b, c_b),
                      ("trained", d_b + shift["dprime"], c_b + shift["criterion"])):
        pm.Binomial(f"hits_{who}", n=col[f"n_signal_{who}"], logit_p=probit_logit(d / 2 - c),
                    observed=col[f"hits_{who}"], dims="cell")
        pm.Binomial(f"false_alarms_{who}", n=col[f"n_noise_{who}"],
                    logit_p=probit_logit(-d / 2 - c), observed=col[f"false_alarms_{who}"],
                    dims="cell")


def build(data: Any, priors: Mapping[str, Prior] | None = None) -> pm.Model:
    """Build the PyMC model.

    Parameters
    ----------
    data
        The rows of ``selfmodel.analyses.training.training_table``: ``model`` (the trained checkpoint
        = the pair), ``task``, ``arm``, ``status`` (``trained``/``held_out``),
        ``comparison`` (``gain``: the only kind of row this model reads), ``n``, ``k`` and,
        optionally, the signal-detection counts (without them the model has only the
        accuracy effect).
    priors
        Overrides of :data:`DEFAULT_PRIORS`.

    Returns
    -------
    pymc.Model
        With coords ``arm``, ``pair``, ``row`` (the ``gain`` rows: the observed ``k``) and
        ``cell`` (pair x task: the same rows).

    Raises
    ------
    ValueError
        Without ``gain`` rows, or with rows of another ``comparison`` (the rescoring rows
        of earlier versions, which this model no longer has terms for).
    """
    p = merge_priors(DEFAULT_PRIORS, priors)
    comp = np.asarray(data["comparison"]).astype(str)
    pair_col = np.asarray(data["model"]).astype(str)
    arm_col = np.asarray(data["arm"]).astype(str)
    task_col = np.asarray(data["task"]).astype(str)
    status_col = np.asarray(data["status"]).astype(str)
    g = comp == "gain"
    if not g.any():
        raise ValueError("training model needs 'gain' rows (a checkpoint and its base)")
    if not g.all():
        other = sorted(set(comp[~g].tolist()))
        raise ValueError(f"training model reads only 'gain' rows, not {other} (privileged access "
                         "is decided by selfmodel.analyses.privileged, without this model)")
    _, pairs = factorize(pair_col)
    pair_index = {name: i for i, name in enumerate(pairs)}
    _, arms = factorize(arm_col)
    status_of = {a: s for a, s in zip(arm_col, status_col, strict=True)}
    trained = np.array([status_of[a] == "trained" for a in arms])
    arm_pos = {a: i for i, a in enumerate(arms)}
    row_pair = np.array([pair_index[x] for x in pair_col])
    row_arm = np.array([arm_pos[a] for a in arm_col])
    coords = {
        "arm": arms,
        "pair": pairs,
        "row": [f"{a}|{b}|{c}" for a, b, c in zip(pair_col, arm_col, comp, strict=True)],
        "cell": [f"{a}|{t}" for a, t in zip(pair_col, task_col, strict=True)],
    }
    n = np.asarray(data["n"], dtype="int64")
    k = np.asarray(data["k"], dtype="int64")
    with pm.Model(coords=coords) as model:
        delta = prior_rv("delta", p["delta"], dims="arm")
        s_d = prior_rv("sigma_delta", p["sigma_delta"])
        delta_pair = pm.Deterministic(
            "delta_pair", _pair_effect("delta", delta, s_d, len(arms), len(pairs)),
            dims=("arm", "pair"),
        )
        _means("effect", delta, trained)
        pm.Binomial("k", n=n, logit_p=delta_pair[row_arm, row_pair], observed=k, dims="row")
        if "n_signal_base" in getattr(data, "columns", ()):
            _sdt_block(data, row_arm, row_pair, trained, p, len(pairs))
    return model
