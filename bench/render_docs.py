"""Write docs/performance.md from bench/performance.md.in and the saved results.

    .venv/bin/python bench/render_docs.py

Every number in the page is read here from ``bench/results/*.json`` (written by the
benchmark scripts); the template holds only prose. A missing result file leaves a note
saying which command produces it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import compile_floor  # noqa: E402
from bench._util import RESULTS, ROOT, md_table, pipeline_ratios  # noqa: E402

GIB = 2**30


def load(name: str) -> dict[str, Any] | None:
    path = RESULTS / f"{name}.json"
    return {**json.loads(path.read_text()), "_name": name} if path.exists() else None


def missing(cmd: str) -> str:
    return f"*(not measured yet: run `{cmd}`)*\n"


def when(res: dict[str, Any] | None, name: str | None = None) -> str:
    """When and at which commit a result was measured (older files: their last commit)."""
    res = res or {}
    if res.get("measured_utc"):
        return f"measured {res['measured_utc'][:16].replace('T', ' ')} UTC at commit {res.get('commit', '?')}"
    path = RESULTS / f"{name or res.get('_name', '')}.json"
    try:
        got = subprocess.run(["git", "-C", str(ROOT), "log", "-1", "--format=%cs %h", "--",
                              str(path)], capture_output=True, text=True, check=True).stdout.split()
    except (OSError, subprocess.CalledProcessError):
        got = []
    return (f"undated result, file last committed {got[0]} ({got[1]})"
            if len(got) == 2 else "date not recorded")


def load_note(res: dict[str, Any]) -> str:
    m = res.get("machine", {})
    return (f"Command: `.venv/bin/python {res.get('command', '?')}`; load average at start "
            f"{m.get('load_avg_1_5_15', '?')} on {m.get('cpus', '?')} cores; {when(res)}.\n")


def fmt_int(v: Any) -> str:
    return f"{v:,.0f}"


def rows_by(res: dict[str, Any] | None, **match: Any) -> list[dict[str, Any]]:
    if not res:
        return []
    return [r for r in res.get("rows", []) if all(r.get(k) == v for k, v in match.items())]


def one(res: dict[str, Any] | None, **match: Any) -> dict[str, Any] | None:
    found = rows_by(res, **match)
    return found[0] if found else None


def verdict(ok: bool | None) -> str:
    return "not measured" if ok is None else ("**met**" if ok else "**missed**")


def now_load(res: dict[str, Any] | None) -> str:
    """The 1-minute load average at the start of a result's run."""
    got = ((res or {}).get("machine") or {}).get("load_avg_1_5_15") or ["?"]
    return str(got[0])


def summary(ing, red, samp, comp, pipe, growth) -> str:
    lines = ["| target | measured | verdict |", "|---|---|---|"]

    def add(target: str, measured: str, ok: bool | None) -> None:
        lines.append(f"| {target} | {measured} | {verdict(ok)} |")

    for fmt, goal in (("parquet", 5e6), ("jsonl", 1e6)):
        r = one(ing, n=10_000_000, format=fmt, reader="ingest")
        if r:
            add(f"ingest >= {goal:,.0f} records/s from {fmt}",
                f"{r['records_per_s']:,} /s wall, {r['records_per_cpu_s']:,} per CPU-s (10M)",
                r["records_per_cpu_s"] >= goal)
    worst = max((r for r in ingest_rows(ing, None) if r["n"] == 10_000_000
                 and r["reader"] == "ingest"),
                key=lambda r: r.get("rss_bytes_per_record", 0), default=None)
    if worst:
        need = worst["rss_bytes_per_record"] * 50e6 / GIB
        add("50M records fit in 24 GiB (ingest)",
            f"{worst['rss_bytes_per_record']:.0f} B/record ({worst['format']}) -> "
            f"{need:.1f} GiB for 50M", need <= 24)
    if red:
        peaks = {r["format"]: r["peak_rss_mib"] for r in rows_by(red, n=10_000_000)}
        small = {r["format"]: r["peak_rss_mib"] for r in rows_by(red, n=1_000_000)}
        if peaks:
            text = "; ".join(f"{f} {small.get(f, float('nan')):.0f} -> {v:.0f} MiB"
                             for f, v in peaks.items())
            flat = [f for f, v in peaks.items() if v < 2 * small.get(f, v)]
            limits = sorted({str(r.get("memory_limit")) for r in red["rows"]})
            lines.append(f"| bounded memory, `reduce` on DuckDB, limit {', '.join(limits)} "
                         "(peak RSS, 1M -> 10M) | "
                         f"{text} | **met** for {', '.join(flat) or 'none'}"
                         + (", **missed** for the rest |" if len(flat) < len(peaks) else " |"))
    if ing:
        lin = []
        for fmt in ("parquet", "csv", "jsonl"):
            a, b = one(ing, n=1_000_000, format=fmt, reader="ingest"), one(
                ing, n=10_000_000, format=fmt, reader="ingest")
            if a and b:
                lin.append(f"{fmt} {b['cpu_s'] / a['cpu_s']:.1f}x")
        add("ingest cost linear in records (10x records -> ~10x CPU)", ", ".join(lin),
            all(float(x.split()[1][:-1]) <= 12 for x in lin) if lin else None)
    if pipe and "records_10x_over_1x_wall" in pipe.get("ratios", {}):
        rr = pipe["ratios"]
        add("10x records, same models/tasks: `selfmodel run` < 1.2x time",
            f"{rr['records_10x_over_1x_wall']}x wall, {rr['records_10x_over_1x_cpu']}x CPU",
            rr["records_10x_over_1x_cpu"] < 1.2)
    s = one(samp, case="scale 50x10", sampler="nutpie")
    deco_res = load("sampling_decorrelated")
    deco = one(deco_res, case="scale 50x10", sampler="nutpie")
    now, old = (deco, s) if deco else (s, None)
    if now:
        def before(text: str) -> str:
            return f"; before (plain slope basis, {when(samp, 'sampling_quiet')}): {text}" if old else ""

        est = now["sample_cpu_s"] / 2
        add("scale 50x10, 4 x 1000 draws in <= 10 s after compile",
            f"{now['sample_wall_s']} s wall, {now['sample_cpu_s']} CPU-s -> ~{est:.0f} s on 2 "
            "idle cores" + (before(f"{old['sample_wall_s']} s wall, {old['sample_cpu_s']} CPU-s")
                            if old else ""), est <= 10)
        add("zero divergences", f"{now['divergences']}"
            + (before(str(old["divergences"])) if old else ""), now["divergences"] == 0)
        add(">= 300 bulk ESS/s for the slope (50x10)",
            f"ESS {now['ess_bulk_effect']:.0f} in {now['sample_wall_s']} s: {now['ess_per_s']} /s "
            f"wall on a loaded machine (load {now_load(deco_res if deco else samp)})"
            + (before(f"ESS {old['ess_bulk_effect']:.0f}, {old['ess_per_s']} /s wall") if old else ""),
            now["ess_per_s"] >= 300)
    d = one(samp, case="sdt 50x10")
    if s and d and "sample_cpu_s" in d:
        ratio = d["sample_cpu_s"] / s["sample_cpu_s"]
        add("sdt model within 2x of scale (50x10)", f"{ratio:.1f}x sampling CPU (plain slope "
            f"basis, {when(samp, 'sampling_quiet')}; not re-measured since)", ratio <= 2)
    if comp:
        parts, ok = [], None
        for cfg in ("plain", "shared"):
            cold, new = one(comp, config=cfg, step="cold"), one(comp, config=cfg, step="new_data")
            if cold and new and "compile_cpu_s" in new:
                parts.append(f"{cfg}: {cold['compile_cpu_s']} -> {new['compile_cpu_s']} CPU-s")
                ok = (ok is not False) and new["compile_cpu_s"] < cold["compile_cpu_s"]
        memo = one(comp, config="shared", step="second call, new data (memo)")
        if memo and memo.get("compile_cpu_s") is not None:
            parts.append(f"same process (memo): {memo['compile_cpu_s']} CPU-s")
        add("second compile faster (new process, new data of the same shape)",
            "; ".join(parts), ok)
    if pipe:
        first, second = one(pipe, step="first"), one(pipe, step="second")
        i18 = load("pipeline_issue18")
        f18, s18 = _row(i18, "first"), _row(i18, "second")
        if first and second and "wall_s" in second:
            parts = [f"{second['wall_s']} / {first['wall_s']} s wall = "
                     f"{second['wall_s'] / first['wall_s']:.0%}; CPU "
                     f"{second['cpu_s'] / first['cpu_s']:.0%} (`pipeline_robust`, before the "
                     "unchanged-run path)"]
            ok = second["cpu_s"] / first["cpu_s"] <= 0.10
            if f18 and s18:
                parts.insert(0, f"{s18['wall_s']} / {f18['wall_s']:.0f} s wall, {s18['cpu_s']} / "
                             f"{f18['cpu_s']:.0f} CPU-s = {s18['cpu_s'] / f18['cpu_s']:.1%} CPU "
                             "(`pipeline_issue18`, the unchanged-run path); before: ")
                ok = s18["cpu_s"] / f18["cpu_s"] <= 0.10
            add("unchanged second `selfmodel run` <= 10% of the first", "".join(parts), ok)
        rep = one(pipe, step="report")
        if rep and "wall_s" in rep:
            add("report rendering <= 60 s", f"{rep['wall_s']} s wall, {rep['cpu_s']} CPU-s",
                rep["wall_s"] <= 60)
    if growth:
        g = {(r["models"], r["tasks"], r["records_per_cell"]): r for r in growth["sampling"]}
        a, b = g.get((50, 10, 300)), g.get((50, 10, 3000))
        if a and b:
            ratio = b["sample_cpu_s"] / a["sample_cpu_s"]
            add("fit cost grows with cells, not records (50x10 cells, 300 vs 3000 per cell)",
                f"{ratio:.2f}x sampling CPU; bulk ESS of beta {a['ess_bulk_beta']:.0f} -> "
                f"{b['ess_bulk_beta']:.0f}", ratio < 1.2)
    return "## Targets at a glance\n\n" + "\n".join(lines) + "\n"


