"""Did training improve self-modeling? Derived checkpoints against their bases (issue 19).

The registry describes the design (``docs/registry.md``): a derived checkpoint names its
``base_model``, its ``intervention`` and the ``trained_tasks`` of that intervention; every
other task both checkpoints answered is *held out*. This module

* checks the design against the data (:func:`validate_design`; the registry file itself is
  checked by :mod:`analysis.registry`): a task in ``trained_tasks`` that the records do not
  have, or two checkpoints of one intervention with different splits, is a one-line error
  naming the registry file and line;
* builds the paired table of ``models/training.py`` (:func:`training_table`): per
  checkpoint x task, the items on which the checkpoint and its base disagree
  (``comparison = "gain"``), and the items on which the checkpoint's own prediction is
  right about itself but not about its base's outcome, or the reverse
  (``comparison = "privileged"``);
* fits that model and decides every effect with the declared rule (:func:`training_effect`):
  per intervention x task, the trained-task mean and the held-out (transfer) mean
  separately, and the privileged-access contrast per checkpoint.

Derived checkpoints never enter the scale models: they share their base's size, so they
would be extra points at one size (``analysis.cells.scale_values`` gives them no scale
value; ``scale_effect.excluded_derived_checkpoints`` lists them with the reason).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

import models as model_registry
from analysis.contract import InputError
from analysis.fit import fit
from analysis.hypotheses import DecisionRule, decide, not_estimable
from analysis.registry import did_you_mean, format_input_error, model_lines

Progress = Callable[[str], None]

#: Why derived checkpoints are left out of the scale and SDT models.
SCALE_EXCLUSION_REASON = (
    "derived checkpoint (registry base_model): it has its base's size, so it would be an extra "
    "point at one size on the scale axis; its effect is estimated in training_effect"
)

UNITS = (
    "log odds ratio of a correct self-prediction, trained checkpoint vs its base on the same "
    "items (conditional on the items where exactly one is right)"
)

#: What each decision on the privileged-access contrast means for the question.
PRIVILEGED_READING: dict[str, str] = {
    "improves": "introspection-like: the gain in predicting itself exceeds the gain in "
    "predicting its base, beyond the ROPE",
    "credibly_positive": "the gain in predicting itself credibly exceeds the gain in "
    "predicting its base, but not shown to exceed the ROPE",
    "practically_null": "behavioural knowledge: the gain is as large for predicting its base "
    "(the contrast lies inside the ROPE)",
    "credibly_negative": "behavioural knowledge: the gain is larger for predicting its base",
    "worsens": "behavioural knowledge: the gain is larger for predicting its base, beyond "
    "the ROPE",
    "no_credible_effect": "no evidence of privileged access: the self-gain is not shown to "
    "exceed the gain in predicting its base (consistent with behavioural knowledge; the "
    "interval says how large a privileged part the data allow)",
    "not_estimable": "not estimable: no item on which the checkpoint's and its base's "
    "outcomes differ",
}


def split_tasks(value: str | None) -> list[str]:
    """``"a; b"`` -> ``["a", "b"]`` (empty entries dropped)."""
    return [t.strip() for t in (value or "").split(";") if t.strip()]


def derived_checkpoints(registry: pl.DataFrame | None) -> list[dict[str, Any]]:
    """Registry rows with a ``base_model``: model, base_model, family, intervention, trained."""
    if registry is None or "base_model" not in registry.columns:
        return []
    rows = registry.filter(pl.col("base_model").is_not_null()).sort("model")
    return [
        {
            "model": r["model"],
            "base_model": r["base_model"],
            "family": r["family"],
            "intervention": r["intervention"] or "(unnamed)",
            "trained_tasks": split_tasks(r["trained_tasks"]),
        }
        for r in rows.iter_rows(named=True)
    ]


def validate_design(
    registry: pl.DataFrame | None, registry_path: Path | str | None, tasks: Sequence[str]
) -> None:
    """Raise a one-line :class:`InputError` when the split does not fit the data.

    A ``trained_tasks`` entry naming a task absent from the records, or two checkpoints of
    one intervention with different ``trained_tasks``, names the registry file and the line
    of the checkpoint's row.
    """
    rows = derived_checkpoints(registry)
    if not rows:
        return
    lines = model_lines(registry_path) if registry_path is not None else {}
    split_of: dict[str, tuple[str, list[str]]] = {}
    for row in rows:
        for task in row["trained_tasks"]:
            if task not in tasks:
                raise InputError(
                    format_input_error(
                        registry_path,
                        f"trained task '{task}' of '{row['model']}' is not in the data "
                        f"(tasks: {', '.join(tasks)}).{did_you_mean(task, tasks)}",
                        "Name the tasks as the records do, separated by ';'",
                        line=lines.get(row["model"]),
                        column="trained_tasks",
                    )
                )
        first = split_of.setdefault(row["intervention"], (row["model"], row["trained_tasks"]))
        if sorted(first[1]) != sorted(row["trained_tasks"]):
            raise InputError(
                format_input_error(
                    registry_path,
                    f"intervention '{row['intervention']}' trains on "
                    f"'{';'.join(row['trained_tasks'])}' for '{row['model']}' but on "
                    f"'{';'.join(first[1])}' for '{first[0]}'",
                    "Give every checkpoint of one intervention the same trained_tasks, or "
                    "name the interventions differently",
                    line=lines.get(row["model"]),
                    column="trained_tasks",
                )
            )


def _self_records(records: pl.DataFrame, model: str) -> pl.DataFrame:
    """Readable self-predictions of ``model``: task, item_id, sample, correct, pred, out."""
    own = pl.col("predictor").is_null() | (pl.col("predictor") == pl.col("model"))
    return records.filter(
        (pl.col("model") == model)
        & own
        & (pl.col("status") == "ok")
        & pl.col("correct").is_not_null()
    ).select("task", "item_id", "sample", "correct", "prediction", "outcome")


def paired_items(records: pl.DataFrame, model: str, base: str) -> pl.DataFrame:
    """Items both checkpoints answered readably, with the three scorings.

    ``c_tt`` the checkpoint right about itself, ``c_bb`` the base right about itself,
    ``c_tb`` the checkpoint's prediction against the base's outcome (null when either is
    not recorded as text).
    """
    t = _self_records(records, model)
    b = _self_records(records, base)
    joined = t.join(b, on=["task", "item_id", "sample"], suffix="_base")
    return joined.select(
        "task",
        "item_id",
        "sample",
        pl.col("correct").alias("c_tt"),
        pl.col("correct_base").alias("c_bb"),
        pl.when(pl.col("prediction").is_not_null() & pl.col("outcome_base").is_not_null())
        .then(pl.col("prediction") == pl.col("outcome_base"))
        .otherwise(None)
        .alias("c_tb"),
    )


def training_table(
    records: pl.DataFrame, registry: pl.DataFrame | None, tasks: Sequence[str]
) -> pl.DataFrame:
    """The table of ``models/training.py`` (empty without derived checkpoints).

    Columns: ``model`` (checkpoint), ``base_model``, ``family``, ``intervention``, ``task``,
    ``arm`` (``intervention|task``), ``status`` (``trained``/``held_out``), ``comparison``
    (``gain``/``privileged``), ``n`` (discordant items), ``k`` (those where the first
    scoring is right), and the descriptive ``n_items``, ``acc_tt``, ``acc_bb``, ``acc_tb``.
    """
    out: list[dict[str, Any]] = []
    for row in derived_checkpoints(registry):
        items = paired_items(records, row["model"], row["base_model"])
        for task in tasks:
            d = items.filter(pl.col("task") == task)
            if d.height == 0:
                continue
            tt, bb = d["c_tt"].to_numpy().astype(bool), d["c_bb"].to_numpy().astype(bool)
            tb_s = d["c_tb"]
            ok = ~tb_s.is_null().to_numpy()
            tb = tb_s.fill_null(False).to_numpy().astype(bool)
            common = {
                "model": row["model"],
                "base_model": row["base_model"],
                "family": row["family"],
                "intervention": row["intervention"],
                "task": task,
                "arm": f"{row['intervention']}|{task}",
                "status": "trained" if task in row["trained_tasks"] else "held_out",
                "n_items": d.height,
                "acc_tt": float(tt.mean()),
                "acc_bb": float(bb.mean()),
                "acc_tb": float(tb[ok].mean()) if ok.any() else None,
            }
            out.append({**common, "comparison": "gain",
                        "n": int((tt != bb).sum()), "k": int((tt & ~bb).sum())})
            out.append({**common, "comparison": "privileged",
                        "n": int(((tt != tb) & ok).sum()), "k": int((tt & ~tb & ok).sum())})
    schema = {
        "model": pl.Utf8, "base_model": pl.Utf8, "family": pl.Utf8, "intervention": pl.Utf8,
        "task": pl.Utf8, "arm": pl.Utf8, "status": pl.Utf8, "n_items": pl.Int64,
        "acc_tt": pl.Float64, "acc_bb": pl.Float64, "acc_tb": pl.Float64,
        "comparison": pl.Utf8, "n": pl.Int64, "k": pl.Int64,
    }
    return pl.DataFrame(out, schema=schema)


def _rule(rule: DecisionRule) -> DecisionRule:
    """The declared rule for a paired comparison: one pair is enough to estimate it."""
    return replace(rule, min_models=1)


def _draws(idata: Any, var: str) -> np.ndarray:
    return idata.posterior[var].values


def decide_training(
    idata: Any, table: pl.DataFrame, rule: DecisionRule, *, passed: bool
) -> dict[str, Any]:
    """Decisions and summaries of a fitted ``training`` model (the ``training_effect`` body)."""
    r = _rule(rule)
    post = idata.posterior
    n_pairs = table["model"].n_unique()
    gain = table.filter(pl.col("comparison") == "gain")
    arms = [str(a) for a in post["delta"].coords["arm"].values]
    status = dict(zip(gain["arm"], gain["status"], strict=False))
    per_task = []
    for i, arm in enumerate(arms):
        intervention, task = arm.split("|", 1)
        entry = {"arm": arm, "intervention": intervention, "task": task,
                 "status": status[arm], **decide(post["delta"].values[..., i], r, n_models=n_pairs)}
        per_task.append(entry)
    summary: dict[str, Any] = {}
    for key, var in (("trained", "trained_effect"), ("held_out", "held_out_effect")):
        summary[key] = (
            decide(_draws(idata, var), r, n_models=n_pairs)
            if var in post
            else not_estimable(f"the design has no {key.replace('_', '-')} task", r)
        )
        summary[key]["tasks"] = [e["task"] for e in per_task if e["status"] == key]
    pairs = [str(p) for p in post["delta_pair"].coords["pair"].values]
    per_pair_task = []
    for row in gain.sort(["model", "task"]).iter_rows(named=True):
        dp = post["delta_pair"].sel(arm=row["arm"], pair=row["model"]).values.ravel()
        lo, hi = np.quantile(dp, [(1 - r.hdi_prob) / 2, (1 + r.hdi_prob) / 2])
        per_pair_task.append({
            "model": row["model"], "base_model": row["base_model"], "family": row["family"],
            "task": row["task"], "status": row["status"], "n_items": row["n_items"],
            "n_discordant": row["n"], "accuracy_base": row["acc_bb"],
            "accuracy_trained": row["acc_tt"], "accuracy_trained_vs_base_outcome": row["acc_tb"],
            "effect_mean": float(dp.mean()), "effect_low": float(lo), "effect_high": float(hi),
        })
    privileged: dict[str, Any] = {"per_checkpoint": [], "mean": None}
    priv = table.filter(pl.col("comparison") == "privileged")
    if "pi" in post and int(priv["n"].sum()) > 0:
        privileged["mean"] = decide(_draws(idata, "pi_mean"), r, n_models=n_pairs)
        for j, pair in enumerate(pairs):
            rows = priv.filter(pl.col("model") == pair)
            g = gain.filter(pl.col("model") == pair)
            w = g["n_items"].to_numpy().astype(float)
            acc = {c: float(np.average(g[c].fill_null(np.nan).to_numpy(), weights=w))
                   for c in ("acc_tt", "acc_bb", "acc_tb")}
            d = decide(post["pi"].values[..., j], r, n_models=n_pairs)
            privileged["per_checkpoint"].append({
                "model": pair,
                "base_model": g["base_model"][0],
                "n_discordant_outcomes": int(rows["n"].sum()),
                "self_gain_accuracy": acc["acc_tt"] - acc["acc_bb"],
                "other_gain_accuracy": acc["acc_tb"] - acc["acc_bb"],
                **d,
                "reading": PRIVILEGED_READING[d["decision"]],
            })
    else:
        privileged["reason"] = (
            "no item on which a checkpoint's outcome differs from its base's (or predictions "
            "and outcomes not recorded as text), so predictions cannot be rescored"
        )
    return {
        "per_task": per_task,
        **summary,
        "per_pair_task": per_pair_task,
        "privileged_access": privileged,
        "finding": bool(passed),
    }


def truth_rows(section: Mapping[str, Any], truth: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Estimates against ``truth.json``'s ``training`` block (simulated data only)."""
    t = truth.get("training")
    if not t:
        return []
    rows = []
    for e in section.get("per_task", []):
        true = t["effect_per_arm"].get(e["arm"])
        if true is not None and e.get("mean") is not None:
            rows.append({"quantity": f"training effect, {e['task']} ({e['status']})",
                         "truth": true, "mean": e["mean"], "hdi_low": e["hdi_low"],
                         "hdi_high": e["hdi_high"],
                         "covered": e["hdi_low"] <= true <= e["hdi_high"]})
    for e in section.get("privileged_access", {}).get("per_checkpoint", []):
        true = t["privileged_per_checkpoint"].get(e["model"])
        if true is not None:
            rows.append({"quantity": f"privileged-access contrast, {e['model']}",
                         "truth": true, "mean": e["mean"], "hdi_low": e["hdi_low"],
                         "hdi_high": e["hdi_high"],
                         "covered": e["hdi_low"] <= true <= e["hdi_high"]})
    return rows


