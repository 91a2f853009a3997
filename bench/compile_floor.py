"""The floor of a cold default run: compiling each of its model structures once and sampling each once.

    .venv/bin/python bench/compile_floor.py     # about 5 min on the 2-core machine

A default ``selfmodel run`` fits five model structures (``scale``, ``sdt``,
``within_between``, ``pooled``, ``training``); every refit of the robustness stage is one of
them again. Each structure must be compiled at least once by a cold run (nutpie's numba
backend) and sampled at least once (its main fit) at the pipeline's settings for it. This
script measures those parts alone, in one benchmark run:

1. ``naive`` -- issue 32's yardstick: one naive PyMC fit of the main model in a new process
   with an empty compile cache (``bench/bench_pipeline.py``'s ``NAIVE_FIT``: import, build,
   ``pm.sample()`` with PyMC's defaults, 4 chains, ``cores=2``);
2. ``cold`` -- a new process, empty compile cache, compiles the five structures one after
   another on the default data (``nutpie.compile_pymc_model``, as the pipeline does), and
   samples each once with the run's ``SamplerSettings`` as the model's ``SPEC.sampling``
   raises them (``selfmodel.fitting.sampling.for_model``; the SDT model: 3000 draws after 1500
   tuning, target_accept 0.995): compile and sampling seconds of each;
3. ``warm`` -- a second new process does the same with the cache the first one left: what
   the on-disk cache cannot save (PyTensor's graph rewrites and nutpie's ``numba.cfunc``
   callbacks are built in every process; ``analysis/fitting/compile_cache.py``); it compiles
   only.

Reported ratios (``compile_floor.json``): summed CPU seconds, divided by the cores (2: the
most a run can overlap), against the naive fit's wall time -- of the compiles alone (cold
and warm) and of the cold compiles plus one sampling of each structure. The last is a lower
bound of a cold run's wall time against the naive fit, whatever the pipeline does around
its fits, as long as it fits these structures with this backend at these settings (every
refit, check, table and the report come on top).
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._util import (  # noqa: E402
    PYTHON,
    ROOT,
    SCRATCH,
    Timer,
    child_report,
    machine,
    md_table,
    quiet_warnings,
    run_child,
    run_command,
    write_results,
)

#: The model structures of a default run, in the order the pipeline first fits them.
STRUCTURES = ("scale", "sdt", "pooled", "within_between", "training")
#: Cores of the CI machine: a run can overlap at most this many compiles.
CORES = 2


def structure_data() -> dict[str, object]:
    """Each structure's data as the pipeline builds it from ``data_raw/``."""
    import polars as pl

    from selfmodel.analyses.model_inputs import sdt_cells
    from selfmodel.analyses.training import training_table
    from selfmodel.records.cells import build_cells
    from selfmodel.records.ingest import ingest
    from selfmodel.records.registry import load_registry

    registry = load_registry(ROOT / "data_raw" / "registry.csv")
    records = ingest([ROOT / "data_raw" / "records.csv"], registry=ROOT / "data_raw" / "registry.csv").records
    cells = build_cells(records, registry)
    usable = cells.filter(pl.col("x").is_not_null() & (pl.col("n") > 0))
    tasks = sorted(records["task"].unique().to_list())
    return {"scale": usable, "sdt": sdt_cells(usable), "pooled": usable,
            "within_between": usable, "training": training_table(records, registry, tasks)}


def child(cache: str, sample: str) -> None:
    """Compile every structure once in this process (and sample it once when ``sample`` is
    ``"sample"``); report seconds per structure."""
    quiet_warnings()
    with Timer() as ti:
        import nutpie

        from selfmodel import models
        from selfmodel.fitting.sampling import SamplerSettings, for_model, sample_nutpie
    data = structure_data()
    out: dict[str, object] = {"import_s": round(ti.wall, 2), "cache": cache}
    for name in STRUCTURES:
        module = models.get(name)
        frame = data[name]
        pm_model = module.build(frame.select([c for c in module.REQUIRED_COLUMNS  # type: ignore[attr-defined]
                                              if c in frame.columns]))  # type: ignore[attr-defined]
        with Timer() as t:
            compiled = nutpie.compile_pymc_model(pm_model)
        out[f"{name}_wall_s"] = round(t.wall, 2)
        out[f"{name}_cpu_s"] = round(t.cpu, 2)
        if sample == "sample":
            settings = for_model(SamplerSettings(), module.SPEC.sampling)  # type: ignore[attr-defined]
            with Timer() as ts:
                sample_nutpie(compiled, settings, seed=20261130)
            out[f"{name}_sample_wall_s"] = round(ts.wall, 2)
            out[f"{name}_sample_cpu_s"] = round(ts.cpu, 2)
            out[f"{name}_draws"] = settings.draws
    child_report(out)


def floor_ratios(rows: dict[str, dict[str, float]], cores: int = CORES) -> dict[str, float]:
    """Summed compile CPU per step, over ``cores``, against the naive fit's wall seconds."""
    naive = rows["naive"]["wall_s"]
    ratios: dict[str, float] = {}
    for step in ("cold", "warm"):
        total = sum(rows[step][f"{s}_cpu_s"] for s in STRUCTURES)
        ratios[f"{step}_compile_cpu_s"] = round(total, 2)
        ratios[f"{step}_compile_over_naive_wall"] = round(total / cores / naive, 3)
    sampled = sum(rows["cold"][f"{s}_sample_cpu_s"] for s in STRUCTURES)
    ratios["cold_sample_cpu_s"] = round(sampled, 2)
    ratios["cold_compile_and_sample_over_naive_wall"] = round(
        (ratios["cold_compile_cpu_s"] + sampled) / cores / naive, 3)
    return ratios


def floor_table(rows: dict[str, dict[str, Any]]) -> str:
    """The Markdown table of a result's rows: compile and sampling seconds per structure."""
    return md_table(
        [{"structure": s, "cold_compile_cpu_s": rows["cold"][f"{s}_cpu_s"],
          "warm_compile_cpu_s": rows["warm"][f"{s}_cpu_s"], "draws": rows["cold"][f"{s}_draws"],
          "sample_wall_s": rows["cold"][f"{s}_sample_wall_s"],
          "sample_cpu_s": rows["cold"][f"{s}_sample_cpu_s"]} for s in STRUCTURES],
        ["structure", "cold_compile_cpu_s", "warm_compile_cpu_s", "draws", "sample_wall_s",
         "sample_cpu_s"])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--child", nargs=2, metavar=("CACHE", "SAMPLE"))
    args = ap.parse_args()
    if args.child:
        child(*args.child)
        return
    from bench.bench_pipeline import NAIVE_FIT

    info = {"machine": machine(), "command": "bench/compile_floor.py", "cores": CORES}
    work = SCRATCH / "compile-floor"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    rows: dict[str, dict[str, float]] = {}
    naive = run_command([PYTHON, "-c", NAIVE_FIT],
                        env={"PYTENSOR_FLAGS": f"base_compiledir={work / 'naive'}"})
    print({"step": "naive", **naive}, flush=True)
    rows["naive"] = naive
    env = {"PYTENSOR_FLAGS": f"base_compiledir={work / 'pytensor'}"}
    for step in ("cold", "warm"):
        r = run_child("compile_floor.py", [str(work / "pytensor"), "sample" if step == "cold" else "compile"],
                      env=env)
        print({"step": step, **r}, flush=True)
        rows[step] = r
    ratios = floor_ratios(rows)
    table = floor_table(rows)
    write_results("compile_floor", {**info, "rows": rows, "ratios": ratios}, table)
    print(table)
    print(ratios)


if __name__ == "__main__":
    main()
