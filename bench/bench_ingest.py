"""Ingest throughput and peak memory: selfmodel.records.ingest.ingest vs a plain pandas read vs reduce.

    .venv/bin/python bench/bench_ingest.py            # 1M and 10M records (about 10 min)
    .venv/bin/python bench/bench_ingest.py --quick    # 100k records (under a minute)

For each size and format (JSONL, CSV, Parquet; files from bench/gen_records.py in
/tmp) one child process per reader measures wall time, CPU time and peak RSS:

* ``ingest``  -- ``selfmodel.records.ingest.ingest([file])`` (read, validate, deduplicate, account);
* ``pandas``  -- ``pd.read_json(lines=True)`` / ``pd.read_csv`` / ``pd.read_parquet``
  (the baseline: reading only, no validation);
* ``polars``  -- ``pl.read_ndjson`` / ``pl.read_csv`` / ``pl.read_parquet`` (reading only);
* ``reduce``  -- ``selfmodel.records.engines.reduce_records([file], engine="duckdb")`` with
  DuckDB's memory limit ``--memory-limit`` (what ``selfmodel reduce --memory-limit`` sets): the
  out-of-core reduction to cells, de-duplicating, spilling to disk beyond the limit;
* ``scan``    -- polars' own ``scan_ndjson`` / ``scan_csv`` / ``scan_parquet`` with a
  ``group_by(model, task).len()`` on the streaming engine (not in the default run).

``--formats parquet_sorted`` adds the records ingest writes for the Parquet file (already in
key order: ingest checks that and skips its sort).

``--profile`` also writes a cProfile of ingest at the smallest size per format to
``bench/results/ingest_profile_<fmt>.txt`` (top 25 by cumulative time; its first line says
when and at which commit).
Results: ``bench/results/ingest.json`` and ``ingest.md``.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import gen_records  # noqa: E402
from bench._util import (  # noqa: E402
    RESULTS,
    ROOT,
    Timer,
    child_report,
    machine,
    md_table,
    peak_rss_mib,
    provenance,
    quiet_warnings,
    run_child,
    write_results,
)

READERS = ("ingest", "reduce", "polars", "pandas", "scan")


#: DuckDB's memory limit of the ``reduce`` reader (``--memory-limit``).
MEMORY_LIMIT = "512MB"


def child(reader: str, path: str, memory_limit: str = MEMORY_LIMIT) -> None:
    quiet_warnings()
    p = Path(path)
    fmt = p.suffix.lstrip(".")
    import pandas as pd
    import polars as pl

    from selfmodel.records.cells import to_cells
    from selfmodel.records.engines import reduce_records
    from selfmodel.records.ingest import ingest

    base = peak_rss_mib()  # after imports: the reader's own memory is peak - base
    if reader == "ingest":
        with Timer() as t:
            res = ingest([p])
        with Timer() as tc:
            cells = to_cells(res.records)
        rows = res.summary["records_read"]
        extra = {"to_cells_s": round(tc.wall, 3), "cells": cells.height,
                 "records_used": res.summary["records_used"]}
    elif reader == "reduce":
        with Timer() as t:
            res = reduce_records([p], engine="duckdb",
                                 engine_options={"memory_limit": memory_limit})
        rows = res.summary["records_read"]
        extra = {"cells": res.cells.height, "memory_limit": memory_limit}
    elif reader == "polars":
        with Timer() as t:
            frame = (pl.read_ndjson(p) if fmt == "jsonl" else
                     pl.read_csv(p) if fmt == "csv" else pl.read_parquet(p))
        rows, extra = frame.height, {}
    elif reader == "scan":  # polars' own streaming scan: does its memory stay flat?
        scan = (pl.scan_ndjson(p, schema={c: pl.Utf8() for c in pl.read_ndjson(p, n_rows=1000).columns})
                if fmt == "jsonl" else pl.scan_csv(p, infer_schema=False) if fmt == "csv"
                else pl.scan_parquet(p))
        with Timer() as t:
            frame = scan.group_by("model", "task").len().collect(engine="streaming")
        rows, extra = int(frame["len"].sum()), {"cells": frame.height}
    else:
        with Timer() as t:
            frame = (pd.read_json(p, lines=True) if fmt == "jsonl" else
                     pd.read_csv(p) if fmt == "csv" else pd.read_parquet(p))
        rows, extra = len(frame), {}
    child_report({"reader": reader, "format": fmt, "rows": rows, "wall_s": round(t.wall, 3),
                  "cpu_s": round(t.cpu, 3), "base_rss_mib": round(base, 1), **extra})


def profile(path: Path, fmt: str) -> None:
    from selfmodel.records.ingest import ingest

    pr = cProfile.Profile()
    pr.enable()
    ingest([path])
    pr.disable()
    buf = io.StringIO()
    st = pstats.Stats(pr, stream=buf)
    st.sort_stats("cumulative").print_stats(25)
    text = buf.getvalue().replace(str(Path(sys.prefix)), "<venv>").replace(str(ROOT), "<repo>")
    when = provenance()
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / f"ingest_profile_{fmt}.txt").write_text(
        f"# measured_utc {when['measured_utc']} commit {when['commit']} file {path.name}\n" + text)


def sorted_parquet(n: int) -> Path:
    """``OUT/records.parquet`` as ``selfmodel ingest`` writes it for the ``n``-record file:
    canonical columns, already in key order (ingest then skips its sort)."""
    from selfmodel.records.ingest import ingest

    path = gen_records.SCRATCH / f"records_{n}_sorted.parquet"
    if not path.exists():
        src = gen_records.write(n, ["parquet"])["parquet"]
        tmp = path.with_suffix(".tmp")
        ingest([src]).records.write_parquet(tmp)
        tmp.replace(path)
    return path


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--child", nargs=3, metavar=("READER", "PATH", "MEMORY_LIMIT"))
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--sizes", type=int, nargs="+")
    ap.add_argument("--formats", nargs="+", default=["parquet", "csv", "jsonl"],
                    help="also parquet_sorted: ingest's own output of the parquet file")
    ap.add_argument("--readers", nargs="+", default=[r for r in READERS if r != "scan"])
    ap.add_argument("--skip-pandas-jsonl-above", type=int, default=2_000_000,
                    help="pandas' JSONL reader needs ~10x the file in memory; skip it above this")
    ap.add_argument("--memory-limit", default=MEMORY_LIMIT,
                    help=f"DuckDB's memory limit of the reduce reader (default {MEMORY_LIMIT})")
    ap.add_argument("--profile", action="store_true")
    ap.add_argument("--name", help="results file name (default ingest / ingest_quick)")
    args = ap.parse_args()
    if args.child:
        child(*args.child)
        return
    sizes = args.sizes or ([100_000] if args.quick else [1_000_000, 10_000_000])
    info = {"machine": machine(), "command": " ".join(["bench/bench_ingest.py", *sys.argv[1:]])}
    rows = []
    for n in sizes:
        files = gen_records.write(n, [f for f in args.formats if f != "parquet_sorted"])
        if "parquet_sorted" in args.formats:
            files["parquet_sorted"] = sorted_parquet(n)
        for fmt in args.formats:
            for reader in args.readers:
                if reader == "pandas" and fmt == "jsonl" and n > args.skip_pandas_jsonl_above:
                    continue
                r = run_child("bench_ingest.py", [reader, str(files[fmt]), args.memory_limit])
                r.update(n=n, format=fmt, reader=reader,
                         file_mib=round(files[fmt].stat().st_size / 2**20, 1))
                if "wall_s" in r:
                    r["records_per_s"] = round(r["rows"] / r["wall_s"])
                    r["records_per_cpu_s"] = round(r["rows"] / max(r["cpu_s"], 1e-9))
                    r["rss_bytes_per_record"] = round(
                        (r["peak_rss_mib"] - r["base_rss_mib"]) * 2**20 / r["rows"], 1)
                print({k: r.get(k) for k in ("n", "format", "reader", "wall_s", "cpu_s",
                                             "records_per_s", "peak_rss_mib", "error")},
                      flush=True)
                rows.append(r)
        if args.profile and n == min(sizes):
            for fmt in args.formats:
                profile(files[fmt], fmt)
    table = md_table(
        rows,
        ["n", "format", "reader", "wall_s", "cpu_s", "records_per_s", "records_per_cpu_s",
         "peak_rss_mib", "rss_bytes_per_record"],
        {"records_per_s": lambda v: f"{v:,.0f}", "records_per_cpu_s": lambda v: f"{v:,.0f}",
         "n": lambda v: f"{v:,}"},
    )
    name = args.name or ("ingest_quick" if args.quick else "ingest")
    write_results(name, {**info, "rows": rows}, table)
    print(table)


if __name__ == "__main__":
    main()
