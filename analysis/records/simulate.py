r"""Generative model of self-prediction logs with known truth.

The default data set in ``data_raw/`` is drawn from :func:`simulate`; recovery tests draw
from it and from :func:`simulate_scale_cells` (which follows ``models/scale.py`` exactly).

The generative process (equal-variance signal detection with item difficulties and a
yes-bias) and the truth written beside the data (``truth.json``, including the accuracy
slope estimand a correct fit should recover): ``docs/records.md`` ("The default data").
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
from scipy.special import expit, logit
from scipy.stats import norm

from selfmodel.common import atomic
from selfmodel.common.paths import DEFAULT_SEED

#: Families: name -> list of (model suffix, total params B, active params B or None).
DEFAULT_FAMILIES: dict[str, list[tuple[str, float, float | None]]] = {
    "aurora": [("1b", 1.0, None), ("8b", 8.0, None), ("34b", 34.0, None), ("70b", 70.0, None)],
    "borealis": [("2b", 2.0, None), ("9b", 9.0, None), ("27b", 27.0, None)],
    "cirrus": [("0.5b", 0.5, None), ("3b", 3.0, None), ("14b", 14.0, None), ("72b", 72.0, None)],
    "dynamo": [("8x7b", 47.0, 13.0), ("8x22b", 141.0, 39.0), ("16x34b", 480.0, 90.0)],
}
#: Closed models: (name, family, latent size used for simulation only).
DEFAULT_CLOSED: list[tuple[str, str, float]] = [
    ("ember-pro", "ember", 300.0),
    ("ember-mini", "ember", 30.0),
    ("falcata", "falcata", 200.0),
]
#: Tasks: name -> (outcome base rate, outcome slope gamma_t, d'_t, c_t, items).
DEFAULT_TASKS: dict[str, tuple[float, float, float, float, int]] = {
    "word_association": (0.22, 0.0, 0.6, -0.9, 300),
    "refusal": (0.80, 0.0, 1.0, -0.5, 250),
    "difficulty": (0.55, 0.6, 0.9, -0.3, 250),
}


@dataclass(frozen=True)
class TrainedCheckpoint:
    """A derived checkpoint: ``base`` (a model name), name suffix, and what it predicts from.

    ``knows = "self"``: its predictions follow its own (possibly changed) outcome, as a model
    with privileged access would; ``"either"``: they follow its own or its base's outcome
    with equal probability, so they predict the base exactly as well as itself (behavioural
    knowledge; true privileged-access contrast 0).
    """

    base: str
    suffix: str = "rl"
    knows: str = "self"


#: One trained checkpoint per open family; ``cirrus-14b-rl`` has no privileged access.
DEFAULT_TRAINED: list[TrainedCheckpoint] = [
    TrainedCheckpoint("aurora-8b"),
    TrainedCheckpoint("borealis-9b"),
    TrainedCheckpoint("cirrus-14b", knows="either"),
    TrainedCheckpoint("dynamo-8x22b"),
]


@dataclass(frozen=True)
class SimulationConfig:
    """Settings of :func:`simulate` (all defaults produce ``data_raw/``)."""

    families: dict[str, list[tuple[str, float, float | None]]] = field(
        default_factory=lambda: dict(DEFAULT_FAMILIES)
    )
    closed: list[tuple[str, str, float]] = field(default_factory=lambda: list(DEFAULT_CLOSED))
    tasks: dict[str, tuple[float, float, float, float, int]] = field(
        default_factory=lambda: dict(DEFAULT_TASKS)
    )
    beta_dprime: float = 0.15  # d' units per 10x parameters
    sigma_family: float = 0.15
    sigma_model: float = 0.15
    sigma_criterion: float = 0.3
    sigma_item: float = 1.0
    unreadable_rate: float = 0.02
    repeats: int = 1
    #: Derived checkpoints: one per open family, appended after the base models
    #: (their draws come from a separate generator, so the base models' records do not move);
    #: an entry whose base the design does not have is not simulated.
    trained: list[TrainedCheckpoint] = field(default_factory=lambda: list(DEFAULT_TRAINED))
    intervention: str = "rl-selfmodel-v1"
    trained_tasks: tuple[str, ...] = ("refusal",)
    #: d' added by the intervention, per task (trained: refusal; held out: the others).
    training_dprime: dict[str, float] = field(
        default_factory=lambda: {"refusal": 0.8, "difficulty": 0.35, "word_association": 0.0}
    )
    #: Fraction of items on which a trained checkpoint's outcome is redrawn (its behaviour
    #: changed); only on those items can self- and other-prediction differ.
    behaviour_change: float = 0.5


def _models(cfg: SimulationConfig, rng: np.random.Generator) -> pl.DataFrame:
    rows: list[dict[str, Any]] = []
    for fam, members in cfg.families.items():
        for suffix, params, active in members:
            rows.append(
                {
                    "model": f"{fam}-{suffix}",
                    "family": fam,
                    "params_b": params,
                    "active_params_b": active if active is not None else params,
                    "latent_params_b": params,
                    "open_weights": True,
                }
            )
    for name, fam, latent in cfg.closed:
        rows.append(
            {
                "model": name,
                "family": fam,
                "params_b": None,
                "active_params_b": None,
                "latent_params_b": latent,
                "open_weights": False,
            }
        )
    models = pl.DataFrame(rows)
    logn = np.log10(models["latent_params_b"].to_numpy())
    x = logn - logn.mean()
    # capability: a noisy increasing function of size (Rasch-like ability scale)
    capability = 0.8 * x + rng.normal(0.0, 0.3, size=len(x))
    return models.with_columns(
        pl.Series("x", x),
        pl.Series("capability", np.round(capability, 3)),
        pl.lit(False).alias("reasoning"),
    )


def _expected_accuracy(dprime: float, crit: float, base_logit: float, sigma_item: float) -> float:
    """Expected accuracy of a cell, integrating outcome probability over item difficulty."""
    nodes, weights = np.polynomial.hermite_e.hermegauss(41)
    p_out = expit(base_logit + sigma_item * nodes)
    hit = norm.cdf(dprime / 2 - crit)
    cr = 1 - norm.cdf(-dprime / 2 - crit)
    acc = p_out * hit + (1 - p_out) * cr
    return float(np.sum(weights * acc) / np.sqrt(2 * np.pi))


def _projection_slope(
    acc: np.ndarray, x: np.ndarray, task_idx: np.ndarray, n_tasks: int
) -> tuple[float, list[float]]:
    """Least-squares slope of logit(acc) on x with task intercepts; also per task."""
    y = logit(acc)
    design = np.column_stack([np.eye(n_tasks)[task_idx], x])
    coef, *_ = np.linalg.lstsq(design, y, rcond=None)
    per_task = []
    for t in range(n_tasks):
        sel = task_idx == t
        per_task.append(float(np.polyfit(x[sel], y[sel], 1)[0]))
    return float(coef[-1]), per_task


def simulate(
    *, seed: int = DEFAULT_SEED, config: SimulationConfig | None = None
) -> tuple[pl.DataFrame, pl.DataFrame, dict[str, Any]]:
    """Draw a self-prediction log with known truth.

    Parameters
    ----------
    seed
        Seed of the random generator; the same seed gives the same data.
    config
        Design and true parameters; defaults reproduce ``data_raw/``.

    Returns
    -------
    records, registry, truth
        Canonical records (prediction/outcome as ``"true"``/``"false"``), the model
        registry, and a JSON-serialisable dict of the true parameters and estimands.

    Examples
    --------
    >>> records, registry, truth = simulate(seed=1)
    >>> sorted(records["task"].unique().to_list())
    ['difficulty', 'refusal', 'word_association']
    >>> registry.filter(registry["params_b"].is_null()).height
    3
    """
    cfg = config or SimulationConfig()
    rng = np.random.default_rng(seed)
    models = _models(cfg, rng)
    families = sorted(set(models["family"].to_list()))
    u_fam = dict(zip(families, rng.normal(0, cfg.sigma_family, len(families)), strict=True))
    n_models = models.height
    v_model = rng.normal(0, cfg.sigma_model, n_models)
    w_model = rng.normal(0, cfg.sigma_criterion, n_models)
    unread_model = cfg.unreadable_rate * rng.gamma(2.0, 0.5, n_models)

    truth_cells: list[dict[str, Any]] = []
    frames: list[pl.DataFrame] = []
    kept: dict[tuple[str, str], dict[str, Any]] = {}  # (model, task) -> draws trained pairs reuse
    bases = {t.base for t in cfg.trained}
    for t_idx, (task, (base, gamma, d_t, c_t, n_items)) in enumerate(cfg.tasks.items()):
        eps = rng.normal(0, cfg.sigma_item, n_items)
        items = np.array([f"{task[:3]}-{i:04d}" for i in range(n_items)])
        clusters = np.array([f"{task[:3]}-set{i // 25:02d}" for i in range(n_items)])
        for m in range(n_models):
            row = models.row(m, named=True)
            x = row["x"]
            dprime = d_t + cfg.beta_dprime * x + u_fam[row["family"]] + v_model[m]
            crit = c_t + w_model[m]
            base_logit = float(logit(base)) + gamma * x
            truth_cells.append(
                {
                    "model": row["model"],
                    "task": task,
                    "task_index": t_idx,
                    "x": x,
                    "sized": row["params_b"] is not None,
                    "dprime": float(dprime),
                    "criterion": float(crit),
                    "expected_accuracy": _expected_accuracy(
                        dprime, crit, base_logit, cfg.sigma_item
                    ),
                }
            )
            for rep in range(cfg.repeats):
                y = rng.random(n_items) < expit(base_logit + eps)
                p_yes = norm.cdf(dprime * (y.astype(float) - 0.5) - crit)
                pred = rng.random(n_items) < p_yes
                unread = rng.random(n_items) < unread_model[m]
                if rep == 0 and row["model"] in bases:
                    kept[(row["model"], task)] = {
                        "y": y, "p_out": expit(base_logit + eps), "dprime": float(dprime),
                        "crit": float(crit), "base_logit": base_logit, "items": items,
                        "clusters": clusters, "unread_rate": float(unread_model[m]),
                    }
                conf = np.clip(
                    norm.cdf(np.abs(dprime * (y - 0.5) - crit) + rng.normal(0, 0.5, n_items)),
                    0.5,
                    0.99,
                )
                frames.append(
                    _record_frame(row["model"], task, items, clusters, pred, y, unread, conf, rep)
                )
    train_frames, train_rows, training_truth = _trained_checkpoints(cfg, models, kept, seed)
    frames.extend(train_frames)
    records = pl.concat(frames).with_columns(
        pl.col("confidence").fill_nan(None),
        pl.col("prediction").cast(pl.Utf8),
    )
    registry = models.select(
        "model", "family", "params_b", "active_params_b", "open_weights", "reasoning", "capability"
    ).with_columns(
        *[pl.lit(None, dtype=pl.Utf8).alias(c)
          for c in ("base_model", "intervention", "trained_tasks")]
    )
    if train_rows:
        registry = pl.concat([registry, pl.DataFrame(train_rows, schema=registry.schema)])

    truth = _truth(seed, cfg, pl.DataFrame(truth_cells))
    truth["training"] = training_truth
    return records, registry, truth


def _record_frame(
    model: str,
    task: str,
    items: np.ndarray,
    clusters: np.ndarray,
    pred: np.ndarray,
    y: np.ndarray,
    unread: np.ndarray,
    conf: np.ndarray,
    rep: int,
) -> pl.DataFrame:
    """The records of one model, task and repeat (one row per item)."""
    n_items = len(items)
    return pl.DataFrame(
        {
            "model": [model] * n_items,
            "task": [task] * n_items,
            "item_id": items,
            # A typed column: an object array holding None would become
            # an Object column when no prediction is unread in one frame and
            # a String column otherwise, and pl.concat would then fail.
            "prediction": pl.Series(
                np.where(pred, "true", "false"), dtype=pl.Utf8
            ).scatter(np.flatnonzero(unread), None),
            "outcome": np.where(y, "true", "false"),
            "confidence": np.where(unread, np.nan, np.round(conf, 3)),
            "cluster": clusters,
            "status": np.where(unread, "unparsed", "ok"),
            "sample": np.full(n_items, rep, dtype=np.int64),
        }
    )


def _truth(seed: int, cfg: SimulationConfig, cells: pl.DataFrame) -> dict[str, Any]:
    """``truth.json``: the true parameters and the estimands on the sized models' cells."""
    task_names = list(cfg.tasks)
    sized = cells.filter(pl.col("sized"))
    slope, per_task = _projection_slope(
        sized["expected_accuracy"].to_numpy(),
        sized["x"].to_numpy() - 0.0,
        sized["task_index"].to_numpy(),
        len(task_names),
    )
    return {
        "seed": seed,
        "generator": "selfmodel.records.simulate.simulate (signal detection, see module docstring)",
        "x_definition": "log10(params_b) minus the mean over all simulated models (closed included)",
        "beta_dprime_per_10x": cfg.beta_dprime,
        "sigma_family": cfg.sigma_family,
        "sigma_model": cfg.sigma_model,
        "sigma_item": cfg.sigma_item,
        "tasks": {
            t: {"base_rate": b, "outcome_slope": g, "dprime": d, "criterion": c, "items": n}
            for t, (b, g, d, c, n) in cfg.tasks.items()
        },
        "accuracy_slope": slope,
        "accuracy_slope_per_task": dict(zip(task_names, per_task, strict=True)),
        "cells": cells.drop("task_index").to_dicts(),
    }


