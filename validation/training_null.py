"""Null study of the training effect (operating characteristics under a null): how often is a null effect declared to improve?

Draws data sets from ``selfmodel.records.simulate.simulate`` with the default design (four trained
checkpoints, one trained task, two held out) and **no** training effect on any task
(``training_dprime`` = 0 everywhere: the checkpoints' behaviour is redrawn on half the items,
as in the default data, but their sensitivity and criterion equal their bases'). Each data
set is fitted with ``models/training.py`` through ``selfmodel.fitting.sampling.fit`` (nutpie, compiled
once per process and reused with each new data set: ``reuse_compiled=True``) and decided by
``selfmodel.analyses.training.decide_training`` with the declared rule. A fit that fails its
diagnostics is not a finding, so it counts as *not* declaring ``improves`` (and is counted
apart).

For every decided quantity (accuracy, d' and criterion: the trained-task mean, the
held-out mean and each task; privileged access is decided apart since issue 28.1 and
studied by ``validation/privileged_access.py``) it counts the data sets declared
``improves`` and gives the rate with its Clopper-Pearson 95% interval (also ignoring the diagnostics gate, and among the fits that
passed; ``null_quantities`` lists those whose truth is null). Under a null effect the rule's ``improves`` (P > 0.95 *and* the
HDI beyond the ROPE) should be rarer than 5%. Note that with no d' change the
``either``-type checkpoint (``cirrus-14b-rl``) is slightly *worse* than its base against its
own outcome, so the null accuracy and d' arm means sit a little below 0 (``truth`` in the
output): the study measures the declared rate at or just below the null, not above it.

Sampler: 2 chains x 1000 draws after 500 tuning per fit, shorter than the pipeline's 4 x 2000,
to fit 150 data sets in under an hour on 2 shared cores. At that length a third of the fits
fail the gate (150-set run: 51), from a bulk ESS just under 400 on a spread such as
``sigma_delta`` (one refitted: 373, R-hat 1.008, no divergence); the rates are given gated
and ungated, and they agree on every null quantity but one.

Output: one JSON line per data set in ``--out/training_null.jsonl`` (resumable: finished
seeds are skipped) and the summary ``--out/training_null.json``; ``--ship`` also copies the
summary into the package data ``analysis/data/training_null.json``, which the pipeline puts
in ``training_effect.null_operating_characteristics`` and the report quotes.

    .venv/bin/python validation/training_null.py --sims 150 --out validation/results --ship
    .venv/bin/python validation/training_null.py --sims 3 --out /tmp/tn     # smoke run
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import jsonl_records  # noqa: E402  (validation/: this folder, on sys.path as a script's)
import polars as pl

from selfmodel.analyses.training import decide_training, training_table
from selfmodel.common.binomial import clopper_pearson
from selfmodel.decisions.hypotheses import DecisionRule
from selfmodel.fitting.sampling import SamplerSettings, fit
from selfmodel.records.simulate import SimulationConfig, simulate, training_implied_truth

ROOT = Path(__file__).resolve().parents[1]
PACKAGE_DATA = ROOT / "analysis" / "data" / "training_null.json"
NULL_CONFIG = SimulationConfig(
    training_dprime={"refusal": 0.0, "difficulty": 0.0, "word_association": 0.0}
)
SETTINGS = dataclasses.replace(SamplerSettings(), chains=2, draws=1000, tune=500)
FIRST_SEED = 5000


def null_records(seed: int, config: SimulationConfig = NULL_CONFIG
                 ) -> tuple[pl.DataFrame, pl.DataFrame, dict[str, Any]]:
    """Simulated records in the shape ``training_table`` reads (as ingest would give them)."""
    records, registry, truth = simulate(seed=seed, config=config)
    records = records.with_columns(
        pl.lit(None, dtype=pl.Utf8).alias("predictor"),
        pl.when(pl.col("status") == "ok")
        .then(pl.col("prediction") == pl.col("outcome")).otherwise(None).alias("correct"),
    )
    return records, registry, truth


def decisions(out: Mapping[str, Any]) -> dict[str, str]:
    """Every decided quantity of a ``training_effect`` body -> its decision."""
    d: dict[str, str] = {}
    blocks = {"accuracy": out, **{k: out["sdt"][k] for k in ("dprime", "criterion")}}
    for name, b in blocks.items():
        for kind in ("trained", "held_out"):
            d[f"{name}:{kind}"] = b[kind]["decision"]
        for e in b["per_task"]:
            d[f"{name}:task:{e['task']}"] = e["decision"]
    # privileged access is no longer decided from this fit (issue 28.1): its operating characteristics are
    # validation/privileged_access.py; rows of the shipped study made before that keep the
    # rescoring contrasts' rates (privileged_vs_*), which the report no longer shows
    return d


def one(seed: int, rule: DecisionRule) -> dict[str, Any]:
    """Simulate, fit and decide one null data set."""
    records, registry, truth = null_records(seed)
    tasks = sorted(records["task"].unique().to_list())
    tab = training_table(records, registry, tasks)
    t0 = time.perf_counter()
    f = fit("training", tab, seed=seed, settings=SETTINGS, cache_dir=None, reuse_compiled=True)
    out = decide_training(f.idata, tab, rule, passed=f.diagnostics["passed"])
    implied = training_implied_truth(truth)
    return {
        "seed": seed, "passed": bool(f.diagnostics["passed"]),
        "seconds": round(time.perf_counter() - t0, 2),
        "decisions": decisions(out),
        "truth": {"accuracy": truth["training"]["effect_per_arm"],
                  "dprime": implied["dprime_per_arm"]},
    }


def null_quantities(keys: Iterable[str], config: SimulationConfig = NULL_CONFIG) -> list[str]:
    """The decided quantities whose truth is null (or just below) under the null design.

    Every accuracy, d' and criterion effect; in rows made before issue 28.1, also the
    rescoring contrast against the base of a checkpoint built without privileged access
    (``knows = "either"``), no longer decided by the pipeline.
    """
    either = {f"{c.base}-{c.suffix}" for c in config.trained if c.knows == "either"}
    return sorted(k for k in keys if k.split(":", 1)[0] in ("accuracy", "dprime", "criterion")
                  or k in {f"privileged_vs_base:{m}" for m in either})


def _rate(rows: list[Mapping[str, Any]], key: str, *, gated: bool) -> dict[str, Any]:
    n = len(rows)
    k = sum((r["passed"] or not gated) and r["decisions"].get(key) == "improves" for r in rows)
    lo, hi = clopper_pearson(k, n) if n else (None, None)
    return {"improves": k, "rate": k / n if n else None, "ci_low": lo, "ci_high": hi}


def summarize(rows: Iterable[Mapping[str, Any]], rule: DecisionRule, source: Path
              ) -> dict[str, Any]:
    """Rates of ``improves`` per quantity.

    ``rates``: a fit failing its diagnostics counts as not improving (as in the pipeline,
    where it is not a finding); ``rates_ignoring_diagnostics``: the decision of every fit,
    gate or not (an upper bound); ``rates_passed_fits``: among the fits that passed.
    """
    rows = list(rows)
    passed = [r for r in rows if r["passed"]]
    keys = sorted({k for r in rows for k in r["decisions"]})
    rates = {}
    for key in keys:
        rates[key] = {**_rate(rows, key, gated=True),
                      "credibly_positive_or_improves": sum(
                          r["passed"] and r["decisions"].get(key) in
                          ("improves", "credibly_positive") for r in rows)}
    digest = hashlib.sha256(source.read_bytes()).hexdigest() if source.exists() else None
    return {
        "question": "how often is a null training effect declared 'improves'",
        "design": "selfmodel.records.simulate defaults with training_dprime = 0 on every task "
        "(4 trained checkpoints, trained on refusal, difficulty and word_association held out)",
        "n_datasets": len(rows),
        "n_failed_diagnostics": len(rows) - len(passed),
        "seeds": [min(r["seed"] for r in rows), max(r["seed"] for r in rows)] if rows else [],
        "sampler": dataclasses.asdict(SETTINGS),
        "rule": rule.as_dict(),
        "interval": "Clopper-Pearson 95%",
        "null_quantities": null_quantities(keys),
        "rates": rates,
        "rates_ignoring_diagnostics": {k: _rate(rows, k, gated=False) for k in keys},
        "rates_passed_fits": {k: _rate(passed, k, gated=False) for k in keys},
        "source": _shown(source),
        "source_sha256": digest,
        # the run that made the rows (a --summarize-only rerun writes the same summary)
        "command": f"python validation/training_null.py --sims {len(rows)} --out "
        f"{_shown(source.parent)} --ship",
    }


def _shown(path: Path) -> str:
    """``path`` relative to the repository when inside it."""
    path = path.resolve()
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--sims", type=int, default=150)
    ap.add_argument("--out", type=Path, default=ROOT / "validation" / "results")
    ap.add_argument("--ship", action="store_true", help="also write the package data")
    ap.add_argument("--summarize-only", action="store_true")
    a = ap.parse_args(argv)
    a.out.mkdir(parents=True, exist_ok=True)
    path = a.out / "training_null.jsonl"
    done = {r["seed"] for r in jsonl_records.read(path)}
    rule = DecisionRule()
    if not a.summarize_only:
        for seed in range(FIRST_SEED, FIRST_SEED + a.sims):
            if seed in done:
                continue
            row = one(seed, rule)
            jsonl_records.append(path, row)
            print(f"seed {seed}: {row['seconds']} s, accuracy:trained "
                  f"{row['decisions']['accuracy:trained']}", flush=True)
    rows = jsonl_records.read(path)
    summary = summarize(rows, rule, path)
    text = json.dumps(summary, indent=2, sort_keys=True) + "\n"
    (a.out / "training_null.json").write_text(text)
    if a.ship:
        PACKAGE_DATA.write_text(text)
    for key in summary["null_quantities"]:
        r, u = summary["rates"][key], summary["rates_ignoring_diagnostics"][key]
        print(f"{key}: improves {r['improves']} of {summary['n_datasets']} "
              f"({r['rate']:.3f}, 95% CI {r['ci_low']:.3f}-{r['ci_high']:.3f}); "
              f"ignoring diagnostics {u['improves']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
