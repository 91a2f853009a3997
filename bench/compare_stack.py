"""Compare two ``selfmodel run`` output folders made on different software stacks.

Usage::

    python bench/compare_stack.py OLD_DIR NEW_DIR [--out docs/stack_migration.md]

Both folders are ``selfmodel run data_raw --out DIR`` outputs (``results.json``, ``run.json``,
``fits/``). Reports, for the scale model's slope ``beta`` and the per-task slopes
``slope_task``: the posterior means and 94% HDI bounds of both runs, their difference and
that difference in units of its Monte Carlo standard error (the MCSEs of the two runs
combined, sqrt(mcse_old^2 + mcse_new^2); ArviZ's MCSE of the mean, and for an HDI bound the
batch-means MCSE over half-chains), the decisions, the diagnostics of the main fit, the per-model
sampling times (compile + sampling, from ``run.json``) and the package versions. With
``--seeds S1 S2 ...`` it refits the scale model on NEW's cells at those seeds with the
running stack and measures each statistic's run-to-run sd, the Monte Carlo error the
verdict then uses. With ``--out`` it writes the Markdown there, else prints it. Exit 1 when
a slope differs by more than 4 of its Monte Carlo errors or a decision or a diagnostics
verdict changed. An ``--out`` file that has the :data:`MARKER` line keeps the text above
it (``docs/stack_migration.md``: what changed in the libraries and where the code meets it).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import Any

import arviz as az
import numpy as np

from selfmodel.common import arviz_ops

Z_MAX = 4.0


def _load(d: Path) -> tuple[dict[str, Any], dict[str, Any], Any]:
    res = json.loads((d / "results.json").read_text())
    run = json.loads((d / "run.json").read_text())
    return res, run, arviz_ops.posterior(arviz_ops.load(d / res["fit"]["file"]))


def _mcse_mean(x: np.ndarray) -> float:
    return float(az.mcse(x, method="mean"))


def _mcse_hdi(x: np.ndarray, prob: float) -> tuple[float, float]:
    """Batch-means MCSE of the HDI bounds: each chain split in halves (2 x chains batches).

    An HDI bound moves with the draws near both ends (the shortest interval is searched
    for), so the MCSE of a fixed quantile understates its error; the spread of the bound
    over independent batches, divided by sqrt(batches), does not.
    """
    halves = np.concatenate(np.array_split(x, 2, axis=1), axis=0)
    b = np.array([arviz_ops.hdi(h, prob) for h in halves])
    return tuple(float(v) for v in b.std(axis=0, ddof=1) / np.sqrt(len(b)))  # type: ignore[return-value]


def _seed_spread(new_dir: Path, seeds: list[int], new_post: Any) -> dict[tuple[str, str], float]:
    """Run-to-run sd of each statistic: NEW's scale fit and refits at ``seeds`` (this stack).

    The refits use NEW's cells (rows with a scale value) and the default sampler settings;
    with the NEW run they give ``1 + len(seeds)`` independent runs of the same posterior.
    """
    import polars as pl

    from selfmodel.fitting.sampling import fit

    cells = pl.read_parquet(new_dir / "cells.parquet").filter(pl.col("x").is_not_null())
    posts = [new_post]
    for seed in seeds:
        f = fit("scale", cells, seed=seed, cache_dir=None)
        print(f"compare_stack: refit seed {seed}: {f.seconds:.1f} s, diagnostics "
              f"{'passed' if f.diagnostics['passed'] else 'FAILED'}", file=sys.stderr)
        posts.append(arviz_ops.posterior(f.idata))
    out: dict[tuple[str, str], float] = {}
    for name, sel in _draw_selectors(new_post):
        vals: dict[str, list[float]] = {"mean": [], "hdi_low": [], "hdi_high": []}
        for p in posts:
            x = sel(p)
            lo, hi = arviz_ops.hdi(x, 0.94)
            vals["mean"].append(float(x.mean()))
            vals["hdi_low"].append(lo)
            vals["hdi_high"].append(hi)
        for stat, v in vals.items():
            out[(name, stat)] = float(np.std(v, ddof=1))
    return out


def _draw_selectors(post: Any) -> list[tuple[str, Any]]:
    sels: list[tuple[str, Any]] = [("beta", lambda p: p["beta"].values)]
    for t in post["task"].values:
        sels.append((f"slope_task[{t}]", lambda p, t=t: p["slope_task"].sel(task=t).values))
    return sels


def _rows(old: tuple, new: tuple) -> list[dict[str, Any]]:
    (r0, _, p0), (r1, _, p1) = old, new
    items = [("beta", r0["scale_effect"], r1["scale_effect"], p0["beta"], p1["beta"])]
    for t in r0["scale_effect"]["per_task"]:
        items.append((f"slope_task[{t}]", r0["scale_effect"]["per_task"][t],
                      r1["scale_effect"]["per_task"][t],
                      p0["slope_task"].sel(task=t), p1["slope_task"].sel(task=t)))
    rows = []
    for name, e0, e1, d0, d1 in items:
        a0, a1 = d0.transpose("chain", "draw").values, d1.transpose("chain", "draw").values
        h0, h1 = _mcse_hdi(a0, e0["hdi_prob"]), _mcse_hdi(a1, e1["hdi_prob"])
        for stat, v0, v1, m0, m1 in (
            ("mean", e0["mean"], e1["mean"], _mcse_mean(a0), _mcse_mean(a1)),
            ("hdi_low", e0["hdi_low"], e1["hdi_low"], h0[0], h1[0]),
            ("hdi_high", e0["hdi_high"], e1["hdi_high"], h0[1], h1[1]),
        ):
            mcse = math.hypot(m0, m1)
            rows.append({"parameter": name, "stat": stat, "old": v0, "new": v1, "diff": v1 - v0,
                         "mcse": mcse, "z": (v1 - v0) / mcse,
                         "decision_old": e0["decision"], "decision_new": e1["decision"]})
    return rows


def _hypotheses(r: dict[str, Any]) -> dict[str, str]:
    return {h["name"]: h["decision"] for h in r.get("hypotheses", {}).get("rows", [])}


def _which(label: str, res: dict[str, Any], run: dict[str, Any]) -> str:
    """Which run a side is, in words (its folder is the author's, not the reader's)."""
    smp = res["fit"]["sampler"]
    return (f"{label}: `selfmodel run {' '.join(res['settings']['inputs'])}` on Python "
            f"{res['fit']['versions'].get('python', '?')}, seed {res['settings']['seed']}, "
            f"{smp['chains']} chains x {smp['draws']} draws after {smp['tune']} tuning "
            f"(selfmodel {run.get('selfmodel', res['fit']['versions'].get('selfmodel', '?'))}).")


def render(old_dir: Path, new_dir: Path, seeds: list[int] | None = None) -> tuple[str, bool]:
    """The Markdown comparison and whether everything agrees (within ``Z_MAX`` MCSE)."""
    old, new = _load(old_dir), _load(new_dir)
    (r0, run0, _), (r1, run1, _) = old, new
    rows = _rows(old, new)
    spread = _seed_spread(new_dir, seeds, new[2]) if seeds else {}
    for r in rows:
        sd = spread.get((r["parameter"], r["stat"]))
        r["seed_err"] = sd * math.sqrt(2) if sd is not None else None
        r["err"] = max(r["mcse"], r["seed_err"] or 0.0)
        r["z"] = r["diff"] / r["err"]
    ok = all(abs(r["z"]) <= Z_MAX and r["decision_old"] == r["decision_new"] for r in rows)
    v0, v1 = r0["fit"]["versions"], r1["fit"]["versions"]
    lines = [
        _which("Old", r0, run0) + " " + _which("new", r1, run1),
        "",
        "| package | old | new |", "|---|---|---|",
        *[f"| {k} | {v0.get(k, '-')} | {v1.get(k, '-')} |" for k in sorted(set(v0) | set(v1))],
        "",
        "Scale model slopes (logits per 10x parameters): posterior mean and 94% HDI bounds. "
        "`MCSE of diff` combines the two runs' Monte Carlo standard errors (of a mean: ArviZ's; "
        "of an HDI bound: batch means over the 2 x chains half-chains of each run).",
        "",
    ]
    if spread:
        lines += [
            "`seeds` is sqrt(2) x the run-to-run sd of the statistic over "
            f"{1 + len(seeds or [])} runs on the new stack (the NEW run and refits at seeds "
            f"{', '.join(map(str, seeds or []))}), a second estimate of the Monte Carlo error "
            "of the difference (the batch-means MCSE of an HDI bound tends to understate it; "
            "both estimates rest on few batches or runs). `z` divides the difference by the "
            "larger of the two.", ""]
    lines += [
        "| parameter | statistic | old | new | new - old | MCSE of diff | seeds | z "
        "| decision old / new |",
        "|---|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    for r in rows:
        se_ = f"{r['seed_err']:.4f}" if r["seed_err"] is not None else "-"
        lines.append(f"| {r['parameter']} | {r['stat']} | {r['old']:.4f} | {r['new']:.4f} | "
                     f"{r['diff']:+.4f} | {r['mcse']:.4f} | {se_} | {r['z']:+.2f} | "
                     f"{r['decision_old']} / {r['decision_new']} |")
    zs = [abs(r["z"]) for r in rows]
    zm = [abs(r["z"]) for r in rows if r["stat"] == "mean"]
    lines += ["", f"Largest |z|: {max(zs):.2f} over {len(zs)} statistics, {max(zm):.2f} over the "
                  f"{len(zm)} means (threshold {Z_MAX:g}).", ""]
    d0, d1 = r0["diagnostics"], r1["diagnostics"]
    lines += ["Diagnostics of the main (scale) fit:", "",
              "| diagnostic | old | new |", "|---|---:|---:|"]
    for k in ("max_rhat", "min_ess_bulk", "min_ess_tail", "divergences", "min_bfmi", "passed"):
        lines.append(f"| {k} | {d0.get(k)} | {d1.get(k)} |")
    ok = ok and d0.get("passed") == d1.get("passed")
    h0, h1 = _hypotheses(r0), _hypotheses(r1)
    changed = sorted(k for k in set(h0) | set(h1) if h0.get(k) != h1.get(k))
    ok = ok and not changed
    lines += ["", f"Declared hypotheses: {len(h0)} decisions on the old stack, {len(h1)} on the "
                  f"new; changed: {', '.join(changed) if changed else 'none'}.", ""]
    ms0, ms1 = run0.get("model_seconds", {}), run1.get("model_seconds", {})
    lines += ["Wall seconds per model fit (compile + sampling, `run.json`; a shared 2-core "
              "machine, so differences of a few seconds are noise):", "",
              "| model | old | new | new / old |", "|---|---:|---:|---:|"]
    for m in sorted(set(ms0) | set(ms1)):
        a, b = ms0.get(m), ms1.get(m)
        ratio = f"{b / a:.2f}" if a and b else "-"
        lines.append(f"| {m} | {a} | {b} | {ratio} |")
    lines.append(f"| seconds to results.json | {run0.get('seconds_to_results')} | "
                 f"{run1.get('seconds_to_results')} | "
                 f"{run1['seconds_to_results'] / run0['seconds_to_results']:.2f} |")
    lines += ["", f"Verdict: {'agree' if ok else 'DIFFER'} (slopes within {Z_MAX:g} MCSE, same "
                  "decisions and diagnostics verdict)."]
    return "\n".join(lines) + "\n", ok


def compile_table(old_json: Path, new_json: Path) -> str:
    """CPU seconds of a cold compile and of sampling, per model, from two compile-bench files.

    Each file is ``bench/bench_compile.py --fit`` output (or its ``plain`` rows alone); the
    ``plain`` rows are compared. CPU time (all threads), not wall time: the machine is shared.
    """
    def rows(f: Path) -> tuple[dict[str, dict[str, Any]], dict[str, Any]]:
        d = json.loads(f.read_text())
        return {r["model"]: r for r in d["rows"] if r.get("config") == "plain"}, d

    (r0, d0), (r1, d1) = rows(old_json), rows(new_json)
    m0, m1 = d0["machine"], d1["machine"]
    lines = [f"Cold compile (empty cache) and sampling of the pipeline's settings, CPU seconds "
             f"(`{old_json.as_posix()}`, Python {m0['python']}, load {m0['load_avg_1_5_15'][0]}; "
             f"`{new_json.as_posix()}`, Python {m1['python']}, load "
             f"{m1['load_avg_1_5_15'][0]}):", "",
             "| model | compile old | compile new | sampling old | sampling new "
             "| us per leapfrog step old | new | new / old |",
             "|---|---:|---:|---:|---:|---:|---:|---:|"]
    lines[1:1] = ["", *[f"* `{f.as_posix()}`: {d.get('command', '?')}" for f, d in
                        ((old_json, d0), (new_json, d1))]]
    for m in sorted(set(r0) & set(r1)):
        a, b = r0[m], r1[m]
        lines.append(f"| {m} | {a['compile_cpu_s']} | {b['compile_cpu_s']} | {a['sample_cpu_s']} | "
                     f"{b['sample_cpu_s']} | {a['us_cpu_per_step']} | {b['us_cpu_per_step']} | "
                     f"{b['us_cpu_per_step'] / a['us_cpu_per_step']:.2f} |")
    return "\n".join(lines) + "\n"


#: In ``--out``: the text up to this line is hand-written and kept; the rest is rewritten.
MARKER = "<!-- bench/compare_stack.py rewrites everything below this line -->"


def main(argv: list[str] | None = None) -> int:
    """Entry point: print or write the comparison; exit 1 when the runs disagree."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("old", type=Path)
    ap.add_argument("new", type=Path)
    ap.add_argument("--out", type=Path, help="write the Markdown here (under a fixed header)")
    ap.add_argument("--seeds", type=int, nargs="*", default=[],
                    help="refit the scale model on NEW's cells at these seeds (this stack) to "
                         "measure the run-to-run spread of each statistic")
    ap.add_argument("--compile", type=Path, nargs=2, metavar=("OLD_JSON", "NEW_JSON"),
                    help="also compare two bench/bench_compile.py --fit result files")
    a = ap.parse_args(argv)
    body, ok = render(a.old, a.new, a.seeds)
    if a.compile:
        body += "\n" + compile_table(*a.compile)
    if a.out:
        seeds = "".join(f" {x}" for x in a.seeds)
        comp = f" --compile {a.compile[0].as_posix()} {a.compile[1].as_posix()}" if a.compile else ""
        head = ("## Results on the default data\n\n"
                "Generated by `python bench/compare_stack.py OLD NEW"
                f"{' --seeds' + seeds if seeds else ''}{comp} --out "
                f"{a.out.as_posix()}` (do not edit by hand). OLD is `selfmodel run data_raw "
                "--out OLD` made on the previous stack (Python 3.11, PyMC 5, ArviZ 0.23: "
                "the lock before the stack change), NEW the same command on this one; the "
                "`--seeds` refits are made by this script into NEW.\n\n")
        keep = a.out.read_text() if a.out.exists() else ""
        keep = keep[: keep.index(MARKER) + len(MARKER)] + "\n\n" if MARKER in keep else ""
        a.out.write_text(keep + head + body)
    else:
        sys.stdout.write(body)
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
