"""Does the SDT model pass its diagnostics gate on the default data, seed after seed?

Issue 28.4: the default run must pass every gate at default settings. The SDT model is
fitted to the pipeline's own table (``binary_cells`` of ``data_raw/``: the cells whose d' the
data inform), compiled once, and sampled with each seed; one JSON line per seed.

    python bench/sdt_gate.py --seeds 20261130,1,2,3,4,5                      # the run's settings
    python bench/sdt_gate.py --seeds 20261130,1,2,3,4,5 --spec               # with SPEC.sampling
    python bench/sdt_gate.py --seeds 1,2 --draws 4000 --adaptation low_rank  # other settings
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import nutpie
import polars as pl

from selfmodel import models
from selfmodel.analyses.model_inputs import Tables
from selfmodel.fitting.sampling import SamplerSettings, diagnose, for_model
from selfmodel.records.cells import build_cells
from selfmodel.records.ingest import ingest
from selfmodel.records.registry import load_registry


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", default="20261130,1,2,3,4")
    ap.add_argument("--data", default="data_raw")
    ap.add_argument("--spec", action="store_true", help="apply the model's SPEC.sampling to the settings")
    ap.add_argument("--draws", type=int, default=SamplerSettings.draws)
    ap.add_argument("--tune", type=int, default=SamplerSettings.tune)
    ap.add_argument("--target-accept", type=float, default=SamplerSettings.target_accept)
    ap.add_argument("--adaptation", default="diag", choices=["diag", "draw_diag", "low_rank"])
    a = ap.parse_args()
    data = Path(a.data)
    ing = ingest([data / "records.csv"])
    reg = load_registry(data / "registry.csv")
    cells = build_cells(ing.records, reg, scale="params")
    usable = cells.filter(pl.col("x").is_not_null() & (pl.col("n") > 0))
    table = Tables(usable, ing.records, reg, "params").get("binary_cells")
    module = models.get("sdt")
    settings = SamplerSettings(draws=a.draws, tune=a.tune, target_accept=a.target_accept)
    if a.spec:
        settings = for_model(settings, module.SPEC.sampling)
    cols = [c for c in module.REQUIRED_COLUMNS if c in table.columns]
    compiled = nutpie.compile_pymc_model(module.build(table.select(cols)))
    for seed in (int(s) for s in a.seeds.split(",")):
        t0 = time.perf_counter()
        idata = nutpie.sample(compiled, draws=settings.draws, tune=settings.tune, chains=settings.chains,
                              cores=settings.cores, seed=seed, target_accept=settings.target_accept,
                              progress_bar=False, save_warmup=False, adaptation=a.adaptation)
        d = diagnose(idata)
        print(json.dumps({"seed": seed, "draws": settings.draws, "tune": settings.tune,
                          "target_accept": settings.target_accept, "adaptation": a.adaptation,
                          "passed": d["passed"], "max_rhat": d["max_rhat"], "min_ess_bulk": d["min_ess_bulk"],
                          "divergences": d["divergences"], "seconds": round(time.perf_counter() - t0, 1)}),
              flush=True)


if __name__ == "__main__":
    main()
