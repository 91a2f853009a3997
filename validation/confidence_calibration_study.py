"""Operating characteristics of the confidence-calibration contrasts: null rate, coverage, a misspecified case.

The decisions checked are those of ``selfmodel.analyses.confidence_calibration.confidence_calibration_table``
at its defaults (item bootstrap of 1000 replicates, the verdict rule's 94% mass, ROPE 0.02 in
each metric's units): for every pair of groups differing in one factor (two models; two
conditions) and every metric (ECE, Brier, |overconfidence|), the *reduction* of the error
from the first level to the second.

The data come from :func:`generate`, written for this study alone (no code shared with the
estimator or with ``selfmodel.records.simulate``): two models answer the same items in two
conditions, once each. Model ``m`` is right on item ``i`` with probability
``q = expit(u_i + a_m)``, ``u_i = logit(Beta(3, 2))``; it knows ``q`` only noisily,
``b = expit(logit(q) + N(0, 0.8))``, and states ``c = expit(gamma_g * logit(b) + delta_g)``
for its group ``g`` (model x condition: ``delta`` shifts towards overconfidence, ``gamma`` > 1
makes it over-extreme), rounded to 0.05 as people and models state round numbers; it
predicts "right" when ``c >= 0.5`` (confidence ``c``) else "wrong" (confidence ``1 - c``).

Arms:

* ``null``: every group states with the same ``(gamma, delta)`` = (1.3, 0.4): no contrast;
  how often is any of the 12 decided contrasts credible (its sign), and how often is any
  ``improves``?
* ``truth``: model ``b`` is better calibrated (delta 0.0, gamma 1.0) than ``a`` (1.3, 0.4)
  in both conditions, and the second condition shifts both by +0.3 (more overconfident):
  the 94% interval's coverage of each contrast's true value (a population value computed by
  :func:`truths` from the generator's own probabilities on 400,000 items, no Bernoulli noise);
* ``misspecified``: the null with items in clusters of 3-5 that share a difficulty shift and
  a per-group confidence shift (the groups' errors move together within a cluster and apart
  between groups: overdispersion the item bootstrap does not see as such).

    .venv/bin/python validation/confidence_calibration_study.py --sims 200 --out validation/results --ship
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
from scipy.special import expit, logit

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import jsonl_records  # noqa: E402
from cells_generator import cluster_index  # noqa: E402 (clusters of 3-5 items, as the scale arms)

from selfmodel.analyses.confidence_calibration import METRICS, confidence_calibration_table  # noqa: E402

#: Metric names of records made before issue 53 named both ECEs by what they bin.
LEGACY = {"ece": "ece_stated_probability"}
from selfmodel.common.binomial import clopper_pearson  # noqa: E402
from selfmodel.decisions.hypotheses import DecisionRule  # noqa: E402
from selfmodel.records.contract import NEGATIVE_DECISIONS, POSITIVE_DECISIONS  # noqa: E402

MODELS = {"a": 0.0, "b": 0.3}  # ability shift of each model (logits)
CONDITIONS = ("first", "second")
N_ITEMS = 150
#: (gamma, delta) per arm and group (model, condition)
ARMS: dict[str, dict[tuple[str, str], tuple[float, float]]] = {
    "null": {(m, c): (1.3, 0.4) for m in MODELS for c in CONDITIONS},
    "truth": {("a", "first"): (1.3, 0.4), ("a", "second"): (1.3, 0.7),
              ("b", "first"): (1.0, 0.0), ("b", "second"): (1.0, 0.3)},
}
ARMS["misspecified"] = ARMS["null"]
SHIPPED = ROOT / "analysis" / "data" / "confidence_calibration_operating_characteristics.json"
FIRST_SEED = 9000


def _stated(q: np.ndarray, gamma: float, delta: float, noise: np.ndarray, shift: np.ndarray) -> np.ndarray:
    """Stated confidence of being right (before rounding)."""
    b = logit(np.clip(q, 1e-6, 1 - 1e-6)) + noise
    return expit(gamma * b + delta + shift)


def generate(arm: str, seed: int, n_items: int = N_ITEMS) -> pl.DataFrame:
    """Canonical records of one data set of ``arm`` (module docstring)."""
    rng = np.random.default_rng([seed, 2861])
    u = logit(np.clip(rng.beta(3.0, 2.0, n_items), 0.02, 0.98))
    clustered = arm == "misspecified"
    cl = cluster_index(n_items, rng) if clustered else np.arange(n_items)
    if clustered:
        u = u + rng.normal(0.0, 0.8, int(cl.max()) + 1)[cl]
    frames = []
    for m, ability in MODELS.items():
        q = expit(u + ability)
        for cond in CONDITIONS:
            gamma, delta = ARMS[arm][(m, cond)]
            noise = rng.normal(0.0, 0.8, n_items)
            shift = rng.normal(0.0, 0.5, int(cl.max()) + 1)[cl] if clustered else np.zeros(n_items)
            c = np.clip(np.round(_stated(q, gamma, delta, noise, shift) * 20) / 20, 0.0, 1.0)
            right = rng.random(n_items) < q
            says_right = c >= 0.5
            frames.append(pl.DataFrame({
                "model": m, "condition": cond, "task": "quiz",
                "item_id": [f"q{i:03d}" for i in range(n_items)],
                "predictor": pl.Series([None] * n_items, dtype=pl.Utf8),
                "prediction": np.where(says_right, "true", "false"),
                "outcome": np.where(right, "true", "false"),
                "correct": says_right == right,
                "confidence": np.where(says_right, c, 1.0 - c),
                "status": "ok",
            }))
    return pl.concat(frames)


def truths(arm: str, n: int = 400_000, seed: int = 0) -> dict[tuple[str, str], dict[str, float]]:
    """Population ECE (10 bins), Brier and overconfidence per group, without Bernoulli noise."""
    rng = np.random.default_rng([seed, 2862])
    u = logit(np.clip(rng.beta(3.0, 2.0, n), 0.02, 0.98))
    out = {}
    for m, ability in MODELS.items():
        q = expit(u + ability)
        for cond in CONDITIONS:
            gamma, delta = ARMS[arm][(m, cond)]
            p = np.clip(np.round(_stated(q, gamma, delta, rng.normal(0.0, 0.8, n), np.zeros(n)) * 20) / 20,
                        0.0, 1.0)
            idx = np.clip(np.floor(p * 10 + 1e-9).astype(int), 0, 9)
            gap = np.bincount(idx, weights=p - q, minlength=10)
            out[(m, cond)] = {"ece_stated_probability": float(np.abs(gap).sum() / n),
                              "brier": float(np.mean(p * p - 2 * p * q + q)),
                              "overconfidence": float(np.mean(p - q))}
    return out


def true_contrast(t: dict[tuple[str, str], dict[str, float]], row: dict[str, Any]) -> float:
    """The population value of one decided contrast (its ``factor``, ``within``, ``contrast``)."""
    b, a = row["contrast"].split(" - ")
    if row["factor"] == "model":
        ga, gb = (a, row["within"]["condition"]), (b, row["within"]["condition"])
    else:
        ga, gb = (row["within"]["model"], a), (row["within"]["model"], b)
    m = row["metric"]
    if m == "overconfidence":
        return abs(t[ga][m]) - abs(t[gb][m])
    return t[ga][m] - t[gb][m]


def compact_key(factor: str, contrast: str, within: dict[str, str]) -> str:
    """A contrast's name in a record: ``factor:b-a|level held fixed`` (e.g. ``model:b-a|first``)."""
    return f"{factor}:{contrast.replace(' ', '')}|{'|'.join(within.values())}"


