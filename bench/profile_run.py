"""Where a whole ``selfmodel run`` spends its time: seconds per stage, and every fit.

    .venv/bin/python bench/profile_run.py DATA --out OUT [--name NAME] [--cprofile]

Runs :func:`selfmodel.pipeline.stages.run` in this process (the default options of ``selfmodel
run``, with the report) and records

* wall and CPU seconds of each stage of ``selfmodel.pipeline.stages.STAGES`` and of the report;
* every ``nutpie.compile_pymc_model`` call (wall seconds) and every ``nutpie.sample`` call
  (wall seconds, draws), with the stage it ran in: the number of fits the run made;
* optionally a cProfile listing of the whole run (``--cprofile``).

For a *cold* run, point PyTensor and the project at empty compile caches first, e.g.
``PYTENSOR_FLAGS=base_compiledir=/tmp/x SELFMODEL_CACHE_DIR=/tmp/y``. Results go to
``bench/results/<name>.json`` / ``.md`` (default ``run_profile``).
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._util import ROOT, machine, md_table, write_results  # noqa: E402


def _instrument(events: list[dict[str, Any]], where: list[str]) -> None:
    """Wrap nutpie's compile and sample so each call is recorded with its stage."""
    import nutpie

    def wrap(name: str, fn: Any) -> Any:
        def inner(*args: Any, **kwargs: Any) -> Any:
            t0 = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                events.append({"call": name, "stage": where[-1],
                               "wall_s": round(time.perf_counter() - t0, 2),
                               "draws": kwargs.get("draws")})
        return inner

    nutpie.compile_pymc_model = wrap("compile", nutpie.compile_pymc_model)
    nutpie.sample = wrap("sample", nutpie.sample)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("data", type=Path)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--name", default="run_profile")
    ap.add_argument("--cprofile", action="store_true")
    ap.add_argument("--no-report", action="store_true")
    args = ap.parse_args()
    info = {"machine": machine(), "command": " ".join(["bench/profile_run.py", *sys.argv[1:]])}
    t_import = time.perf_counter()
    from selfmodel.cli import build_parser, run_config
    from selfmodel.pipeline import stages as pipeline

    import_s = time.perf_counter() - t_import
    events: list[dict[str, Any]] = []
    where = ["import"]
    _instrument(events, where)
    stages: list[dict[str, Any]] = [{"stage": "import", "wall_s": round(import_s, 2)}]

    def timed(fn: Any) -> Any:
        def inner(*a: Any, **k: Any) -> Any:
            where.append(fn.__name__)
            w0, c0 = time.perf_counter(), time.process_time()
            try:
                return fn(*a, **k)
            finally:
                stages.append({"stage": fn.__name__, "wall_s": round(time.perf_counter() - w0, 2),
                               "cpu_s": round(time.process_time() - c0, 2)})
                where.pop()
        return inner

    pipeline.STAGES = tuple(timed(s) for s in pipeline.STAGES)
    pipeline.render_report = timed(pipeline.render_report)
    argv = ["run", str(args.data), "--out", str(args.out)] + (["--no-report"] if args.no_report else [])
    cfg = run_config(build_parser().parse_args(argv), report=not args.no_report)
    prof = cProfile.Profile() if args.cprofile else None
    w0, c0 = time.perf_counter(), time.process_time()
    if prof is not None:
        prof.enable()
    pipeline.run(cfg, progress=lambda m: print(f"{time.perf_counter() - w0:7.1f}s {m}", flush=True))
    if prof is not None:
        prof.disable()
    total = {"stage": "TOTAL (run)", "wall_s": round(time.perf_counter() - w0, 2),
             "cpu_s": round(time.process_time() - c0, 2)}
    stages.append(total)
    for s in stages:
        s["fits"] = sum(1 for e in events if e["call"] == "sample" and e["stage"] == s["stage"])
        s["compile_s"] = round(sum(e["wall_s"] for e in events
                                   if e["call"] == "compile" and e["stage"] == s["stage"]), 1)
        s["sample_s"] = round(sum(e["wall_s"] for e in events
                                  if e["call"] == "sample" and e["stage"] == s["stage"]), 1)
    total["fits"] = sum(1 for e in events if e["call"] == "sample")
    total["compile_s"] = round(sum(e["wall_s"] for e in events if e["call"] == "compile"), 1)
    total["sample_s"] = round(sum(e["wall_s"] for e in events if e["call"] == "sample"), 1)
    table = md_table(stages, ["stage", "wall_s", "cpu_s", "fits", "compile_s", "sample_s"])
    if prof is not None:
        buf = io.StringIO()
        pstats.Stats(prof, stream=buf).sort_stats("cumulative").print_stats(60)
        text = buf.getvalue().replace(str(Path(sys.prefix)), "<venv>").replace(str(ROOT), ".")
        (ROOT / "bench" / "results" / f"{args.name}_cprofile.txt").write_text(text)
    write_results(args.name, {**info, "stages": stages, "events": events}, table)
    print(table)


if __name__ == "__main__":
    main()
