"""Ingest side by side, in one run: selfmodel's ingest vs plain polars and DuckDB reads.

    .venv/bin/python bench/bench_engines.py                  # 1M records, JSONL/CSV/Parquet
    .venv/bin/python bench/bench_engines.py --quick          # 100k records
    .venv/bin/python bench/bench_engines.py --readers ingest polars duckdb_read reduce_spark

For each format (files from bench/gen_records.py) one child process per reader measures
wall time, CPU time and peak RSS of:

* ``ingest``        -- ``selfmodel.records.ingest.ingest([file])`` then ``to_cells`` (the pipeline);
* ``polars``        -- ``pl.read_ndjson`` / ``pl.read_csv`` / ``pl.read_parquet`` (reading only);
* ``duckdb_read``   -- DuckDB's ``read_json`` / ``read_csv`` / ``read_parquet`` into a polars
  frame (reading only, every column);
* ``reduce_duckdb`` -- ``selfmodel.records.engines.reduce_records([file], engine="duckdb")`` (the
  same validation, duplicates and accounting as ingest, on DuckDB, down to the cells);
* ``reduce_spark``  -- the same on Spark in local mode (on request; includes starting the
  JVM, reported separately as ``session_s``).

The ratios in the table divide each reader's wall (and CPU) time by the plain polars read
and by the plain DuckDB read of the same file, measured in the same run.
Results: ``bench/results/engines.json`` and ``engines.md``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import gen_records  # noqa: E402
from bench._util import (  # noqa: E402
    Timer,
    child_report,
    machine,
    md_table,
    peak_rss_mib,
    quiet_warnings,
    run_child,
    write_results,
)

READERS = ("ingest", "polars", "duckdb_read", "reduce_duckdb")
ALL_READERS = (*READERS, "reduce_spark")


def child(reader: str, path: str) -> None:
    quiet_warnings()
    p = Path(path)
    fmt = p.suffix.lstrip(".")
    import duckdb
    import polars as pl

    from selfmodel.records.cells import to_cells
    from selfmodel.records.engines import reduce_records
    from selfmodel.records.ingest import ingest

    extra: dict = {}
    base = peak_rss_mib()
    if reader == "ingest":
        with Timer() as t:
            res = ingest([p])
            cells = to_cells(res.records)
        rows, extra = res.summary["records_read"], {"cells": cells.height}
    elif reader == "polars":
        with Timer() as t:
            frame = (pl.read_ndjson(p) if fmt == "jsonl" else
                     pl.read_csv(p) if fmt == "csv" else pl.read_parquet(p))
        rows = frame.height
    elif reader == "duckdb_read":
        fn = {"jsonl": "read_json", "csv": "read_csv", "parquet": "read_parquet"}[fmt]
        with Timer() as t:
            con = duckdb.connect()
            frame = con.sql(f"SELECT * FROM {fn}('{p.as_posix()}')").pl()
            con.close()
        rows = frame.height
    elif reader == "reduce_duckdb":
        with Timer() as t:
            res = reduce_records([p], engine="duckdb")
        rows, extra = res.summary["records_read"], {"cells": res.cells.height}
    else:
        from selfmodel.records.engines.spark_engine import spark_session

        with Timer() as ts:
            session = spark_session("local[*]")
        with Timer() as t:
            res = reduce_records([p], engine="spark", engine_options={"session": session})
        session.stop()
        rows = res.summary["records_read"]
        extra = {"cells": res.cells.height, "session_s": round(ts.wall, 3),
                 "note": "CPU time counts the Python driver only, not the JVM"}
    child_report({"reader": reader, "format": fmt, "rows": rows, "wall_s": round(t.wall, 3),
                  "cpu_s": round(t.cpu, 3), "base_rss_mib": round(base, 1), **extra})


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--child", nargs=2, metavar=("READER", "PATH"))
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--n", type=int, default=None)
    ap.add_argument("--formats", nargs="+", default=["parquet", "csv", "jsonl"])
    ap.add_argument("--readers", nargs="+", default=list(READERS), choices=list(ALL_READERS))
    ap.add_argument("--name", help="results file name (default engines / engines_quick)")
    args = ap.parse_args()
    if args.child:
        child(*args.child)
        return
    n = args.n or (100_000 if args.quick else 1_000_000)
    info = {"machine": machine(), "command": " ".join(["bench/bench_engines.py", *sys.argv[1:]]),
            "n": n}
    files = gen_records.write(n, args.formats)
    rows = []
    for fmt in args.formats:
        measured = {}
        for reader in args.readers:
            r = run_child("bench_engines.py", [reader, str(files[fmt])])
            r.update(n=n, format=fmt, reader=reader,
                     file_mib=round(files[fmt].stat().st_size / 2**20, 1))
            if "wall_s" in r:
                r["records_per_s"] = round(r["rows"] / r["wall_s"])
                measured[reader] = r
            print({k: r.get(k) for k in ("format", "reader", "wall_s", "cpu_s", "peak_rss_mib",
                                         "error")}, flush=True)
            rows.append(r)
        for r in rows:
            if r["format"] != fmt or "wall_s" not in r:
                continue
            for base in ("polars", "duckdb_read"):
                if base in measured:
                    for unit in ("wall", "cpu"):
                        r[f"{unit}_over_{base}"] = round(
                            r[f"{unit}_s"] / max(measured[base][f"{unit}_s"], 1e-9), 2)
    table = md_table(
        rows,
        ["format", "reader", "wall_s", "cpu_s", "records_per_s", "peak_rss_mib",
         "wall_over_polars", "cpu_over_polars", "wall_over_duckdb_read",
         "cpu_over_duckdb_read"],
        {"records_per_s": lambda v: f"{v:,.0f}"},
    )
    name = args.name or ("engines_quick" if args.quick else "engines")
    write_results(name, {**info, "rows": rows}, table)
    print(table)


if __name__ == "__main__":
    main()
