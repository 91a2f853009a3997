"""Self versus other by rescoring: does a model predict itself better than others.

When several models answered the same items of a task, each model's self-predictions can be
scored against *another* model's outcomes on the shared items (Binder et al. 2024, "Looking
Inward"; Song et al. 2025, "Privileged Self-Access Matters for Introspection in AI"). A model
with privileged access to its own behaviour predicts its own outcomes better than it predicts
the outcomes of other models on the same items; a model that only knows which items are hard
in general predicts every model about equally well.

Definitions (one task, binary ``"true"``/``"false"`` predictions and outcomes)
-----------------------------------------------------------------------------
For model ``A`` and each other model ``B`` the shared items are those where ``A`` has a
readable prediction and outcome and ``B`` has an outcome. On those items

* *self* scores ``A``'s predictions against ``A``'s outcomes, *cross* against ``B``'s;
* accuracy is the share of agreements; d' is
  :math:`z(H) - z(F)` with the log-linear correction (Hautus 1995), where ``H`` and ``F`` are
  the rates of predicting "true" among items whose (self or ``B``'s) outcome is true / false
  (``selfmodel.analyses.skill.sdt_arrays``: 0 for a constant predictor, whose rates are equal; a pair
  whose shared items have one outcome only has no d' and is left out of the d' means).

The self advantage of ``A`` is the mean over ``B`` of (self - cross), each difference paired
on its own shared items. The *target-side* advantage (``*_target``) compares ``A``'s
predictions of its own outcomes with the other models' predictions of the same outcomes
(the comparison of Binder et al.); it guards against a model that merely has predictable
behaviour and good predictions of everyone scoring a self advantage. A finding is stated as
held when both sides agree. With repeated samples of an item, predictions and outcomes enter as
the share of "true" over the samples and agreement is the expected agreement of a random
prediction with a random outcome (self included), so self and cross are scored alike.

Accuracy advantage includes knowing one's own *base rate* (a model that says "true" as often
as it does "true" agrees more with itself than with a model that rarely does); d' does not
depend on the base rates, so the d' advantage is the item-level evidence of self-knowledge.

Uncertainty
-----------
Intervals are percentile bootstrap intervals over item clusters (the ``cluster`` column, or
the item when absent): items are resampled once per replicate for all models, so the
per-model differences stay paired. The task-level mean advantage and its slope on scale
resample the models as well (models are the unit of a scaling claim), with the item
resampling nested in the same replicate.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

import numpy as np
import polars as pl
from scipy.stats import norm

from selfmodel.analyses.skill import sdt_arrays
from selfmodel.common.paths import PACKAGE_DATA, shipped_study

#: Bootstrap replicates (items and models resampled).
N_BOOT: Final = 1000
#: Central coverage of every interval in this section.
INTERVAL: Final = 0.95
#: Fewest shared items for a model pair to be compared.
MIN_SHARED: Final = 20
#: Fewest models with a scale value for a slope on scale.
MIN_MODELS_SLOPE: Final = 4
#: A *near-constant* responder gives the same prediction on at least this share of its
#: readable self-predictions (a constant one on all of them). Its accuracy self advantage is
#: the distance between its own base rate and the others' (it agrees with itself exactly as
#: often as its outcome is the word it always says), not item-level self-knowledge: it is
#: flagged in every row and left out of the accuracy counts, and its d' is 0 or near it.
NEAR_CONSTANT: Final = 0.95
#: Why a constant or near-constant responder is not counted in the accuracy advantages.
CONSTANT_NOTE: Final = (
    "left out of the accuracy counts: a (near-)constant responder's accuracy self advantage "
    "is its own base rate against the others', not item-level self-knowledge"
)

#: The self-vs-other study's summary (``validation/self_vs_other_study.py --ship`` writes it).
OPERATING_CHARACTERISTICS_DATA: Final = PACKAGE_DATA / "self_vs_other_operating_characteristics.json"


def operating_characteristics(path: Path = OPERATING_CHARACTERISTICS_DATA) -> dict[str, Any]:
    """The shipped study of these decisions (null, known advantages, clustered items), or why not.

    Measured on ``validation/self_vs_other_study.py`` data, not on the user's data;
    ``available`` is false without the file.
    """
    return shipped_study(path)


METHOD: Final = (
    "each model's self-predictions scored against every other model's outcomes on the items "
    "both answered; self advantage = self minus the mean over the others; percentile "
    "bootstrap over item clusters (task level: models resampled as well)"
)


def _readable(records: pl.DataFrame) -> pl.DataFrame:
    self_rows = records.filter(
        pl.col("predictor").is_null() | (pl.col("predictor") == pl.col("model"))
    )
    cluster = (
        pl.coalesce(pl.col("cluster"), pl.col("item_id"))
        if "cluster" in records.columns
        else pl.col("item_id")
    )
    return self_rows.with_columns(cluster.alias("_cluster")).select(
        "model", "task", "item_id", "_cluster", "prediction", "outcome", "status"
    )


def _matrices(
    task_rows: pl.DataFrame,
) -> tuple[list[str], np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per model x item: share predicted true (NaN when unreadable/absent), share outcome true.

    Returns models, prediction matrix, outcome matrix, self-scorable mask, outcome mask and the
    cluster index of each item.
    """
    pred_ok = (pl.col("status") == "ok") & pl.col("prediction").is_in(["true", "false"])
    out_ok = pl.col("outcome").is_in(["true", "false"])
    g = (
        task_rows.group_by("model", "item_id")
        .agg(
            pl.col("_cluster").first(),
            (pl.col("prediction") == "true").filter(pred_ok & out_ok).mean().alias("p"),
            (pl.col("outcome") == "true").filter(pred_ok & out_ok).mean().alias("o_self"),
            (pl.col("outcome") == "true").filter(out_ok).mean().alias("o"),
        )
        .sort("model", "item_id")
    )
    models = sorted(g["model"].unique().to_list())
    items = sorted(g["item_id"].unique().to_list())
    mi = {m: k for k, m in enumerate(models)}
    ii = {it: k for k, it in enumerate(items)}
    shape = (len(models), len(items))
    p = np.full(shape, np.nan)
    o_self = np.full(shape, np.nan)
    o = np.full(shape, np.nan)
    rows = [mi[m] for m in g["model"].to_list()]
    cols = [ii[it] for it in g["item_id"].to_list()]
    p[rows, cols] = g["p"].to_numpy().astype(float)
    o_self[rows, cols] = g["o_self"].to_numpy().astype(float)
    o[rows, cols] = g["o"].to_numpy().astype(float)
    clusters = (
        g.select("item_id", "_cluster").unique("item_id").sort("item_id")["_cluster"].to_list()
    )
    cl_names = sorted(set(clusters))
    ci = {c: k for k, c in enumerate(cl_names)}
    cluster_of = np.array([ci[c] for c in clusters], dtype=np.int64)
    self_ok = ~np.isnan(p) & ~np.isnan(o_self)
    out_mask = ~np.isnan(o)
    return models, np.nan_to_num(p), np.nan_to_num(o_self), self_ok, out_mask, cluster_of, o


