"""Measure a zoo model on the default data: compile and sampling time, divergences, ESS, R-hat.

Proposed as ``bench/zoo.py`` (issue #3). Prints one JSON line; with ``--checks`` also runs
``selfmodel.fitting.checks`` (prior/posterior predictive, LOO) and prints a second line.

    python bench/zoo.py sdt                      # 4 x 2000 draws, target_accept 0.95
    python bench/zoo.py sdt --target-accept 0.99 --seed 1
    python bench/zoo.py pooled --option random_effects=true --checks
    python bench/zoo.py items --checks           # slow: ~11k Bernoulli rows
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import nutpie
import polars as pl

from selfmodel import models
from selfmodel.common import arviz_ops
from selfmodel.fitting import checks
from selfmodel.fitting.sampling import Fit, SamplerSettings, diagnose
from selfmodel.records.cells import build_cells, join_registry, scale_values, to_item_cells
from selfmodel.records.ingest import ingest
from selfmodel.records.registry import load_registry


def data_for(model: str, data: Path) -> pl.DataFrame:
    """The table the pipeline would give ``model`` (sized models only)."""
    records = ingest([data / "records.csv"]).records
    reg = load_registry(data / "registry.csv")
    if model == "items":
        cells = scale_values(join_registry(to_item_cells(records), reg), "params")
    else:
        cells = build_cells(records, reg, scale="params")
    usable = cells.filter(pl.col("x").is_not_null() & (pl.col("n") > 0))
    return usable.filter(pl.col("binary")) if model == "sdt" else usable


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("--seed", type=int, default=20261130)
    ap.add_argument("--target-accept", type=float, default=0.95)
    ap.add_argument("--draws", type=int, default=2000)
    ap.add_argument("--data", default="data_raw")
    ap.add_argument("--option", action="append", default=[], help="build option k=json")
    ap.add_argument("--checks", action="store_true")
    a = ap.parse_args()
    opts = {k: json.loads(v) for k, v in (kv.split("=", 1) for kv in a.option)}
    mod = models.get(a.model)
    data = data_for(a.model, Path(a.data))
    used = data.select([c for c in mod.REQUIRED_COLUMNS if c in data.columns])
    s = SamplerSettings(draws=a.draws, target_accept=a.target_accept)
    t0 = time.perf_counter()
    pm_model = mod.build(used, **opts)
    compiled = nutpie.compile_pymc_model(pm_model)
    t1 = time.perf_counter()
    idata = nutpie.sample(compiled, draws=s.draws, tune=s.tune, chains=s.chains, cores=s.cores,
                          seed=a.seed, target_accept=s.target_accept, progress_bar=False,
                          save_warmup=False)
    t2 = time.perf_counter()
    diag = diagnose(idata)
    out = {
        "model": a.model, "options": opts, "rows": used.height, "seed": a.seed,
        "target_accept": a.target_accept, "draws": a.draws,
        "compile_seconds": round(t1 - t0, 1), "sampling_seconds": round(t2 - t1, 1),
        **{k: diag[k] for k in ("divergences", "min_ess_bulk", "min_ess_tail", "max_rhat")},
        "mean_steps": float(idata.sample_stats["n_steps"].mean()),
    }
    if mod.EFFECT:
        d = idata.posterior[mod.EFFECT].values.ravel()
        lo, hi = arviz_ops.hdi(d, 0.94)
        out["effect"] = {"name": mod.EFFECT, "mean": round(float(d.mean()), 4),
                         "sd": round(float(d.std()), 4), "hdi": [round(float(lo), 4), round(float(hi), 4)]}
    print(json.dumps(out), flush=True)
    if a.checks:
        f = Fit(a.model, idata, diag, {"options": opts})
        gb = ("model", "task") if a.model == "items" else None
        pr = checks.prior_predictive(mod, used, seed=1, options=opts)
        pp = checks.posterior_predictive(f, mod, used, seed=1, group_by=gb)
        lo_ = checks.loo(f, mod, used, max_draws=2000 if a.model == "items" else None)
        print(json.dumps({
            "prior_share_extreme": [pr["accuracy"]["share_below_0.05"], pr["accuracy"]["share_above_0.95"]],
            "ppc_coverage": pp["coverage"], "chi2_p_value": pp["chi2_p_value"],
            "elpd_loo": lo_["elpd_loo"], "se": lo_["se"], "p_loo": lo_["p_loo"],
            "n_high_k": lo_["n_high_k"], "n": lo_["n_data_points"], "integrated": lo_["integrated"],
            "max_k": float(np.max(lo_["pareto_k"])),
        }))


if __name__ == "__main__":
    main()