def _joint_terms(
    p: np.ndarray, r: float, knows: str, hit: float, fa: float, base_hit: float, base_fa: float
) -> dict[str, np.ndarray]:
    """Per item: expected counts of the discordant patterns the training model uses.

    Enumerates the base outcome ``ob``, the checkpoint's outcome ``ot`` (equal to ``ob``
    with probability ``1 - r``, else redrawn), the outcome the checkpoint's prediction
    follows (``ot``, or ``ob``/``ot`` with probability 1/2), its prediction and the base's.
    """
    out = {k: np.zeros_like(p) for k in ("tt_not_bb", "bb_not_tt", "tt_not_tb", "tb_not_tt")}
    for ob in (0, 1):
        p_ob = p if ob else 1 - p
        for ot in (0, 1):
            p_ot = (1 - r) * (ot == ob) + r * (p if ot else 1 - p)
            for src in (ob, ot) if knows == "either" else (ot,):
                w_src = 0.5 if knows == "either" else 1.0
                for pred in (0, 1):
                    p_pred = (hit if src else fa) if pred else 1 - (hit if src else fa)
                    w = p_ob * p_ot * w_src * p_pred
                    tt, tb = pred == ot, pred == ob
                    p_bb = base_hit if ob else 1 - base_fa  # base right about itself
                    out["tt_not_bb"] += w * (1 - p_bb) * tt
                    out["bb_not_tt"] += w * p_bb * (not tt)
                    out["tt_not_tb"] += w * (tt and not tb)
                    out["tb_not_tt"] += w * (tb and not tt)
    return out