def ingest_rows(ing, base) -> list[dict[str, Any]]:
    """ingest/polars/pandas rows; re-measured baseline rows replace the first run's."""
    rows = [r for r in (ing or {}).get("rows", []) if r.get("reader") != "reduce"]
    if base:  # only rows the main run lacks: a ratio is fair within one run only
        have = {(r["n"], r["format"], r["reader"]) for r in rows}
        rows += [r for r in base["rows"] if (r["n"], r["format"], r["reader"]) not in have]
    # The first run's 10M children inherited the parent's peak as their baseline (ru_maxrss
    # before the VmHWM fix): use the smallest post-import baseline of a fresh process.
    fresh = min((r["base_rss_mib"] for r in rows if "base_rss_mib" in r), default=0.0)
    for r in rows:
        if "peak_rss_mib" in r and "rows" in r:
            r["rss_bytes_per_record"] = round((r["peak_rss_mib"] - fresh) * 2**20 / r["rows"], 1)
    order = {"ingest": 0, "polars": 1, "pandas": 2}
    return sorted(rows, key=lambda r: (r["n"], r["format"], order.get(r["reader"], 3)))


def section_ingest(ing, base) -> str:
    if not ing:
        return missing("bench/bench_ingest.py --profile")
    cols = ["n", "format", "reader", "wall_s", "cpu_s", "records_per_s", "records_per_cpu_s",
            "peak_rss_mib", "rss_bytes_per_record"]
    rows = ingest_rows(ing, base)
    have = {(r["n"], r["format"], r["reader"]) for r in (ing or {}).get("rows", [])}
    borrowed = [r for r in (base or {}).get("rows", [])
                if (r["n"], r["format"], r["reader"]) not in have]
    note = load_note(ing) + (("Rows not in that run (pandas at 10M) are from an earlier run: "
                              + load_note(base)) if borrowed else "")
    table = md_table(rows, cols, {
        "n": fmt_int, "records_per_s": fmt_int, "records_per_cpu_s": fmt_int,
        "peak_rss_mib": fmt_int, "rss_bytes_per_record": fmt_int})
    return note + "\n" + table + "\n" + ingest_ratios(ing)


#: Issue 50's bound: ``ingest`` of a 2 GB JSONL under this peak (the whole process tree).
LARGE_INGEST_BOUND_MIB = 1024