def pair_scores(
    p: np.ndarray,
    o_self: np.ndarray,
    self_ok: np.ndarray,
    o: np.ndarray,
    out_mask: np.ndarray,
    w: np.ndarray,
) -> dict[str, np.ndarray]:
    """Self and cross accuracy and d' for every ordered pair (A predicts, B's outcomes).

    ``w`` weights the items (bootstrap counts). Entry ``[a, b]`` is scored on the items where
    ``a`` is self-scorable and ``b`` has an outcome; the self scores use the same items.
    """
    a_mask = self_ok * w  # (M, I) weighted mask of A's usable items
    ob = np.where(out_mask, o, 0.0)
    ob_mask = out_mask.astype(float)
    pa = p * a_mask
    n = a_mask @ ob_mask.T  # shared (weighted) items
    # cross: A's predictions vs B's outcomes
    sig_x = a_mask @ ob.T
    noi_x = n - sig_x
    hit_x = pa @ ob.T
    fa_x = pa @ (ob_mask - ob).T
    agree_x = hit_x + ((a_mask - pa) @ (ob_mask - ob).T)
    # self, restricted to the same items
    sig_s = (a_mask * o_self) @ ob_mask.T
    noi_s = n - sig_s
    hit_s = (pa * o_self) @ ob_mask.T
    fa_s = (pa * (1.0 - o_self)) @ ob_mask.T
    agree_s = hit_s + (((a_mask - pa) * (1.0 - o_self)) @ ob_mask.T)
    with np.errstate(divide="ignore", invalid="ignore"):
        acc_x = agree_x / n
        acc_s = agree_s / n
    d_x = sdt_arrays(hit_x, sig_x, fa_x, noi_x)[0]  # NaN without both outcomes, 0 if constant
    d_s = sdt_arrays(hit_s, sig_s, fa_s, noi_s)[0]
    return {"n": n, "acc_self": acc_s, "acc_cross": acc_x, "d_self": d_s, "d_cross": d_x}