def _trained_checkpoints(
    cfg: SimulationConfig,
    models: pl.DataFrame,
    kept: dict[tuple[str, str], dict[str, Any]],
    seed: int,
) -> tuple[list[pl.DataFrame], list[dict[str, Any]], dict[str, Any]]:
    """Records, registry rows and truth of the trained checkpoints (see the config)."""
    present = set(models["model"].to_list())
    # a design with other families (tests, studies) keeps only the checkpoints it can derive
    trained = [c for c in cfg.trained if c.base in present]
    if not trained:
        return [], [], {}
    rng = np.random.default_rng([seed, 19])  # its own stream: base draws do not move
    nodes, weights = np.polynomial.hermite_e.hermegauss(41)
    weights = weights / weights.sum()
    frames, rows = [], []
    effect: dict[str, list[float]] = {}
    privileged: dict[str, float] = {}
    for ckpt in trained:
        name = f"{ckpt.base}-{ckpt.suffix}"
        base_row = models.filter(pl.col("model") == ckpt.base).row(0, named=True)
        rows.append(_checkpoint_row(cfg, name, ckpt.base, base_row))
        priv_num = priv_den = 0.0
        for task in cfg.tasks:
            k = kept[(ckpt.base, task)]
            n_items = len(k["y"])
            d_new = k["dprime"] + cfg.training_dprime.get(task, 0.0)
            crit = k["crit"]
            changed = rng.random(n_items) < cfg.behaviour_change
            y_new = np.where(changed, rng.random(n_items) < k["p_out"], k["y"])
            if ckpt.knows == "either":
                src = np.where(rng.random(n_items) < 0.5, k["y"], y_new)
            else:
                src = y_new
            pred = rng.random(n_items) < norm.cdf(d_new * (src.astype(float) - 0.5) - crit)
            unread = rng.random(n_items) < k["unread_rate"]
            conf = np.clip(
                norm.cdf(np.abs(d_new * (src - 0.5) - crit) + rng.normal(0, 0.5, n_items)),
                0.5, 0.99,
            )
            frames.append(pl.DataFrame({
                "model": [name] * n_items,
                "task": [task] * n_items,
                "item_id": k["items"],
                "prediction": pl.Series(np.where(pred, "true", "false"), dtype=pl.Utf8)
                .scatter(np.flatnonzero(unread), None),
                "outcome": np.where(y_new, "true", "false"),
                "confidence": np.where(unread, np.nan, np.round(conf, 3)),
                "cluster": k["clusters"],
                "status": np.where(unread, "unparsed", "ok"),
                "sample": np.zeros(n_items, dtype=np.int64),
            }))
            # truth: the estimands of models/training.py, by quadrature over item difficulty
            p_node = expit(k["base_logit"] + cfg.sigma_item * nodes)
            terms = _joint_terms(
                p_node, cfg.behaviour_change, ckpt.knows,
                hit=float(norm.cdf(d_new / 2 - crit)), fa=float(norm.cdf(-d_new / 2 - crit)),
                base_hit=float(norm.cdf(k["dprime"] / 2 - crit)),
                base_fa=float(norm.cdf(-k["dprime"] / 2 - crit)),
            )
            e = {key: float(np.sum(weights * v)) for key, v in terms.items()}
            effect.setdefault(f"{cfg.intervention}|{task}", []).append(
                float(np.log(e["tt_not_bb"] / e["bb_not_tt"]))
            )
            priv_num += e["tt_not_tb"] * n_items
            priv_den += e["tb_not_tt"] * n_items
        privileged[name] = float(np.log(priv_num / priv_den))
    return frames, rows, _training_truth(cfg, trained, effect, privileged)


