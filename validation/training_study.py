"""The training effect's decisions at the pipeline's settings: null, coverage, misspecified (issue 28.6).

Every data set comes from ``validation/training_generator.py`` (an independent generator of
records: no binomial-logit cells, a logistic readout, per-family gains from skewed laws; see
its docstring for the arms ``null``, ``truth`` and ``misspecified``), is reduced by
``selfmodel.analyses.training.training_table`` as the pipeline reduces ingested records,
fitted with ``models/training.py`` by :func:`selfmodel.fitting.sampling.fit` at the pipeline's own
sampler settings (``SamplerSettings()`` with the model's ``SPEC.sampling``: 4 chains x 2000
draws after 1000 tuning, ``target_accept`` 0.99; compiled once per process and reused,
``reuse_compiled=True``) and decided by :func:`selfmodel.analyses.training.decide_training`
with the declared rule. A fit failing its diagnostics gate is not a finding: it never counts
as a decision, and the failures are counted apart.

Decided quantities (as the report prints them): accuracy, d' and criterion, each for the
trained task, the held-out mean and every task. Per arm and quantity:

* ``false``: under ``null`` and ``misspecified`` (truth 0), data sets whose decision is
  credible in either direction (``improves``, ``credibly_positive``, ``worsens``,
  ``credibly_negative``), and ``improves`` alone; Clopper-Pearson 95% intervals;
* ``coverage``: the 94% HDI's coverage of the truth among the fits that passed the gate;
* ``power`` (``truth`` only): the rate of ``improves`` where the truth is positive.

Targets (the map's): 200 data sets under each null arm (a 5% rate known to about +-3
points), 100 at the known truth. Output: one JSON line per data set in
``OUT/training_study.jsonl`` (resumable: finished ``(arm, seed)`` pairs are skipped), the summary
``OUT/training_study.json``; ``--ship`` copies it to ``analysis/data/training_operating_characteristics.json``,
which the validation map reads.

    .venv/bin/python validation/training_study.py --arms null,misspecified --sims 200 --out validation/results
    .venv/bin/python validation/training_study.py --arms truth --sims 100 --out validation/results --ship
    .venv/bin/python validation/training_study.py --arms null --sims 2 --out /tmp/ts       # smoke run
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT / "validation") not in sys.path:
    sys.path.insert(0, str(ROOT / "validation"))

import jsonl_records  # noqa: E402
import training_generator as gen  # noqa: E402

from selfmodel import models as model_registry  # noqa: E402
from selfmodel.analyses.training import decide_training, training_table  # noqa: E402
from selfmodel.common.binomial import rate  # noqa: E402
from selfmodel.decisions.hypotheses import DecisionRule  # noqa: E402
from selfmodel.fitting.sampling import SamplerSettings, fit, for_model, package_versions  # noqa: E402
from selfmodel.records.contract import NEGATIVE_DECISIONS, POSITIVE_DECISIONS  # noqa: E402

SHIPPED = ROOT / "analysis" / "data" / "training_operating_characteristics.json"
FIRST_SEED = 31000
TARGET = {"null": 200, "misspecified": 200, "truth": 100}
CREDIBLE = POSITIVE_DECISIONS | NEGATIVE_DECISIONS


def settings() -> SamplerSettings:
    """The settings the pipeline samples the training model with."""
    return for_model(SamplerSettings(), model_registry.get("training").SPEC.sampling)


def decided(out: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """Every decided quantity of a ``training_effect`` body -> decision and 94% HDI."""
    d: dict[str, dict[str, Any]] = {}
    blocks = {"accuracy": out, **{k: out["sdt"][k] for k in ("dprime", "criterion")}}
    for name, b in blocks.items():
        entries = [(f"{name}:{kind}", b[kind]) for kind in ("trained", "held_out")]
        entries += [(f"{name}:task:{e['task']}", e) for e in b["per_task"]]
        for key, e in entries:
            d[key] = {"decision": e["decision"], "hdi": [e.get("hdi_low"), e.get("hdi_high")]}
    return d


def one(arm: str, seed: int, rule: DecisionRule) -> dict[str, Any]:
    """Generate, reduce, fit and decide one data set; compare with its truth."""
    records, registry, fams = gen.generate(arm, seed)
    truth = gen.truths(arm, fams, seed)
    table = training_table(records, registry, list(gen.TASKS))
    t0 = time.perf_counter()
    f = fit("training", table, seed=seed, settings=settings(), cache_dir=None, reuse_compiled=True)
    passed = bool(f.diagnostics["passed"])
    out = decide_training(f.idata, table, rule, passed=passed)
    quantities = {}
    for key, e in decided(out).items():
        lo, hi = e["hdi"]
        t = truth[key]
        quantities[key] = {"decision": e["decision"], "truth": round(t, 6),
                           "covered": None if lo is None else bool(lo <= t <= hi)}
    return {"arm": arm, "seed": seed, "passed": passed, "seconds": round(time.perf_counter() - t0, 2),
            "divergences": f.diagnostics.get("divergences"), "quantities": quantities,
            "sampler": {k: getattr(settings(), k) for k in ("chains", "draws", "tune", "target_accept")},
            "versions": package_versions()}


def single_task_kinds() -> dict[str, str]:
    """A kind (trained, held-out) with one task is that task's quantity: ``{kind key: task key}``.

    Named in the summary so that pooled rates count such a decision once.
    """
    out = {}
    for kind in ("trained", "held_out"):
        tasks = [t for t, k in gen.TASKS.items() if k == kind]
        if len(tasks) == 1:
            out.update({f"{q}:{kind}": f"{q}:task:{tasks[0]}" for q in ("accuracy", "dprime", "criterion")})
    return out


def summarise_arm(rows: Sequence[Mapping[str, Any]], arm: str) -> dict[str, Any]:
    """Per quantity: false decisions (nulls) or power (truth), and coverage among passed fits."""
    n = len(rows)
    passed = [r for r in rows if r["passed"]]
    keys = sorted({k for r in rows for k in r["quantities"]})
    per: dict[str, Any] = {}
    for key in keys:
        qs = [r["quantities"][key] for r in passed]
        cov = [q["covered"] for q in qs if q["covered"] is not None]
        entry: dict[str, Any] = {"coverage": rate(sum(cov), len(cov))}
        truths = [r["quantities"][key]["truth"] for r in rows]
        entry["truth_mean"] = sum(truths) / n if n else None
        if arm == "truth":
            entry["power_improves"] = rate(sum(q["decision"] == "improves" for q in qs), n)
        else:
            entry["false_credible"] = rate(sum(q["decision"] in CREDIBLE for q in qs), n)
            entry["false_improves"] = rate(sum(q["decision"] == "improves" for q in qs), n)
        per[key] = entry
    same_as = single_task_kinds()
    pooled_cov = [q["covered"] for r in passed for key, q in r["quantities"].items()
                  if q["covered"] is not None and key not in same_as]
    out: dict[str, Any] = {
        "n": n, "target_n": TARGET[arm], "complete": n >= TARGET[arm],
        "failed_gate": n - len(passed), "quantities": per, "same_as": same_as,
        "coverage_pooled": rate(sum(pooled_cov), len(pooled_cov)),
        "median_seconds_per_fit": sorted(r["seconds"] for r in rows)[n // 2] if n else None,
        "sampler": sorted({json.dumps(r["sampler"], sort_keys=True) for r in rows}),
        "versions": [json.loads(v) for v in sorted({json.dumps(r["versions"], sort_keys=True) for r in rows})],
    }
    out["sampler"] = [json.loads(s) for s in out["sampler"]]
    if arm != "truth":
        anyc = sum(any(q["decision"] in CREDIBLE for q in r["quantities"].values()) for r in passed)
        out["any_false_credible"] = rate(anyc, n)
        # the headline: the trained-task accuracy effect, the training decision the report leads with
        out["headline"] = {"quantity": "accuracy:trained", **per["accuracy:trained"]["false_improves"]}
    else:
        out["headline"] = {"quantity": "pooled coverage", **out["coverage_pooled"]}
    return out


def summarise(rows: Sequence[Mapping[str, Any]], source: Path, sims: Mapping[str, int]) -> dict[str, Any]:
    """The shipped summary."""
    arms = {arm: summarise_arm([r for r in rows if r["arm"] == arm], arm)
            for arm in gen.ARMS if any(r["arm"] == arm for r in rows)}
    shown = source.resolve()
    shown_s = str(shown.relative_to(ROOT)) if shown.is_relative_to(ROOT) else str(shown)
    return {
        "available": True,
        "question": "how often the training effect's rule declares an effect that is not there, and how "
                    "often its 94% HDI covers a known one, at the pipeline's sampler settings",
        "generator": "validation/training_generator.py",
        "design": {"families": list(gen.FAMILIES), "tasks": gen.TASKS, "items_per_task": gen.N_ITEMS,
                   "gain_truth_arm": {k: {"kappa": v[0], "criterion": v[1]} for k, v in gen.GAIN.items()}},
        "settings": {k: getattr(settings(), k) for k in ("chains", "draws", "tune", "target_accept")},
        "rule": DecisionRule().as_dict(),
        "interval": "Clopper-Pearson 95%",
        "arms": arms,
        "commands": [f".venv/bin/python validation/training_study.py --arms {a} --sims {n} --out "
                     f"{Path(shown_s).parent.as_posix()}" for a, n in sims.items()],
        "source": shown_s,
        "source_sha256": hashlib.sha256(source.read_bytes()).hexdigest() if source.exists() else None,
    }


def main(argv: list[str] | None = None) -> int:
    """Run (resumable), summarise and optionally ship."""
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--arms", default=",".join(gen.ARMS))
    ap.add_argument("--sims", type=int, default=None, help="data sets per arm (default: its target)")
    ap.add_argument("--start", type=int, default=0)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--ship", action="store_true", help="also write the package data the map reads")
    a = ap.parse_args(argv)
    a.out.mkdir(parents=True, exist_ok=True)
    path = a.out / "training_study.jsonl"
    rows = jsonl_records.read(path)  # a torn last line is skipped: that data set is refitted
    done = {(r["arm"], r["seed"]) for r in rows}
    rule = DecisionRule()
    for arm in a.arms.split(","):
        if arm not in gen.ARMS:
            ap.error(f"unknown arm {arm!r} (arms: {', '.join(gen.ARMS)})")
        sims = a.sims if a.sims is not None else TARGET[arm]
        for i in range(a.start, a.start + sims):
            seed = FIRST_SEED + i
            if (arm, seed) in done:
                continue
            row = one(arm, seed, rule)
            rows.append(row)
            jsonl_records.append(path, row)
            q = row["quantities"]["accuracy:trained"]
            print(f"{arm} seed {seed}: {row['seconds']} s, passed {row['passed']}, accuracy:trained "
                  f"{q['decision']} (truth {q['truth']:+.3f}, covered {q['covered']})", flush=True)
    counts = {arm: sum(r["arm"] == arm for r in rows) for arm in gen.ARMS}
    summary = summarise(rows, path, {k: v for k, v in counts.items() if v})
    text = json.dumps(summary, indent=1, sort_keys=True) + "\n"
    (a.out / "training_study.json").write_text(text)
    if a.ship:
        SHIPPED.write_text(text)
    for arm, s in summary["arms"].items():
        h = s["headline"]
        print(f"{arm}: n={s['n']}/{s['target_n']} failed gate {s['failed_gate']}; {h['quantity']} "
              f"{h['k']}/{h['n']}; pooled coverage {s['coverage_pooled']['rate']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