def _advantages(s: Mapping[str, np.ndarray], valid: np.ndarray) -> dict[str, np.ndarray]:
    """Per model: mean over valid other models of self - cross (and the mean self / cross)."""
    out: dict[str, np.ndarray] = {}
    with np.errstate(invalid="ignore", divide="ignore"):
        for metric, a, b in (("accuracy", "acc_self", "acc_cross"), ("dprime", "d_self", "d_cross")):
            # a pair whose d' does not exist (one outcome only on the shared items) is left out
            ok = valid & np.isfinite(s[a]) & np.isfinite(s[b])
            cnt = ok.sum(axis=1)
            diff = np.where(ok, s[a] - s[b], 0.0)
            out[metric] = np.where(cnt > 0, diff.sum(axis=1) / cnt, np.nan)
            out[metric + "_self"] = np.where(cnt > 0, np.where(ok, s[a], 0).sum(1) / cnt, np.nan)
            out[metric + "_other"] = np.where(cnt > 0, np.where(ok, s[b], 0).sum(1) / cnt, np.nan)
            # target side: the model's own predictions of its outcomes against the other
            # models' predictions of the same outcomes (column of the pair matrix)
            col = ok.T
            ccnt = col.sum(axis=1)
            self_diag = np.diag(s[a])
            cross_col = np.where(col, s[b].T, 0.0).sum(axis=1)
            out[metric + "_target"] = np.where(ccnt > 0, self_diag - cross_col / ccnt, np.nan)
    return out


def responders(p: np.ndarray, self_ok: np.ndarray) -> tuple[np.ndarray, list[str]]:
    """Per model: the share of its readable self-predictions that are "true", and its kind.

    ``constant`` (one prediction throughout), ``near_constant`` (one prediction on at least
    :data:`NEAR_CONSTANT` of them) or ``varied``; ``varied`` without readable predictions.

    >>> p = np.array([[1.0, 1.0, 1.0], [1.0, 0.0, 1.0]])
    >>> share, kind = responders(p, np.ones_like(p, dtype=bool))
    >>> [round(float(x), 2) for x in share], kind
    ([1.0, 0.67], ['constant', 'varied'])
    """
    n = self_ok.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        share = np.where(n > 0, np.where(self_ok, p, 0.0).sum(axis=1) / n, np.nan)
    majority = np.maximum(share, 1.0 - share)
    kind = ["varied" if not np.isfinite(m) else "constant" if m >= 1.0 else
            "near_constant" if m >= NEAR_CONSTANT else "varied" for m in majority]
    return share, kind


def _slope(x: np.ndarray, y: np.ndarray) -> float:
    xc = x - x.mean()
    den = float(xc @ xc)
    return float(xc @ (y - y.mean()) / den) if den > 0 else float("nan")


def _interval(draws: np.ndarray) -> tuple[float | None, float | None]:
    d = draws[np.isfinite(draws)]
    if d.size < 10:
        return None, None
    lo, hi = np.quantile(d, [(1 - INTERVAL) / 2, (1 + INTERVAL) / 2])
    return float(lo), float(hi)


def _direction(lo: float | None, hi: float | None) -> str:
    if lo is None or hi is None:
        return "not_estimable"
    if lo > 0:
        return "positive"
    if hi < 0:
        return "negative"
    return "unclear"


KEYS: Final = ("accuracy", "dprime", "accuracy_target", "dprime_target")


