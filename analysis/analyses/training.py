"""Did training improve self-modeling? Derived checkpoints against their bases.

The registry describes the design (``docs/registry.md``): a derived checkpoint names its
``base_model``, its ``intervention`` and the ``trained_tasks`` of that intervention; every
other task both checkpoints answered is *held out*. This module

* checks the design against the data (:func:`validate_design`; the registry file itself is
  checked by :mod:`selfmodel.records.registry`): a task in ``trained_tasks`` that the records do not
  have, or two checkpoints of one intervention with different splits, is a one-line error
  naming the registry file and line;
* builds the paired table of ``models/training.py`` (:func:`training_table`): per
  checkpoint x task, the items on which the checkpoint and its base disagree
  (``comparison = "gain"``, with both checkpoints' signal-detection counts on the shared
  items);
* fits that model and decides every effect with the declared rule (:func:`training_effect`):
  accuracy, d' and criterion per intervention x task, the trained-task mean and the
  held-out (transfer) mean separately; diagnostics gate every decision (``finding``);
* decides privileged access from real cross-predictions (:mod:`selfmodel.analyses.privileged`, a
  difference in differences with a cluster bootstrap, not from the fit): ``not_estimable``
  with the reason where the records hold no prediction by the checkpoint of its base (its
  self-predictions are never rescored as a substitute);
* attaches the shipped studies of these decisions: the training study at the pipeline's
  sampler settings (:data:`OPERATING_CHARACTERISTICS_DATA`, ``validation/training_study.py``: null,
  known-gain and misspecified arms from an independent generator) and the older null-only
  study at 2 x 1000 draws (:data:`NULL_OPERATING_CHARACTERISTICS_DATA`, ``validation/training_null.py``).

Not done here: the effect of training is not related to scale, and a checkpoint derived from
a derived checkpoint is compared with its own base only; see ``models/training.py``.

Derived checkpoints never enter the scale models: they share their base's size, so they
would be extra points at one size (``selfmodel.records.cells.scale_values`` gives them no scale
value; ``scale_effect.excluded_derived_checkpoints`` lists them with the reason).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from selfmodel import models as model_registry
from selfmodel.analyses.privileged import privileged_access
from selfmodel.common.paths import PACKAGE_DATA, shipped_study
from selfmodel.decisions.hypotheses import DecisionRule, decide, not_estimable
from selfmodel.fitting.fitter import Fitter
from selfmodel.records.contract import SCALE_EXCLUSION_REASON, InputError
from selfmodel.records.registry import did_you_mean, format_input_error, model_lines
from selfmodel.records.simulate import training_implied_truth

UNITS = (
    "log odds ratio of a correct self-prediction, trained checkpoint vs its base on the same "
    "items (conditional on the items where exactly one is right)"
)

SDT_UNITS = (
    "change in d' (criterion) of the trained checkpoint against its own outcomes, vs its base "
    "against its own, on the items both answered (equal-variance signal detection, as "
    "models/sdt.py)"
)


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
    not recorded as text); ``pred_t``/``out_t``/``pred_b``/``out_b`` the texts.
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
        pl.col("prediction").alias("pred_t"),
        pl.col("outcome").alias("out_t"),
        pl.col("prediction_base").alias("pred_b"),
        pl.col("outcome_base").alias("out_b"),
    )


def _sdt_counts(pred: pl.Series, out: pl.Series) -> dict[str, int]:
    """Signal (outcome true), noise, hits and false alarms of binary texts (0 otherwise)."""
    p, o = pred.to_numpy().astype(str), out.to_numpy().astype(str)
    binary = np.isin(p, ["true", "false"]) & np.isin(o, ["true", "false"])
    sig, yes = (o == "true") & binary, (p == "true") & binary
    return {"n_signal": int(sig.sum()), "n_noise": int((binary & ~sig).sum()),
            "hits": int((yes & sig).sum()), "false_alarms": int((yes & ~sig & binary).sum())}


_SDT_COLUMNS = tuple(f"{c}_{s}" for s in ("base", "trained")
                     for c in ("n_signal", "n_noise", "hits", "false_alarms"))


def _pair_task_rows(d: pl.DataFrame, common: dict[str, Any]) -> list[dict[str, Any]]:
    """The ``gain`` row of one checkpoint x task (with the signal-detection counts)."""
    tt, bb = d["c_tt"].to_numpy().astype(bool), d["c_bb"].to_numpy().astype(bool)
    ok = ~d["c_tb"].is_null().to_numpy()
    tb = d["c_tb"].fill_null(False).to_numpy().astype(bool)
    common = {**common, "n_items": d.height, "acc_tt": float(tt.mean()),
              "acc_bb": float(bb.mean()), "acc_tb": float(tb[ok].mean()) if ok.any() else None}
    sdt = {f"{k}_base": v for k, v in _sdt_counts(d["pred_b"], d["out_b"]).items()}
    sdt.update({f"{k}_trained": v for k, v in _sdt_counts(d["pred_t"], d["out_t"]).items()})
    return [{**common, **sdt, "comparison": "gain", "weight": 1.0,
             "n": int((tt != bb).sum()), "k": int((tt & ~bb).sum())}]


TABLE_SCHEMA: dict[str, Any] = {
    "model": pl.Utf8, "base_model": pl.Utf8, "family": pl.Utf8, "intervention": pl.Utf8,
    "task": pl.Utf8, "arm": pl.Utf8, "status": pl.Utf8, "n_items": pl.Int64,
    "acc_tt": pl.Float64, "acc_bb": pl.Float64, "acc_tb": pl.Float64,
    "comparison": pl.Utf8, "n": pl.Int64, "k": pl.Int64, "weight": pl.Float64,
    **dict.fromkeys(_SDT_COLUMNS, pl.Int64),
}


def training_table(
    records: pl.DataFrame, registry: pl.DataFrame | None, tasks: Sequence[str]
) -> pl.DataFrame:
    """The table of ``models/training.py`` (empty without derived checkpoints).

    Columns: ``model`` (checkpoint), ``base_model``, ``family``, ``intervention``, ``task``,
    ``arm`` (``intervention|task``), ``status`` (``trained``/``held_out``), ``comparison``
    (``gain``), ``n`` and ``k`` (the counts of ``models/training.py``), ``weight`` (1), the
    signal-detection counts of base and checkpoint on the shared items (``n_signal_base``
    ... ``false_alarms_trained``), and the descriptive ``n_items``, ``acc_tt``, ``acc_bb``,
    ``acc_tb`` (the checkpoint's self-predictions scored against its base's outcomes: a
    description, not evidence of privileged access; see :mod:`selfmodel.analyses.privileged`).
    """
    out: list[dict[str, Any]] = []
    rows = derived_checkpoints(registry)
    for row in rows:
        items = paired_items(records, row["model"], row["base_model"])
        for task in tasks:
            d = items.filter(pl.col("task") == task)
            if d.height == 0:
                continue
            common = {
                "model": row["model"], "base_model": row["base_model"],
                "family": row["family"], "intervention": row["intervention"], "task": task,
                "arm": f"{row['intervention']}|{task}",
                "status": "trained" if task in row["trained_tasks"] else "held_out",
            }
            out.extend(_pair_task_rows(d, common))
    return pl.DataFrame(out, schema=TABLE_SCHEMA)


def _rule(rule: DecisionRule) -> DecisionRule:
    """The declared rule for a paired comparison: one pair is enough to estimate it."""
    return replace(rule, min_models=1)


def _draws(idata: Any, var: str) -> np.ndarray:
    return idata.posterior[var].values


def _arm_decisions(post: Any, var: str, status: Mapping[str, str], r: DecisionRule,
                   n_pairs: int, reasons: Mapping[str, str] | None = None) -> list[dict[str, Any]]:
    """One decision per intervention x task of the arm-level ``var`` (not estimable with reason)."""
    out = []
    for i, arm in enumerate(str(a) for a in post[var].coords["arm"].values):
        intervention, task = arm.split("|", 1)
        why = (reasons or {}).get(arm)
        d = (not_estimable(why, r) if why else decide(post[var].values[..., i], r, n_models=n_pairs))
        out.append({"arm": arm, "intervention": intervention, "task": task,
                    "status": status[arm], **d})
    return out


def _kind_means(idata: Any, name: str, per_task: Sequence[Mapping[str, Any]], r: DecisionRule,
                n_pairs: int) -> dict[str, Any]:
    """Decisions on ``trained_<name>`` and ``held_out_<name>`` (never pooled together)."""
    post = idata.posterior
    out: dict[str, Any] = {}
    for key in ("trained", "held_out"):
        tasks = [e["task"] for e in per_task if e["status"] == key]
        var = f"{key}_{name}"
        if var not in post:
            d = not_estimable(f"the design has no {key.replace('_', '-')} task", r)
        elif any(e["decision"] == "not_estimable" for e in per_task if e["status"] == key):
            d = not_estimable(f"a {key.replace('_', '-')} task is not estimable", r)
        else:
            d = decide(_draws(idata, var), r, n_models=n_pairs)
        out[key] = {**d, "tasks": tasks}
    return out


def _sdt_reasons(gain: pl.DataFrame) -> dict[str, str]:
    """Arms whose signal-detection counts cannot separate d' from the criterion."""
    out = {}
    for arm, d in gain.group_by("arm"):
        sides = [d[f"{c}_{s}"].sum() for s in ("base", "trained") for c in ("n_signal", "n_noise")]
        if min(sides) == 0:
            out[str(arm[0])] = ("no binary prediction with both outcomes on the shared items "
                                "(signal detection needs true and false outcomes)")
    return out


