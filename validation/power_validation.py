"""Validate the fast approximate fit of ``selfmodel.power`` against the full NUTS fit.

At a few design points, simulate data sets with ``selfmodel.power.simulate_cells`` and fit each
one twice: with ``selfmodel.power.fast_fit`` (the fit the power sweep uses) and with the scale
model of ``models/scale.py`` sampled by nutpie (the pipeline's sampler settings, except 1000
draws per chain). Both posteriors go through ``selfmodel.decisions.hypotheses.decide`` with the same rule.
Reported per design point: agreement of the decisions, the confusion table, the difference of
the slope posterior means in units of the NUTS posterior sd, the ratio of posterior sds, and
P(improves) from each fit with its binomial standard error.

The NUTS model is compiled once per design point (data shape) and re-used for every data set
of that point, with the observed counts as a shared variable: the same ``selfmodel.models.scale.build``
graph, only the observed data are swapped (``compiled.with_data``). The first data set of the
first point is also fitted through ``selfmodel.fitting.sampling.fit`` (a fresh compile) at three seeds to
show the swap changes nothing beyond seed-to-seed noise; both are saved under ``swap_check``
(``--swap-check-only`` recomputes just that entry).

Usage::

    .venv/bin/python validation/power_validation.py            # ~25-40 min on 2 busy cores
    .venv/bin/python validation/power_validation.py --sims 4 --out /tmp/pv.json   # smoke run

Writes ``validation/results/power_validation.json``.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
import warnings
from dataclasses import replace
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from selfmodel.decisions.hypotheses import decide  # noqa: E402
from selfmodel.fitting.sampling import SamplerSettings, diagnose, fit, package_versions  # noqa: E402
from selfmodel.power import OUTCOMES, Design, Task, default_design, fast_fit, simulate_cells  # noqa: E402

SEED = 20261130
DECISIONS = OUTCOMES


def design_points() -> list[tuple[str, Design, float]]:
    d = default_design()
    small = Design(
        models=tuple(
            (f"{f}-{s}b", f, float(np.log10(s))) for f in ("fa", "fb", "fc") for s in (3, 30)
        ),
        tasks=(Task("t1", 100, 0.6), Task("t2", 100, 0.75)),
        sigma_family=0.15,
        sigma_model=0.15,
        sigma_cell=0.2,
        sigma_task_slope=0.1,
        source="bench: 3 families x 2 sizes, 2 tasks x 100 items",
    )
    sizes = (1, 3, 10, 30, 100, 300)
    many = Design(
        models=tuple(
            (f"{f}-{s}b", f, float(np.log10(s))) for f in ("fa", "fb", "fc", "fd") for s in sizes
        ),
        tasks=tuple(replace(t, items=40) for t in d.tasks),
        sigma_family=d.sigma_family,
        sigma_model=d.sigma_model,
        sigma_cell=d.sigma_cell,
        sigma_task_slope=d.sigma_task_slope,
        source="bench: 4 families x 6 sizes, default tasks with 40 items",
    )
    return [
        ("default_slope_0", d, 0.0),
        ("default_slope_0.3", d, 0.3),
        ("small_slope_0.5", small, 0.5),
        ("many_models_40_items_slope_0.2", many, 0.2),
    ]


def compile_point(cells0):
    import nutpie
    import pytensor

    from selfmodel.models import scale

    model = scale.build(cells0)
    k_rv = model["k"]
    model.rvs_to_values[k_rv] = pytensor.shared(
        np.asarray(cells0["k"], dtype="int64"), name="k_observed"
    )
    return nutpie.compile_pymc_model(model)


def nuts(compiled, k, settings: SamplerSettings, seed: int):
    from selfmodel.fitting.sampling import sample_nutpie

    return sample_nutpie(compiled.with_data(k_observed=np.asarray(k, dtype="int64")), settings, seed)


def swap_check(settings: SamplerSettings, seeds=(SEED, SEED + 1, SEED + 2)) -> dict:
    """Data set 0 of the first point, fitted with the swapped-data model and by selfmodel.fitting.sampling.fit.

    Several seeds, because the posterior sd of one NUTS run varies by a few percent from seed
    to seed: the swap must agree within that spread, not to the last digit.
    """
    name, design, slope = design_points()[0]
    cells0 = simulate_cells(design, slope, seed=SEED, sim=0)
    compiled = compile_point(cells0)
    rows = []
    for seed in seeds:
        a = nuts(compiled, cells0["k"].to_numpy(), settings, seed=seed).posterior["beta"].values
        b = fit("scale", cells0, seed=seed, settings=settings).idata.posterior["beta"].values
        rows.append(
            {
                "seed": seed,
                "shared_data_swap": {"mean": float(a.mean()), "sd": float(a.std(ddof=1))},
                "fresh_compile_via_analysis_fit": {
                    "mean": float(b.mean()),
                    "sd": float(b.std(ddof=1)),
                },
            }
        )
        print(f"swap check seed {seed}: {rows[-1]}", flush=True)
    return {"point": name, "sim": 0, "runs": rows}


def summarise(rows: list[dict], n_models: int) -> dict:
    sims = len(rows)
    agree = sum(r["nuts"]["decision"] == r["fast"]["decision"] for r in rows)
    confusion = {a: {b: 0 for b in DECISIONS} for a in DECISIONS}
    for r in rows:
        confusion[r["nuts"]["decision"]][r["fast"]["decision"]] += 1
    z = [(r["fast"]["mean"] - r["nuts"]["mean"]) / r["nuts"]["sd"] for r in rows]
    ratio = [r["fast"]["sd"] / r["nuts"]["sd"] for r in rows]
    lo = [r["fast"]["hdi_low"] - r["nuts"]["hdi_low"] for r in rows]
    hi = [r["fast"]["hdi_high"] - r["nuts"]["hdi_high"] for r in rows]

    def p(which: str, decision: str) -> dict:
        q = sum(r[which]["decision"] == decision for r in rows) / sims
        return {"p": q, "se": float(np.sqrt(q * (1 - q) / sims))}

    return {
        "sims": sims,
        "n_models": n_models,
        "decision_agreement": agree / sims,
        "confusion_nuts_rows_fast_columns": confusion,
        "mean_diff_in_nuts_sd": {"mean": float(np.mean(z)), "max_abs": float(np.max(np.abs(z)))},
        "sd_ratio_fast_over_nuts": {
            "mean": float(np.mean(ratio)),
            "min": float(np.min(ratio)),
            "max": float(np.max(ratio)),
        },
        "hdi_low_diff": {"mean": float(np.mean(lo)), "max_abs": float(np.max(np.abs(lo)))},
        "hdi_high_diff": {"mean": float(np.mean(hi)), "max_abs": float(np.max(np.abs(hi)))},
        "p_decision": {d: {"nuts": p("nuts", d), "fast": p("fast", d)} for d in DECISIONS},
        "nuts_diagnostics_passed": sum(r["nuts"]["diagnostics_passed"] for r in rows) / sims,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sims", type=int, default=25)
    ap.add_argument("--draws", type=int, default=1000)
    ap.add_argument(
        "--out", type=Path, default=ROOT / "validation" / "results" / "power_validation.json"
    )
    ap.add_argument("--points", nargs="*", help="names of design points to run (default: all)")
    ap.add_argument(
        "--swap-check-only",
        action="store_true",
        help="recompute only 'swap_check' in an existing --out file",
    )
    args = ap.parse_args(argv)
    settings = replace(SamplerSettings(), draws=args.draws)
    warnings.simplefilter("ignore")
    if args.swap_check_only:
        saved = json.loads(args.out.read_text())
        saved["swap_check"] = swap_check(settings)
        args.out.write_text(json.dumps(saved, indent=2, sort_keys=True) + "\n")
        print(f"updated swap_check in {args.out}")
        return 0
    points = [p for p in design_points() if not args.points or p[0] in args.points]
    out: dict = {
        "generated_by": "validation/power_validation.py",
        "command": " ".join([Path(sys.executable).name, *sys.argv]),
        "seed": SEED,
        "sampler": {**settings.__dict__},
        "fast_fit": "selfmodel.power.fast_fit (default grid, 4000 draws)",
        "versions": package_versions(),
        "platform": platform.platform(),
        "points": [],
    }
    all_rows = []
    for name, design, slope in points:
        t0 = time.perf_counter()
        cells0 = simulate_cells(design, slope, seed=SEED, sim=0)
        compiled = compile_point(cells0)
        compile_s = time.perf_counter() - t0
        rows = []
        for s in range(args.sims):
            cells = simulate_cells(design, slope, seed=SEED, sim=s)
            t1 = time.perf_counter()
            idata = nuts(compiled, cells["k"].to_numpy(), settings, seed=SEED + s)
            nuts_s = time.perf_counter() - t1
            beta = idata.posterior["beta"].values.ravel()
            dn = decide(beta, design.rule, n_models=len(design.models))
            diag = diagnose(idata)
            t2 = time.perf_counter()
            df = fast_fit(cells, rule=design.rule, seed=SEED + s)
            fast_s = time.perf_counter() - t2
            keep = ("mean", "sd", "hdi_low", "hdi_high", "prob_positive", "decision")
            row = {
                "sim": s,
                "nuts": {
                    **{k: dn[k] for k in keep},
                    "diagnostics_passed": bool(diag["passed"]),
                    "seconds": round(nuts_s, 2),
                },
                "fast": {**{k: df[k] for k in keep}, "seconds": round(fast_s, 4)},
            }
            rows.append(row)
            print(
                f"{name} sim {s}: nuts {dn['mean']:.3f}+-{dn['sd']:.3f} {dn['decision']} | "
                f"fast {df['mean']:.3f}+-{df['sd']:.3f} {df['decision']} ({nuts_s:.1f}s)",
                flush=True,
            )
        entry = {
            "name": name,
            "design": design.as_dict(),
            "slope": slope,
            "compile_seconds": round(compile_s, 1),
            "summary": summarise(rows, len(design.models)),
            "per_sim": rows,
        }
        out["points"].append(entry)
        all_rows += rows
        print(json.dumps({name: entry["summary"]["decision_agreement"]}), flush=True)
    out["overall"] = {
        "sims": len(all_rows),
        "decision_agreement": sum(r["nuts"]["decision"] == r["fast"]["decision"] for r in all_rows)
        / max(1, len(all_rows)),
        "max_abs_mean_diff_in_nuts_sd": float(
            max(abs(r["fast"]["mean"] - r["nuts"]["mean"]) / r["nuts"]["sd"] for r in all_rows)
        ),
        "sd_ratio_range": [
            float(min(r["fast"]["sd"] / r["nuts"]["sd"] for r in all_rows)),
            float(max(r["fast"]["sd"] / r["nuts"]["sd"] for r in all_rows)),
        ],
    }
    out["swap_check"] = swap_check(settings)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(out, indent=2, sort_keys=True) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