def section_ingest_large(res: dict[str, Any] | None, run_res: dict[str, Any] | None) -> str:
    """Issue 50: ingest's peak memory, streamed and in memory, as the input grows; ``run``."""
    if not res:
        return missing("bench/bench_ingest_large.py --sizes 1000000 4000000 14500000 --run 14500000")
    rows = res["rows"]
    cols = ["records", "file_mib", "mode", "cpu_s", "wall_s", "peak_process_mib",
            "peak_tree_mib", "peak_per_file_byte"]
    base = res.get("baseline", {}).get("ref", "?")[:7]
    out = [load_note(res).rstrip() + f" `baseline` is the code at {base} (`main` with its "
           "ingest as it was before the batches and the streamed ingest).\n",
           md_table(rows, cols, {"records": fmt_int, "file_mib": fmt_int,
                                 "peak_process_mib": fmt_int, "peak_tree_mib": fmt_int})]
    streamed = sorted((r for r in rows if r["mode"] == "streamed"), key=lambda r: r["records"])
    lines = []
    if len(streamed) >= 2:
        small, big = streamed[0], streamed[-1]
        lines.append(
            f"- streamed: the file grows {big['file_mib'] / small['file_mib']:.1f}x "
            f"({small['file_mib']:,.0f} -> {big['file_mib']:,.0f} MiB), the peak of the "
            f"process tree {big['peak_tree_mib'] / small['peak_tree_mib']:.2f}x "
            f"({small['peak_tree_mib']:,.0f} -> {big['peak_tree_mib']:,.0f} MiB); CPU "
            f"{big['cpu_s'] / small['cpu_s']:.1f}x")
        ok = big["file_mib"] >= 1900 and big["peak_tree_mib"] < LARGE_INGEST_BOUND_MIB
        lines.append(
            f"- the bound (`ingest` of a 2 GB JSONL under {LARGE_INGEST_BOUND_MIB:,} MiB, "
            f"issue 50): {verdict(ok)} -- {big['peak_tree_mib']:,.0f} MiB for "
            f"{big['file_mib']:,.0f} MiB ({big['records']:,} records)")
    for n in sorted({r["records"] for r in rows}):
        got = {r["mode"]: r for r in rows if r["records"] == n}
        if "streamed" in got and "in_memory" in got:
            s, m = got["streamed"], got["in_memory"]
            text = (f"- {n:,} records: in memory {m['peak_tree_mib']:,.0f} MiB, streamed "
                    f"{s['peak_tree_mib']:,.0f} MiB ({m['peak_tree_mib'] / s['peak_tree_mib']:.1f}x); "
                    f"CPU streamed / in memory {s['cpu_s'] / m['cpu_s']:.2f}x")
            if "baseline" in got:
                b = got["baseline"]
                text += (f"; main's ingest {b['peak_tree_mib']:,.0f} MiB "
                         f"({b['peak_tree_mib'] / s['peak_tree_mib']:.1f}x the streamed peak)")
            lines.append(text)
    out.append("\n".join(lines) + "\n")
    run = (run_res or {}).get("run") or res.get("run")
    if run_res and run_res.get("run"):
        out.append(load_note(run_res))
    if run:
        top = sorted(run["stages"], key=lambda s: -s["peak_tree_mib"])[:5]
        stopped = ("" if run.get("completed", True) else
                   f" It was stopped after {run['wall_s']:,.0f} s (`--run-timeout`) in the "
                   f"stage that began with `{run.get('stopped_in')}`: the peaks are those "
                   "until then.")
        before = run.get("peak_before_fits_mib")
        out.append(
            f"`selfmodel run` on {run['records']:,} records ({run['file_mib']:,.0f} MiB of JSONL, "
            f"`{' '.join(run['options'])}`): peak of the process tree "
            f"{run['peak_tree_mib']:,.0f} MiB"
            + (f" ({before:,.0f} MiB before the first fit)" if before is not None else "")
            + f", largest single process {run['peak_process_mib']:,.0f} MiB, "
            f"{run['cpu_s']:,.0f} CPU-s, {run['wall_s']:,.0f} s wall.{stopped} The stages "
            "with the highest peaks (from the progress line that starts them to the next):\n")
        out.append(md_table(top, ["from_s", "line", "peak_tree_mib"],
                            {"peak_tree_mib": fmt_int}))
    return "\n".join(out)


def ingest_ratios(ing) -> str:
    """Ingest against a plain polars read of the same file (same run), and against before."""
    before = load("ingest_before")
    lines = []
    for n in sorted({r["n"] for r in (ing or {}).get("rows", [])}):
        parts = []
        for fmt in ("parquet", "csv", "jsonl"):
            a = one(ing, n=n, format=fmt, reader="ingest")
            b = one(ing, n=n, format=fmt, reader="polars")
            if a and b and "cpu_s" in a and "cpu_s" in b:
                parts.append(f"{fmt} {a['cpu_s'] / b['cpu_s']:.1f}x CPU, "
                             f"{a['wall_s'] / b['wall_s']:.1f}x wall")
        if parts:
            lines.append(f"- ingest / plain polars read at {n:,} records: " + "; ".join(parts))
    if before:
        parts = []
        for fmt in ("parquet", "csv", "jsonl"):
            old = one(before, n=1_000_000, format=fmt, reader="ingest")
            new = one(ing, n=1_000_000, format=fmt, reader="ingest")
            if old and new and "cpu_s" in old and "cpu_s" in new:
                parts.append(f"{fmt} {old['cpu_s']} -> {new['cpu_s']} CPU-s "
                             f"({old['cpu_s'] / new['cpu_s']:.1f}x less), peak "
                             f"{old['peak_rss_mib']:.0f} -> {new['peak_rss_mib']:.0f} MiB")
        if parts:
            lines.append("- before the rewrite of `analysis/records/ingest.py` (same 1M files, "
                         "`bench/results/ingest_before.json`, load average "
                         f"{before['machine']['load_avg_1_5_15']}): " + "; ".join(parts))
    return "\n".join(lines) + ("\n" if lines else "")


def profile_items(fmt: str) -> tuple[float, list[tuple[float, str]]]:
    """Total and ``(cumulative s, function)`` of ``ingest_profile_<fmt>.txt`` (ingest and reads)."""
    path = RESULTS / f"ingest_profile_{fmt}.txt"
    if not path.exists():
        return 0.0, []
    keep = []
    for line in path.read_text().splitlines():
        if line.startswith("#"):
            continue  # the header: when and at which commit (see profile_when)
        if ("ingest.py" in line or "/ingest/" in line or "(sort)" in line
                or "read_" in line):
            parts = line.split()
            if len(parts) >= 6:
                keep.append((float(parts[3]), parts[-1].split("/")[-1]))
    return max((c for c, _ in keep), default=0.0), keep


def profile_when(fmt: str) -> str | None:
    """When and at which commit ``ingest_profile_<fmt>.txt`` was measured (its first line), or
    None for a file written before profiles recorded it."""
    path = RESULTS / f"ingest_profile_{fmt}.txt"
    head = path.read_text().partition("\n")[0].split() if path.exists() else []
    if len(head) >= 5 and head[:2] == ["#", "measured_utc"] and head[3] == "commit":
        return when({"measured_utc": head[2], "commit": head[4]})
    return None


