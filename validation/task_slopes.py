"""Task slopes with their own priors vs task slopes pooled through a spread prior: a measurement.

Two measurements behind the ``task_slopes`` default of ``models/scale.py`` and
``models/sdt.py`` (written to ``validation/results/task_slopes.json``):

``sim``
    Simulated data with two tasks whose true slopes differ (task0: 0, task1: +0.3 logits per
    10x; ``selfmodel.records.simulate.simulate_scale_cells``), each data set fitted with the scale
    model twice, ``task_slopes="pooled"`` and ``"independent"``. Counted per variant: how
    often the zero-slope task is declared ``improves`` or credibly positive, how often the
    positive task is, and the mean posterior slope of each task (the pull of one task
    towards the other).
``seb``
    The signal-detection model on the Self-Execution Benchmark binary cells
    (``--seb-cells``, a ``cells.parquet`` of a ``selfmodel run`` on the SEB records): the
    word-association task alone (the data's own answer for that task), both tasks pooled,
    and both tasks independent; per task the d' and criterion slopes with their HDIs and
    decisions, and for every standard deviation its prior and posterior mean and sd.

Usage::

    python validation/task_slopes.py [--sims 8] [--draws 500] [--n-per-cell 300] [--seb-cells PATH] [--only sim|seb]

Costs one numba compile per model structure plus sampling per fit; with the defaults a few
minutes per fit on a loaded 2-core machine.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from selfmodel import models as model_registry  # noqa: E402
from selfmodel.analyses.model_inputs import sdt_cells  # noqa: E402
from selfmodel.common.atomic import write_json  # noqa: E402
from selfmodel.decisions.hypotheses import DecisionRule, decide  # noqa: E402
from selfmodel.fitting.sampling import SamplerSettings, fit  # noqa: E402
from selfmodel.records.simulate import simulate_scale_cells  # noqa: E402

OUT = Path(__file__).resolve().parent / "results" / "task_slopes.json"
TRUE_SLOPES = (0.0, 0.3)
SIGNED = {"improves", "credibly_positive"}


def _settings(draws: int) -> SamplerSettings:
    return SamplerSettings(chains=4, draws=draws, tune=draws, target_accept=0.95)


def _summ(draws: np.ndarray, rule: DecisionRule, n_models: int) -> dict[str, Any]:
    r = decide(draws, rule, n_models=n_models)
    return {k: r[k] for k in ("mean", "sd", "hdi_low", "hdi_high", "prob_positive", "decision")}


def run_sim(n_sims: int, draws: int, seed0: int = 1000, n_per_cell: int = 300) -> dict[str, Any]:
    rule = DecisionRule()
    per: dict[str, list[dict[str, Any]]] = {"pooled": [], "independent": []}
    for i in range(n_sims):
        cells, truth = simulate_scale_cells(
            seed=seed0 + i, n_tasks=2, task_slopes=TRUE_SLOPES, n_families=4,
            sizes_per_family=4, n_per_cell=n_per_cell,
        )
        n_models = cells["model"].n_unique()
        for variant in per:
            f = fit("scale", cells, seed=seed0 + i, settings=_settings(draws),
                    options={"task_slopes": variant}, reuse_compiled=True)
            st = f.idata["posterior"]["slope_task"]
            row = {"sim": i, "divergences": f.diagnostics.get("divergences"),
                   "max_rhat": f.diagnostics.get("max_rhat")}
            for t, true in zip(("task0", "task1"), TRUE_SLOPES, strict=True):
                row[t] = {**_summ(st.sel(task=t).values, rule, n_models), "true": true}
            per[variant].append(row)
            print(variant, i, row["task0"]["decision"], round(row["task0"]["mean"], 3),
                  row["task1"]["decision"], round(row["task1"]["mean"], 3), flush=True)
    summary = {}
    for variant, rows in per.items():
        summary[variant] = {
            "zero_task_improves": sum(r["task0"]["decision"] == "improves" for r in rows),
            "zero_task_credibly_positive_or_improves": sum(r["task0"]["decision"] in SIGNED for r in rows),
            "positive_task_improves": sum(r["task1"]["decision"] == "improves" for r in rows),
            "positive_task_credibly_positive_or_improves": sum(r["task1"]["decision"] in SIGNED for r in rows),
            "zero_task_mean_slope": float(np.mean([r["task0"]["mean"] for r in rows])),
            "positive_task_mean_slope": float(np.mean([r["task1"]["mean"] for r in rows])),
            "zero_task_hdi_covers_truth": sum(r["task0"]["hdi_low"] <= 0 <= r["task0"]["hdi_high"] for r in rows),
            "n": len(rows),
        }
    return {"true_task_slopes": dict(zip(("task0", "task1"), TRUE_SLOPES, strict=True)),
            "declared_rate": (1 - rule.hdi_prob) / 2, "draws_per_chain": draws,
            "n_per_cell": n_per_cell, "models": 16, "families": 4,
            "summary": summary, "fits": per}


def _sd_table(f: Any) -> dict[str, Any]:
    post = f.idata["posterior"]
    priors = f.provenance["priors"]
    out = {}
    for name, (dist, kw) in priors.items():
        if not name.startswith("sigma_") or name not in post:
            continue
        s = float(kw["sigma"])
        prior_mean, prior_sd = s * np.sqrt(2 / np.pi), s * np.sqrt(1 - 2 / np.pi)
        v = post[name].values.ravel()
        out[name] = {"prior": f"{dist}({s:g})", "prior_mean": prior_mean, "prior_sd": prior_sd,
                     "posterior_mean": float(v.mean()), "posterior_sd": float(v.std(ddof=1))}
    return out


def run_seb(cells_path: Path, draws: int) -> dict[str, Any]:
    rule = DecisionRule()
    cells = pl.read_parquet(cells_path).filter(pl.col("x").is_not_null())
    data = sdt_cells(cells)
    tasks = sorted(data["task"].unique().to_list())
    wa = [t for t in tasks if "word" in t] or tasks[:1]
    runs = {
        "word_association_alone": (data.filter(pl.col("task").is_in(wa)), "independent"),
        "both_pooled": (data, "pooled"),
        "both_independent": (data, "independent"),
    }
    module = model_registry.get("sdt")
    out: dict[str, Any] = {"tasks": tasks}
    for label, (d, variant) in runs.items():
        f = fit(module.NAME, d, seed=20261130, settings=_settings(draws),
                options={"task_slopes": variant})
        post = f.idata["posterior"]
        n_models = d["model"].n_unique()
        entry: dict[str, Any] = {"task_slopes": variant, "cells": d.height, "n_models": n_models,
                                 "diagnostics": {k: f.diagnostics.get(k) for k in
                                                 ("passed", "max_rhat", "min_ess_bulk", "divergences")}}
        for side in ("dprime", "criterion"):
            da = post[f"{side}_slope_task"]
            entry[side] = {str(t): _summ(da.sel(task=t).values, rule, n_models)
                           for t in da["task"].values}
        entry["standard_deviations"] = _sd_table(f)
        out[label] = entry
        print(label, json.dumps({s: {t: (round(v["mean"], 3), round(v["hdi_low"], 3), round(v["hdi_high"], 3), v["decision"])
                                     for t, v in entry[s].items()} for s in ("dprime", "criterion")}), flush=True)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sims", type=int, default=8)
    ap.add_argument("--draws", type=int, default=500)
    ap.add_argument("--n-per-cell", type=int, default=300)
    ap.add_argument("--seb-cells", type=Path, default=Path("/work/baseline/seb-report/cells.parquet"))
    ap.add_argument("--only", choices=("sim", "seb"))
    ap.add_argument("--out", type=Path, default=OUT)
    a = ap.parse_args(argv)
    res: dict[str, Any] = json.loads(a.out.read_text()) if a.out.exists() else {}
    if a.only in (None, "seb"):
        if a.seb_cells.exists():
            res["seb"] = run_seb(a.seb_cells, a.draws)
        else:
            res["seb"] = {"not_run": f"{a.seb_cells} not found"}
        write_json(a.out, res)
    if a.only in (None, "sim"):
        res["sim"] = run_sim(a.sims, a.draws, n_per_cell=a.n_per_cell)
        write_json(a.out, res)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
