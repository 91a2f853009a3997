"""Operating characteristics of the privileged-access decision on an independent generator (issue 28.1).

Data sets come from ``validation/privileged_generator.py`` (written apart from the
estimator and from ``selfmodel.records.simulate``), and each is decided by the pipeline's own
function, ``selfmodel.analyses.privileged.privileged_access``, at the pipeline's default settings
(the default ``DecisionRule``: 94% interval, ROPE 0.1; ``N_BOOT`` replicates). Arms:

``truth``
    three families: the checkpoint gains +0.6 logit at predicting itself on trained tasks,
    and at predicting its base the same (``none``), nothing (``full``) or half (``half``).
    Reported: how often each is decided positive (``improves`` or ``credibly_positive``),
    coverage of the true contrast by the interval, and how often the point estimates are
    ordered full > half > none.
``null``
    every family gains as much at predicting its base as itself (no privileged gain): the
    false-positive rate per checkpoint, pooled over checkpoints, and of the mean; also of
    the held-out contrast (no gain there in any arm) and of the contrast against the base
    as another predictor of both targets (for the families without privileged access).
``misspecified_null``, ``misspecified_truth``
    the same with items in clusters of 3-5 sharing a difficulty shift, a per-cell shift and
    their own training gain (overdispersion), the clusters recorded in ``cluster``.

A data set whose decision is ``not_estimable`` or that raises counts as failed (reported,
and never as a positive). Rates carry exact Clopper-Pearson 95% intervals.

    .venv/bin/python validation/privileged_access.py --sims 300 --out validation/results --ship
    .venv/bin/python validation/privileged_access.py --sims 5 --out /tmp/pa     # smoke run
"""

from __future__ import annotations

import argparse
import json
import platform
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

sys.path.insert(0, str(Path(__file__).resolve().parent))
from privileged_generator import Design, generate, true_contrast  # noqa: E402

from selfmodel.analyses.privileged import N_BOOT, privileged_access  # noqa: E402
from selfmodel.common.binomial import clopper_pearson  # noqa: E402
from selfmodel.decisions.hypotheses import DecisionRule  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
PACKAGE_DATA = ROOT / "analysis" / "data" / "privileged_operating_characteristics.json"
POSITIVE = ("improves", "credibly_positive")
NULL_FAMILIES = {"a": 1.0, "b": 1.0, "c": 1.0}


def arms() -> dict[str, Design]:
    """The study's arms (see the module docstring)."""
    d = Design()
    return {"truth": d, "null": replace(d, families=NULL_FAMILIES),
            "misspecified_truth": replace(d, clustered=True),
            "misspecified_null": replace(d, clustered=True, families=NULL_FAMILIES)}


def rate(k: int, n: int) -> dict[str, Any]:
    """``k`` of ``n`` with the rate and its Clopper-Pearson interval."""
    lo, hi = clopper_pearson(k, n) if n else (float("nan"), float("nan"))
    return {"k": k, "n": n, "rate": k / n if n else None, "ci_low": lo, "ci_high": hi}


def one(design: Design, seed: int, rule: DecisionRule) -> dict[str, Any]:
    """Decide one data set: per checkpoint estimate, interval, decision (or the failure)."""
    records, checkpoints = generate(design, seed)
    try:
        out = privileged_access(records, checkpoints, rule=rule, seed=seed)
    except Exception as exc:  # counted as a failure, never dropped
        return {"seed": seed, "error": f"{type(exc).__name__}: {exc}"}
    fam = {c["model"]: c["family"] for c in checkpoints}
    keys = ("estimate", "hdi_low", "hdi_high", "decision")
    per = {fam[e["model"]]: {**{k: e.get(k) for k in keys},
                             "held_out": e.get("held_out", {}).get("decision"),
                             "vs_base_predictor": [v["decision"] for v in
                                                   e.get("vs_other_predictors", [])]}
           for e in out["per_checkpoint"]}
    m = out["mean"]
    return {"seed": seed, "per_family": per,
            "mean": {k: m.get(k) for k in ("estimate", "hdi_low", "hdi_high", "decision")}}


