"""Recovery, null rate and a misspecified case for the contrast model (issue 29).

The data come from :func:`generate`, a generator written for this study alone: it draws
canonical *records* (one Bernoulli self-prediction per model x condition x item x repeat,
with a prediction and an outcome from which ingest's rule derives ``correct``), not the
model's counts, and shares no code with ``models/contrast.py`` or ``selfmodel.records.simulate``.
Its truth is stated on the logit scale as level effects, so a contrast's truth is the
difference of two levels' effects:

    logit P(correct) = base + model_effect[m] + condition_effect[c] + item[i] + cell[m, c]

with ``item ~ N(0, item_sd)`` shared by every model and condition, ``cell ~ N(0, cell_sd)``.

Arms (two closed models, three conditions, one task):

* ``recovery``: condition effects (+0.5, 0, -0.5), model effects (-0.3, +0.3), 120 items: the truth of
  each contrast should lie inside its 94% HDI (coverage per contrast);
* ``null``: no condition and no model difference: how often is a contrast declared
  credible (any decision but ``no_credible_effect`` / ``practically_null``)? Clopper-Pearson
  95% interval on the rate over the data sets;
* ``misspecified``: no condition difference, but item difficulty differs between the models
  (an item x model interaction of sd 1.0 the model does not have): the same null rate.

The model is compiled once per process and reused with each new data set
(``Fitter(..., reuse_compiled=True)``, :func:`selfmodel.fitting.sampling.fit`: nutpie
``with_data``).

At the pipeline's own sampler settings (``SamplerSettings()``: 4 x 2000 draws after 1000
tuning, target_accept 0.99), one core per fit; a results file made with other settings is
not resumed:

    .venv/bin/python validation/contrast_study.py --sims 3 --out /tmp/cs      # cost first
    nice -n 10 .venv/bin/python validation/contrast_study.py --sims 200 --arms null,misspecified --out validation/results
    nice -n 10 .venv/bin/python validation/contrast_study.py --sims 100 --arms recovery --out validation/results
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import jsonl_records  # validation/: this folder (on sys.path as a script's and in the tests)
import numpy as np
import polars as pl

from selfmodel.analyses.contrasts import contrast_section
from selfmodel.common.binomial import clopper_pearson
from selfmodel.decisions.hypotheses import DecisionRule
from selfmodel.fitting.fitter import Fitter
from selfmodel.fitting.sampling import SamplerSettings

ROOT = Path(__file__).resolve().parents[1]

MODELS = ("gpt-4o", "gpt-5")
CONDITIONS = ("after_solving", "before_solving", "no_reasoning")


@dataclass(frozen=True)
class Design:
    """Truth of one simulated study (logit scale)."""

    condition_effect: tuple[float, ...] = (0.0, 0.0, 0.0)
    model_effect: tuple[float, ...] = (0.0, 0.0)
    base: float = 0.6
    item_sd: float = 0.8
    cell_sd: float = 0.0
    item_model_sd: float = 0.0  # misspecification: item difficulty differs by model
    n_items: int = 80
    repeats: int = 2
    models: tuple[str, ...] = MODELS
    conditions: tuple[str, ...] = CONDITIONS
    extra: dict[str, Any] = field(default_factory=dict)

    def truth(self) -> dict[str, dict[str, float]]:
        """Contrast label ("b - a", sorted levels) -> true difference, per factor."""
        out: dict[str, dict[str, float]] = {}
        for factor, names, eff in (("condition", self.conditions, self.condition_effect),
                                   ("model", self.models, self.model_effect)):
            order = sorted(range(len(names)), key=lambda i: names[i])
            out[factor] = {
                f"{names[b]} - {names[a]}": eff[b] - eff[a]
                for x, a in enumerate(order) for b in order[x + 1:]
            }
        return out


ARMS = {
    "recovery": Design(condition_effect=(0.5, 0.0, -0.5), model_effect=(-0.3, 0.3), n_items=120),
    "null": Design(),
    "misspecified": Design(item_model_sd=1.0),
}


def generate(design: Design, seed: int) -> pl.DataFrame:
    """Canonical records of one simulated study (see the module docstring)."""
    rng = np.random.default_rng(seed)
    item = rng.normal(0.0, design.item_sd, design.n_items)
    item_model = rng.normal(0.0, design.item_model_sd, (len(design.models), design.n_items))
    cell = rng.normal(0.0, design.cell_sd, (len(design.models), len(design.conditions)))
    rows: dict[str, list[Any]] = {k: [] for k in (
        "model", "task", "item_id", "condition", "sample", "prediction", "outcome")}
    for m, model in enumerate(design.models):
        for c, cond in enumerate(design.conditions):
            eta = (design.base + design.model_effect[m] + design.condition_effect[c]
                   + item + item_model[m] + cell[m, c])
            p = 1.0 / (1.0 + np.exp(-eta))
            for r in range(design.repeats):
                right = rng.random(design.n_items) < p
                outcome = rng.random(design.n_items) < 0.6
                prediction = np.where(right, outcome, ~outcome)
                rows["model"] += [model] * design.n_items
                rows["task"] += ["confidence"] * design.n_items
                rows["item_id"] += [f"q{i}" for i in range(design.n_items)]
                rows["condition"] += [cond] * design.n_items
                rows["sample"] += [r] * design.n_items
                rows["prediction"] += ["true" if v else "false" for v in prediction]
                rows["outcome"] += ["true" if v else "false" for v in outcome]
    frame = pl.DataFrame(rows)
    return frame.with_columns(
        pl.col("model").alias("predictor"),
        (pl.col("prediction") == pl.col("outcome")).alias("correct"),
        pl.lit("ok").alias("status"),
    )


def credible(decision: str) -> bool:
    """A decision that declares a difference (a credible sign)."""
    return decision in ("improves", "credibly_positive", "worsens", "credibly_negative")


def one(arm: str, seed: int, settings: SamplerSettings, rule: DecisionRule) -> dict[str, Any]:
    """Fit one data set of ``arm`` and compare each decided contrast with the truth."""
    design = ARMS[arm]
    t0 = time.process_time()
    section = contrast_section(generate(design, seed), rule=rule,
                               fitter=Fitter(seed, settings, reuse_compiled=True))
    rows = []
    for factor, truths in design.truth().items():
        for label, true in truths.items():
            d = section["contrasts"][factor][label]
            rows.append({"factor": factor, "contrast": label, "truth": true,
                         "mean": d["mean"], "hdi_low": d["hdi_low"], "hdi_high": d["hdi_high"],
                         "decision": d["decision"],
                         "covered": bool(d["hdi_low"] <= true <= d["hdi_high"]),
                         "credible": credible(d["decision"])})
    return {"arm": arm, "seed": seed, "settings": asdict(settings),
            "cpu_s": time.process_time() - t0,
            "passed": section["diagnostics"]["passed"],
            "max_rhat": section["diagnostics"]["max_rhat"],
            "min_ess_bulk": section["diagnostics"]["min_ess_bulk"],
            "divergences": section["diagnostics"]["divergences"], "contrasts": rows}


def summarise(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Per arm and contrast: coverage and credible-decision rate with exact intervals."""
    out: dict[str, Any] = {}
    for arm in sorted({r["arm"] for r in runs}):
        mine = [r for r in runs if r["arm"] == arm]
        per: dict[str, Any] = {}
        for row in mine[0]["contrasts"]:
            key = f"{row['factor']}: {row['contrast']}"
            got = [c for r in mine for c in r["contrasts"]
                   if f"{c['factor']}: {c['contrast']}" == key]
            n = len(got)
            for what in ("covered", "credible"):
                k = sum(c[what] for c in got)
                lo, hi = clopper_pearson(k, n)
                per.setdefault(key, {"truth": row["truth"], "n": n})[what] = {
                    "k": k, "rate": k / n, "ci95": [lo, hi]}
        n_any = sum(any(c["credible"] for c in r["contrasts"]) for r in mine)
        n_any_gated = sum(r["passed"] and any(c["credible"] for c in r["contrasts"]) for r in mine)
        out[arm] = {"n_datasets": len(mine), "n_passed": sum(r["passed"] for r in mine),
                    # data sets with any contrast declared credible (a failed fit is no finding)
                    "any_credible": {"k": n_any, "ci95": clopper_pearson(n_any, len(mine))},
                    "any_credible_gated": {"k": n_any_gated,
                                           "ci95": clopper_pearson(n_any_gated, len(mine))},
                    "cpu_s_per_fit": float(np.mean([r["cpu_s"] for r in mine])),
                    "design": asdict(ARMS[arm]), "contrasts": per}
    return out


