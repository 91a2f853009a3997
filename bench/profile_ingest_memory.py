"""Where ingest's peak memory goes: resident memory after, and peak during, each stage.

    .venv/bin/python bench/profile_ingest_memory.py [--formats jsonl parquet] [--n 1000000]
                                                    [--repeats 3] [--baseline 2762fcc]

Each run is a child process (a fresh interpreter, like ``bench/bench_ingest.py``'s) that
runs ``selfmodel.records.ingest.ingest([file])`` on the synthetic file of ``bench/gen_records.py``
(JSONL, CSV or Parquet; in memory, as ingest works up to 256 MiB of input) with its stages
wrapped: reading every batch and, inside it, polars' read, (JSONL) the duplicate-key check,
column resolution and validation, once per batch; then ordering/de-duplication, the
quarantine's raw texts, the binary-task rule and the summary. The peak of a streamed ingest
of large files is measured by ``bench/bench_ingest_large.py``.
For each stage it records the resident memory (``VmRSS``) before and after it and the peak
(``VmHWM``) while it ran, all minus the process's resident memory after imports (the
baseline ``bench_ingest.py`` subtracts too); the peak is reset (``/proc/self/clear_refs``)
at every stage boundary so that each stage's own peak is seen. tracemalloc cannot do this:
polars allocates in Rust.

The peak varies from run to run because polars' allocator (jemalloc) keeps freed pages for
a while, in per-thread arenas, so the runs are repeated (``--repeats``, medians reported),
and repeated once more with ``_RJEM_MALLOC_CONF=dirty_decay_ms:0,muzzy_decay_ms:0``
(freed pages returned at once: close to the live memory). ``--baseline COMMIT`` also
measures, the same two ways and on the same file, the whole ingest of the code at that commit
(from ``git archive``; a commit from before the package was renamed, when it was imported
as ``analysis``): the code as it was when an older result was taken.

Results: ``bench/results/ingest_memory_<format>.json`` and ``.md``.
"""

from __future__ import annotations

import argparse
import functools
import importlib
import statistics
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import gen_records  # noqa: E402
from bench._util import (  # noqa: E402
    ROOT,
    SCRATCH,
    Timer,
    child_report,
    machine,
    md_table,
    quiet_warnings,
    run_child,
    write_results,
)

MIB = 2**20
#: jemalloc (polars' allocator) returning freed pages at once.
DECAY0 = {"_RJEM_MALLOC_CONF": "dirty_decay_ms:0,muzzy_decay_ms:0"}


def _status() -> dict[str, float]:
    """``VmRSS`` and ``VmHWM`` of this process, MiB."""
    out: dict[str, float] = {}
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(("VmRSS:", "VmHWM:")):
                out[line.split(":")[0]] = int(line.split()[1]) / 1024
    return out


def _reset_peak() -> None:
    """Start ``VmHWM`` afresh at the current resident memory (Linux 4.0+)."""
    with open("/proc/self/clear_refs", "w") as fh:
        fh.write("5")


class _Stages:
    """Wraps functions; each call records RSS before/after and its own peak (nested calls too)."""

    def __init__(self) -> None:
        self.open: list[dict[str, Any]] = []  # calls in progress, outermost first
        self.done: list[dict[str, Any]] = []  # calls, in the order they started
        self.base = 0.0

    def _fold_peak(self) -> float:
        """Fold the peak since the last reset into every open call, reset it; current RSS."""
        s = _status()
        for rec in self.open:
            rec["peak"] = max(rec["peak"], s["VmHWM"])
        _reset_peak()
        return s["VmRSS"]

    def wrap(self, owner: Any, attr: str, label: str) -> None:
        fn: Callable[..., Any] = getattr(owner, attr)

        @functools.wraps(fn)
        def measured(*args: Any, **kwargs: Any) -> Any:
            rss = self._fold_peak()
            rec = {"stage": label, "depth": len(self.open), "before": rss, "peak": rss}
            self.open.append(rec)
            self.done.append(rec)
            timer = Timer().__enter__()
            try:
                return fn(*args, **kwargs)
            finally:
                timer.__exit__()
                rec["after"] = self._fold_peak()
                rec["cpu_s"] = round(timer.cpu, 3)
                self.open.pop()

        setattr(owner, attr, measured)

    def rows(self) -> list[dict[str, Any]]:
        return [{"stage": r["stage"], "depth": r["depth"],
                 "rss_before_mib": round(r["before"] - self.base, 1),
                 "peak_mib": round(r["peak"] - self.base, 1),
                 "rss_after_mib": round(r["after"] - self.base, 1),
                 "cpu_s": r["cpu_s"]} for r in self.done]