def summarise(design: Design, rows: Sequence[dict[str, Any]], truth: dict[str, float]
              ) -> dict[str, Any]:
    """Per family: positives, coverage, failures; ordering; the pooled positive rate."""
    ok = [r for r in rows if "error" not in r]
    out: dict[str, Any] = {"n_datasets": len(rows), "n_errors": len(rows) - len(ok),
                           "design": {**asdict(design)}, "families": {}}
    pooled_k = pooled_n = 0
    for fam in design.families:
        es = [r["per_family"][fam] for r in ok]
        fit = [e for e in es if e["decision"] != "not_estimable"]
        pos = sum(e["decision"] in POSITIVE for e in fit)
        cov = sum(e["hdi_low"] <= truth[fam] <= e["hdi_high"] for e in fit)
        n = len(rows)
        out["families"][fam] = {
            "share_of_gain_on_base": design.families[fam], "truth": truth[fam],
            "failed": n - len(fit), "positive": rate(pos, n), "coverage": rate(cov, len(fit)),
            "mean_estimate": float(np.mean([e["estimate"] for e in fit])) if fit else None,
        }
        pooled_k, pooled_n = pooled_k + pos, pooled_n + n
    out["positive_pooled"] = rate(pooled_k, pooled_n)
    # the other decisions the report prints, whose truth is 0 for every family (held out: no
    # gain) or for a family without privileged access (against the base as a predictor)
    held = [r["per_family"][f]["held_out"] for r in ok for f in design.families]
    out["held_out_positive_pooled"] = rate(sum(d in POSITIVE for d in held), len(held))
    null_fams = [f for f, s in design.families.items() if s == 1.0]
    vs = [d for r in ok for f in null_fams for d in r["per_family"][f]["vs_base_predictor"]]
    out["vs_base_predictor_positive_null_families"] = rate(sum(d in POSITIVE for d in vs), len(vs))
    means = [r["mean"] for r in ok if r["mean"]["decision"] != "not_estimable"]
    out["mean_positive"] = rate(sum(m["decision"] in POSITIVE for m in means), len(rows))
    if {"full", "half", "none"} <= set(design.families):
        order = sum(r["per_family"]["full"]["estimate"] > r["per_family"]["half"]["estimate"]
                    > r["per_family"]["none"]["estimate"] for r in ok
                    if all(r["per_family"][f]["estimate"] is not None
                           for f in ("full", "half", "none")))
        out["ordered_full_half_none"] = rate(order, len(rows))
    return out


def versions() -> dict[str, str]:
    """Versions of the stack and the commit of the estimator."""
    import scipy

    import selfmodel

    try:
        sha = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True,
                             text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        sha = "unknown"
    return {"python": platform.python_version(), "numpy": np.__version__,
            "polars": pl.__version__, "scipy": scipy.__version__,
            "selfmodel": getattr(selfmodel, "__version__", "unknown"), "git_commit": sha}


def run(sims: int, *, start: int = 0, only: Sequence[str] | None = None) -> dict[str, Any]:
    """The whole study: every arm on seeds ``start .. start + sims - 1``."""
    rule = DecisionRule()
    out: dict[str, Any] = {"rule": rule.as_dict(), "n_boot": N_BOOT, "positive": list(POSITIVE),
                           "interval": "Clopper-Pearson 95%", "arms": {},
                           "versions": versions()}
    t0 = time.process_time()
    for name, design in arms().items():
        if only and name not in only:
            continue
        truth = {f: (0.0 if s == 1.0 else true_contrast(design, s))
                 for f, s in design.families.items()}
        rows = [one(design, start + i, rule) for i in range(sims)]
        out["arms"][name] = summarise(design, rows, truth)
    out["cpu_seconds"] = round(time.process_time() - t0, 1)
    n = sum(a["n_datasets"] for a in out["arms"].values())
    out["cpu_seconds_per_dataset"] = round(out["cpu_seconds"] / max(n, 1), 3)
    return out


def main(argv: Sequence[str] | None = None) -> int:
    """Command line: ``--sims``, ``--start``, ``--only``, ``--out``, ``--ship``."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sims", type=int, default=300)
    ap.add_argument("--start", type=int, default=0)
    ap.add_argument("--only", nargs="*", choices=list(arms()))
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--ship", action="store_true",
                    help="also write analysis/data/privileged_operating_characteristics.json")
    a = ap.parse_args(argv)
    result = run(a.sims, start=a.start, only=a.only)
    result["command"] = ("validation/privileged_access.py " + " ".join(
        sys.argv[1:] if argv is None else argv))
    a.out.mkdir(parents=True, exist_ok=True)
    text = json.dumps(result, indent=1, sort_keys=True) + "\n"
    (a.out / "privileged_access.json").write_text(text)
    if a.ship:
        PACKAGE_DATA.write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