def _finite_mean(values: np.ndarray) -> float:
    """The mean of the finite values; NaN when there is none.

    d' is undefined for a model whose predictions are all "true" (a one-sided cell), so
    a replicate can hold no finite advantage at all; ``np.nanmean`` would warn there.

    >>> _finite_mean(np.array([np.nan, 1.0, 3.0])), np.isnan(_finite_mean(np.array([np.nan])))
    (2.0, True)
    """
    ok = np.isfinite(values)
    return float(values[ok].mean()) if ok.any() else float("nan")


def _bootstrap(
    mats: tuple[np.ndarray, ...], cluster_of: np.ndarray, valid: np.ndarray, m_idx: np.ndarray,
    xs: np.ndarray, *, seed: int, n_boot: int,
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray], dict[str, np.ndarray]]:
    """Per-model advantages, task means and slopes on scale over bootstrap replicates."""
    p, o_self, self_ok, o, out_mask = mats
    rng = np.random.default_rng(seed)
    n_cl = int(cluster_of.max()) + 1
    n_models = valid.shape[0]
    boot = {k: np.full((n_boot, n_models), np.nan) for k in KEYS}
    mean_draws = {k: np.full(n_boot, np.nan) for k in KEYS}
    slope_draws = {k: np.full(n_boot, np.nan) for k in KEYS}
    with_x = m_idx[np.isfinite(xs[m_idx])]
    for b in range(n_boot):
        counts = np.bincount(rng.integers(0, n_cl, n_cl), minlength=n_cl).astype(float)
        s = pair_scores(p, o_self, self_ok, o, out_mask, counts[cluster_of])
        adv = _advantages(s, valid & (s["n"] > 0))
        pick = rng.choice(m_idx, size=m_idx.size, replace=True)
        pick_x = rng.choice(with_x, size=with_x.size, replace=True) if with_x.size else with_x
        for k in KEYS:
            boot[k][b] = adv[k]
            mean_draws[k][b] = _finite_mean(adv[k][pick])
            if with_x.size >= MIN_MODELS_SLOPE and np.unique(xs[pick_x]).size >= 2:
                yy = adv[k][pick_x]
                ok = np.isfinite(yy)
                slope_draws[k][b] = _slope(xs[pick_x][ok], yy[ok])
    return boot, mean_draws, slope_draws


def _model_rows(models: list[str], xs: np.ndarray, valid: np.ndarray, full: Mapping[str, np.ndarray],
                point: Mapping[str, np.ndarray], boot: Mapping[str, np.ndarray],
                has_pair: np.ndarray, responder: tuple[np.ndarray, list[str]]) -> list[dict[str, Any]]:
    rows = []
    share, kind = responder
    for j, m in enumerate(models):
        row: dict[str, Any] = {
            "model": m,
            "responder": kind[j],
            "prediction_true_share": None if not np.isfinite(share[j]) else float(share[j]),
            "responder_note": None if kind[j] == "varied" else CONSTANT_NOTE,
            "scale_log10": None if not np.isfinite(xs[j]) else float(xs[j]),
            "n_others": int(valid[j].sum()),
            "median_shared_items": float(np.median(full["n"][j][valid[j]])) if valid[j].any() else 0.0,
        }
        for k in ("accuracy", "dprime"):
            lo, hi = _interval(boot[k][:, j]) if has_pair[j] else (None, None)
            row[f"self_{k}"] = point[k + "_self"][j]
            row[f"other_{k}"] = point[k + "_other"][j]
            row[f"advantage_{k}"] = point[k][j]
            row[f"advantage_{k}_ci"] = [lo, hi]
            row[f"advantage_{k}_direction"] = _direction(lo, hi)
            t_lo, t_hi = _interval(boot[k + "_target"][:, j]) if has_pair[j] else (None, None)
            row[f"target_advantage_{k}"] = point[k + "_target"][j]
            row[f"target_advantage_{k}_ci"] = [t_lo, t_hi]
        rows.append(row)
    return rows