def training_effect(
    records: pl.DataFrame,
    registry: pl.DataFrame | None,
    tasks: Sequence[str],
    *,
    rule: DecisionRule,
    seed: int,
    settings: Any,
    cache_dir: Path | None,
    progress: Progress,
    truth: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The ``training_effect`` section of ``results.json`` (see ``docs/results.md``)."""
    rows = derived_checkpoints(registry)
    if not rows:
        return {"available": False,
                "reason": "the registry declares no derived checkpoint (base_model)"}
    design = {
        "checkpoints": [
            {**r, "held_out_tasks": [t for t in tasks if t not in r["trained_tasks"]]}
            for r in rows
        ],
        "scale_models": SCALE_EXCLUSION_REASON,
        "other": "the checkpoint's base: its outcome on the same item",
    }
    table = training_table(records, registry, tasks)
    # the model declared on this table (the stage reads declarations, not names)
    module = next(m for m in model_registry.REGISTRY.values() if m.SPEC.table == "training_pairs")
    reason = module.SPEC.unfit_reason(table)
    base: dict[str, Any] = {
        "available": reason is None, "fit_model": module.NAME, "units": UNITS, "design": design,
        "rule": _rule(rule).as_dict(),
        "rope_meaning": f"±{rule.rope:g} in the effect's own units (log odds ratio)",
    }
    if reason is not None:
        return {**base, "reason": reason}
    progress(f"sampling 'training' model: {table['model'].n_unique()} checkpoint(s)")
    f = fit(module.NAME, table, seed=seed, settings=settings, cache_dir=cache_dir)
    out = {**base, "diagnostics": f.diagnostics,
           **decide_training(f.idata, table, rule, passed=f.diagnostics["passed"])}
    if truth is not None:
        out["truth_comparison"] = truth_rows(out, truth)
    return out


__all__ = [
    "PRIVILEGED_READING",
    "SCALE_EXCLUSION_REASON",
    "decide_training",
    "derived_checkpoints",
    "paired_items",
    "training_effect",
    "training_table",
    "truth_rows",
    "validate_design",
]
