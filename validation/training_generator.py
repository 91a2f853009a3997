"""An independent generator of trained checkpoints and their bases, with known truth (issue 28.6).

Written apart from ``models/training.py`` and from the package's simulator
(``selfmodel.records.simulate``), and not sharing their assumptions: no binomial-logit
cells, no normal signal-detection readout, no zero-sum pair effects. Records, not counts:
every checkpoint answers every item of every task and predicts whether its answer will be
right, and ``selfmodel.analyses.training.training_table`` reduces them as ingest's records
would be.

Design (the default data's training design): four families, each with a base and a
checkpoint made from it by one intervention that trained on ``refusal`` and held out
``difficulty`` and ``word_association``; 300 items per task.

Behaviour of a checkpoint ``k`` on item ``i`` of a task
    outcome ``true`` with probability ``expit(A_p - d_i + u_ki (+ v_kc))``: ``A_p`` the
    family's ability (normal), ``d_i`` the item's difficulty (logit of a Beta(2, 2)),
    ``u_ki`` the checkpoint's own idiosyncrasy on the item (Laplace, scale 0.7). The trained
    checkpoint keeps its base's ``u`` on a random half of the items and has fresh Laplace
    draws on the other half (training changed its behaviour there), so base and checkpoint
    have the same law.
Prediction
    ``true`` when ``lam_p * (A_p - d_i) + kappa_k * u_ki + e_ki > c_k (+ w_kc)``: general
    knowledge of difficulty (``lam``), private knowledge of its own idiosyncrasy
    (``kappa``, self-knowledge), logistic (not normal) noise ``e``, a criterion ``c``.

Arms
    ``null``: the checkpoint's ``kappa`` and ``c`` are its base's. Base and checkpoint are
    then exchangeable item by item, so every population effect (accuracy, d', criterion,
    per task and trained/held-out) is exactly 0.
    ``truth``: on the trained task the checkpoint knows itself better (``kappa`` + ``g``,
    ``g`` = 1.5 x a gamma(6, 1/6) multiplier per family: skewed, mean 1, and its readout
    noise scale divided by ``1 + g``) and shifts its criterion (+0.3 + Laplace(0.1)); on the
    held-out tasks it gains a quarter of that knowledge and no criterion shift (transfer).
    The truths come out at about +0.2 to +0.35 logits (accuracy) and +0.35 to +0.4 (d') on
    the trained task and about half that held out. The truths of the decided quantities are population values
    computed by :func:`truths` from each data set's own family parameters on 200,000 fresh
    items per family x task (no closed form: the readout is not the model's).
    ``misspecified``: the null with items in clusters of 3-5 sharing a difficulty shift
    (sd 0.8), and per checkpoint x cluster shifts of the outcome (sd 0.6: overdispersion the
    binomial counts do not describe) and of the criterion (sd 0.4), drawn independently for
    base and checkpoint, so the truth stays exactly 0.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl
from cells_generator import cluster_index
from scipy.special import expit, logit
from scipy.stats import norm

FAMILIES = ("aurora", "borealis", "cirrus", "dynamo")
TASKS = {"refusal": "trained", "difficulty": "held_out", "word_association": "held_out"}
INTERVENTION = "rl-selfmodel-v1"
N_ITEMS = 300
ARMS = ("null", "truth", "misspecified")
#: the checkpoint's gain of self-knowledge (kappa) and criterion shift, per kind of task (truth arm)
GAIN = {"trained": (1.5, 0.3), "held_out": (0.375, 0.0)}
U_SCALE, CLUSTER_SD, CLUSTER_CELL_SD, CLUSTER_CRIT_SD = 0.7, 0.8, 0.6, 0.4
TRUTH_ITEMS = 200_000


@dataclass(frozen=True)
class Family:
    """One family's parameters in one data set."""

    ability: float
    lam: float
    kappa_base: float
    crit_base: float
    gain: dict[str, tuple[float, float]]  # task -> (kappa gain, criterion shift)


def families(arm: str, rng: np.random.Generator) -> dict[str, Family]:
    """Draw every family's parameters for ``arm``."""
    out = {}
    for f in FAMILIES:
        mult = rng.gamma(6.0, 1 / 6.0)
        shift = rng.laplace(0.0, 0.1)
        gain = {}
        for task, kind in TASKS.items():
            dk, dc = GAIN[kind] if arm == "truth" else (0.0, 0.0)
            gain[task] = (dk * mult, dc + shift if dc else 0.0)
        out[f] = Family(ability=float(rng.normal(0.3, 0.5)), lam=float(rng.uniform(0.4, 1.0)),
                        kappa_base=float(rng.uniform(0.3, 0.9)), crit_base=float(rng.normal(0.0, 0.4)),
                        gain=gain)
    return out


