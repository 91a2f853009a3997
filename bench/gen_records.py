"""Write synthetic canonical self-prediction records for the ingest benchmarks.

    .venv/bin/python bench/gen_records.py --n 1000000 --formats jsonl csv parquet

Files go to ``$SELFMODEL_BENCH_TMP`` (default ``/tmp/selfmodel-bench``) as
``records_<n>.<ext>``; they are never committed. 50 models x 10 tasks, ``n / 500`` items
per task, one row per model x task x item (no duplicates), 2% unreadable predictions,
binary prediction/outcome written as ``"true"``/``"false"``, a confidence and a cluster.
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import numpy as np
import polars as pl

try:
    from bench._util import SCRATCH
except ModuleNotFoundError:  # run as a script
    from _util import SCRATCH

EXT = {"jsonl": "jsonl", "csv": "csv", "parquet": "parquet"}


def records(n: int, *, n_models: int = 50, n_tasks: int = 10, seed: int = 1) -> pl.DataFrame:
    """``n`` canonical records (rounded down to whole items), deterministic for ``seed``."""
    rng = np.random.default_rng(seed)
    items = max(1, math.ceil(n / (n_models * n_tasks)))
    idx = np.arange(n, dtype=np.int64)
    model = idx % n_models
    task = (idx // n_models) % n_tasks
    item = idx // (n_models * n_tasks)
    skill = rng.normal(0.3, 0.4, n_models)[model]
    outcome = rng.random(n) < 0.6
    correct = rng.random(n) < 1 / (1 + np.exp(-skill))
    pred = np.where(correct, outcome, ~outcome)
    unread = rng.random(n) < 0.02
    conf = np.round(rng.uniform(0.5, 0.99, n), 3)
    assert item.max() < items
    return pl.DataFrame(
        {
            "model": model, "task": task, "item": item,
            "pred": pred, "outcome": outcome, "unread": unread, "confidence": conf,
        }
    ).select(
        pl.format("model-{}", pl.col("model")).alias("model"),
        pl.format("task-{}", pl.col("task")).alias("task"),
        pl.format("item-{}", pl.col("item")).alias("item_id"),
        pl.when(pl.col("unread")).then(None)
        .otherwise(pl.col("pred").cast(pl.Utf8).str.to_lowercase()).alias("prediction"),
        pl.col("outcome").cast(pl.Utf8).str.to_lowercase().alias("outcome"),
        pl.when(pl.col("unread")).then(None).otherwise(pl.col("confidence")).alias("confidence"),
        pl.format("set-{}", pl.col("item") // 25).alias("cluster"),
        pl.when(pl.col("unread")).then(pl.lit("unparsed")).otherwise(pl.lit("ok")).alias("status"),
    )


def path_for(n: int, fmt: str) -> Path:
    """Where :func:`write` puts ``n`` records in format ``fmt``."""
    return SCRATCH / f"records_{n}.{EXT[fmt]}"


def write(n: int, formats: list[str], *, force: bool = False) -> dict[str, Path]:
    """Write the files that do not exist yet; return format -> path."""
    SCRATCH.mkdir(parents=True, exist_ok=True)
    out = {f: path_for(n, f) for f in formats}
    todo = [f for f, p in out.items() if force or not p.exists()]
    if not todo:
        return out
    frame = records(n)
    for f in todo:
        tmp = out[f].with_suffix(out[f].suffix + ".tmp")
        if f == "csv":
            frame.write_csv(tmp)
        elif f == "jsonl":
            frame.write_ndjson(tmp)
        else:
            frame.write_parquet(tmp)
        tmp.replace(out[f])
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, nargs="+", default=[1_000_000])
    ap.add_argument("--formats", nargs="+", default=list(EXT), choices=list(EXT))
    ap.add_argument("--force", action="store_true")
    args = ap.parse_args()
    for n in args.n:
        for f, p in write(n, args.formats, force=args.force).items():
            print(f"{f}: {p} ({p.stat().st_size / 2**20:.0f} MiB)")


if __name__ == "__main__":
    main()