def section_profile() -> str:
    out = []
    for fmt in ("parquet", "csv", "jsonl"):
        total, keep = profile_items(fmt)
        if not keep:
            continue
        shown = "; ".join(f"`{name}` {c:.2f} s" for c, name in keep[:8])
        dated = profile_when(fmt) or file_when(f"ingest_profile_{fmt}.txt")
        out.append(f"- **{fmt}** (1M records, cProfile cumulative, total {total:.2f} s; "
                   f"{dated}): {shown}")
    if not out:
        return ""
    return ("Where ingest's time goes (full listings in `bench/results/ingest_profile_*.txt`):"
            "\n\n" + "\n".join(out) + "\n")


def file_when(filename: str) -> str:
    """The date and commit at which a result file (any type) was last committed."""
    try:
        got = subprocess.run(["git", "-C", str(ROOT), "log", "-1", "--format=%cs %h", "--",
                              str(RESULTS / filename)], capture_output=True, text=True,
                             check=True).stdout.split()
    except (OSError, subprocess.CalledProcessError):
        got = []
    return f"file last committed {got[0]} ({got[1]})" if len(got) == 2 else "date not recorded"


def section_reduce(red) -> str:
    if not red:
        return missing("bench/bench_ingest.py --readers reduce --name ingest_reduce")
    table = load_note(red) + "\n" + md_table(
        red["rows"], ["n", "format", "wall_s", "cpu_s", "records_per_s", "records_per_cpu_s",
                      "peak_rss_mib", "rss_bytes_per_record"],
        {"n": fmt_int, "records_per_s": fmt_int, "records_per_cpu_s": fmt_int,
         "peak_rss_mib": fmt_int, "rss_bytes_per_record": fmt_int})
    growth = []
    for fmt in ("parquet", "csv", "jsonl"):
        a, b = one(red, n=1_000_000, format=fmt), one(red, n=10_000_000, format=fmt)
        if a and b and a.get("cpu_s") and b.get("cpu_s"):
            growth.append(f"{fmt} {b['cpu_s'] / a['cpu_s']:.1f}x CPU, "
                          f"{b['peak_rss_mib'] / a['peak_rss_mib']:.2f}x peak RSS")
    return table + ("\n\nFrom 1M to 10M records: " + "; ".join(growth) + ".\n" if growth else "")


def section_sampling(samp) -> str:
    head = "## Samplers, parameterisations and likelihoods, side by side\n\n"
    if not samp:
        return head + missing("bench/bench_sampling.py")
    cols = ["case", "sampler", "compile_s", "sample_wall_s", "sample_cpu_s", "divergences",
            "max_rhat", "ess_bulk_effect", "min_ess_bulk", "ess_per_s", "effect_mean",
            "effect_sd", "effect_mcse"]
    text = head + load_note(samp) + "\n" + md_table(samp["rows"], cols) + "\n"
    rows = {(r["case"], r.get("sampler")): r for r in samp["rows"]}
    base = rows.get(("scale 50x10", "nutpie"))
    ratios = []
    for key, label in ((("scale 50x10 centred", "nutpie"), "centred / non-centred"),
                       (("scale 50x10", "pymc"), "PyMC NUTS / nutpie"),
                       (("sdt 50x10", "nutpie"), "sdt / scale")):
        r = rows.get(key)
        if base and r and "sample_cpu_s" in r:
            ratios.append(f"- {label}: sampling CPU {r['sample_cpu_s'] / base['sample_cpu_s']:.2f}x,"
                          f" ESS/s {r['ess_per_s'] / max(base['ess_per_s'], 1e-9):.2f}x,"
                          f" divergences {r['divergences']} vs {base['divergences']}")
    b1 = rows.get(("scale 16x3 binomial (4.8k records)", "nutpie"))
    b2 = rows.get(("scale 16x3 bernoulli (4.8k records)", "nutpie"))
    if b1 and b2 and "effect_mean" in b2:
        diff = abs(b1["effect_mean"] - b2["effect_mean"])
        mc = (b1["effect_mcse"] ** 2 + b2["effect_mcse"] ** 2) ** 0.5
        ratios.append(
            f"- Bernoulli / binomial (same model, 4,800 records): sampling CPU "
            f"{b2['sample_cpu_s'] / b1['sample_cpu_s']:.1f}x; posterior mean of beta "
            f"{b2['effect_mean']} vs {b1['effect_mean']} (difference {diff:.4f} = "
            f"{diff / mc:.1f} combined MCSE), sd {b2['effect_sd']} vs {b1['effect_sd']}")
    ratios.append(f"- numpyro: {samp.get('numpyro', 'not measured')}")
    return text + "\n" + "\n".join(ratios) + "\n"


def section_slope_basis() -> str:
    """Plain vs decorrelated slope basis: scale on 50x10, sdt on the default data."""
    deco, sdt = load("sampling_decorrelated"), load("sampling_sdt_basis")
    out = ""
    if deco:
        out += ("Scale model, 50 models x 10 tasks, plain and decorrelated slope basis in one run: "
                + load_note(deco) + "\n" + md_table(deco["rows"], [
                    "case", "compile_s", "sample_wall_s", "sample_cpu_s", "divergences",
                    "max_rhat", "ess_bulk_effect", "min_ess_bulk", "slowest", "ess_per_s",
                    "ess_per_cpu_s", "corr_effect_shift", "sd_total_slope", "effect_mean",
                    "effect_sd", "effect_mcse"]) + "\n")
    if sdt:
        out += ("SDT model on the default data, both bases, three seeds: " + load_note(sdt)
                + "\n" + md_table(sdt["rows"], [
                    "basis", "seed", "divergences", "max_rhat", "min_ess_bulk", "ess_criterion",
                    "rhat_criterion", "ess_dprime", "rhat_dprime", "corr_criterion_shift",
                    "min_bfmi", "sample_cpu_s", "ess_criterion_per_cpu_s"]) + "\n")
    return out or missing("bench/bench_sampling.py --cases plain scale group_centred "
                          "--name sampling_decorrelated")


def section_engines() -> str:
    """ingest against plain polars and DuckDB reads, and `selfmodel reduce` on DuckDB/Spark."""
    cols = ["format", "reader", "wall_s", "cpu_s", "records_per_s", "peak_rss_mib",
            "wall_over_polars", "cpu_over_polars", "wall_over_duckdb_read", "cpu_over_duckdb_read"]
    out = ""
    for name in ("engines", "engines_spark"):
        res = load(name)
        if res:
            out += (f"`{name}.json`, {res['n']:,} records: " + load_note(res) + "\n"
                    + md_table(res["rows"], cols, {"records_per_s": fmt_int}) + "\n")
            notes = {r["note"] for r in res["rows"] if r.get("note")}
            out += "".join(f"- {n}\n" for n in sorted(notes)) + ("\n" if notes else "")
    return out or missing("bench/bench_engines.py --n 1000000")


