"""How cost grows: sampling time vs models, tasks and records per cell; ingest vs records.

    .venv/bin/python bench/bench_growth.py            # about 15-25 min on the shared 2-core machine
    .venv/bin/python bench/bench_growth.py --quick    # tiny designs, 100 draws
    .venv/bin/python bench/bench_growth.py --plot     # only redraw the figure from saved JSON

Sampling (scale model, nutpie, 4 chains x 500 draws after 500 tuning, target_accept 0.95;
data from ``simulate_scale_cells`` with 5 models per family):

* models 10, 50, 200 at 10 tasks;  tasks 3, 10, 30 at 50 models;
* records per cell 30, 300, 3000 at 50 models x 10 tasks (same cells, 100x the records:
  compiled once, the in-process memo of ``selfmodel.fitting.compile_cache`` reuses it).

``--cell-effect`` instead compares parameterisations of ``models/scale.py`` at 300 and 3000
records per cell (50 x 10): ``cell_effect`` = non_centred, centred, auto, and
``group_effects`` = non_centred, centred (family and model intercepts), with R-hat and the
slowest bulk ESS over all non-``z_`` parameters: ``bench/results/growth_cell_effect.json``.

Records: ingest and reduce times for 1k to 10M records from ``bench/results/ingest*.json``
(run ``bench/bench_ingest.py --sizes 1000 10000 100000 --readers ingest reduce`` and the
default ``bench/bench_ingest.py`` first).

Results: ``bench/results/growth.json``, ``growth.md`` and ``growth.png``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._util import RESULTS, Timer, machine, md_table, quiet_warnings, write_results  # noqa: E402


def sample_case(models: int, tasks: int, per_cell: int, draws: int,
                cell_effect: str | None = None, group_effects: str | None = None
                ) -> dict[str, Any]:
    import arviz as az
    import nutpie

    import selfmodel.models.scale as scale
    from selfmodel.fitting.compile_cache import compiled_model
    from selfmodel.records.simulate import simulate_scale_cells

    cells, _ = simulate_scale_cells(seed=11, n_families=models // 5, sizes_per_family=5,
                                    n_tasks=tasks, n_per_cell=per_cell)
    options = {"cell_effect": cell_effect} if cell_effect else {}
    if group_effects:
        options["group_effects"] = group_effects
    with Timer() as tc:
        compiled = compiled_model(scale.build(cells, **options))
    with Timer() as ts:
        idata = nutpie.sample(compiled, draws=draws, tune=draws, chains=4, cores=2, seed=1,
                              target_accept=0.95, progress_bar=False)
    ess = float(az.ess(idata.posterior["beta"], method="bulk"))
    row = {"models": models, "tasks": tasks, "cells": cells.height, "records_per_cell": per_cell,
           "records": int(cells["n"].sum()), "compile_s": round(tc.wall, 2),
           "sample_wall_s": round(ts.wall, 2), "sample_cpu_s": round(ts.cpu, 2),
           "divergences": int(idata.sample_stats["diverging"].sum()),
           "ess_bulk_beta": round(ess, 1), "ess_per_s": round(ess / ts.wall, 1)}
    if cell_effect:
        from selfmodel.fitting.sampling import diagnose

        d = diagnose(idata)
        n_centred = int(scale.centred_cells(cells["n"].to_numpy(), cells["k"].to_numpy(),
                                            cell_effect).sum())  # type: ignore[arg-type]
        row.update(cell_effect=cell_effect, group_effects=group_effects or "non_centred",
                   centred_cells=n_centred, max_rhat=d["max_rhat"],
                   min_ess_bulk=d["min_ess_bulk"],
                   beta_mean=round(float(idata.posterior["beta"].mean()), 4),
                   beta_sd=round(float(idata.posterior["beta"].std()), 4))
    print(row, flush=True)
    return row


def ingest_points() -> list[dict[str, Any]]:
    pts = []
    # (file, readers taken from it): 1k-100k, then 1M/10M ingest and reduce (DuckDB since
    # issue 31: ingest_sizes.json's reduce rows are the polars block reader it replaced)
    for name, readers in (("ingest_sizes.json", ("ingest",)),
                          ("ingest.json", ("ingest",)), ("ingest_reduce.json", ("reduce",))):
        path = RESULTS / name
        if path.exists():
            for r in json.loads(path.read_text())["rows"]:
                if r.get("reader") in readers and "wall_s" in r:
                    pts.append({k: r[k] for k in ("n", "format", "reader", "wall_s", "cpu_s",
                                                  "peak_rss_mib")})
    return pts


def plot(sampling: list[dict[str, Any]], ingest: list[dict[str, Any]]) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8), dpi=80)
    ax = axes[0]
    grid = [r for r in sampling if r["records_per_cell"] == 300]
    by_models = sorted((r for r in grid if r["tasks"] == 10), key=lambda r: r["cells"])
    by_tasks = sorted((r for r in grid if r["models"] == 50), key=lambda r: r["cells"])
    by_recs = sorted((r for r in sampling if r["models"] == 50 and r["tasks"] == 10),
                     key=lambda r: r["records_per_cell"])
    for rows, label, marker in ((by_models, "models 10/50/200 (10 tasks)", "o"),
                                (by_tasks, "tasks 3/10/30 (50 models)", "s")):
        ax.plot([r["cells"] for r in rows], [r["sample_cpu_s"] for r in rows], marker=marker,
                label=label)
    ax.plot([500] * len(by_recs), [r["sample_cpu_s"] for r in by_recs], "k^", ls="none",
            label="50x10, 30/300/3000 records per cell")
    ax.set(xscale="log", yscale="log", xlabel="cells (model x task)",
           ylabel="sampling CPU s (4 x 500 draws)", title="Fitting grows with cells")
    ax.legend(fontsize=7)
    ax = axes[1]
    for (reader, fmt), style in {("ingest", "parquet"): "o-", ("ingest", "csv"): "s-",
                                 ("ingest", "jsonl"): "^-", ("reduce", "parquet"): "o--",
                                 ("reduce", "csv"): "s--", ("reduce", "jsonl"): "^--"}.items():
        pts = sorted((p for p in ingest if p["reader"] == reader and p["format"] == fmt),
                     key=lambda p: p["n"])
        if pts:
            ax.plot([p["n"] for p in pts], [p["cpu_s"] for p in pts], style,
                    label=f"{reader} {fmt}", ms=4)
    ax.set(xscale="log", yscale="log", xlabel="records", ylabel="CPU s",
           title="Reading grows with records")
    ax.legend(fontsize=7)
    fig.tight_layout()
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / "growth.png"
    fig.savefig(path)
    return path


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--plot", action="store_true", help="only redraw from bench/results")
    ap.add_argument("--cell-effect", action="store_true",
                    help="compare cell-effect parameterisations (see the module docstring)")
    args = ap.parse_args()
    quiet_warnings()
    if args.cell_effect:
        info = {"machine": machine(),
                "command": " ".join(["bench/bench_growth.py", *sys.argv[1:]])}
        plan = [("non_centred", "non_centred"), ("centred", "non_centred"),
                ("auto", "non_centred"), ("centred", "centred"), ("non_centred", "centred")]
        rows = [sample_case(50, 10, n, 500, ce, ge) for n in (3000, 300) for ce, ge in plan]
        for r in rows:
            r["ess_beta_per_cpu_s"] = round(r["ess_bulk_beta"] / r["sample_cpu_s"], 1)
        table = md_table(rows, ["records_per_cell", "cell_effect", "group_effects",
                                "centred_cells",
                                "sample_wall_s", "sample_cpu_s", "divergences", "max_rhat",
                                "ess_bulk_beta", "min_ess_bulk", "ess_beta_per_cpu_s",
                                "beta_mean", "beta_sd"])
        write_results("growth_cell_effect", {**info, "sampling": rows}, table)
        print(table)
        return
    if args.plot:
        saved = json.loads((RESULTS / "growth.json").read_text())
        print(plot(saved["sampling"], ingest_points()))
        return
    info = {"machine": machine(), "command": " ".join(["bench/bench_growth.py", *sys.argv[1:]])}
    if args.quick:
        plan, draws = [(10, 3, 300), (10, 3, 3000)], 100
    else:
        plan = [(10, 10, 300), (50, 10, 300), (200, 10, 300), (50, 3, 300), (50, 30, 300),
                (50, 10, 30), (50, 10, 3000)]
        draws = 500  # half the pipeline's draws: the shape of the growth, not the target
    rows = [sample_case(m, t, n, draws) for m, t, n in plan]
    table = md_table(rows, ["models", "tasks", "cells", "records_per_cell", "records",
                            "compile_s", "sample_wall_s", "sample_cpu_s", "divergences",
                            "ess_bulk_beta", "ess_per_s"],
                     {"records": lambda v: f"{v:,}"})
    name = "growth_quick" if args.quick else "growth"
    write_results(name, {**info, "sampling": rows}, table)
    if not args.quick:
        print(plot(rows, ingest_points()))
    print(table)


if __name__ == "__main__":
    main()