def _checkpoint_row(
    cfg: SimulationConfig, name: str, base: str, base_row: dict[str, Any]
) -> dict[str, Any]:
    """The registry row of a trained checkpoint: its base's family and size, and the split."""
    return {
        "model": name, "family": base_row["family"], "params_b": base_row["params_b"],
        "active_params_b": base_row["active_params_b"], "open_weights": True,
        "reasoning": False, "capability": base_row["capability"],
        "base_model": base, "intervention": cfg.intervention,
        "trained_tasks": ";".join(cfg.trained_tasks),
    }


def _training_truth(
    cfg: SimulationConfig,
    trained: list[Any],
    effect: dict[str, list[float]],
    privileged: dict[str, float],
) -> dict[str, Any]:
    """``truth.json["training"]``: the estimands of ``models/training.py`` for the design."""
    truth = {
        "intervention": cfg.intervention,
        "trained_tasks": list(cfg.trained_tasks),
        "training_dprime": dict(cfg.training_dprime),
        "behaviour_change": cfg.behaviour_change,
        "checkpoints": {f"{c.base}-{c.suffix}": {"base_model": c.base, "knows": c.knows}
                        for c in trained},
        "effect_definition": "log(E[items only the checkpoint is right] / E[items only the "
        "base is right]) per checkpoint x task; effect_per_arm is its mean over checkpoints",
        "effect_per_checkpoint_arm": effect,
        "effect_per_arm": {arm: float(np.mean(v)) for arm, v in effect.items()},
        "privileged_definition": "log(E[prediction matches own outcome, not base's] / "
        "E[matches base's, not own]), items of all tasks pooled",
        "privileged_per_checkpoint": privileged,
    }
    return truth