def section_compile(comp) -> str:
    head = "## Compile once: `analysis/fitting/compile_cache.py`\n\n"
    if not comp:
        return head + missing("bench/bench_compile.py")
    return head + load_note(comp) + "\n" + md_table(
        comp["rows"], ["config", "step", "compile_wall_s", "compile_cpu_s", "process_wall_s"])


def second_run_profile() -> str:
    """The ``analysis/`` functions of the profiled unchanged second run, by cumulative time."""
    path = RESULTS / "second_run_profile.txt"
    if not path.exists():
        return ""
    total, items = None, []
    for line in path.read_text().splitlines():
        if "function calls" in line and " in " in line:
            total = float(line.rsplit(" in ", 1)[1].split()[0])
        parts = line.split()
        if len(parts) >= 6 and ("./analysis/" in parts[-1] or "arviz/__init__" in parts[-1]):
            name = parts[-1].replace("./", "").replace("<venv>/lib/python3.11/site-packages/", "")
            items.append(f"`{name}` {float(parts[3]):.0f} s")
    head = (f"Unchanged second run under cProfile (total {total:.0f} s, profiler overhead "
            "included; cumulative, nested calls overlap): ") if total else ""
    return head + "; ".join(items[:14]) + "\n"


def section_pipeline(pipe) -> str:
    head = "## The whole pipeline\n\n"
    if not pipe:
        return head + missing("bench/bench_pipeline.py")
    table = md_table(pipe["rows"], ["step", "wall_s", "cpu_s", "peak_rss_mib",
                                    "seconds_to_results", "seconds_total", "sampling_seconds",
                                    "fit_reused"])
    ratios = "\n".join(f"- {k}: {v}" for k, v in pipe.get("ratios", {}).items())
    return (head + load_note(pipe) + "\n" + table + "\n" + ratios + "\n\n"
            + second_run_profile())


#: Issue 32's targets: (ratio key of bench_pipeline, bound, what it measures).
ISSUE32_TARGETS = (
    ("first_over_naive", 1.5, "cold whole pipeline (empty compile caches, robustness and "
     "report included) against one naive PyMC fit of the main model"),
    ("second_over_naive", 0.1, "unchanged rerun against the naive fit"),
    ("other_data_over_first", 0.5, "cold run on another data set with the same models "
     "against the first cold run"),
)


def section_issue32() -> str:
    """Issue 32's targets from ``pipeline_issue32.json``: measured ratios, verdicts."""
    head = "## A cold run against one naive fit (issue 32)\n\n"
    res = load("pipeline_issue32")
    cmd = ("bench/bench_pipeline.py --steps naive first second other_data "
           "--name pipeline_issue32")
    if not res:
        return head + missing(cmd)
    table = md_table(res["rows"], ["step", "wall_s", "cpu_s", "peak_rss_mib", "fits_saved"])
    lines = []
    for key, bound, what in ISSUE32_TARGETS:
        for unit in ("wall", "cpu"):
            got = res.get("ratios", {}).get(f"{key}_{unit}")
            if got is None:
                continue
            lines.append(f"| {what} | {unit} | {got:.2f}x | at most {bound}x | "
                         f"{verdict(got <= bound)} |")
    targets = ("| target | seconds | measured | bound | verdict |\n|---|---|---|---|---|\n"
               + "\n".join(lines))
    return head + load_note(res) + "\n" + table + "\n\n" + targets + "\n\n" + section_floor()


def section_floor() -> str:
    """The floor of a cold run (``compile_floor.json``): each structure compiled and sampled once."""
    head = "### The floor: each model structure compiled once and sampled once\n\n"
    res = load("compile_floor")
    if not res:
        return head + missing("bench/compile_floor.py")
    r, rows = res["ratios"], res["rows"]
    structures = compile_floor.STRUCTURES
    table = compile_floor.floor_table(rows)
    bound = dict((k, b) for k, b, _ in ISSUE32_TARGETS)["first_over_naive"]
    floor = r["cold_compile_and_sample_over_naive_wall"]
    cores = res.get("cores", 2)
    text = (
        f"A default run fits {len(structures)} model structures ({', '.join(structures)}); a "
        "cold run must compile each at least once and sample each at least once (its main fit). "
        f"In one benchmark run, the naive fit took {rows['naive']['wall_s']:.1f} s wall; one "
        f"process compiling the {len(structures)} structures one after another from an empty "
        f"cache spent {r['cold_compile_cpu_s']:.1f} CPU-s (later structures reuse the numba "
        "kernels of earlier ones), and sampling each once at the run's settings for it "
        f"{r['cold_sample_cpu_s']:.1f} CPU-s. Spread perfectly over {cores} cores, the compiles "
        f"alone are {r['cold_compile_over_naive_wall']:.2f}x the naive fit and compiles plus "
        f"one sampling of each {floor:.2f}x: "
        + ("above" if floor > bound else "within")
        + f" the {bound}x bound before any refit, check, table or the report. A second process "
        f"with the warm cache compiles all {len(structures)} in {r['warm_compile_cpu_s']:.1f} "
        f"CPU-s ({r['warm_compile_over_naive_wall']:.2f}x): on the same data the disk cache "
        f"saves {1 - r['warm_compile_cpu_s'] / r['cold_compile_cpu_s']:.0%} of the compile "
        "CPU; the rest (PyTensor's rewrites, nutpie's callbacks) is paid in every process.\n")
    return head + load_note(res) + "\n" + table + "\n" + text + profile_beyond_floor()


def profile_beyond_floor() -> str:
    """What a cold run spends beyond the floor, from ``run_profile_issue32.json`` (one process)."""
    prof = load("run_profile_issue32")
    if not prof:
        return ""
    by = {s["stage"]: s for s in prof["stages"]}
    total, first, robust = by["TOTAL (run)"], by.get("stage_fits"), by.get("stage_robustness")
    if not (first and robust):
        return ""
    rest = total["wall_s"] - sum(s[k] for s in (first, robust) for k in ("compile_s", "sample_s"))
    return (
        f"\nWhere a cold run goes beyond that floor (`.venv/bin/python {prof['command']}` with "
        "`SELFMODEL_JOBS=1`, so every fit runs in the profiled process, and empty compile caches; "
        f"{when(prof)}): {total['wall_s']:.0f} s wall, {total['fits']} fits. The first fit of each "
        f"structure ({first['fits']} fits) spent {first['compile_s']:.0f} s compiling and "
        f"{first['sample_s']:.0f} s sampling -- the floor above; the robustness stage's "
        f"{robust['fits']} refits (the LOO model without the scale term, other scale variables, "
        "a family left out, the held-out-family check, the prior variants that could not be "
        "reweighted, strict accuracy) "
        f"{robust['compile_s']:.0f} s compiling and {robust['sample_s']:.0f} s sampling; the "
        f"other {rest:.0f} s are the checks, tables, power simulation and the report. A refit "
        "on another set of models has other parameters (one effect per model, per family, per "
        "cell), so it compiles again: nutpie fixes the number and layout of the parameters when "
        "it compiles, and `compiled.with_data` swaps the values of data, not the parameters.\n")


