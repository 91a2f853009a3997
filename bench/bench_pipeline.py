"""Whole-pipeline timings: first vs unchanged second `selfmodel run`, report, 10x records.

    .venv/bin/python bench/bench_pipeline.py           # about 10 min on the shared 2-core machine
    .venv/bin/python bench/bench_pipeline.py --quick   # imports only (smoke test)

Steps (each a new process, timed with /usr/bin/time: wall, CPU of it and its children,
peak RSS; phase times from ``OUT/run.json``):

1. ``first``       -- ``selfmodel run data_raw --out A`` with an *empty* PyTensor compile
                      cache (``PYTENSOR_FLAGS=base_compiledir=<fresh dir>``): the cost a new
                      machine pays;
2. ``second``      -- the same command again: the saved fit is reused (``OUT/fits``);
3. ``warm_refit``  -- ``--out B`` (no saved fit) with the now warm compile cache;
4. ``report``      -- ``selfmodel report --out A`` (report rendering alone);
5. ``imports``     -- ``python -c 'import selfmodel.pipeline.stages, selfmodel.report.document, pymc, nutpie'``;
6. ``records_1x`` / ``records_10x`` -- ``selfmodel run --no-report`` on the default data
                      with every record once and ten times (``sample`` 0..9): the same models
                      and tasks, 10x the records; warm compile cache, no saved fit.
7. ``one_record``  -- after ``first``: the default data with one record's prediction flipped
                      (:func:`one_record_changed`), run into a copy of ``A`` (its saved fits
                      and rerun key are there, and stale): every fit depends on every record
                      of its cells, so the target is this run against ``first``.

8. ``naive``       -- one naive PyMC fit of the main model in a new process with an *empty*
                      compile cache: import, ``models.get("scale").build(cells)`` on the
                      default data, ``pm.sample()`` with PyMC's defaults (4 chains,
                      ``cores=2``); issue 32's yardstick for ``first`` (target: at most 1.5x);
9. ``other_data``  -- after ``first``: a cold run on *another* simulated data set with the
                      same models (``selfmodel simulate --seed 7``; other records, the same
                      design) into an empty ``--out``, the compile cache as ``first`` left it
                      (target: at most 0.5x ``first``).

Results: ``bench/results/pipeline.json`` and ``pipeline.md``.
"""

from __future__ import annotations

import argparse
import ast
import json
import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._util import (  # noqa: E402
    PYTHON,
    ROOT,
    SCRATCH,
    machine,
    md_table,
    pipeline_ratios,
    run_command,
    write_results,
)

SELFMODEL = str(Path(PYTHON).parent / "selfmodel")


def phases(out: Path) -> dict[str, object]:
    try:
        info = json.loads((out / "run.json").read_text())
    except OSError:
        return {}
    got: dict[str, object] = {k: info.get(k) for k in ("seconds_to_results", "seconds_total",
                                                       "sampling_seconds", "fit_reused")}
    # after a first run into an empty OUT: the number of fits it sampled
    got["fits_saved"] = len(list(out.glob("fits/*.nc")))
    return got


def dataset(repeats: int) -> Path:
    """The default data with every record repeated ``repeats`` times (``sample`` 0..r-1).

    Same models, tasks and items, ``repeats`` times the records. (``simulate`` with
    ``SimulationConfig(repeats=10)`` would be the natural source, but it currently fails in
    ``pl.concat`` -- object vs string ``prediction`` columns -- so the records are copied.)
    """
    import polars as pl

    folder = SCRATCH / f"data_{repeats}x"
    if not (folder / "records.csv").exists():
        folder.mkdir(parents=True, exist_ok=True)
        base = pl.read_csv(ROOT / "data_raw" / "records.csv", infer_schema_length=0)
        reps = [base.with_columns(pl.lit(str(i)).alias("sample")) for i in range(repeats)]
        pl.concat(reps).write_csv(folder / "records.csv")
        shutil.copy(ROOT / "data_raw" / "registry.csv", folder / "registry.csv")
    return folder


def one_record_changed() -> tuple[Path, dict[str, str]]:
    """The default data with the prediction of its first binary record flipped; which one."""
    import polars as pl

    folder = SCRATCH / "data_one_record"
    folder.mkdir(parents=True, exist_ok=True)
    base = pl.read_csv(ROOT / "data_raw" / "records.csv", infer_schema_length=0)
    i = base["prediction"].is_in(["true", "false"]).arg_true()[0]
    old = base["prediction"][i]
    new = "false" if old == "true" else "true"
    changed = base.with_columns(
        pl.when(pl.int_range(pl.len()) == i).then(pl.lit(new)).otherwise(pl.col("prediction"))
        .alias("prediction"))
    changed.write_csv(folder / "records.csv")
    shutil.copy(ROOT / "data_raw" / "registry.csv", folder / "registry.csv")
    row = base.row(i, named=True)
    return folder, {"model": row["model"], "task": row["task"], "item_id": row["item_id"],
                    "prediction": f"{old} -> {new}"}


#: Step ``naive``: one fit of the main model as a PyMC user would write it.
NAIVE_FIT = """
import pymc as pm
import polars as pl
from selfmodel import models
from selfmodel.records.cells import build_cells
from selfmodel.records.ingest import ingest
from selfmodel.records.registry import load_registry
records = ingest(["data_raw/records.csv"], registry="data_raw/registry.csv").records
cells = build_cells(records, load_registry("data_raw/registry.csv"), scale="params")
usable = cells.filter(pl.col("x").is_not_null() & (pl.col("n") > 0))
with models.get("scale").build(usable):
    pm.sample(chains=4, cores=2, random_seed=1, progressbar=False)
"""