def _summary(k: str, point: Mapping[str, np.ndarray], boot: Mapping[str, np.ndarray],
             mean_draws: Mapping[str, np.ndarray], slope_draws: Mapping[str, np.ndarray],
             m_idx: np.ndarray, xs: np.ndarray, models: list[str], kind: list[str]) -> dict[str, Any]:
    # accuracy credits a (near-)constant responder with its base rate: not counted there
    counted = m_idx if k.startswith("dprime") else m_idx[[kind[j] == "varied" for j in m_idx]]
    dirs = [_direction(*_interval(boot[k][:, j])) for j in counted]
    lo, hi = _interval(mean_draws[k])
    s_lo, s_hi = _interval(slope_draws[k])
    with_x = m_idx[np.isfinite(xs[m_idx])]
    n_x = int(with_x.size)
    slope_pt = _slope(xs[with_x], point[k][with_x]) if n_x >= MIN_MODELS_SLOPE else None
    return {
        "mean_advantage": _finite_mean(point[k][m_idx]),
        "mean_advantage_ci": [lo, hi],
        "mean_direction": _direction(lo, hi),
        "n_models_positive": dirs.count("positive"),
        "n_models_negative": dirs.count("negative"),
        "n_models_compared": int(m_idx.size),
        "n_models_counted": int(counted.size),
        "models_not_counted": [] if counted.size == m_idx.size else
        [{"model": models[j], "responder": kind[j], "reason": CONSTANT_NOTE}
         for j in m_idx if kind[j] != "varied"],
        "slope_on_scale": {
            "slope": slope_pt,
            "ci": [s_lo, s_hi] if slope_pt is not None else [None, None],
            "direction": _direction(s_lo, s_hi) if slope_pt is not None else "not_estimable",
            "n_models": n_x,
            "units": "advantage per 10x parameters" if n_x else None,
        },
    }


def _task_result(
    task_rows: pl.DataFrame, scale: Mapping[str, float], *, seed: int, n_boot: int
) -> dict[str, Any]:
    models, p, o_self, self_ok, out_mask, cluster_of, o = _matrices(task_rows)
    full = pair_scores(p, o_self, self_ok, o, out_mask, np.ones(p.shape[1]))
    valid = (full["n"] >= MIN_SHARED) & ~np.eye(len(models), dtype=bool)
    has_pair = valid.any(axis=1)
    if has_pair.sum() < 2:
        return {
            "status": "not_estimable",
            "reason": f"fewer than two models share at least {MIN_SHARED} items of this task",
            "n_models": len(models),
        }
    point = _advantages(full, valid)
    m_idx = np.flatnonzero(has_pair)
    xs = np.array([scale.get(m, np.nan) for m in models], dtype=float)
    boot, mean_draws, slope_draws = _bootstrap(
        (p, o_self, self_ok, o, out_mask), cluster_of, valid, m_idx, xs, seed=seed, n_boot=n_boot
    )
    responder = responders(p, self_ok)
    result = {
        "status": "estimated",
        "n_models": len(models),
        "n_items": int(p.shape[1]),
        "n_clusters": int(cluster_of.max()) + 1,
        "models": _model_rows(models, xs, valid, full, point, boot, has_pair, responder),
        "summary": {k: _summary(k, point, boot, mean_draws, slope_draws, m_idx, xs, models,
                             responder[1])
                    for k in KEYS},
    }
    result["sentence"] = task_sentence(result)
    return result


def task_sentence(task: Mapping[str, Any]) -> str:
    """The plain sentence for one task, chosen from its d' summary (the item-level measure)."""
    if task.get("status") != "estimated":
        return f"Not estimable: {task.get('reason')}."
    d = task["summary"]["dprime"]
    lo, hi = d["mean_advantage_ci"]
    where = {
        "positive": "models predict themselves better than they predict other models",
        "negative": "models predict other models better than themselves",
        "unclear": "the data do not show whether models predict themselves better than others",
        "not_estimable": "the mean self advantage is not estimable",
    }[d["mean_direction"]]
    ci = f" [{lo:.2f}, {hi:.2f}]" if lo is not None and hi is not None else ""
    text = (
        f"In d', {where} (mean self advantage {d['mean_advantage']:+.2f}{ci}; "
        f"{d['n_models_positive']} of {d['n_models_compared']} models individually better at "
        f"themselves, {d['n_models_negative']} worse)."
    )
    t = task["summary"].get("dprime_target")
    if t is not None:
        t_lo, t_hi = t["mean_advantage_ci"]
        t_ci = f" [{t_lo:.2f}, {t_hi:.2f}]" if t_lo is not None and t_hi is not None else ""
        agree = "the same conclusion" if t["mean_direction"] == d["mean_direction"] else "a different conclusion"
        text += (
            f" Against the other models' predictions of the same outcomes the advantage is "
            f"{t['mean_advantage']:+.2f}{t_ci}: {agree}."
        )
    sl = d["slope_on_scale"]
    if sl["direction"] == "not_estimable":
        return text + (
            f" Its slope on scale is not estimable ({sl['n_models']} models with a size, "
            f"{MIN_MODELS_SLOPE} needed)."
        )
    s_lo, s_hi = sl["ci"]
    trend = {
        "positive": "The advantage grows with scale",
        "negative": "The advantage shrinks with scale",
        "unclear": "The data do not show the advantage changing with scale",
    }[sl["direction"]]
    return text + f" {trend} (slope {sl['slope']:+.2f} per 10x [{s_lo:.2f}, {s_hi:.2f}])."