def section_growth(growth) -> str:
    head = "## How cost grows\n\n"
    if not growth:
        return head + missing("bench/bench_growth.py")
    table = md_table(growth["sampling"], ["models", "tasks", "cells", "records_per_cell",
                                          "records", "compile_s", "sample_wall_s",
                                          "sample_cpu_s", "divergences", "ess_bulk_beta"],
                     {"records": fmt_int})
    fig = "![cost growth](../bench/results/growth.png)\n\n" if (
        RESULTS / "growth.png").exists() else ""
    return head + load_note(growth) + "\n" + fig + table


def _row(res: dict[str, Any] | None, step: str) -> dict[str, Any] | None:
    return one(res, step=step) if res else None


def _leapfrog_line(rec: dict[str, Any]) -> str:
    fits = [r for r in rec["rows"] if str(r["step"]).startswith("fit") and r.get("leapfrog_per_draw")]
    if len(fits) < 2:
        return ""
    a, b = fits[0], fits[-1]
    return (f"- the verdict model on the same cells with {b['records']} the trials: "
            f"{b['leapfrog_per_draw'] / a['leapfrog_per_draw']:.2f}x the leapfrog steps per draw "
            f"({a['leapfrog_per_draw']:.0f} -> {b['leapfrog_per_draw']:.0f}; the cost of one step "
            "depends on the cells only), so its sampling costs that much more (its CPU row above "
            "includes the compile at 1x only)\n")


def _profile_cause(fmt: str, top: int = 5) -> str:
    """The largest parts of ingest in its cProfile listing, as measured."""
    total, items = profile_items(fmt)
    parts = [f"`{name.split('(')[-1].rstrip(')')}` {c:.2f}" for c, name in items
             if not name.endswith("(ingest)")][:top]
    if not parts:
        return "no profile"
    dated = profile_when(fmt) or (f"{file_when(f'ingest_profile_{fmt}.txt')}, code before "
                                  "the ingest package split and the sort skip")
    return (f"cProfile of ingest, 1M records (`ingest_profile_{fmt}.txt`, {dated}), "
            f"cumulative s of {total:.2f} s, nested calls overlap: " + ", ".join(parts))


def _ingest_ratio(res: dict[str, Any] | None, fmt: str, n: int = 1_000_000) -> float | None:
    a, b = one(res, n=n, format=fmt, reader="ingest"), one(res, n=n, format=fmt, reader="polars")
    return a["cpu_s"] / b["cpu_s"] if a and b else None


def _ingest_targets(add: Callable[..., None]) -> None:
    """Parquet within 2x and JSONL within 1.5x of polars; memory per record as before."""
    s18, today = load("ingest_s18b"), load("ingest")
    if not s18:
        return
    pq, pqs, js = (_ingest_ratio(s18, f) for f in ("parquet", "parquet_sorted", "jsonl"))
    a, b = one(s18, format="parquet", reader="ingest"), one(s18, format="parquet_sorted",
                                                              reader="ingest")
    if pq is not None and pqs is not None and a and b:
        add("Parquet ingest within 2x of a plain polars read (CPU, 1M records)",
            f"{pq:.1f}x; a file already in key order (sort skipped): {pqs:.1f}x "
            f"({b['cpu_s']} against {a['cpu_s']} CPU-s for ingest)", pq <= 2 and pqs <= 2,
            _profile_cause("parquet"), when(s18))
    if js is not None:
        add("JSONL ingest within 1.5x of polars' NDJSON parser (CPU, 1M records)", f"{js:.1f}x",
            js <= 1.5, _profile_cause("jsonl"), when(s18))
    parts: list[str] = []
    missed: list[str] = []
    ok = True
    for fmt in ("parquet", "jsonl"):
        new, old = one(s18, format=fmt, reader="ingest"), one(today, n=1_000_000, format=fmt,
                                                              reader="ingest")
        if new and old:
            parts.append(f"{fmt} {old['rss_bytes_per_record']:.0f} -> "
                         f"{new['rss_bytes_per_record']:.0f} B/record")
            if new["rss_bytes_per_record"] > old["rss_bytes_per_record"]:
                ok, missed = False, [*missed, fmt]
    if parts:
        add("memory per record as when issue 18 was filed, or less (ingest, peak RSS minus "
            "the process's own baseline, 1M records)",
            "; ".join(parts) + f" (before: `ingest.json`, Python 3.11, {when(today)})", ok,
            "; ".join(_memory_cause(fmt, one(today, n=1_000_000, format=fmt, reader="ingest"))
                      for fmt in missed), when(s18))


def _memory_cause(fmt: str, old: dict[str, Any] | None) -> str:
    """Where ingest's peak memory goes, per stage, from ``ingest_memory_<fmt>.json``; ``old``
    is the ``ingest.json`` row the target compares with."""
    res = load(f"ingest_memory_{fmt}")
    if not res:
        return f"{fmt}: not measured (no memory profile of {fmt} ingest)"
    n, stages, live = res["n"], res["stages"], res["stages_decay0"]

    def b(mib: float) -> str:
        return f"{mib * 2**20 / n:.0f}"

    def top(rows: list[dict[str, Any]]) -> str:
        """The first stage within 1% of the highest peak (later stages only keep it)."""
        inner = [r for r in rows[1:] if r["depth"] >= 1]
        high = max(r["peak_mib"] for r in inner)
        return next(r["stage"] for r in inner if r["peak_mib"] >= 0.99 * high)

    total, total0 = stages[0], live[0]
    nested = any(r["depth"] >= 2 for r in stages)
    rising = [r for r in stages[1:] if r["depth"] >= 1
              and not (nested and r["stage"] in ("read file (total)",
                                                  "read and validate every batch (total)"))
              and r["peak_mib"] - r["rss_before_mib"] >= 0.1 * total["peak_mib"]]
    steps = ", ".join(f"{r['stage']} {r['rss_before_mib']:.0f} -> {r['peak_mib']:.0f} "
                      f"({r['rss_after_mib']:.0f})" for r in rising)
    out = (f"{fmt}: RSS per ingest stage, 1M records, median of {res['repeats']} runs "
           f"(`ingest_memory_{fmt}.json`, {when(res)}): peak {b(total['peak_mib'])} B/record "
           f"({min(res['total']['bytes_per_record']):.0f}-"
           f"{max(res['total']['bytes_per_record']):.0f}), reached in {top(stages)}; MiB over "
           f"the baseline, before -> peak (after): {steps}. With freed pages returned at once "
           f"(jemalloc decay 0) the peak is {b(total0['peak_mib'])} B/record "
           f"(in {top(live)}); the rest is freed memory polars' allocator keeps")
    base = res.get("baseline")
    if base:
        grew = res["total_decay0"]["median"] - base["decay0"]["median"]
        out += (f". The code at {base['commit']} measures {base['median']:.0f} B/record "
                f"({min(base['bytes_per_record']):.0f}-{max(base['bytes_per_record']):.0f}) "
                f"the same way today and {base['decay0']['median']:.0f} with freed pages "
                "returned"
                + (f", not its {old['rss_bytes_per_record']:.0f} of `ingest.json`" if old else "")
                + f": since then the live peak changed by {grew:+.0f} B/record")
    return out