def write_dataset(
    out: Path | str, *, seed: int = DEFAULT_SEED, config: SimulationConfig | None = None
) -> dict[str, Path]:
    """Simulate and write ``records.csv``, ``registry.csv`` and ``truth.json`` into ``out``."""
    out = Path(out)
    records, registry, truth = simulate(seed=seed, config=config)
    paths = {
        "records": out / "records.csv",
        "registry": out / "registry.csv",
        "truth": out / "truth.json",
    }
    atomic.write_with(paths["records"], lambda p: records.write_csv(p))
    atomic.write_with(paths["registry"], lambda p: registry.write_csv(p))
    atomic.write_json(paths["truth"], truth)
    return paths


def simulate_scale_cells(
    *,
    seed: int,
    n_families: int = 4,
    sizes_per_family: int = 4,
    n_tasks: int = 3,
    n_per_cell: int = 300,
    beta: float = 0.3,
    sigma_task_slope: float = 0.1,
    sigma_family: float = 0.3,
    sigma_model: float = 0.2,
    sigma_cell: float = 0.1,
    task_slopes: Sequence[float] | None = None,
) -> tuple[pl.DataFrame, dict[str, Any]]:
    """Draw model x task cell counts from the generative model of ``models/scale.py``.

    ``task_slopes`` (one per task) sets each task's true slope instead of ``beta`` plus a
    drawn deviation (the draws are the same either way, so other parameters do not move).

    Used by parameter-recovery and operating-characteristics studies: the truth is the model's own
    parameters, so coverage can be checked exactly.

    Returns
    -------
    cells, truth
        ``cells`` has columns model, family, task, x, n, k; ``truth`` the parameters.
    """
    rng = np.random.default_rng(seed)
    alpha = rng.normal(0.3, 0.5, n_tasks)
    delta = rng.normal(0, sigma_task_slope, n_tasks)
    if task_slopes is not None:
        if len(task_slopes) != n_tasks:
            raise ValueError(f"task_slopes needs {n_tasks} values, got {len(task_slopes)}")
        delta = np.asarray(task_slopes, dtype=float) - beta
    u = rng.normal(0, sigma_family, n_families)
    rows = []
    for f in range(n_families):
        logn = np.sort(rng.uniform(-0.3, 2.5, sizes_per_family))
        for s in range(sizes_per_family):
            v = rng.normal(0, sigma_model)
            rows.append({"model": f"f{f}-m{s}", "family": f"f{f}", "logn": logn[s], "v": v})
    x = np.array([r["logn"] for r in rows])
    x = x - x.mean()
    out = []
    for i, r in enumerate(rows):
        for t in range(n_tasks):
            eta = alpha[t] + (beta + delta[t]) * x[i] + u[int(r["family"][1:])] + r["v"]
            eta += rng.normal(0, sigma_cell)
            k = rng.binomial(n_per_cell, expit(eta))
            out.append(
                {
                    "model": r["model"],
                    "family": r["family"],
                    "task": f"task{t}",
                    "x": x[i],
                    "n": n_per_cell,
                    "k": int(k),
                }
            )
    truth = {
        "beta": beta,
        "task_slopes": (beta + delta).tolist(),
        "alpha": alpha.tolist(),
    }
    return pl.DataFrame(out), truth


