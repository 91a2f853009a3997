"""What grows with the records at fixed cells: the record-level steps, 1x against 10x records.

    .venv/bin/python bench/profile_records.py [--repeats 10]

The default data with every record once and ``--repeats`` times (``sample`` 0..r-1, as in
``bench/bench_pipeline.py``'s ``records_10x``): the same models, tasks and items. Each step of
the pipeline that reads records rather than cells is timed on both, in this process (wall
and CPU seconds), together with one fit of the verdict model on each cell table (same
structure and shapes, so the second compile is reused in-process): its sampling time, the
leapfrog steps per draw and the bulk ESS of the slope. Results:
``bench/results/records_growth.json`` / ``.md``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._util import ROOT, Timer, machine, md_table, quiet_warnings, write_results  # noqa: E402
from bench.bench_pipeline import dataset  # noqa: E402


def _steps(folder: Path) -> list[tuple[str, Callable[[dict[str, Any]], Any]]]:
    from selfmodel.analyses.frequentist import run_frequentist
    from selfmodel.analyses.rescoring import self_vs_other_rescored
    from selfmodel.analyses.skill import confidence_calibration, skill_table
    from selfmodel.analyses.training import training_table
    from selfmodel.records import cells as cells_mod
    from selfmodel.records.ingest import ingest
    from selfmodel.records.registry import load_registry
    from selfmodel.robustness.missingness import missingness

    def _ingest(s: dict[str, Any]) -> None:
        s["reg"] = load_registry(folder / "registry.csv")
        s["records"] = ingest([folder / "records.csv"], registry=folder / "registry.csv").records

    def _cells(s: dict[str, Any]) -> None:
        s["cells"] = cells_mod.build_cells(s["records"], s["reg"], scale="params")

    def _sizes(s: dict[str, Any]) -> dict[str, float]:
        import math

        per = s["cells"].select("model", "params_b").unique("model").drop_nulls()
        return {m: math.log10(v) for m, v in per.iter_rows() if v and v > 0}

    tasks = lambda s: sorted(s["cells"]["task"].unique().to_list())  # noqa: E731
    return [
        ("ingest", _ingest),
        ("build_cells", _cells),
        ("frequentist", lambda s: run_frequentist(s["cells"], seed=1,
                                                  derived=cells_mod.derived_models(s["reg"]))),
        ("skill_table", lambda s: skill_table(s["records"])),
        ("calibration", lambda s: confidence_calibration(s["records"])),  # the step's name in bench/results
        ("self_vs_other_rescored", lambda s: self_vs_other_rescored(s["records"], _sizes(s), seed=1)),
        ("missingness", lambda s: missingness(s["records"], s["cells"])),
        ("training_table", lambda s: training_table(s["records"], s["reg"], tasks(s))),
    ]


def _fit_row(cells: Any) -> dict[str, Any]:
    import polars as pl

    from selfmodel.common import arviz_ops
    from selfmodel.fitting.sampling import SamplerSettings, fit

    data = cells.filter(pl.col("x").is_not_null())
    with Timer() as t:
        f = fit("scale", data, seed=1, settings=SamplerSettings(), reuse_compiled=True)
    stats = f.idata["sample_stats"].to_dataset()
    steps = float(stats["n_steps"].mean()) if "n_steps" in stats else None
    import arviz as az

    ess = az.ess(arviz_ops.posterior(f.idata)[["beta"]])["beta"]
    return {"step": "fit scale (compile reused on 10x)", "wall_s": round(t.wall, 2),
            "cpu_s": round(t.cpu, 2), "leapfrog_per_draw": steps,
            "ess_bulk_beta": round(float(ess), 0)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=10)
    ap.add_argument("--no-fit", action="store_true")
    args = ap.parse_args()
    quiet_warnings()
    info = {"machine": machine(), "command": " ".join(["bench/profile_records.py", *sys.argv[1:]])}
    rows: list[dict[str, Any]] = []
    for reps in (1, args.repeats):
        folder = dataset(reps) if reps > 1 else ROOT / "data_raw"
        state: dict[str, Any] = {}
        for name, fn in _steps(folder):
            with Timer() as t:
                fn(state)
            rows.append({"records": f"{reps}x", "step": name, "wall_s": round(t.wall, 3),
                         "cpu_s": round(t.cpu, 3)})
            print(rows[-1], flush=True)
        if not args.no_fit:
            rows.append({"records": f"{reps}x", **_fit_row(state["cells"])})
            print(rows[-1], flush=True)
    ratios = {}
    for r in rows:
        if r["records"] != "1x":
            base = next(b for b in rows if b["records"] == "1x" and b["step"] == r["step"])
            ratios[r["step"]] = round(r["cpu_s"] / max(base["cpu_s"], 1e-3), 2)
    table = md_table(rows, ["records", "step", "wall_s", "cpu_s", "leapfrog_per_draw",
                            "ess_bulk_beta"])
    table += "\n" + "\n".join(f"- CPU {args.repeats}x / 1x, {k}: {v}" for k, v in ratios.items()) + "\n"
    write_results("records_growth", {**info, "rows": rows, "ratios": ratios}, table)
    print(table)


if __name__ == "__main__":
    main()