def _new_fits(run: dict[str, Any], first: dict[str, Any]) -> str:
    """Fits a run into a copy of the first run's outputs added (its fits folder had them)."""
    a, b = run.get("fits_saved"), first.get("fits_saved")
    return str(a - b) if isinstance(a, int) and isinstance(b, int) else "?"


def _fit_targets(add: Callable[..., None]) -> None:
    """Cold run, unchanged rerun, one changed record, 10x records."""
    pipe, prof, rec = load("pipeline_issue18"), load("run_profile_cold"), load("records_growth")
    changed = load("pipeline_one_record")  # a later cold run, with the one-record step after it
    if _row(changed, "first") and _row(changed, "second"):
        pipe = changed
    first, second = _row(pipe, "first"), _row(pipe, "second")
    total = one({"rows": (prof or {}).get("stages", [])}, stage="TOTAL (run)")
    robust = one({"rows": (prof or {}).get("stages", [])}, stage="stage_robustness")
    cause = (f"compiling: in a profiled cold run the nutpie compile calls took "
             f"{total['compile_s']:.0f} s and the sampling calls {total['sample_s']:.0f} s "
             f"(wall, summed) of {total['wall_s']:.0f} s, over {total['fits']} fits, "
             f"{robust['fits']} of them in the robustness stage (`run_profile_cold`, "
             f"{when(prof)})" if total and robust else "no profile")
    if first:
        add("first run <= 60 s (fresh process, empty compile cache, default data, robustness, "
            "report)", f"{first['wall_s']:.0f} s wall, {first['cpu_s']:.0f} CPU-s, "
            f"{first.get('fits_saved')} fits saved (machine loaded: wall is mostly waiting)",
            first["cpu_s"] <= 60, cause,
            f"measured {first['measured_utc']} at commit {first.get('commit', '?')}"
            if first.get("measured_utc") else when(pipe))
    if second:
        add("unchanged rerun <= 3 s (fresh process, warm)", f"{second['wall_s']:.2f} s wall, "
            f"{second['cpu_s']:.2f} CPU-s", second["wall_s"] <= 3, "", when(pipe))
    one_rec, cold = _row(changed, "one_record"), _row(changed, "first")
    if one_rec and cold:
        ratio = one_rec["cpu_s"] / cold["cpu_s"]
        rec_id = one_rec.get("changed_record") or {}
        add("a run after changing one record <= first-run time of the fits that depend on it",
            f"{one_rec['wall_s']:.0f} s wall, {one_rec['cpu_s']:.0f} CPU-s against the cold "
            f"first run's {cold['wall_s']:.0f} s, {cold['cpu_s']:.0f} CPU-s in the same benchmark "
            f"run: {ratio:.2f}x CPU ({_new_fits(one_rec, cold)} fits sampled anew against "
            f"{cold.get('fits_saved', '?')} in the first run, compile cache warm; record "
            f"{rec_id.get('model', '?')}/{rec_id.get('task', '?')}/{rec_id.get('item_id', '?')}, "
            f"prediction {rec_id.get('prediction', '?')}, `pipeline_one_record`)",
            ratio <= 1, "no profile of this run", when(changed))
    else:
        add("a run after changing one record <= first-run time of the fits that depend on it",
            "no benchmark step changes one record", None, "", "")
    r1, r10 = _row(load("pipeline_r1"), "records_1x"), _row(load("pipeline_r10"), "records_10x")
    if r1 and r10:
        fits = [r for r in (rec or {}).get("rows", []) if str(r["step"]).startswith("fit")
                and r.get("leapfrog_per_draw")]
        why = (f"the verdict fit needs {fits[-1]['leapfrog_per_draw'] / fits[0]['leapfrog_per_draw']:.2f}x "
               f"the leapfrog steps per draw at 10x the trials per cell ({fits[0]['leapfrog_per_draw']:.0f} "
               f"-> {fits[-1]['leapfrog_per_draw']:.0f}); the record-level steps are a few "
               f"CPU-seconds (`records_growth`, {when(rec)})" if len(fits) >= 2 else "no profile")
        add("10x records, warm `selfmodel run` <= 1.2x", f"{r10['wall_s'] / r1['wall_s']:.2f}x wall, "
            f"{r10['cpu_s'] / r1['cpu_s']:.2f}x CPU (`pipeline_r1`/`pipeline_r10`)",
            r10["cpu_s"] / r1["cpu_s"] <= 1.2, why, when(load("pipeline_r1")))


def _slope_target(add: Callable[..., None]) -> None:
    deco, quiet = load("sampling_decorrelated"), load("sampling_quiet")
    now = one(deco, case="scale 50x10", sampler="nutpie")
    if not now:
        return
    old = one(quiet, case="scale 50x10", sampler="nutpie")
    slow = (f"; slowest parameter `{now['slowest']}` (bulk ESS {now['min_ess_bulk']:.0f}, "
            f"max R-hat {now['max_rhat']})")
    before = (f"; before (plain slope basis, `sampling_quiet`, {when(quiet)}): "
              f"{old['ess_per_s']} /s, {old['divergences']} divergences" if old else "")
    add("slope bulk ESS >= 300/s with zero divergences, 50 models x 10 tasks",
        f"{now['ess_per_s']} /s wall (ESS {now['ess_bulk_effect']:.0f} in "
        f"{now['sample_wall_s']} s, load {now_load(deco)}), {now['divergences']} divergences, "
        f"decorrelated slope basis{slow}{before}",
        now["ess_per_s"] >= 300 and now["divergences"] == 0, "", when(deco))