def decide_sdt(idata: Any, table: pl.DataFrame, rule: DecisionRule) -> dict[str, Any]:
    """The ``sdt`` part of ``training_effect``: d' and criterion effects per task and kind."""
    r = _rule(rule)
    post = idata.posterior
    n_pairs = table["model"].n_unique()
    gain = table.filter(pl.col("comparison") == "gain")
    status = dict(zip(gain["arm"], gain["status"], strict=False))
    reasons = _sdt_reasons(gain)
    out: dict[str, Any] = {"units": SDT_UNITS}
    for side in ("dprime", "criterion"):
        var = f"{side}_effect"
        if var not in post:
            out[side] = {"available": False, "reason": "no signal-detection counts in the table"}
            continue
        per_task = _arm_decisions(post, var, status, r, n_pairs, reasons)
        out[side] = {"per_task": per_task, **_kind_means(idata, var, per_task, r, n_pairs)}
    return out


def decide_training(
    idata: Any, table: pl.DataFrame, rule: DecisionRule, *, passed: bool
) -> dict[str, Any]:
    """Decisions and summaries of a fitted ``training`` model (the ``training_effect`` body)."""
    r = _rule(rule)
    post = idata.posterior
    n_pairs = table["model"].n_unique()
    gain = table.filter(pl.col("comparison") == "gain")
    status = dict(zip(gain["arm"], gain["status"], strict=False))
    per_task = _arm_decisions(post, "delta", status, r, n_pairs)
    summary = _kind_means(idata, "effect", per_task, r, n_pairs)
    out = {"per_task": per_task, **summary,
           "per_pair_task": _per_pair_task(post, gain, r),
           "sdt": decide_sdt(idata, table, rule),
           "finding": bool(passed)}
    return out


