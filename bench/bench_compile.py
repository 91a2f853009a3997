"""First vs second compile of the scale model in new processes, with and without compile_cache.

    .venv/bin/python bench/bench_compile.py           # about 5 min on the shared 2-core machine
    .venv/bin/python bench/bench_compile.py --quick   # in-process memo only (about 1 min)

Each configuration gets an empty cache folder, then three child processes run one after
another: ``cold`` (empty cache), ``same`` (same data again) and ``new_data`` (another data
set of the same shape: 16 models x 3 tasks). Configurations:

* ``plain``  -- ``nutpie.compile_pymc_model(model)`` with PyTensor's numba cache in the
  empty folder (what ``analysis/fitting/sampling.py`` does today);
* ``shared`` -- ``selfmodel.fitting.compile_cache.compiled_model(model, cache_dir)``.

A last child compiles twice in one process with ``compiled_model`` (second call with new
data: the in-memory memo). Reported: compile wall and CPU seconds per child.
Results: ``bench/results/compile.json`` and ``compile.md``.

``--fit`` measures what matters for ``selfmodel run``: the pipeline's models (``scale``,
``sdt``) on the default data (``data_raw/``), compiled plain or through ``compiled_model``
with an empty cache, then sampled with the pipeline's ``SamplerSettings``: compile and
sampling CPU seconds, leapfrog steps and CPU microseconds per step (a gradient), each in
its own child process. Results: ``bench/results/compile_fit.json``.
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._util import (  # noqa: E402
    SCRATCH,
    Timer,
    child_report,
    machine,
    md_table,
    quiet_warnings,
    run_child,
    write_results,
)


def child(mode: str, seed: str, cache: str) -> None:
    quiet_warnings()
    with Timer() as ti:
        import nutpie

        import selfmodel.models.scale as scale
        from selfmodel.fitting import compile_cache
        from selfmodel.records.simulate import simulate_scale_cells
    compile_cache.configure_cache(cache)

    def model(s: int):
        cells, _ = simulate_scale_cells(seed=s, n_families=4, sizes_per_family=4, n_tasks=3)
        return scale.build(cells)

    out = {"import_s": round(ti.wall, 2)}
    with Timer() as t:
        if mode == "plain":
            nutpie.compile_pymc_model(model(int(seed)))
        else:
            compile_cache.compiled_model(model(int(seed)), cache)
    out.update(compile_wall_s=round(t.wall, 2), compile_cpu_s=round(t.cpu, 2))
    if mode == "memo":
        with Timer() as t2:
            compile_cache.compiled_model(model(int(seed) + 100), cache)
        out.update(second_wall_s=round(t2.wall, 2), second_cpu_s=round(t2.cpu, 2),
                   memo=compile_cache.memo_info())
    child_report(out)


def default_cells(model: str):
    import polars as pl

    from bench._util import ROOT
    from selfmodel.analyses.model_inputs import sdt_cells
    from selfmodel.records.cells import build_cells
    from selfmodel.records.ingest import ingest
    from selfmodel.records.registry import load_registry

    res = ingest([ROOT / "data_raw" / "records.csv"])
    cells = build_cells(res.records, load_registry(ROOT / "data_raw" / "registry.csv"))
    usable = cells.filter(pl.col("x").is_not_null() & (pl.col("n") > 0))
    return sdt_cells(usable) if model == "sdt" else usable


def fit_child(mode: str, model: str, cache: str) -> None:
    quiet_warnings()
    import nutpie

    from selfmodel import models
    from selfmodel.fitting import compile_cache
    from selfmodel.fitting.sampling import SamplerSettings

    compile_cache.configure_cache(cache)
    module = models.get(model)
    data = default_cells(model)
    pm_model = module.build(data.select([c for c in module.REQUIRED_COLUMNS if c in data.columns]))
    with Timer() as tc:
        if mode == "plain":
            compiled = nutpie.compile_pymc_model(pm_model)
        else:
            compiled = compile_cache.compiled_model(pm_model, cache)
    s = SamplerSettings()
    with Timer() as ts:
        idata = nutpie.sample(compiled, draws=s.draws, tune=s.tune, chains=s.chains,
                              cores=s.cores, seed=20261130, target_accept=s.target_accept,
                              progress_bar=False, save_warmup=True)
    steps = int(idata.sample_stats["n_steps"].sum() + idata.warmup_sample_stats["n_steps"].sum())
    child_report({"compile_wall_s": round(tc.wall, 2), "compile_cpu_s": round(tc.cpu, 2),
                  "sample_wall_s": round(ts.wall, 2), "sample_cpu_s": round(ts.cpu, 2),
                  "leapfrog_steps": steps, "us_cpu_per_step": round(1e6 * ts.cpu / steps, 2),
                  "divergences": int(idata.sample_stats["diverging"].sum())})


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--child", nargs="+", help="MODE SEED CACHE, or fit MODE MODEL CACHE")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--fit", action="store_true", help="the pipeline's models, compile + sample")
    args = ap.parse_args()
    if args.child and args.child[0] == "fit":
        fit_child(*args.child[1:])
        return
    if args.child:
        child(*args.child)
        return
    if args.fit:
        info = {"machine": machine(), "command": " ".join(["bench/bench_compile.py", *sys.argv[1:]])}
        rows = []
        for model in ("scale", "sdt"):
            for mode in ("plain", "shared"):
                cache = SCRATCH / f"compile-fit-{mode}-{model}"
                shutil.rmtree(cache, ignore_errors=True)
                r = run_child("bench_compile.py", ["fit", mode, model, str(cache)],
                              env={"PYTENSOR_FLAGS": f"base_compiledir={cache / 'pytensor'}"})
                r.update(model=model, config=mode)
                print(r, flush=True)
                rows.append(r)
        table = md_table(rows, ["model", "config", "compile_wall_s", "compile_cpu_s",
                                "sample_wall_s", "sample_cpu_s", "leapfrog_steps",
                                "us_cpu_per_step", "divergences"])
        write_results("compile_fit", {**info, "rows": rows}, table)
        print(table)
        return
    info = {"machine": machine(), "command": " ".join(["bench/bench_compile.py", *sys.argv[1:]])}
    rows = []
    plan = [] if args.quick else [
        ("plain", [("cold", 1), ("same", 1), ("new_data", 2)]),
        ("shared", [("cold", 1), ("same", 1), ("new_data", 2)]),
    ]
    for mode, steps in plan:
        cache = SCRATCH / f"compile-cache-{mode}"
        shutil.rmtree(cache, ignore_errors=True)
        for step, seed in steps:
            r = run_child("bench_compile.py", [mode, str(seed), str(cache)])
            r.update(config=mode, step=step)
            print(r, flush=True)
            rows.append(r)
    cache = SCRATCH / "compile-cache-shared"
    r = run_child("bench_compile.py", ["memo", "3", str(cache)])
    r.update(config="shared", step="first call in process (warm disk cache)")
    rows.append(r)
    rows.append({"config": "shared", "step": "second call, new data (memo)",
                 "compile_wall_s": r.get("second_wall_s"), "compile_cpu_s": r.get("second_cpu_s")})
    print(rows[-2:], flush=True)
    table = md_table(rows, ["config", "step", "compile_wall_s", "compile_cpu_s", "process_wall_s"])
    write_results("compile_quick" if args.quick else "compile", {**info, "rows": rows}, table)
    print(table)


if __name__ == "__main__":
    main()