def _behave(rng: np.random.Generator, fam: Family, task: str, d: np.ndarray, *, clusters: np.ndarray | None
            ) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Predictions and outcomes (booleans) of the base and of the checkpoint on items ``d``."""
    n = d.size
    u_base = rng.laplace(0.0, U_SCALE, n)
    keep = rng.random(n) < 0.5
    u_ckpt = np.where(keep, u_base, rng.laplace(0.0, U_SCALE, n))
    general = fam.ability - d
    dk, dc = fam.gain[task]
    out = {}
    for who, u, kappa, crit in (("base", u_base, fam.kappa_base, fam.crit_base),
                                ("ckpt", u_ckpt, fam.kappa_base + dk, fam.crit_base + dc)):
        v = w = 0.0
        if clusters is not None:
            k = int(clusters.max()) + 1
            v = rng.normal(0.0, CLUSTER_CELL_SD, k)[clusters]
            w = rng.normal(0.0, CLUSTER_CRIT_SD, k)[clusters]
        outcome = rng.random(n) < expit(general + u + v)
        # training sharpens the readout: more weight on its own idiosyncrasy, less noise
        noise = rng.logistic(0.0, 1.0 / (1.0 + dk) if who == "ckpt" else 1.0, n)
        pred = fam.lam * general + kappa * u + noise > crit + w
        out[who] = (pred, outcome)
    return out


def _difficulty(rng: np.random.Generator, n: int, clusters: np.ndarray | None) -> np.ndarray:
    d = logit(np.clip(rng.beta(2.0, 2.0, n), 0.01, 0.99))
    if clusters is not None:
        d = d + rng.normal(0.0, CLUSTER_SD, int(clusters.max()) + 1)[clusters]
    return d


def generate(arm: str, seed: int, n_items: int = N_ITEMS) -> tuple[pl.DataFrame, pl.DataFrame, dict[str, Family]]:
    """Canonical records, the registry, and the families' parameters of one data set."""
    if arm not in ARMS:
        raise ValueError(f"unknown arm {arm!r} (arms: {', '.join(ARMS)})")
    rng = np.random.default_rng([seed, 3301])
    fams = families(arm, rng)
    frames = []
    for task in TASKS:
        clusters = cluster_index(n_items, rng) if arm == "misspecified" else None
        d = _difficulty(rng, n_items, clusters)
        items = [f"{task[:3]}{i:03d}" for i in range(n_items)]
        for f, fam in fams.items():
            for who, (pred, outcome) in _behave(rng, fam, task, d, clusters=clusters).items():
                frames.append(pl.DataFrame({
                    "model": f"{f}-base" if who == "base" else f"{f}-rl", "task": task, "item_id": items,
                    "sample": 0, "predictor": pl.Series([None] * n_items, dtype=pl.Utf8), "status": "ok",
                    "prediction": np.where(pred, "true", "false"), "outcome": np.where(outcome, "true", "false"),
                    "correct": pred == outcome,
                }))
    registry = pl.DataFrame([
        row for f in FAMILIES for row in (
            {"model": f"{f}-base", "family": f, "base_model": None, "intervention": None, "trained_tasks": None},
            {"model": f"{f}-rl", "family": f, "base_model": f"{f}-base", "intervention": INTERVENTION,
             "trained_tasks": ";".join(t for t, k in TASKS.items() if k == "trained")})
    ], schema={c: pl.Utf8 for c in ("model", "family", "base_model", "intervention", "trained_tasks")})
    return pl.concat(frames), registry, fams


def _sdt(pred: np.ndarray, outcome: np.ndarray) -> tuple[float, float]:
    """Population d' and criterion (no correction: the counts are large)."""
    h, f = pred[outcome].mean(), pred[~outcome].mean()
    zh, zf = norm.ppf(h), norm.ppf(f)
    return float(zh - zf), float(-(zh + zf) / 2)


def truths(arm: str, fams: dict[str, Family], seed: int, n: int = TRUTH_ITEMS) -> dict[str, float]:
    """Every decided quantity's population value for the data set with families ``fams``.

    ``accuracy:<task>`` is the mean over families of the conditional log odds that the
    checkpoint, not its base, is the one right when exactly one is (the model's ``delta``);
    ``dprime:<task>`` and ``criterion:<task>`` the mean change of d' and criterion; each kind's
    ``trained`` and ``held_out`` the unweighted mean over its tasks. Exactly 0 in the null
    arms (base and checkpoint are exchangeable); computed from ``n`` fresh items otherwise.
    """
    keys = [f"{q}:{t}" for q in ("accuracy", "dprime", "criterion") for t in TASKS]
    if arm != "truth":
        per = dict.fromkeys(keys, 0.0)
    else:
        rng = np.random.default_rng([seed, 3302])
        acc: dict[str, list[float]] = {k: [] for k in keys}
        for task in TASKS:
            d = _difficulty(rng, n, None)
            for fam in fams.values():
                b = _behave(rng, fam, task, d, clusters=None)
                right_b = b["base"][0] == b["base"][1]
                right_k = b["ckpt"][0] == b["ckpt"][1]
                k = np.sum(right_k & ~right_b)
                m = np.sum(right_k != right_b)
                acc[f"accuracy:{task}"].append(float(logit(k / m)))
                (db, cb), (dk, ck) = _sdt(*b["base"]), _sdt(*b["ckpt"])
                acc[f"dprime:{task}"].append(dk - db)
                acc[f"criterion:{task}"].append(ck - cb)
        per = {k: float(np.mean(v)) for k, v in acc.items()}
    out = {}
    for q in ("accuracy", "dprime", "criterion"):
        for t in TASKS:
            out[f"{q}:task:{t}"] = per[f"{q}:{t}"]
        for kind in ("trained", "held_out"):
            out[f"{q}:{kind}"] = float(np.mean([per[f"{q}:{t}"] for t, k in TASKS.items() if k == kind]))
    return out
