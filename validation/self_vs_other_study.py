"""Null rate, coverage and a misspecified case for the self-vs-other decisions (issue 28.6).

The decisions checked are those of ``selfmodel.analyses.rescoring.self_vs_other_rescored`` at
its defaults (1000 bootstrap replicates over item clusters, models resampled for the task
mean and the slope, 95% percentile intervals): per task, the direction of the mean self
advantage in d' (the sentence's headline) and in accuracy, of the target-side mean advantage,
of the advantage's slope on scale, and of each model's own advantage.

Generator (written for this study alone; no code shared with the estimator or with
``selfmodel.records.simulate``): 16 models (4 families x sizes 1, 8, 32 and 70B) answer the
same 300 items of one task. Model ``m`` is right on item ``i`` with probability
``expit(a_m - d_i + u_mi)``: ``d_i`` the item's difficulty (logit of a Beta(2.5, 2)),
``u_mi`` the model's own idiosyncrasy on the item (Laplace, scale 0.8). It predicts "right"
when ``lam_m * (a_m - d_i) + kappa_m * u_mi + e_mi > c_m``: general knowledge of which items
are hard, growing with size (``lam_m`` = 0.5 + 0.25 per 10x + N(0, 0.1)), private knowledge
of its own idiosyncrasy (``kappa_m``, self-knowledge), logistic (not normal) noise and a
criterion ``c_m`` ~ N(0, 0.4).

Arms:

* ``null``: no self-knowledge (``kappa`` = 0) and one ability for all (``a_m`` = 0.4), so
  every model's outcomes have the same law given the item: self and cross scoring are
  exchangeable and every self advantage, its mean and its slope are exactly 0, and so is the
  *mean* target-side advantage (each model's target-side advantage is not: a model with more
  general knowledge predicts everyone better, which is why only the mean is checked). The
  models still grow in skill with size: the confound the analysis must not read as a self
  advantage.
* ``truth``: self-knowledge growing with size (``kappa_m`` = 0.6 + 0.5 per 10x + N(0, 0.15),
  at least 0) and ability too (``a_m`` = 0.4 + 0.35 per 10x). The truths of the mean
  advantages and of the slopes are super-population values, computed by :func:`truths` from
  480 models (30 draws at each of the 16 positions) on 20,000 items; each model's own truth is
  computed from its own parameters and the data set's other models on 40,000 fresh items.
* ``misspecified``: the null with items in clusters of 3-5 that share a difficulty shift
  (sd 0.8), per model x cluster shifts of the outcome (sd 0.6) and of the criterion (sd
  0.4), and *no* ``cluster`` column: the bootstrap resamples items as if independent.
* ``clustered_declared``: the same data with the ``cluster`` column, so the bootstrap
  resamples whole clusters (what a user who records the clusters gets).

    .venv/bin/python validation/self_vs_other_study.py --sims 200 --out validation/results --ship
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
from scipy.special import expit, logit
from scipy.stats import norm

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT / "validation") not in sys.path:
    sys.path.insert(0, str(ROOT / "validation"))

import jsonl_records  # noqa: E402
from cells_generator import cluster_index  # noqa: E402 (clusters of 3-5 items, as the other arms)

from selfmodel.analyses.rescoring import INTERVAL, N_BOOT, pair_scores, self_vs_other_rescored  # noqa: E402
from selfmodel.common.binomial import rate  # noqa: E402

FAMILIES = ("aurora", "borealis", "cirrus", "dynamo")
SIZES_B = (1.0, 8.0, 32.0, 70.0)
N_ITEMS = 300
ARMS = ("null", "truth", "misspecified", "clustered_declared")
TARGET = {"null": 200, "truth": 100, "misspecified": 200, "clustered_declared": 200}
CHECK = {"null": "null", "truth": "coverage", "misspecified": "misspecified", "clustered_declared": "misspecified"}
#: the decided quantities: mean advantages, slopes (self side) and per-model advantages
MEANS = ("dprime", "accuracy", "dprime_target", "accuracy_target")
SLOPES = ("dprime", "accuracy")
SHIPPED = ROOT / "analysis" / "data" / "self_vs_other_operating_characteristics.json"
FIRST_SEED = 41000
ABILITY, U_SCALE = 0.4, 0.8


def _x() -> np.ndarray:
    x = np.log10(np.array(SIZES_B))
    return x - x.mean()


def model_params(arm: str, rng: np.random.Generator, x: np.ndarray) -> dict[str, np.ndarray]:
    """Ability, general knowledge, self-knowledge and criterion of models at centred log sizes ``x``."""
    n = x.size
    truth = arm == "truth"
    return {"a": ABILITY + (0.35 * x if truth else 0.0 * x),
            "lam": np.maximum(0.05, 0.5 + 0.25 * x + rng.normal(0.0, 0.1, n)),
            "kappa": np.maximum(0.0, 0.6 + 0.5 * x + rng.normal(0.0, 0.15, n)) if truth else np.zeros(n),
            "c": rng.normal(0.0, 0.4, n)}


def behave(rng: np.random.Generator, par: Mapping[str, np.ndarray], d: np.ndarray,
           clusters: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """Predictions and outcomes (models x items, booleans)."""
    m, n = par["a"].size, d.size
    u = rng.laplace(0.0, U_SCALE, (m, n))
    general = par["a"][:, None] - d[None, :]
    v = w = 0.0
    if clusters is not None:
        k = int(clusters.max()) + 1
        v = rng.normal(0.0, 0.6, (m, k))[:, clusters]
        w = rng.normal(0.0, 0.4, (m, k))[:, clusters]
    outcome = rng.random((m, n)) < expit(general + u + v)
    evidence = par["lam"][:, None] * general + par["kappa"][:, None] * u + rng.logistic(0.0, 1.0, (m, n))
    return evidence > par["c"][:, None] + w, outcome


def _difficulty(rng: np.random.Generator, n: int, clusters: np.ndarray | None) -> np.ndarray:
    d = logit(np.clip(rng.beta(2.5, 2.0, n), 0.01, 0.99))
    if clusters is not None:
        d = d + rng.normal(0.0, 0.8, int(clusters.max()) + 1)[clusters]
    return d


def design() -> tuple[list[str], np.ndarray, dict[str, float]]:
    """Model names, centred log10 sizes, and the log10 size of each model (the pipeline's scale)."""
    names, xs, scale = [], [], {}
    xc = _x()
    for f in FAMILIES:
        for s, xv in zip(SIZES_B, xc, strict=True):
            name = f"{f}-{s:g}b"
            names.append(name)
            xs.append(xv)
            scale[name] = float(np.log10(s))
    return names, np.array(xs), scale


def generate(arm: str, seed: int, n_items: int = N_ITEMS
             ) -> tuple[pl.DataFrame, dict[str, float], dict[str, np.ndarray]]:
    """Canonical records, each model's log10 size, and the models' parameters of one data set."""
    if arm not in ARMS:
        raise ValueError(f"unknown arm {arm!r} (arms: {', '.join(ARMS)})")
    rng = np.random.default_rng([seed, 4401])
    names, x, scale = design()
    par = model_params(arm, rng, x)
    clustered = arm in ("misspecified", "clustered_declared")
    cl = cluster_index(n_items, rng) if clustered else None
    d = _difficulty(rng, n_items, cl)
    pred, out = behave(rng, par, d, cl)
    items = [f"q{i:03d}" for i in range(n_items)]
    frames = []
    for j, m in enumerate(names):
        cols: dict[str, Any] = {
            "model": m, "task": "quiz", "item_id": items, "sample": 0,
            "predictor": pl.Series([None] * n_items, dtype=pl.Utf8), "status": "ok",
            "prediction": np.where(pred[j], "true", "false"), "outcome": np.where(out[j], "true", "false"),
            "correct": pred[j] == out[j]}
        if arm == "clustered_declared":
            cols["cluster"] = [f"c{c:03d}" for c in cl]
        frames.append(pl.DataFrame(cols))
    return pl.concat(frames), scale, par


def _scores(pred: np.ndarray, out: np.ndarray) -> dict[str, np.ndarray]:
    """The estimator's own pair scores (its definition of the estimand) on boolean matrices."""
    p, o = pred.astype(float), out.astype(float)
    ok = np.ones_like(p, dtype=bool)
    return pair_scores(p, o, ok, o, ok, np.ones(p.shape[1]))


def _advantage(s: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    m = s["n"].shape[0]
    off = ~np.eye(m, dtype=bool)
    out = {}
    for k, a, b in (("accuracy", "acc_self", "acc_cross"), ("dprime", "d_self", "d_cross")):
        out[k] = np.array([(s[a][j] - s[b][j])[off[j]].mean() for j in range(m)])
        # target side: own prediction of own outcome vs others' predictions of it
        out[k + "_target"] = np.array([s[a][j, j] - s[b][:, j][off[:, j]].mean() for j in range(m)])
    return out


def truths(arm: str, reps: int = 30, n_items: int = 20_000, seed: int = 7) -> dict[str, Any]:
    """Super-population mean advantages and slopes (module docstring); exactly 0 in the nulls."""
    if arm != "truth":
        return {"mean": dict.fromkeys(MEANS, 0.0), "slope": dict.fromkeys(SLOPES, 0.0), "computed": False}
    rng = np.random.default_rng([seed, 4402])
    x = np.tile(_x(), len(FAMILIES) * reps)
    par = model_params(arm, rng, x)
    pred, out = behave(rng, par, _difficulty(rng, n_items, None), None)
    adv = _advantage(_scores(pred, out))
    xc = x - x.mean()
    return {"mean": {k: float(adv[k].mean()) for k in MEANS},
            "slope": {k: float(xc @ (adv[k] - adv[k].mean()) / (xc @ xc)) for k in SLOPES},
            "computed": True, "models": int(x.size), "items": n_items}


def model_truths(arm: str, par: Mapping[str, np.ndarray], seed: int, n_items: int = 40_000) -> dict[str, np.ndarray]:
    """Each model's own advantages given the data set's models (0 in the nulls)."""
    if arm != "truth":
        return {k: np.zeros(par["a"].size) for k in SLOPES}
    rng = np.random.default_rng([seed, 4403])
    pred, out = behave(rng, par, _difficulty(rng, n_items, None), None)
    adv = _advantage(_scores(pred, out))
    return {k: adv[k] for k in SLOPES}


def _covered(ci: Sequence[float | None], t: float) -> bool | None:
    lo, hi = ci
    return None if lo is None or hi is None else bool(lo <= t <= hi)


def one(arm: str, seed: int, t: Mapping[str, Any]) -> dict[str, Any]:
    """Decide one data set; compare with the truth."""
    records, scale, par = generate(arm, seed)
    mt = model_truths(arm, par, seed)
    c0 = time.process_time()
    res = self_vs_other_rescored(records, scale, seed=seed)
    cpu = time.process_time() - c0
    task = res["per_task"]["quiz"]
    summ = task["summary"]
    row: dict[str, Any] = {"arm": arm, "seed": seed, "cpu_s": round(cpu, 3), "status": task["status"],
                           "n_clusters": task.get("n_clusters"), "means": {}, "slopes": {}, "models": {}}
    for k in MEANS:
        s = summ[k]
        row["means"][k] = {"direction": s["mean_direction"], "truth": round(t["mean"][k], 6),
                           "estimate": s["mean_advantage"], "ci": s["mean_advantage_ci"],
                           "covered": _covered(s["mean_advantage_ci"], t["mean"][k])}
    for k in SLOPES:
        sl = summ[k]["slope_on_scale"]
        row["slopes"][k] = {"direction": sl["direction"], "truth": round(t["slope"][k], 6),
                            "estimate": sl["slope"], "ci": sl["ci"], "covered": _covered(sl["ci"], t["slope"][k])}
    names = [m["model"] for m in task["models"]]
    order = design()[0]
    for k in SLOPES:
        dirs, cov = [], []
        for m in task["models"]:
            j = order.index(m["model"])
            dirs.append(m[f"advantage_{k}_direction"])
            cov.append(_covered(m[f"advantage_{k}_ci"], float(mt[k][j])))
        row["models"][k] = {"positive": dirs.count("positive"), "negative": dirs.count("negative"),
                            "n": len(names), "covered": sum(c is True for c in cov),
                            "with_interval": sum(c is not None for c in cov),
                            "truth_positive": int(sum(float(mt[k][order.index(m)]) > 0 for m in names))}
    return row


def width_ratio(qs: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The intervals' mean half-width against the half-width the estimates' own spread implies.

    Over the data sets of an arm (independent draws of models and items), the estimate's
    standard deviation ``sd`` is its sampling error; a 95% interval of the right width has a half-width
    of about ``1.96 sd``. ``width_ratio`` above 1: the intervals are wider than that.
    """
    est = np.array([q["estimate"] for q in qs if q.get("estimate") is not None and q["ci"][0] is not None])
    half = np.array([(q["ci"][1] - q["ci"][0]) / 2 for q in qs if q.get("estimate") is not None
                     and q["ci"][0] is not None])
    if est.size < 10:
        return {"sd_of_estimate": None, "mean_half_width": None, "width_ratio": None}
    sd = float(np.std(est, ddof=1))
    z = float(norm.ppf((1 + INTERVAL) / 2))
    return {"sd_of_estimate": sd, "mean_half_width": float(half.mean()),
            "width_ratio": float(half.mean() / (z * sd)) if sd > 0 else None}


def summarise_arm(rows: Sequence[Mapping[str, Any]], arm: str) -> dict[str, Any]:
    """Per decided quantity: direction rates (positive, negative) and interval coverage."""
    n = len(rows)
    out: dict[str, Any] = {"n": n, "target_n": TARGET[arm], "complete": n >= TARGET[arm], "check": CHECK[arm],
                           "not_estimable": sum(r["status"] != "estimated" for r in rows), "means": {}, "slopes": {},
                           "models": {}}
    est = [r for r in rows if r["status"] == "estimated"]
    for part, keys in (("means", MEANS), ("slopes", SLOPES)):
        for k in keys:
            qs = [r[part][k] for r in est]
            cov = [q["covered"] for q in qs if q["covered"] is not None]
            out[part][k] = {"positive": rate(sum(q["direction"] == "positive" for q in qs), n),
                            "negative": rate(sum(q["direction"] == "negative" for q in qs), n),
                            "coverage": rate(sum(cov), len(cov)), "truth": qs[0]["truth"] if qs else None,
                            **width_ratio(qs)}
    for k in SLOPES:
        ms = [r["models"][k] for r in est]
        out["models"][k] = {
            "positive": rate(sum(m["positive"] for m in ms), sum(m["n"] for m in ms)),
            "negative": rate(sum(m["negative"] for m in ms), sum(m["n"] for m in ms)),
            "coverage": rate(sum(m["covered"] for m in ms), sum(m["with_interval"] for m in ms)),
            "any_positive_datasets": rate(sum(m["positive"] > 0 for m in ms), n),
            "note": "pooled over the models of every data set; the models of one data set share items, so "
                    "the interval is too narrow"}
    head = out["means"]["dprime"]
    if CHECK[arm] == "coverage":
        cov = [q for part, keys in (("means", MEANS), ("slopes", SLOPES)) for k in keys
               for q in [out[part][k]["coverage"]]]
        out["headline"] = {"measure": "95% interval coverage, mean advantages and slopes pooled",
                           **rate(sum(c["k"] for c in cov), sum(c["n"] for c in cov))}
    else:
        out["headline"] = {"measure": "mean d' self advantage declared positive", **head["positive"]}
    out["cpu_s_per_dataset"] = float(np.mean([r["cpu_s"] for r in rows])) if rows else None
    return out


def main(argv: list[str] | None = None) -> int:
    """Run (resumable), summarise and optionally ship the study."""
    from importlib.metadata import version

    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--sims", type=int, default=None, help="data sets per arm (default: its target)")
    ap.add_argument("--arms", default=",".join(ARMS))
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--ship", action="store_true", help="also write the package data the map reads")
    a = ap.parse_args(argv)
    a.out.mkdir(parents=True, exist_ok=True)
    lines = a.out / "self_vs_other_study.jsonl"
    runs = jsonl_records.read(lines)
    done = {(r["arm"], r["seed"]) for r in runs}
    t = {arm: truths(arm) for arm in ARMS}
    for arm in a.arms.split(","):
        if arm not in ARMS:
            ap.error(f"unknown arm {arm!r} (arms: {', '.join(ARMS)})")
        for i in range(a.sims if a.sims is not None else TARGET[arm]):
            if (arm, FIRST_SEED + i) in done:
                continue
            run = one(arm, FIRST_SEED + i, t[arm])
            runs.append(run)
            jsonl_records.append(lines, run)
    shown = lines.resolve().relative_to(ROOT).as_posix() if lines.resolve().is_relative_to(ROOT) else str(lines)
    arms = {arm: summarise_arm([r for r in runs if r["arm"] == arm], arm)
            for arm in ARMS if any(r["arm"] == arm for r in runs)}
    summary = {
        "available": True,
        "question": "how often self_vs_other_rescored declares a self advantage (or its slope on scale) that "
                    "is not there, and how often its 95% intervals cover a known one",
        "design": {"families": list(FAMILIES), "sizes_b": list(SIZES_B), "items": N_ITEMS, "tasks": 1},
        "truths": {arm: t[arm] for arm in ARMS}, "n_boot": N_BOOT, "sampler": None,
        "interval_level": INTERVAL,
        "interval": "Clopper-Pearson 95%",
        "versions": {p: version(p) for p in ("selfmodel", "numpy", "polars", "scipy")},
        "arms": arms,
        "command": f".venv/bin/python validation/self_vs_other_study.py --out {Path(shown).parent.as_posix()}"
                   + (" --ship" if a.ship else ""),
        "source": shown, "source_sha256": hashlib.sha256(lines.read_bytes()).hexdigest(),
    }
    text = json.dumps(summary, indent=1, sort_keys=True) + "\n"
    (a.out / "self_vs_other_study.json").write_text(text)
    if a.ship:
        SHIPPED.write_text(text)
    for arm, s in arms.items():
        h = s["headline"]
        print(f"{arm}: n={s['n']}/{s['target_n']} {h['measure']}: {h['k']}/{h['n']}; "
              f"slope d' positive {s['slopes']['dprime']['positive']['k']}; per-model d' positive "
              f"{s['models']['dprime']['positive']['rate']:.3f}; mean d' coverage "
              f"{s['means']['dprime']['coverage']['rate']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