def _cross_prediction(records: pl.DataFrame) -> list[dict[str, Any]] | None:
    """Direct evidence from cross-prediction records (``predictor != model``), when present."""
    if "predictor" not in records.columns:
        return None
    rec = records.with_columns(pl.coalesce(pl.col("predictor"), pl.col("model")).alias("_p"))
    if rec.filter(pl.col("_p") != pl.col("model")).height == 0:
        return None
    readable = (pl.col("status") == "ok") & pl.col("correct").is_not_null()
    g = (
        rec.filter(readable)
        .group_by("task", "_p", (pl.col("_p") == pl.col("model")).alias("is_self"))
        .agg(pl.len().alias("n"), pl.col("correct").mean().alias("accuracy"))
        .sort("task", "_p", "is_self")
    )
    out = []
    for (task, pred), sub in g.group_by(["task", "_p"], maintain_order=True):
        d = {bool(r["is_self"]): r for r in sub.iter_rows(named=True)}
        if True in d and False in d:
            a, b = d[True], d[False]
            diff = a["accuracy"] - b["accuracy"]
            se = float(np.sqrt(a["accuracy"] * (1 - a["accuracy"]) / a["n"]
                               + b["accuracy"] * (1 - b["accuracy"]) / b["n"]))
            z = float(norm.ppf((1 + INTERVAL) / 2))
            out.append({
                "task": task, "predictor": pred, "n_self": a["n"], "n_other": b["n"],
                "self_accuracy": a["accuracy"], "other_accuracy": b["accuracy"],
                "advantage_accuracy": diff, "advantage_accuracy_ci": [diff - z * se, diff + z * se],
            })
    return out


def self_vs_other_rescored(
    records: pl.DataFrame,
    scale_by_model: Mapping[str, float],
    *,
    seed: int,
    n_boot: int = N_BOOT,
) -> dict[str, Any]:
    """The ``self_vs_other`` section of ``results.json`` (see the module docstring).

    Parameters
    ----------
    records
        Canonical records (all of them; self-predictions are selected here).
    scale_by_model
        log10 of each model's size (models without one are left out of the slope only).
    seed, n_boot
        Bootstrap seed and replicates.
    """
    rows = _readable(records)
    per_task: dict[str, Any] = {}
    for task in sorted(rows["task"].unique().to_list()):
        t = rows.filter(pl.col("task") == task)
        readable_vals = t.filter(pl.col("status") == "ok")
        binary = readable_vals.filter(
            ~pl.col("prediction").is_in(["true", "false"]) | ~pl.col("outcome").is_in(["true", "false"])
        ).height == 0
        if not binary:
            per_task[task] = {
                "status": "not_estimable",
                "reason": "predictions or outcomes are not true/false; rescoring needs a rule "
                "for matching one model's prediction to another's outcome",
                "n_models": t["model"].n_unique(),
            }
            continue
        per_task[task] = _task_result(t, scale_by_model, seed=seed, n_boot=n_boot)
    for entry in per_task.values():
        entry.setdefault("sentence", task_sentence(entry))
    return {
        "method": METHOD,
        "interval": INTERVAL,
        "n_boot": n_boot,
        "min_shared_items": MIN_SHARED,
        "primary_measure": "dprime",
        "per_task": per_task,
        "cross_prediction": _cross_prediction(records),
        "operating_characteristics": operating_characteristics(),
    }
