"""Peak memory of ``selfmodel ingest`` (and ``run``) on large JSONL files, streamed and in memory.

    .venv/bin/python bench/bench_ingest_large.py [--sizes 1000000 4000000 14500000]
        [--in-memory-max 4000000] [--baseline COMMIT] [--quick]
    .venv/bin/python bench/bench_ingest_large.py --sizes --run 14500000 --name run_large

Issue 50: ingest's memory grew with the input (274 MB peak for a 24 MB JSONL, 1,334 MB for
240 MB); ``ingest`` and ``run`` must stay within a stated bound on large inputs. For each
size (records of ``bench/gen_records.py``: 50 models x 10 tasks, about 148 bytes a line;
14.5M records are a 2.0 GiB file) this runs, each in a fresh process and in one benchmark
run, so that the figures are comparable:

* ``streamed``: ``selfmodel ingest FILE --out DIR`` with ``SELFMODEL_STREAM_ABOVE=0`` (the
  streamed ingest of ``selfmodel.records.ingest.stream``; above 256 MiB it is the default);
* ``in_memory``: the same command with ``SELFMODEL_STREAM_ABOVE=1T`` (every row at once), up
  to ``--in-memory-max`` records;
* ``baseline``: the same command on the code of ``--baseline`` (a commit, by default the
  merge base of ``main`` and this branch: ``main``'s ingest, which held every row in memory;
  its ``analysis/`` and ``models/`` unpacked from ``git archive`` and imported as
  ``selfmodel``), up to ``--in-memory-max`` records;
* ``run`` (``--run N``): ``selfmodel run FILE --registry REG --no-power --no-robustness
  --no-contrasts --no-report --models scale --preset exploratory --jobs 1`` (``REG``: the 50
  models in 5 families, 1 to 512 billion parameters), with the peak of each stage (the
  progress lines), the peak before the first fit, and the stage it was in if it was stopped
  after ``--run-timeout`` seconds (the record-level analyses after the fits grow with the
  records too).

Peak memory is measured two ways: the largest resident set of any one process
(``/usr/bin/time -f %M``: the kernel's high-water mark, exact) and the largest sum of the
resident sets of the process and all its children, polled 20 times a second with psutil
(the whole process tree; a spike shorter than 50 ms can be missed). Wall and CPU seconds
(user + system of the tree) are given beside them; the machine is shared, so CPU seconds
are the better cost. Results: ``bench/results/ingest_large.json`` and ``.md``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import gen_records  # noqa: E402
from bench._util import PYTHON, ROOT, SCRATCH, machine, md_table, write_results  # noqa: E402

MIB = 2**20
CLI = "import sys; from selfmodel.cli import main; sys.exit(main(sys.argv[1:]))"
RUN_OPTIONS = ["--no-power", "--no-robustness", "--no-contrasts", "--no-report",
               "--models", "scale", "--preset", "exploratory", "--jobs", "1"]


def baseline_tree(commit: str) -> Path:
    """``selfmodel`` of ``commit`` importable from the returned folder (``PYTHONPATH``)."""
    sha = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", commit],
                         capture_output=True, text=True, check=True).stdout.strip()
    tree = SCRATCH / f"selfmodel_{sha}"
    if not (tree / "selfmodel").exists():
        tree.mkdir(parents=True, exist_ok=True)
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", sha, "analysis", "models"],
                                 capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", str(tree)], input=archive, check=True)
        (tree / "analysis" / "models").symlink_to(tree / "models")
        (tree / "selfmodel").symlink_to(tree / "analysis")
    return tree


class TreeMonitor:
    """The largest summed RSS of a process and its descendants, polled in a thread."""

    def __init__(self, pid: int, interval: float = 0.05) -> None:
        self.proc = psutil.Process(pid)
        self.interval = interval
        self.peak = 0
        self.samples: list[tuple[float, int]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)
        self._thread.start()

    def _poll(self) -> None:
        t0 = time.perf_counter()
        while not self._stop.is_set():
            total = 0
            try:
                procs = [self.proc, *self.proc.children(recursive=True)]
            except psutil.Error:
                break
            for p in procs:
                try:
                    total += p.memory_info().rss
                except psutil.Error:
                    pass
            self.peak = max(self.peak, total)
            self.samples.append((time.perf_counter() - t0, total))
            self._stop.wait(self.interval)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


def measure(args: list[str], env: dict[str, str], timeout: float | None = None
            ) -> dict[str, Any]:
    """Run ``selfmodel ARGS`` under ``/usr/bin/time``; peaks, times and stderr lines.

    After ``timeout`` seconds the process tree is stopped: ``completed`` is then false and
    the peaks are those until then (the tree's high-water marks, read before stopping it).
    """
    cmd = ["/usr/bin/time", "-f", "@@TIME %e %U %S %M", PYTHON, "-c", CLI, *args]
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=ROOT, env={**os.environ, **env}, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    monitor = TreeMonitor(proc.pid)
    lines: list[tuple[float, str]] = []

    def read_err() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            lines.append((time.perf_counter() - t0, line.rstrip("\n")))

    reader = threading.Thread(target=read_err, daemon=True)
    reader.start()
    stdout: list[str] = []
    out_reader = threading.Thread(
        target=lambda: stdout.append(proc.stdout.read() if proc.stdout else ""), daemon=True)
    out_reader.start()
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        return _stopped(proc, monitor, lines, reader, t0)
    reader.join()
    out_reader.join()
    out = "".join(stdout)
    monitor.stop()
    timing = [ln for _, ln in lines if ln.startswith("@@TIME ")]
    if proc.returncode != 0 or not timing:
        tail = "\n".join(ln for _, ln in lines[-20:])
        raise SystemExit(f"{' '.join(args)} failed (exit {proc.returncode}):\n{tail}\n{out[-2000:]}")
    wall, user, system, maxrss_kb = timing[-1].split()[1:]
    return {"completed": True,
            "wall_s": round(float(wall), 1), "cpu_s": round(float(user) + float(system), 1),
            "peak_process_mib": round(int(maxrss_kb) / 1024, 1),
            "peak_tree_mib": round(monitor.peak / MIB, 1),
            "stderr": [(round(t, 2), ln) for t, ln in lines if not ln.startswith("@@TIME ")],
            "samples": monitor.samples, "stdout_tail": out[-500:]}


def _stopped(proc: subprocess.Popen, monitor: TreeMonitor, lines: list[tuple[float, str]],
             reader: threading.Thread, t0: float) -> dict[str, Any]:
    """Stop a process tree that ran out of time; what was measured until then."""
    tree = [psutil.Process(proc.pid), *psutil.Process(proc.pid).children(recursive=True)]
    hwm, cpu = 0, 0.0
    for p in tree:
        try:
            with open(f"/proc/{p.pid}/status") as fh:
                hwm = max([hwm] + [int(ln.split()[1]) for ln in fh if ln.startswith("VmHWM:")])
            times = p.cpu_times()
            cpu += times.user + times.system
        except (OSError, psutil.Error):
            pass
    for p in reversed(tree):
        try:
            p.kill()
        except psutil.Error:
            pass
    proc.wait()
    reader.join(timeout=5)
    monitor.stop()
    return {"completed": False, "wall_s": round(time.perf_counter() - t0, 1),
            "cpu_s": round(cpu, 1), "peak_process_mib": round(hwm / 1024, 1),
            "peak_tree_mib": round(monitor.peak / MIB, 1),
            "stderr": [(round(t, 2), ln) for t, ln in lines], "samples": monitor.samples,
            "stdout_tail": ""}


def registry_for(path: Path) -> Path:
    """A registry of the 50 models of ``bench/gen_records.py``: 5 families, 1 to 512 B."""
    reg = path.with_name("registry_large.csv")
    reg.write_text("model,family,params_b\n" + "".join(
        f"model-{i},family-{i % 5},{2 ** (i % 10)}\n" for i in range(50)))
    return reg


def stage_peaks(res: dict[str, Any]) -> list[dict[str, Any]]:
    """The tree's peak between each progress line and the next (the stage it names)."""
    marks = [(t, ln) for t, ln in res["stderr"] if ln.strip()]
    out = []
    for i, (t, line) in enumerate(marks):
        end = marks[i + 1][0] if i + 1 < len(marks) else float("inf")
        inside = [rss for s, rss in res["samples"] if t <= s < end]
        if inside:
            out.append({"from_s": t, "line": line[:100], "peak_tree_mib": round(max(inside) / MIB, 1)})
    return out


def clear(out_dir: Path) -> None:
    """Remove an output folder and what a stopped command may have left beside it."""
    for path in (out_dir, out_dir.with_name(f".{out_dir.name}.staging")):
        shutil.rmtree(path, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", type=int, nargs="*", default=[1_000_000, 4_000_000, 14_500_000])
    ap.add_argument("--in-memory-max", type=int, default=4_000_000)
    ap.add_argument("--baseline", default=None,
                    help="commit to compare with (default: where this branch left main)")
    ap.add_argument("--run", type=int, default=None, metavar="N")
    ap.add_argument("--run-timeout", type=float, default=1800.0, metavar="S",
                    help="stop the run after S seconds and report what it measured until then")
    ap.add_argument("--quick", action="store_true", help="100k records only, no run")
    ap.add_argument("--name", default="ingest_large")
    args = ap.parse_args()
    sizes = [100_000] if args.quick else args.sizes
    info: dict[str, Any] = {"machine": machine(),
                            "command": " ".join(["bench/bench_ingest_large.py", *sys.argv[1:]])}
    base = args.baseline or subprocess.run(["git", "-C", str(ROOT), "merge-base", "main", "HEAD"],
                                           capture_output=True, text=True, check=True).stdout.strip()
    tree = baseline_tree(base)
    info["baseline"] = {"ref": base, "tree": tree.name}
    rows: list[dict[str, Any]] = []
    out_dir = SCRATCH / "ingest_large_out"
    for n in sizes:
        path = gen_records.write(n, ["jsonl"])["jsonl"]
        modes = [("streamed", {"SELFMODEL_STREAM_ABOVE": "0"})]
        if n <= args.in_memory_max:
            modes.append(("in_memory", {"SELFMODEL_STREAM_ABOVE": "1T"}))
            modes.append(("baseline", {"PYTHONPATH": str(tree)}))
        for mode, env in modes:
            clear(out_dir)
            res = measure(["ingest", str(path), "--out", str(out_dir)], env)
            row = {"records": n, "file_mib": round(path.stat().st_size / MIB, 1), "mode": mode,
                   **{k: res[k] for k in ("wall_s", "cpu_s", "peak_process_mib",
                                          "peak_tree_mib")}}
            row["peak_per_file_byte"] = round(row["peak_tree_mib"] / row["file_mib"], 3)
            rows.append(row)
            print(row, flush=True)
        clear(out_dir)
    run_result = None
    if args.run and not args.quick:
        path = gen_records.write(args.run, ["jsonl"])["jsonl"]
        clear(out_dir)
        res = measure(["run", str(path), "--registry", str(registry_for(path)), "--out",
                       str(out_dir), *RUN_OPTIONS], {}, timeout=args.run_timeout)
        stages = stage_peaks(res)
        fit_at = next((s["from_s"] for s in stages if "fit" in s["line"].lower()
                       or "sampl" in s["line"].lower() or "compil" in s["line"].lower()), None)
        before = [s["peak_tree_mib"] for s in stages if fit_at is None or s["from_s"] < fit_at]
        run_result = {"records": args.run, "file_mib": round(path.stat().st_size / MIB, 1),
                      "options": ["--registry", "REG", *RUN_OPTIONS],
                      "timeout_s": args.run_timeout,
                      "stopped_in": None if res["completed"] else (stages[-1]["line"]
                                                                   if stages else None),
                      **{k: res[k] for k in ("completed", "wall_s", "cpu_s",
                                             "peak_process_mib", "peak_tree_mib")},
                      "peak_before_fits_mib": max(before) if before else None,
                      "stages": stages}
        print({k: v for k, v in run_result.items() if k != "stages"}, flush=True)
        clear(out_dir)
    cols = ["records", "file_mib", "mode", "wall_s", "cpu_s", "peak_process_mib",
            "peak_tree_mib", "peak_per_file_byte"]
    table = md_table(rows, cols)
    if run_result:
        table += "\n`run` " + " ".join(RUN_OPTIONS) + ":\n\n" + md_table(
            run_result["stages"], ["from_s", "line", "peak_tree_mib"])
    write_results(args.name, {**info, "rows": rows, "run": run_result}, table)
    print(table)


if __name__ == "__main__":
    main()