def _prediction_joint(p: np.ndarray, r: float, knows: str, hit: float, fa: float
                      ) -> tuple[np.ndarray, np.ndarray]:
    """Per item: P(prediction true, own outcome true) and P(prediction false, own outcome false).

    ``p`` is the item's outcome probability. ``knows = "self"``: the prediction follows the
    checkpoint's own outcome (hit/false-alarm rates ``hit``/``fa``); ``"either"``: its own
    or its base's with probability 1/2, where the own outcome equals the base's except on a
    share ``r`` of items, redrawn from ``p`` (so P(base true | own true) = 1 - r + r p,
    P(base true | own false) = r p).
    """
    if knows == "either":
        s1 = 0.5 + 0.5 * ((1 - r) + r * p)  # P(followed outcome true | own true)
        s0 = 0.5 * r * p  # P(followed outcome true | own false)
    else:
        s1, s0 = np.ones_like(p), np.zeros_like(p)
    yes_given_1 = s1 * hit + (1 - s1) * fa
    yes_given_0 = s0 * hit + (1 - s0) * fa
    return p * yes_given_1, (1 - p) * (1 - yes_given_0)


def _sdt_of(both: tuple[np.ndarray, np.ndarray], p: np.ndarray, w: np.ndarray
            ) -> tuple[float, float]:
    """Item-pooled d' and criterion from the per-item joints of :func:`_prediction_joint`."""
    h = float(np.sum(w * both[0]) / np.sum(w * p))
    f = 1.0 - float(np.sum(w * both[1]) / np.sum(w * (1 - p)))
    return float(norm.ppf(h) - norm.ppf(f)), float(-(norm.ppf(h) + norm.ppf(f)) / 2)


