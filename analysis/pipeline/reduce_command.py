"""``selfmodel reduce``: validate logs and reduce them to cells on DuckDB or Spark.

Registered by :func:`add_reduce_parser` (one call in :mod:`selfmodel.cli`); writes
``OUT/cells.parquet`` -- the table ``selfmodel run`` writes and fits (cells joined with the
registry and the centred scale predictor) -- and ``OUT/reduce.json`` (the row accounting).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from selfmodel.common import atomic, outputs
from selfmodel.common.outputs import out_folder
from selfmodel.records.contract import SCALE_COLUMNS, InputError
from selfmodel.records.engines import ENGINES, reduce_records
from selfmodel.records.ingest import parse_map_options
from selfmodel.records.ingest.discover import resolve_inputs
from selfmodel.records.registry import load_registry

# selfmodel.cli imports this module for every command; cells (NumPy) and pipeline (PyMC)
# are therefore imported inside run_reduce, only when ``selfmodel reduce`` runs.


def add_reduce_parser(sub: Any) -> None:
    """Add the ``reduce`` subcommand to ``selfmodel``'s subparsers."""
    p = sub.add_parser(
        "reduce",
        help="validate and count logs on DuckDB (default) or Spark: OUT/cells.parquet, reduce.json",
        description=(
            "The ingest rules and the GROUP BY to model x task cells, run by an SQL engine: "
            "for logs larger than one machine's memory (DuckDB spills to disk) or than one "
            "machine (Spark). Writes OUT/cells.parquet (what `selfmodel run` fits) and "
            "OUT/reduce.json (records read = used + quarantined + duplicate)."
        ),
    )
    p.add_argument("paths", nargs="+", type=Path, help="record files or folders")
    p.add_argument("--registry", type=Path, help="model registry (CSV or TOML) joined on 'model'")
    p.add_argument("--map", action="append", default=[], metavar="CANON=COLUMN",
                   help="map a column of your logs to a canonical one, e.g. item_id=question_id")
    p.add_argument("--config", type=Path, help="TOML ingest config ([map], tasks, [defaults])")
    p.add_argument("--scale", choices=list(SCALE_COLUMNS), default="params",
                   help="scale variable of the x column (as for `selfmodel run`)")
    p.add_argument("--engine", choices=list(ENGINES), default=ENGINES[0],
                   help="duckdb (embedded, default) or spark (pyspark)")
    p.add_argument("--spark-master", default=None, metavar="URL",
                   help="Spark master (default local[*], or $SPARK_MASTER): spark://host:7077, yarn, ...")
    p.add_argument("--memory-limit", default=None, metavar="SIZE",
                   help="DuckDB: memory to use before spilling to a temporary folder, e.g. 2GB")
    p.add_argument("--out", type=out_folder, required=True)
    p.set_defaults(handler=run_reduce)


def run_reduce(args: argparse.Namespace, say: Any = print) -> int:
    """Run ``selfmodel reduce``; returns the exit status."""
    from selfmodel.records.cells import derived_models, join_registry, scale_values

    outputs.check_out(args.out, outputs.REDUCE, say)  # before any reading: refused at once
    outputs.check_apart(args.out, [*args.paths, args.registry, args.config])
    inputs = resolve_inputs(args.paths, args.registry)
    outputs.check_apart(args.out, [*inputs.record_paths, inputs.registry])
    options: dict[str, Any] = {}
    if args.engine == "spark" and args.spark_master:
        options["master"] = args.spark_master
    if args.memory_limit:
        if args.engine != "duckdb":
            raise InputError("reduce: --memory-limit is for --engine duckdb; give Spark its "
                             "memory with spark-submit or the cluster's settings.")
        options["memory_limit"] = args.memory_limit
    say(f"reducing {len(inputs.record_paths)} file(s) with {args.engine}")
    res = reduce_records(
        inputs.record_paths, engine=args.engine, mapping=parse_map_options(args.map),
        config=args.config, engine_options=options,
    )
    registry = load_registry(inputs.registry) if inputs.registry else None
    # as the pipeline: checkpoints derived from a base are off the scale axis (no x)
    cells = scale_values(
        join_registry(res.cells, registry), args.scale, derived=derived_models(registry)
    )
    summary = {**res.summary, "files_not_read": inputs.not_read,
               "registry": str(inputs.registry) if inputs.registry else None,
               "scale": args.scale, "cells": cells.height}
    with outputs.staged(args.out, say, writes=outputs.REDUCE) as folder:
        atomic.write_parquet(folder / "cells.parquet", cells)
        atomic.write_json(folder / "reduce.json", summary)
    s = res.summary
    print(f"records read {s['records_read']}, used {s['records_used']}, quarantined "
          f"{s['records_quarantined']}, duplicate {s['records_duplicate']}; "
          f"{cells.height} cells -> {args.out / 'cells.parquet'}")
    return 0