def section_issue18() -> str:
    """One row per target of issue 18: measured, verdict, measured cause of a miss, when."""
    head = "## A cold report in a minute (issue 18)\n\n"
    lines = ["| target | measured | verdict | measured cause of a miss | measured |",
             "|---|---|---|---|---|"]

    def add(target: str, measured: str, ok: bool | None, cause: str, dated: str) -> None:
        lines.append(f"| {target} | {measured} | {verdict(ok)} | "
                     f"{cause if ok is False else ''} | {dated} |")

    _fit_targets(add)
    _slope_target(add)
    _ingest_targets(add)
    out = head + "\n".join(lines) + "\n\n" + sdt_gate_line()
    pipe, prof, rec = load("pipeline_issue18"), load("run_profile_cold"), load("records_growth")
    if pipe:
        out += "\n" + load_note(pipe) + "\n"
    if prof:
        out += ("Where a cold run's time goes, by stage, with every `nutpie` compile and sample "
                "call counted (`bench/profile_run.py`; " + when(prof) + "; load average "
                f"{prof['machine'].get('load_avg_1_5_15')} at start):\n\n"
                + md_table(prof["stages"], ["stage", "wall_s", "cpu_s", "fits", "compile_s",
                                            "sample_s"]) + "\n")
    if rec:
        out += ("What grows with the records at fixed cells (`bench/profile_records.py`; "
                + when(rec) + f"; load average {rec['machine'].get('load_avg_1_5_15')}):\n\n"
                + md_table(rec["rows"], ["records", "step", "wall_s", "cpu_s",
                                         "leapfrog_per_draw", "ess_bulk_beta"]) + "\n"
                + "\n".join(f"- CPU 10x / 1x, {k}: {v}" for k, v in rec["ratios"].items()
                            if not k.startswith("fit"))
                + "\n" + _leapfrog_line(rec))
    return out


def sdt_gate_line() -> str:
    """The SDT fit per seed and slope basis against the pipeline's diagnostic gate."""
    res = load("sampling_sdt_basis")
    if not res:
        return ""
    from selfmodel.fitting.sampling import THRESHOLDS as T

    def passes(r: dict[str, Any]) -> bool:
        return (r["max_rhat"] <= T["r_hat"] and r["min_ess_bulk"] >= T["ess_bulk"]
                and r["divergences"] <= T["divergences"] and r["min_bfmi"] >= T["bfmi"])

    parts = []
    for basis in ("plain", "decorrelated"):
        rows = rows_by(res, basis=basis)
        if rows:
            parts.append(f"{basis} basis passes {sum(map(passes, rows))} of {len(rows)} seeds "
                         f"(R-hat of the criterion slope {min(r['rhat_criterion'] for r in rows)}"
                         f"-{max(r['rhat_criterion'] for r in rows)}, its bulk ESS "
                         f"{min(r['ess_criterion'] for r in rows)}-"
                         f"{max(r['ess_criterion'] for r in rows)})")
    d = res["rows"][0]
    return (f"The SDT model on the default data ({d['draws']} draws per chain, target_accept "
            f"{d['target_accept']}) against the pipeline's gate (R-hat <= {T['r_hat']}, bulk ESS "
            f">= {T['ess_bulk']:.0f}, no divergence, BFMI >= {T['bfmi']}; "
            f"`bench/bench_sampling.py --sdt-seeds 1 2 3`, {when(res)}): "
            + "; ".join(parts) + ".\n")


def merged_sampling() -> dict[str, Any] | None:
    """sampling.json with rows of sampling_extra.json and sampling_quiet.json merged in.

    Later files are re-runs or extra cases and replace rows of the same case and sampler
    (``sampling_quiet``: the target cases re-measured on an otherwise idle machine).
    """
    merged = load("sampling")
    for name in ("sampling_extra", "sampling_quiet"):
        extra = load(name)
        if not extra:
            continue
        if not merged:
            merged = extra
            continue
        redone = {(r["case"], r.get("sampler")) for r in extra["rows"]}
        rows = [r for r in merged["rows"] if (r["case"], r.get("sampler")) not in redone]
        merged = {**merged, "rows": rows + extra["rows"],
                  "command": f"{merged['command']}` and `{extra['command']}",
                  "extra_machine": extra.get("machine")}
    return merged


def merged_pipeline() -> dict[str, Any] | None:
    """pipeline.json plus rows of pipeline_*.json parts (run separately); ratios recomputed."""
    main_res = load("pipeline")
    if not main_res:
        return None
    rows = list(main_res["rows"])
    commands = [main_res.get("command", "?")]
    parts = [json.loads(p.read_text()) for p in sorted(RESULTS.glob("pipeline_*.json"))
             if p.stem != "pipeline_quick"]
    # undated parts first, then the dated ones in the order they were measured, so that the
    # latest measurement of a step wins and a ratio pairs steps of one benchmark run where
    # that run measured both (e.g. pipeline_one_record: first, second, one_record)
    parts.sort(key=lambda part: part.get("measured_utc") or "")
    for part in parts:
        rows += part["rows"]
        commands.append(part.get("command", "?"))
    # a later part re-measures a step (e.g. pipeline_robust: first/second with the robustness
    # stage): keep only the latest row of each step
    latest = {r["step"]: i for i, r in enumerate(rows)}
    rows = [r for i, r in enumerate(rows) if latest[r["step"]] == i]
    by = {r["step"]: r for r in rows if "wall_s" in r}
    ratios = pipeline_ratios(by)
    return {**main_res, "rows": rows, "ratios": ratios,
            "command": "` and `".join(commands)}


def main() -> None:
    ing, red = load("ingest"), load("ingest_reduce")
    samp, comp, pipe, growth = merged_sampling(), load("compile"), merged_pipeline(), load("growth")
    text = (ROOT / "bench" / "performance.md.in").read_text()
    blocks = {
        "SUMMARY": summary(ing, red, samp, comp, pipe, growth),
        "INGEST": section_ingest(ing, load("ingest_baselines")),
        "INGEST_PROFILE": section_profile(),
        "REDUCE": section_reduce(red),
        "INGEST_LARGE": section_ingest_large(load("ingest_large"), load("run_large")),
        "SAMPLING": section_sampling(samp),
        "COMPILE": section_compile(comp),
        "PIPELINE": section_pipeline(pipe),
        "GROWTH": section_growth(growth),
        "ISSUE18": section_issue18(),
        "ISSUE32": section_issue32(),
        "SLOPE_BASIS": section_slope_basis(),
        "ENGINES": section_engines(),
    }
    for key, value in blocks.items():
        text = text.replace(f"@@{key}@@", value.rstrip())
    out = ROOT / "docs" / "performance.md"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text)
    print(out)


if __name__ == "__main__":
    main()