def versions() -> dict[str, str]:
    """Versions of the stack that fitted the runs."""
    from importlib.metadata import version

    return {p: version(p) for p in ("selfmodel", "pymc", "pytensor", "nutpie", "numpy")}


#: Where ``--ship`` writes the summary (``selfmodel.analyses.contrasts.OPERATING_CHARACTERISTICS_DATA``, read by ``shipped_study``).
SHIPPED = ROOT / "analysis" / "data" / "contrast_operating_characteristics.json"


def ship(source: Path, target: Path = SHIPPED) -> dict[str, Any]:
    """The summary with the command that made it and its records' SHA-256, as package data."""
    import hashlib

    summary = json.loads(source.read_text())
    lines = source.with_suffix(".jsonl")
    shown = (source.resolve().relative_to(ROOT).as_posix() if source.resolve().is_relative_to(ROOT)
             else str(source))
    summary["command"] = f".venv/bin/python validation/contrast_study.py --ship {shown}"
    summary["source"] = shown.replace(".json", ".jsonl")
    summary["source_sha256"] = hashlib.sha256(lines.read_bytes()).hexdigest() if lines.is_file() else None
    target.write_text(json.dumps(summary, indent=1, sort_keys=True) + "\n")
    return summary


def main(argv: list[str] | None = None) -> None:
    """Run the study (resumable: finished ``arm, seed`` pairs in the JSONL are skipped)."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sims", type=int, default=3)
    ap.add_argument("--start", type=int, default=0,
                    help="first seed of this piece: seeds START .. START+SIMS-1 (one piece per core)")
    ap.add_argument("--arms", default=",".join(ARMS))
    ap.add_argument("--out", type=Path, required=False)
    ap.add_argument("--ship", type=Path, metavar="SUMMARY",
                    help="copy this summary (contrast_study.json) to the package data the pipeline "
                    "reads (analysis/data/contrast_operating_characteristics.json) and stop")
    # the pipeline's own sampler settings by default (selfmodel.fitting.sampling.SamplerSettings);
    # one core per fit, as the study runs fits one after the other
    default = SamplerSettings()
    ap.add_argument("--draws", type=int, default=default.draws)
    ap.add_argument("--tune", type=int, default=default.tune)
    ap.add_argument("--chains", type=int, default=default.chains)
    ap.add_argument("--target-accept", type=float, default=default.target_accept)
    args = ap.parse_args(argv)
    if args.ship:
        ship(args.ship)
        return
    if args.out is None:
        ap.error("--out is required (or --ship)")
    args.out.mkdir(parents=True, exist_ok=True)
    lines = args.out / "contrast_study.jsonl"
    runs = jsonl_records.read(lines)
    settings = SamplerSettings(draws=args.draws, tune=args.tune, chains=args.chains, cores=1,
                               target_accept=args.target_accept)
    other = [r for r in runs if r.get("settings") != asdict(settings)]
    if other:
        raise SystemExit(f"{lines}: {len(other)} runs were made with other sampler settings "
                         f"than {asdict(settings)}; resume with those, or choose another --out")
    done = {(r["arm"], r["seed"]) for r in runs}
    rule = DecisionRule()
    for arm in args.arms.split(","):
        for seed in range(args.start, args.start + args.sims):
            if (arm, seed) in done:
                continue
            run = one(arm, seed, settings, rule)
            runs.append(run)
            jsonl_records.append(lines, run, sort_keys=False)
            print(arm, seed, f"{run['cpu_s']:.1f} CPU-s", run["passed"], flush=True)
    summary = {"settings": asdict(settings), "rule": rule.as_dict(), "versions": versions(),
               "arms": summarise(runs)}
    (args.out / "contrast_study.json").write_text(json.dumps(summary, indent=1) + "\n")


if __name__ == "__main__":
    main()