def _per_pair_task(post: Any, gain: pl.DataFrame, r: DecisionRule) -> list[dict[str, Any]]:
    """Per checkpoint x task: the descriptive accuracies and the pair's own effects."""
    out = []
    q = [(1 - r.hdi_prob) / 2, (1 + r.hdi_prob) / 2]
    for row in gain.sort(["model", "task"]).iter_rows(named=True):
        entry = {
            "model": row["model"], "base_model": row["base_model"], "family": row["family"],
            "task": row["task"], "status": row["status"], "n_items": row["n_items"],
            "n_discordant": row["n"], "accuracy_base": row["acc_bb"],
            "accuracy_trained": row["acc_tt"], "accuracy_trained_vs_base_outcome": row["acc_tb"],
        }
        for key, var in (("effect", "delta_pair"), ("dprime_effect", "dprime_effect_pair"),
                         ("criterion_effect", "criterion_effect_pair")):
            if var not in post:
                continue
            dp = post[var].sel(arm=row["arm"], pair=row["model"]).values.ravel()
            lo, hi = np.quantile(dp, q)
            entry.update({f"{key}_mean": float(dp.mean()), f"{key}_low": float(lo),
                          f"{key}_high": float(hi)})
        out.append(entry)
    return out


def _row(quantity: str, true: float, e: Mapping[str, Any]) -> dict[str, Any]:
    return {"quantity": quantity, "truth": true, "mean": e["mean"], "hdi_low": e["hdi_low"],
            "hdi_high": e["hdi_high"], "covered": e["hdi_low"] <= true <= e["hdi_high"]}


