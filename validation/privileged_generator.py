"""An independent generator of checkpoints with known privileged access (issue 28.1).

Written apart from ``selfmodel.records.simulate`` and from the estimator (``selfmodel.analyses.privileged``),
and not sharing their assumptions: the simulator draws predictions from a signal-detection
model with normal item difficulty; this one draws *whether each prediction is right* from
item difficulties on a beta distribution, per-item random effects for every
predictor -> target cell, and (``clustered``) clusters of 3-5 items that share a difficulty
shift, a per-cell shift and their own training gain (overdispersion: the gains vary from
cluster to cluster, and cells of one cluster move together beyond what the item carries).

One base ``B`` and one trained checkpoint ``T`` per family. On trained tasks

* ``B -> B`` (the base predicting itself): logit ``u_i + e_BB``;
* ``T -> T`` (the checkpoint predicting itself): logit ``u_i + gain + e_TT``;
* ``T -> B`` (the checkpoint predicting its base; ``predictor = T``, ``model = B``):
  logit ``u_i + share * gain + e_TB``;
* ``B -> T`` (the base predicting the checkpoint): logit ``u_i + e_BT``;

with ``u_i = logit(p_i)``, ``p_i ~ Beta(4, 2)``, and independent ``e ~ N(0, 0.3)`` per item
and cell. On held-out tasks nothing is gained. ``share = 1``: the checkpoint gained as much
at predicting its base (no privileged access); ``share = 0``: only at predicting itself
(fully privileged). Outcomes: the base's ``~ Bernoulli(q_i)``, ``q_i ~ Beta(2, 2)``; the
checkpoint's differs from its base's on 20% of trained and 5% of held-out items; a
prediction is the target's outcome when right and the other value when wrong.

The true contrast of a family is the population value of the estimand of
``selfmodel.analyses.privileged`` (paired conditional log odds ratios, self-gain minus other-gain),
computed by :func:`true_contrast` from the generator's own probabilities on a large
sample of items, without Bernoulli noise.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import polars as pl
from scipy.special import expit, logit


@dataclass(frozen=True)
class Design:
    """What :func:`generate` draws: families (name -> share of the gain on the base), tasks."""

    families: dict[str, float] = field(
        default_factory=lambda: {"full": 0.0, "half": 0.5, "none": 1.0})
    #: task -> (items, trained?)
    tasks: dict[str, tuple[int, bool]] = field(default_factory=lambda: {
        "t_trained_a": (250, True), "t_trained_b": (250, True), "t_held": (300, False)})
    gain: float = 0.6
    item_sd: float = 0.3
    clustered: bool = False
    cluster_sd: float = 0.8
    cluster_cell_sd: float = 0.6
    cluster_gain_sd: float = 0.4


def _cluster_sizes(n: int, rng: np.random.Generator) -> np.ndarray:
    """Cluster index of each of ``n`` items, clusters of 3-5 items."""
    out, k = [], 0
    while len(out) < n:
        out.extend([k] * int(rng.integers(3, 6)))
        k += 1
    return np.asarray(out[:n])


def _logits(design: Design, share: float, n: int, trained: bool, rng: np.random.Generator
            ) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """Per cell (bb, tt, tb, bt) the logit of a right prediction, and the cluster index."""
    p = np.clip(rng.beta(4.0, 2.0, n), 0.02, 0.98)
    u = logit(p)
    gain = np.full(n, design.gain if trained else 0.0)
    if design.clustered:
        cl = _cluster_sizes(n, rng)
        k = int(cl.max()) + 1
        u = u + rng.normal(0, design.cluster_sd, k)[cl]
        if trained:
            gain = gain + rng.normal(0, design.cluster_gain_sd, k)[cl]
    else:
        cl = np.arange(n)
    shift = {"bb": 0.0, "tt": gain, "tb": share * gain, "bt": 0.0}
    out = {}
    for c, s in shift.items():
        eta = u + s + rng.normal(0, design.item_sd, n)
        if design.clustered:
            eta = eta + rng.normal(0, design.cluster_cell_sd, int(cl.max()) + 1)[cl]
        out[c] = eta
    return out, cl


def true_contrast(design: Design, share: float, *, n: int = 400_000, seed: int = 0) -> float:
    """Population contrast on the trained tasks (expected discordant counts, no Bernoulli)."""
    rng = np.random.default_rng([seed, 99])
    eta, _ = _logits(design, share, n, True, rng)
    pr = {c: expit(v) for c, v in eta.items()}

    def lor(a: np.ndarray, b: np.ndarray) -> float:
        return float(np.log(np.sum(a * (1 - b)) / np.sum((1 - a) * b)))

    return lor(pr["tt"], pr["bb"]) - lor(pr["tb"], pr["bb"])


def generate(design: Design, seed: int) -> tuple[pl.DataFrame, list[dict[str, Any]]]:
    """Records (cross-predictions with ``predictor`` set) and the checkpoints of one data set."""
    rng = np.random.default_rng([seed, 28])
    frames, checkpoints = [], []
    trained_tasks = [t for t, (_, tr) in design.tasks.items() if tr]
    for fam, share in design.families.items():
        b, t = f"{fam}-base", f"{fam}-rl"
        checkpoints.append({"model": t, "base_model": b, "family": fam,
                            "trained_tasks": trained_tasks})
        for task, (n, trained) in design.tasks.items():
            eta, cl = _logits(design, share, n, trained, rng)
            o_b = rng.random(n) < rng.beta(2.0, 2.0, n)
            flip = rng.random(n) < (0.2 if trained else 0.05)
            outcome = {b: o_b, t: o_b ^ flip}
            items = np.array([f"{task}-{i:04d}" for i in range(n)])
            for cell, (pred, target) in {"bb": (b, b), "tt": (t, t), "tb": (t, b),
                                         "bt": (b, t)}.items():
                right = rng.random(n) < expit(eta[cell])
                o = outcome[target]
                frames.append(pl.DataFrame({
                    "model": target, "predictor": pred, "task": task, "item_id": items,
                    "prediction": np.where(right == o, "true", "false"),
                    "outcome": np.where(o, "true", "false"), "correct": right,
                    "cluster": np.array([f"{task}-c{c:04d}" for c in cl]),
                    "status": "ok", "sample": 0,
                }))
    return pl.concat(frames), checkpoints


def registry_frame(checkpoints: list[dict[str, Any]]) -> pl.DataFrame:
    """A registry for :func:`generate`'s models (bases and derived checkpoints)."""
    rows = []
    for c in checkpoints:
        common = {"family": c["family"], "params_b": 7.0, "open_weights": True}
        rows.append({"model": c["base_model"], **common, "base_model": None,
                     "intervention": None, "trained_tasks": None})
        rows.append({"model": c["model"], **common, "base_model": c["base_model"],
                     "intervention": "rl", "trained_tasks": ";".join(c["trained_tasks"])})
    return pl.DataFrame(rows)