def _imports() -> None:
    """What ``bench_ingest.py``'s child imports before taking its baseline."""
    import pandas  # noqa: F401
    import polars  # noqa: F401


def child_stages(path: str) -> None:
    quiet_warnings()
    _imports()
    import polars as pl

    from selfmodel.records.ingest import readers, run, tables

    stages = _Stages()
    fmt = Path(path).suffix.lstrip(".")
    stages.wrap(run, "_read_files", "read and validate every batch (total)")
    polars_read = {"jsonl": "read_ndjson"}.get(fmt, f"read_{fmt}")
    stages.wrap(pl, polars_read, f"polars {polars_read}")
    stages.wrap(readers, "split_duplicate_keys", "duplicate-key check")
    stages.wrap(run, "resolve_columns", "resolve columns")
    stages.wrap(run, "validate", "validate")
    stages.wrap(tables, "order_and_deduplicate", "order and deduplicate")
    stages.wrap(tables, "fill_raw", "quarantine raw texts")
    stages.wrap(tables, "binary_task_rule", "binary-task rule")
    stages.wrap(run, "_summary", "summary")
    stages.wrap(run, "ingest", "ingest (total)")
    _reset_peak()
    stages.base = _status()["VmRSS"]
    res = run.ingest([Path(path)])
    child_report({"rows": res.summary["records_read"], "base_rss_mib": round(stages.base, 1),
                  "stages": stages.rows()})


def child_total(path: str, tree: str) -> None:
    """Peak of one whole ingest of the code in ``tree`` (its package imported as ``analysis``)."""
    quiet_warnings()
    _imports()
    sys.path.insert(0, tree)
    ingest = importlib.import_module("analysis.ingest").ingest
    assert str(Path(tree).resolve()) in str(Path(sys.modules["analysis.ingest"].__file__ or ""))
    _reset_peak()
    base = _status()["VmRSS"]
    with Timer() as t:
        res = ingest([Path(path)])
    child_report({"rows": res.summary["records_read"], "base_rss_mib": round(base, 1),
                  "peak_mib": round(_status()["VmHWM"] - base, 1), "cpu_s": round(t.cpu, 3)})


def _tree_at(commit: str) -> Path:
    """``analysis/`` and ``models/`` of ``commit``, unpacked under the scratch folder."""
    sha = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", commit],
                         capture_output=True, text=True, check=True).stdout.strip()
    tree = SCRATCH / f"code_{sha}"
    if not (tree / "analysis").exists():
        tree.mkdir(parents=True, exist_ok=True)
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", sha, "analysis", "models"],
                                 capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", str(tree)], input=archive, check=True)
    return tree


def _runs(args: list[str], repeats: int, env: dict[str, str] | None = None
          ) -> list[dict[str, Any]]:
    out = []
    for _ in range(repeats):
        r = run_child("profile_ingest_memory.py", args, env=env)
        if "error" in r:
            raise SystemExit(r["error"])
        out.append(r)
    return out


def _per_record(mib: float, n: int) -> float:
    return round(mib * MIB / n, 1)