def truth_rows(section: Mapping[str, Any], truth: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Estimates against the simulation's truth (simulated data only).

    The accuracy effects are in ``truth["training"]``; the d'/criterion effects are implied
    by the generative parameters saved beside them
    (``selfmodel.records.simulate.training_implied_truth``). The simulator writes no
    cross-predictions, so privileged access has no row here (it is ``not_estimable`` on
    such data; its operating characteristics are ``validation/privileged_access.py``).
    """
    t = truth.get("training")
    if not t:
        return []
    implied = training_implied_truth(dict(truth))
    rows = []
    for e in section.get("per_task", []):
        true = t["effect_per_arm"].get(e["arm"])
        if true is not None and e.get("mean") is not None:
            rows.append(_row(f"training effect, {e['task']} ({e['status']})", true, e))
    for side, label in (("dprime", "d'"), ("criterion", "criterion")):
        for e in (section.get("sdt") or {}).get(side, {}).get("per_task", []):
            true = implied.get(f"{side}_per_arm", {}).get(e["arm"])
            if true is not None and e.get("mean") is not None:
                rows.append(_row(f"{label} effect, {e['task']} ({e['status']})", true, e))
    return rows


#: The null study's summary (``validation/training_null.py --ship`` writes it: false ``improves``
#: rates on the default design); read with ``shipped_study``.
NULL_OPERATING_CHARACTERISTICS_DATA = PACKAGE_DATA / "training_null.json"
#: The training study's summary at the pipeline's settings (``validation/training_study.py --ship``).
OPERATING_CHARACTERISTICS_DATA = PACKAGE_DATA / "training_operating_characteristics.json"


def training_effect(
    records: pl.DataFrame,
    registry: pl.DataFrame | None,
    tasks: Sequence[str],
    *,
    rule: DecisionRule,
    fitter: Fitter,
    truth: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The ``training_effect`` section of ``results.json`` (see ``docs/results.md``).

    ``fitter`` fits the training model; its seed also seeds the privileged-access bootstrap.
    """
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
        "privileged_access": "from real cross-predictions (records with predictor set): the "
        "checkpoint predicting its base, and other predictors of both (selfmodel.analyses.privileged)",
    }
    table = training_table(records, registry, tasks)
    # the model declared on this table (the stage reads declarations, not names)
    module = next(m for m in model_registry.REGISTRY.values() if m.SPEC.table == "training_pairs")
    reason = module.SPEC.unfit_reason(table)
    base: dict[str, Any] = {
        "available": reason is None, "fit_model": module.NAME, "units": UNITS, "design": design,
        "rule": _rule(rule).as_dict(),
        "rope_meaning": f"±{rule.rope:g} in the effect's own units (log odds ratio)",
        # decided from the records, not from the fit: present whether or not the model is fitted
        "privileged_access": privileged_access(records, rows, rule=rule, seed=fitter.seed),
    }
    if reason is not None:
        return {**base, "reason": reason}
    f = fitter.fit(module.NAME, table,
                   why=f"sampling 'training' model: {table['model'].n_unique()} checkpoint(s)")
    out = {**base, "diagnostics": f.diagnostics,
           **decide_training(f.idata, table, rule, passed=f.diagnostics["passed"])}
    out["null_operating_characteristics"] = shipped_study(NULL_OPERATING_CHARACTERISTICS_DATA, "null study")
    out["operating_characteristics"] = shipped_study(OPERATING_CHARACTERISTICS_DATA, "training study")
    if truth is not None:
        out["truth_comparison"] = truth_rows(out, truth)
    return out


__all__ = [
    "SCALE_EXCLUSION_REASON",
    "decide_training",
    "derived_checkpoints",
    "paired_items",
    "training_effect",
    "training_table",
    "truth_rows",
    "validate_design",
]