def training_implied_truth(truth: dict[str, Any]) -> dict[str, Any]:
    """Training truths implied by ``truth.json``'s generative parameters (no new draws).

    ``truth.json["training"]`` (written by :func:`simulate`) holds the accuracy effects and
    the contrast against the base. The d'/criterion effects and the contrast against the
    other models follow from the parameters it also records (each base cell's d' and
    criterion, the tasks, ``training_dprime``, ``behaviour_change`` and each checkpoint's
    ``knows``), by quadrature over item difficulty, so the shipped data need not change:

    ``dprime_per_arm``, ``criterion_per_arm``
        item-pooled :math:`d' = z(H) - z(F)` and :math:`c = -(z(H) + z(F))/2` of the
        checkpoint (against its own outcome) minus its base's, averaged over checkpoints
        (the zero-sum mean of ``models/training.py``). A ``"self"`` checkpoint's d' moves
        by ``training_dprime[task]`` and its criterion not at all; an ``"either"`` one's
        prediction follows its base's outcome on some items where its own differs, which
        lowers its d' against its own outcome.
    ``others_per_checkpoint``
        logit P(prediction matches own outcome | own and another model's outcome differ),
        checkpoint minus base, per task (the other models' items weighted equally), then
        averaged over tasks with inverse-variance weights (the common shift per
        checkpoint that ``models/training.py`` fits); ``others_per_checkpoint_task`` holds
        the per-task shifts before that average.
    """
    tr = truth.get("training") or {}
    if not tr:
        return {}
    cells = {(c["model"], c["task"]): c for c in truth["cells"]}
    nodes, weights = np.polynomial.hermite_e.hermegauss(41)
    weights = weights / weights.sum()
    r = float(tr["behaviour_change"])
    d_arm: dict[str, list[float]] = {}
    c_arm: dict[str, list[float]] = {}
    others: dict[str, float] = {}
    others_task: dict[str, dict[str, float]] = {}
    for name, ck in sorted(tr["checkpoints"].items()):
        num = den = 0.0
        for task, spec in truth["tasks"].items():
            b = cells[(ck["base_model"], task)]
            base_logit = float(logit(spec["base_rate"])) + spec["outcome_slope"] * b["x"]
            p = expit(base_logit + truth["sigma_item"] * nodes)
            d_b, c_b = b["dprime"], b["criterion"]
            d_t = d_b + float(tr["training_dprime"].get(task, 0.0))
            rates = {"t": (norm.cdf(d_t / 2 - c_b), norm.cdf(-d_t / 2 - c_b)),
                     "b": (norm.cdf(d_b / 2 - c_b), norm.cdf(-d_b / 2 - c_b))}
            joint_t = _prediction_joint(p, r, ck["knows"], *rates["t"])
            joint_b = _prediction_joint(p, r, "self", *rates["b"])
            dt, ct = _sdt_of(joint_t, p, weights)
            arm = f"{tr['intervention']}|{task}"
            d_arm.setdefault(arm, []).append(dt - d_b)
            c_arm.setdefault(arm, []).append(ct - c_b)
            shift, info = _others_shift(truth, cells, task, ck["base_model"], p, joint_t,
                                        joint_b, weights, spec["items"])
            others_task.setdefault(name, {})[task] = shift
            num += shift * info
            den += info
        others[name] = num / den
    return {
        "dprime_per_arm": {a: float(np.mean(v)) for a, v in d_arm.items()},
        "criterion_per_arm": {a: float(np.mean(v)) for a, v in c_arm.items()},
        "others_per_checkpoint": others,
        "others_per_checkpoint_task": others_task,
    }


def _others_shift(
    truth: dict[str, Any], cells: dict[tuple[str, str], Any], task: str, base: str,
    p: np.ndarray, joint_t: tuple[np.ndarray, np.ndarray], joint_b: tuple[np.ndarray, np.ndarray],
    weights: np.ndarray, n_items: int,
) -> tuple[float, float]:
    """One task: the checkpoint-minus-base logit shift against the other models.

    Also its information (inverse asymptotic variance of the shift from ``n_items`` items).
    """
    spec = truth["tasks"][task]
    others = [m for (m, t) in cells if t == task and m != base]
    k = {"t": 0.0, "b": 0.0}
    n = {"t": 0.0, "b": 0.0}
    for o in others:
        lo = float(logit(spec["base_rate"])) + spec["outcome_slope"] * cells[(o, task)]["x"]
        p_o = expit(lo + truth["sigma_item"] * (np.polynomial.hermite_e.hermegauss(41)[0]))
        differ = p * (1 - p_o) + (1 - p) * p_o
        for side, joint in (("t", joint_t), ("b", joint_b)):
            k[side] += float(np.sum(weights * (joint[0] * (1 - p_o) + joint[1] * p_o)))
            n[side] += float(np.sum(weights * differ))
    q = {s: k[s] / n[s] for s in k}
    shift = float(logit(q["t"]) - logit(q["b"]))
    scale = n_items / len(others)  # each item counted once over the others
    var = sum(1.0 / (scale * n[s] * q[s] * (1 - q[s])) for s in q)
    return shift, 1.0 / var