def one(arm: str, seed: int, t: dict[tuple[str, str], dict[str, float]]) -> dict[str, Any]:
    """Decide every contrast of one data set; coverage of the truth, credible and improves."""
    records = generate(arm, seed)
    c0 = time.process_time()
    table = confidence_calibration_table(records, by=("model", "condition"), rule=DecisionRule(), seed=seed)
    cpu = time.process_time() - c0
    rows = []
    for r in table["contrasts"]:
        truth = 0.0 if arm != "truth" else true_contrast(t, r)
        rows.append({"key": compact_key(r["factor"], r["contrast"], r["within"]),
                     "metric": r["metric"], "truth": round(truth, 6), "decision": r["decision"],
                     "covered": r["hdi_low"] is not None and r["hdi_low"] <= truth <= r["hdi_high"]})
    return {"arm": arm, "seed": seed, "cpu_s": round(cpu, 3), "contrasts": rows}


def summarise(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Per arm: data sets with any credible / any ``improves`` contrast, coverage per metric."""
    credible = set(POSITIVE_DECISIONS) | set(NEGATIVE_DECISIONS)
    out: dict[str, Any] = {}
    for arm in ARMS:
        mine = [r for r in runs if r["arm"] == arm]
        if not mine:
            continue
        n = len(mine)
        k_cred = sum(any(c["decision"] in credible for c in r["contrasts"]) for r in mine)
        k_imp = sum(any(c["decision"] == "improves" for c in r["contrasts"]) for r in mine)
        per_metric = {}
        for metric in METRICS:
            # records made before issue 53 name the ECE of the stated probability 'ece'
            cs = [c for r in mine for c in r["contrasts"] if LEGACY.get(c["metric"], c["metric"]) == metric]
            k = sum(c["covered"] for c in cs)
            per_metric[metric] = {"contrasts": len(cs), "covered": k, "rate": k / len(cs),
                                  "ci95": clopper_pearson(k, len(cs)),
                                  "credible": sum(c["decision"] in credible for c in cs)}
        allc = [c for r in mine for c in r["contrasts"]]
        k_one = sum(c["decision"] in credible for c in allc)
        k_one_imp = sum(c["decision"] == "improves" for c in allc)
        out[arm] = {"n_datasets": n,
                    # each decided contrast on its own, as the report prints it
                    "per_contrast_credible": {"k": k_one, "n": len(allc), "rate": k_one / len(allc),
                                              "ci95": clopper_pearson(k_one, len(allc))},
                    "per_contrast_improves": {"k": k_one_imp, "n": len(allc), "rate": k_one_imp / len(allc),
                                              "ci95": clopper_pearson(k_one_imp, len(allc))},
                    "any_credible": {"k": k_cred, "rate": k_cred / n, "ci95": clopper_pearson(k_cred, n)},
                    "any_improves": {"k": k_imp, "rate": k_imp / n, "ci95": clopper_pearson(k_imp, n)},
                    "coverage": per_metric,
                    "cpu_s_per_dataset": float(np.mean([r["cpu_s"] for r in mine]))}
    return out


def main(argv: list[str] | None = None) -> int:
    """Run (resumable), summarise and optionally ship the study."""
    from importlib.metadata import version

    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--sims", type=int, default=200)
    ap.add_argument("--arms", default=",".join(ARMS))
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--ship", action="store_true", help="also write the package data the pipeline reads")
    a = ap.parse_args(argv)
    a.out.mkdir(parents=True, exist_ok=True)
    lines = a.out / "confidence_calibration_study.jsonl"
    runs = jsonl_records.read(lines)
    done = {(r["arm"], r["seed"]) for r in runs}
    t = {arm: truths(arm) for arm in ARMS}
    for arm in a.arms.split(","):
        for seed in range(FIRST_SEED, FIRST_SEED + a.sims):
            if (arm, seed) in done:
                continue
            run = one(arm, seed, t[arm])
            runs.append(run)
            jsonl_records.append(lines, run, sort_keys=False)
    shown = lines.resolve().relative_to(ROOT).as_posix() if lines.resolve().is_relative_to(ROOT) else str(lines)
    summary = {
        "question": "how often a confidence-calibration contrast is declared where there is none, and how often its "
                    "interval covers a known one (selfmodel.analyses.confidence_calibration.confidence_calibration_table)",
        "design": {"models": MODELS, "conditions": list(CONDITIONS), "items": N_ITEMS,
                   "groups": {arm: {f"{m}/{c}": list(v) for (m, c), v in g.items()} for arm, g in ARMS.items()}},
        "rule": DecisionRule().as_dict(), "sampler": None,
        "interval": "Clopper-Pearson 95%; per contrast it treats the 12 contrasts of a data set as "
                    "independent, which they are not (they share items), so it is too narrow",
        "versions": {p: version(p) for p in ("selfmodel", "numpy", "polars", "scipy")},
        "arms": summarise(runs),
        "command": f".venv/bin/python validation/confidence_calibration_study.py --sims {a.sims} "
                   f"--out {Path(shown).parent.as_posix()}" + (" --ship" if a.ship else ""),
        "source": shown, "source_sha256": hashlib.sha256(lines.read_bytes()).hexdigest(),
    }
    text = json.dumps(summary, indent=1, sort_keys=True) + "\n"
    (a.out / "confidence_calibration_study.json").write_text(text)
    if a.ship:
        SHIPPED.write_text(text)
    for arm, s in summary["arms"].items():
        cov = ", ".join(f"{m} {100 * v['rate']:.1f}%" for m, v in s["coverage"].items())
        print(f"{arm}: n={s['n_datasets']} credible per contrast {100 * s['per_contrast_credible']['rate']:.1f}% "
              f"any credible {100 * s['any_credible']['rate']:.1f}% "
              f"any improves {100 * s['any_improves']['rate']:.1f}% coverage {cov}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