def _median_stages(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per stage (same calls in the same order in every run): medians, and the peak's range."""
    n = runs[0]["rows"]
    out = []
    for i, first in enumerate(runs[0]["stages"]):
        got = [r["stages"][i] for r in runs]
        assert all(g["stage"] == first["stage"] for g in got)
        peak = statistics.median(g["peak_mib"] for g in got)
        out.append({
            "stage": first["stage"], "depth": first["depth"],
            "rss_before_mib": statistics.median(g["rss_before_mib"] for g in got),
            "peak_mib": peak,
            "peak_mib_min": min(g["peak_mib"] for g in got),
            "peak_mib_max": max(g["peak_mib"] for g in got),
            "rss_after_mib": statistics.median(g["rss_after_mib"] for g in got),
            "cpu_s": statistics.median(g["cpu_s"] for g in got),
            "peak_bytes_per_record": _per_record(peak, n),
        })
    return out


def _totals(peaks: list[float], n: int) -> dict[str, Any]:
    per = [_per_record(p, n) for p in peaks]
    return {"bytes_per_record": per, "median": statistics.median(per)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--child", nargs="+", metavar="ARG")
    ap.add_argument("--formats", nargs="+", default=["jsonl"], choices=["jsonl", "csv", "parquet"])
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--baseline", help="also measure the whole ingest of the code at this commit")
    ap.add_argument("--name", help="results file name, one format only (default "
                    "ingest_memory_<format>)")
    args = ap.parse_args()
    if args.child:
        child_stages(*args.child) if len(args.child) == 1 else child_total(*args.child)
        return
    info = {"machine": machine(),
            "command": " ".join(["bench/profile_ingest_memory.py", *sys.argv[1:]])}
    if args.name and len(args.formats) > 1:
        ap.error("--name takes one format")
    for fmt in args.formats:
        profile(fmt, args, info)


def profile(fmt: str, args: argparse.Namespace, info: dict[str, Any]) -> None:
    """Measure ingest of the ``fmt`` file and write ``ingest_memory_<fmt>``."""
    path = gen_records.write(args.n, [fmt])[fmt]
    runs = _runs([str(path)], args.repeats)
    decay0 = _runs([str(path)], args.repeats, env=DECAY0)
    n = runs[0]["rows"]
    stages, stages0 = _median_stages(runs), _median_stages(decay0)
    out: dict[str, Any] = {
        "n": n, "format": fmt, "file_mib": round(path.stat().st_size / MIB, 1),
        "repeats": args.repeats, "stages": stages, "stages_decay0": stages0,
        "decay0_env": DECAY0, "runs": runs, "runs_decay0": decay0,
        "total": _totals([r["stages"][0]["peak_mib"] for r in runs], n),
        "total_decay0": _totals([r["stages"][0]["peak_mib"] for r in decay0], n),
    }
    if args.baseline:
        tree = _tree_at(args.baseline)
        base = _runs([str(path), str(tree)], args.repeats)
        base0 = _runs([str(path), str(tree)], args.repeats, env=DECAY0)
        out["baseline"] = {"commit": tree.name.removeprefix("code_"), "runs": base,
                           **_totals([r["peak_mib"] for r in base], n), "runs_decay0": base0,
                           "decay0": _totals([r["peak_mib"] for r in base0], n)}
    columns = ["stage", "depth", "rss_before_mib", "peak_mib", "peak_mib_min", "peak_mib_max",
               "rss_after_mib", "cpu_s", "peak_bytes_per_record"]
    table = (md_table(stages, columns) + "\nWith freed pages returned at once "
             f"({DECAY0['_RJEM_MALLOC_CONF']}):\n\n" + md_table(stages0, columns))
    write_results(args.name or f"ingest_memory_{fmt}", {**info, **out}, table)
    print(table)
    print({k: out[k] for k in ("total", "total_decay0")},
          {k: v for k, v in out.get("baseline", {}).items() if not k.startswith("runs")})


if __name__ == "__main__":
    main()
