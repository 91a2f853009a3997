"""Shared helpers for the benchmark scripts: child processes, timing, machine facts, output.

Every measurement that needs its own peak memory or a fresh interpreter runs in a child
process (``python bench/<script>.py --child ...``); the child prints one JSON line with its
wall time, CPU time (user + system, all threads) and peak resident memory
(``VmHWM`` of ``/proc/self/status``). CPU time is reported beside wall time
because the benchmark machine is shared: wall time is inflated by other people's jobs,
CPU time much less so.
"""

from __future__ import annotations

import json
import os
import platform
import resource
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results"
SCRATCH = Path(os.environ.get("SELFMODEL_BENCH_TMP", "/tmp/selfmodel-bench"))
PYTHON = sys.executable


def machine() -> dict[str, Any]:
    """Facts about the machine and the load on it when a benchmark started."""
    try:
        load = os.getloadavg()
    except OSError:  # pragma: no cover
        load = (float("nan"),) * 3
    mem_gib = None
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemTotal"):
                    mem_gib = round(int(line.split()[1]) / 2**20, 1)
    except OSError:  # pragma: no cover
        pass
    return {
        "cpus": os.cpu_count(),
        "mem_gib": mem_gib,
        "load_avg_1_5_15": [round(x, 2) for x in load],
        "platform": platform.platform(),
        "python": platform.python_version(),
        "shared_machine": True,
    }


class Timer:
    """Wall and CPU seconds of a block (CPU: this process, all threads)."""

    def __enter__(self) -> Timer:
        self.w0, self.c0 = time.perf_counter(), time.process_time()
        return self

    def __exit__(self, *exc: object) -> None:
        self.wall = time.perf_counter() - self.w0
        self.cpu = time.process_time() - self.c0


def peak_rss_mib() -> float:
    """Peak resident memory of this process so far, MiB.

    Read from ``VmHWM`` in ``/proc/self/status``: unlike ``ru_maxrss``, it starts afresh at
    ``exec``, so a child does not inherit its parent's peak.
    """
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:  # pragma: no cover - not Linux
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def child_report(payload: dict[str, Any]) -> None:
    """Print a child's result as the last line of its stdout."""
    payload = {**payload, "peak_rss_mib": round(peak_rss_mib(), 1)}
    print("@@RESULT " + json.dumps(payload), flush=True)


def run_child(
    script: str, args: Sequence[str], *, env: dict[str, str] | None = None, timeout: float = 3600
) -> dict[str, Any]:
    """Run ``bench/<script> --child args...`` and return its JSON result plus outer timings."""
    cmd = [PYTHON, str(ROOT / "bench" / script), "--child", *args]
    t0 = time.perf_counter()
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    proc = subprocess.run(
        cmd, cwd=ROOT, env={**os.environ, **(env or {})}, capture_output=True, text=True,
        timeout=timeout, check=False,
    )
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    outer = {
        "process_wall_s": round(time.perf_counter() - t0, 3),
        "process_cpu_s": round((r1.ru_utime + r1.ru_stime) - (r0.ru_utime + r0.ru_stime), 3),
    }
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("@@RESULT ")]
    if proc.returncode != 0 or not lines:
        tail = (proc.stderr or proc.stdout)[-2000:]
        return {"error": f"exit {proc.returncode}: {tail}", "cmd": " ".join(cmd), **outer}
    return {**json.loads(lines[-1][len("@@RESULT "):]), **outer}


def run_command(cmd: Sequence[str], *, env: dict[str, str] | None = None) -> dict[str, Any]:
    """Run a command; return wall and CPU seconds of it and its children, and peak RSS."""
    timed = ["/usr/bin/time", "-f", "@@TIME %e %U %S %M", *cmd]
    proc = subprocess.run(
        timed, cwd=ROOT, env={**os.environ, **(env or {})}, capture_output=True, text=True,
        check=False,
    )
    line = [ln for ln in proc.stderr.splitlines() if ln.startswith("@@TIME ")]
    if not line:
        return {"error": f"exit {proc.returncode}: {proc.stderr[-2000:]}", "cmd": " ".join(cmd)}
    wall, user, system, max_kib = line[-1].split()[1:]
    return {
        "exit": proc.returncode,
        "wall_s": float(wall),
        "cpu_s": round(float(user) + float(system), 2),
        "peak_rss_mib": round(int(max_kib) / 1024, 1),
        "cmd": " ".join(cmd),
        **({"stderr_tail": proc.stderr[-1500:]} if proc.returncode else {}),
    }


def provenance() -> dict[str, Any]:
    """``measured_utc`` and ``commit`` (``+uncommitted`` when analysis/, models/ or bench/ differ)."""
    try:
        commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
                                capture_output=True, text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--",
                                "analysis", "models", "bench/*.py"],
                               capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        commit, dirty = "unknown", ""
    return {"measured_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "commit": commit + ("+uncommitted" if dirty else "")}


def write_results(name: str, payload: dict[str, Any], table: str | None = None) -> Path:
    """Write ``bench/results/<name>.json`` (and ``<name>.md`` when a table is given)."""
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"{name}.json"
    payload = {**provenance(), **payload}  # when and on which commit it was measured
    path.write_text(json.dumps(payload, indent=2, sort_keys=True, default=str) + "\n")
    if table is not None:
        (RESULTS / f"{name}.md").write_text(table.rstrip() + "\n")
    return path


def md_table(rows: Sequence[dict[str, Any]], columns: Sequence[str],
             fmt: dict[str, Callable[[Any], str]] | None = None) -> str:
    """A Markdown table of ``rows`` restricted to ``columns``."""
    fmt = fmt or {}
    head = "| " + " | ".join(columns) + " |\n|" + "---|" * len(columns) + "\n"
    body = ""
    for r in rows:
        cells = []
        for c in columns:
            v = r.get(c, "")
            cells.append(fmt[c](v) if c in fmt and v not in ("", None) else (
                f"{v:.3g}" if isinstance(v, float) else str(v)))
        body += "| " + " | ".join(cells) + " |\n"
    return head + body


def quiet_warnings() -> None:
    """Silence library warnings in child processes (they only clutter the output)."""
    import warnings

    warnings.filterwarnings("ignore")


def pipeline_ratios(by_step: dict[str, dict[str, Any]]) -> dict[str, float]:
    """Ratios of the pipeline steps: unchanged second over first run, 10x over 1x records."""
    ratios: dict[str, float] = {}
    for key, (num, den) in {"first_over_naive": ("first", "naive"),
                            "second_over_naive": ("second", "naive"),
                            "other_data_over_first": ("other_data", "first"),
                            "second_over_first": ("second", "first"),
                            "one_record_over_first": ("one_record", "first"),
                            "records_10x_over_1x": ("records_10x", "records_1x")}.items():
        if num in by_step and den in by_step:
            for unit in ("wall", "cpu"):
                ratios[f"{key}_{unit}"] = round(
                    by_step[num][f"{unit}_s"] / by_step[den][f"{unit}_s"], 3)
    return ratios