def other_data() -> Path:
    """Another simulated data set with the default design (``selfmodel simulate --seed 7``)."""
    folder = SCRATCH / "data_other_seed"
    if not (folder / "records.csv").exists():
        run_command([SELFMODEL, "simulate", "--seed", "7", "--out", str(folder)])
    return folder


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--steps", nargs="+",
                    default=["first", "second", "warm_refit", "records_1x", "records_10x",
                             "report", "imports"])
    ap.add_argument("--name", help="results file name (default pipeline / pipeline_quick)")
    ap.add_argument("--merge-log", type=Path,
                    help="also take the rows printed by an earlier run of this script (its "
                         "stdout), e.g. to finish an interrupted run with --steps")
    args = ap.parse_args()
    info = {"machine": machine(), "command": " ".join(["bench/bench_pipeline.py", *sys.argv[1:]])}
    work = SCRATCH / "pipeline"
    rows = []
    if args.merge_log:
        for line in args.merge_log.read_text().splitlines():
            if line.startswith("{") and "'step'" in line:
                old = ast.literal_eval(line)
                if old["step"] not in args.steps:
                    rows.append(old)

    def step(name: str, cmd: list[str], out: Path | None = None, env: dict | None = None) -> dict:
        r = run_command(cmd, env=env)
        r["step"] = name
        if out is not None:
            r.update(phases(out))
        print(r, flush=True)
        rows.append(r)
        return r

    a, b = work / "A", work / "B"
    cold = {"PYTENSOR_FLAGS": f"base_compiledir={work / 'pytensor-cold'}",
            "SELFMODEL_CACHE_DIR": str(work / "selfmodel-cache-cold")}
    if not args.quick:
        if "first" in args.steps:
            shutil.rmtree(work, ignore_errors=True)
        work.mkdir(parents=True, exist_ok=True)
        if "naive" in args.steps:
            naive = work / "naive"
            shutil.rmtree(naive, ignore_errors=True)
            step("naive", [PYTHON, "-c", NAIVE_FIT], None,
                 {"PYTENSOR_FLAGS": f"base_compiledir={naive / 'pytensor'}",
                  "SELFMODEL_CACHE_DIR": str(naive / "selfmodel-cache")})
        if "first" in args.steps:
            step("first", [SELFMODEL, "run", "data_raw", "--out", str(a)], a, cold)
        if "second" in args.steps:
            step("second", [SELFMODEL, "run", "data_raw", "--out", str(a)], a, cold)
        if "other_data" in args.steps:
            d = work / "D"
            shutil.rmtree(d, ignore_errors=True)
            step("other_data", [SELFMODEL, "run", str(other_data()), "--out", str(d)], d, cold)
        if "warm_refit" in args.steps:
            step("warm_refit", [SELFMODEL, "run", "data_raw", "--out", str(b)], b, cold)
        if "one_record" in args.steps:
            data, changed = one_record_changed()
            c = work / "A-one-record"
            shutil.rmtree(c, ignore_errors=True)
            shutil.copytree(a, c)  # the first run's outputs, saved fits included
            r = step("one_record", [SELFMODEL, "run", str(data), "--out", str(c)], c, cold)
            r["changed_record"] = changed
        for reps in (1, 10):
            if f"records_{reps}x" in args.steps:
                data, out = dataset(reps), work / f"R{reps}"
                shutil.rmtree(out, ignore_errors=True)
                step(f"records_{reps}x", [SELFMODEL, "run", str(data), "--out", str(out),
                                          "--no-report"], out, cold)
        report_out = a
    else:
        # smoke test: imports only (rendering into someone's build/ would overwrite it)
        report_out = None
    if report_out is not None and "report" in args.steps:
        step("report", [SELFMODEL, "report", "--out", str(report_out)])
    if "second_profile" in args.steps:
        # cProfile of an unchanged second run (on a copy of A, fits reused): where it goes
        prof_out, prof = work / "A-profile", work / "second.prof"
        shutil.rmtree(prof_out, ignore_errors=True)
        shutil.copytree(a, prof_out)
        step("second_profile", [PYTHON, "-m", "cProfile", "-o", str(prof), SELFMODEL, "run",
                                "data_raw", "--out", str(prof_out)], prof_out, cold)
        import io
        import pstats

        buf = io.StringIO()
        pstats.Stats(str(prof), stream=buf).sort_stats("cumulative").print_stats(40)
        text = buf.getvalue().replace(str(Path(sys.prefix)), "<venv>").replace(str(ROOT), ".")
        (ROOT / "bench" / "results" / "second_run_profile.txt").write_text(text)
    if "imports" in args.steps:
        step("imports", [PYTHON, "-c", "import selfmodel.pipeline.stages, selfmodel.report.document, pymc, nutpie"])
    by = {r["step"]: r for r in rows if "wall_s" in r}
    ratios = pipeline_ratios(by)
    table = md_table(rows, ["step", "wall_s", "cpu_s", "peak_rss_mib", "seconds_to_results",
                            "seconds_total", "sampling_seconds", "fit_reused", "fits_saved"])
    table += "\n" + "\n".join(f"- {k}: {v}" for k, v in ratios.items()) + "\n"
    write_results(args.name or ("pipeline_quick" if args.quick else "pipeline"),
                  {**info, "rows": rows, "ratios": ratios}, table)
    print(table)


if __name__ == "__main__":
    main()
