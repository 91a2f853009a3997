r"""Privileged access: do the gains from training come from it? Issue 28.1.

A derived checkpoint :math:`T` (registry ``base_model`` :math:`B`) is asked to predict its
own behaviour and, in *cross-prediction* records (``predictor = T``, ``model = B``;
``docs/records.md``), its base's behaviour on the same items. Write :math:`y_{XY,i}` for
"predictor :math:`X`'s prediction of target :math:`Y`'s behaviour on item :math:`i` is
right". Training changed the predictor from :math:`B` to :math:`T`; the base predicting
itself, :math:`y_{BB}`, is the before-training reference. Then

* the **self-gain** is the gain in predicting oneself, :math:`T\to T` against :math:`B\to B`;
* the **other-gain** is the gain in predicting the base, :math:`T\to B` against
  :math:`B\to B`;
* the **contrast** (a difference in differences) is self-gain minus other-gain. It is 0 when
  training made the checkpoint as much better at predicting its base as at predicting
  itself (behavioural knowledge: it learned about the items or the family, not about
  itself), and positive when the gain is privileged to the self.

Each gain is a paired conditional log odds ratio on the same items (McNemar; Breslow & Day
1980, ch. 7): :math:`\log\{\sum_i w_i\,y_{1i}(1-y_{0i}) + \tfrac12\}
- \log\{\sum_i w_i\,(1-y_{1i})\,y_{0i} + \tfrac12\}` over the items where the two scorings
disagree, so each item's difficulty cancels (exactly, when it shifts both scorings' logits
alike) and the units are those of the training effect (``models/training.py``). The
contrast uses only items with all three predictions (:math:`T\to T`, :math:`B\to B`,
:math:`T\to B`) readable.

*Against other predictors of the same targets* (where the records have them): for every
predictor :math:`P \ne T` with predictions of both :math:`T` and :math:`B` (the base itself
with ``predictor = B``, ``model = T``; or any other model), the checkpoint's advantage over
:math:`P` in predicting :math:`T` minus its advantage over :math:`P` in predicting
:math:`B`: :math:`\mathrm{lor}(T\to T, P\to T) - \mathrm{lor}(T\to B, P\to B)` (for
:math:`P = B`, :math:`P\to B` is the base's self-prediction). This guards against a target
whose behaviour is simply easier to predict.

Trained and held-out tasks (registry ``trained_tasks``) are decided separately (the gains
from training are on the trained tasks; held out is transfer). ``mean`` is the in-sample
mean over the checkpoints of their trained-task contrasts.

Interval: a cluster bootstrap (:data:`N_BOOT` replicates). Clusters (the ``cluster``
column, else the item) are resampled with replacement within each task, the same draw for
every checkpoint and predictor, so every contrast stays paired at the item and the
checkpoints' mean is joint. The declared rule (``selfmodel.decisions.hypotheses.decide``: the
shortest interval holding ``hdi_prob`` of the replicates, the ROPE in log odds ratio units)
turns the replicates into the decision words of ``docs/decisions.md``. The choice of this
estimator over a hierarchical logistic fit and its operating characteristics are in ``docs/decisions.md``
("Privileged access") and ``validation/privileged_access.py``.

Where the records hold no prediction by the checkpoint of its base, the question is
``not_estimable`` with that reason: rescoring the checkpoint's self-predictions against its
base's outcomes is not a substitute (it asks whether a prediction *about itself* happens to
match the base, not whether the checkpoint can predict the base).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, Final

import numpy as np
import polars as pl

from selfmodel.common.paths import PACKAGE_DATA, shipped_study
from selfmodel.decisions.hypotheses import DecisionRule, decide, not_estimable

#: Bootstrap replicates of every contrast.
N_BOOT: Final = 2000
#: Fewest items with all predictions readable for a contrast to be estimated.
MIN_ITEMS: Final = 20

UNITS: Final = (
    "log odds ratio: self-gain minus other-gain, each a paired conditional log odds ratio "
    "of a right prediction after vs before training on the same items"
)
METHOD: Final = (
    "difference in differences on real predictions: (checkpoint->itself vs base->itself) "
    "minus (checkpoint->base vs base->base), paired at the item; cluster bootstrap within "
    "task, the same resample for every checkpoint"
)

#: What the decision words of this section rest on: the declared rule's words, computed from
#: bootstrap replicates of a point estimate, not from posterior draws (no prior, no model of
#: the checkpoints' spread); their error rates are those of this section's own study.
DECISION_BASIS: Final = (
    "the declared rule applied to cluster-bootstrap replicates of the contrast (not to "
    "posterior draws): its interval is the shortest interval holding the rule's share of the "
    "replicates, a frequentist interval; the words' error rates are those of this section's "
    "own study (validation/privileged_access.py)"
)

#: What each decision on the contrast means for the question.
READING: dict[str, str] = {
    "improves": "privileged access: training raised the checkpoint's accuracy at predicting "
    "itself more than at predicting its base, beyond the ROPE",
    "credibly_positive": "privileged access: the self-gain credibly exceeds the gain in "
    "predicting its base, but is not shown to exceed the ROPE",
    "practically_null": "behavioural knowledge: the gain in predicting its base is as large as "
    "in predicting itself (the contrast lies inside the ROPE)",
    "credibly_negative": "behavioural knowledge: the gain is larger for predicting its base",
    "worsens": "behavioural knowledge: the gain is larger for predicting its base, beyond the "
    "ROPE",
    "no_credible_effect": "no evidence of privileged access: the self-gain is not shown to "
    "exceed the gain in predicting its base (the interval says how large a privileged part "
    "the data allow)",
    "not_estimable": "not estimable (see the reason)",
}


def _readable(records: pl.DataFrame) -> pl.DataFrame:
    """Readable, scored predictions: predictor, target, task, item_id, sample, cluster, y."""
    cols = records.columns
    pred = (pl.coalesce(pl.col("predictor"), pl.col("model")) if "predictor" in cols
            else pl.col("model"))
    cluster = (pl.coalesce(pl.col("cluster").cast(pl.Utf8), pl.col("item_id"))
               if "cluster" in cols else pl.col("item_id"))
    ok = pl.col("correct").is_not_null()
    if "status" in cols:
        ok = ok & (pl.col("status") == "ok")
    sample = pl.col("sample") if "sample" in cols else pl.lit(0)
    return records.filter(ok).select(
        pred.alias("predictor"), pl.col("model").alias("target"), "task", "item_id",
        sample.alias("sample"), pl.concat_str([pl.col("task"), cluster], separator="|")
        .alias("cluster"), pl.col("correct").cast(pl.Boolean).alias("y"),
    )


_KEY = ["task", "item_id", "sample"]


def _cell(rows: pl.DataFrame, predictor: str, target: str, name: str) -> pl.DataFrame:
    """One predictor -> target scoring: the key, the cluster and ``name`` (bool)."""
    return (rows.filter((pl.col("predictor") == predictor) & (pl.col("target") == target))
            .unique(_KEY, keep="first").select(*_KEY, "cluster", pl.col("y").alias(name)))


def checkpoint_items(rows: pl.DataFrame, model: str, base: str) -> pl.DataFrame:
    """Items with ``tt``, ``bb`` and ``tb`` readable, plus ``pt:<P>``/``pb:<P>`` columns.

    ``pt:<P>`` and ``pb:<P>`` are other predictors' scorings of the checkpoint and of the
    base (null where absent); for ``P`` = the base, ``pb`` is its self-prediction.
    """
    d = (_cell(rows, model, model, "tt")
         .join(_cell(rows, base, base, "bb").drop("cluster"), on=_KEY)
         .join(_cell(rows, model, base, "tb").drop("cluster"), on=_KEY))
    others = sorted(set(rows.filter((pl.col("target") == model)
                                    & (pl.col("predictor") != model))["predictor"].to_list()))
    for p in others:
        d = d.join(_cell(rows, p, model, f"pt:{p}").drop("cluster"), on=_KEY, how="left")
        d = d.join(_cell(rows, p, base, f"pb:{p}").drop("cluster"), on=_KEY, how="left")
    return d


def cluster_weights(clusters: Sequence[str], *, n_boot: int, seed: int
                    ) -> tuple[dict[str, int], np.ndarray]:
    """Cluster index and bootstrap counts ``(n_boot + 1, n_clusters)`` (row 0: all ones).

    Clusters are named ``task|cluster``; each replicate resamples the clusters of each task
    with replacement, keeping each task's number of clusters.
    """
    names = sorted(set(clusters))
    index = {c: i for i, c in enumerate(names)}
    counts = np.ones((n_boot + 1, len(names)))
    rng = np.random.default_rng([seed, 281])
    tasks = np.array([c.split("|", 1)[0] for c in names])
    for t in sorted(set(tasks)):
        pos = np.flatnonzero(tasks == t)
        counts[1:, pos] = rng.multinomial(pos.size, np.full(pos.size, 1 / pos.size), size=n_boot)
    return index, counts


def _lor(y1: np.ndarray, y0: np.ndarray, cl: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Paired conditional log odds ratio of ``y1`` over ``y0`` for each weight row."""
    n_cl = counts.shape[1]
    k10 = np.bincount(cl, weights=(y1 & ~y0).astype(float), minlength=n_cl)
    k01 = np.bincount(cl, weights=(~y1 & y0).astype(float), minlength=n_cl)
    return np.asarray(np.log(counts @ k10 + 0.5) - np.log(counts @ k01 + 0.5))


def _summary(draws: np.ndarray, rule: DecisionRule) -> dict[str, Any]:
    """Point estimate (row 0) and the rule's decision on the replicates (rows 1:)."""
    return {"estimate": float(draws[0]), **decide(draws[1:], rule, n_models=1)}


def _contrast(d: pl.DataFrame, index: Mapping[str, int], counts: np.ndarray,
              rule: DecisionRule, what: str) -> tuple[dict[str, Any], np.ndarray | None]:
    """Self-gain, other-gain and their difference on the items of ``d`` (one status)."""
    if d.height < MIN_ITEMS:
        return {**not_estimable(f"{d.height} item(s) with {what} readable; at least "
                                f"{MIN_ITEMS} are needed", rule), "n_items": d.height}, None
    cl = np.array([index[c] for c in d["cluster"].to_list()], dtype=np.int64)
    tt, bb, tb = (d[c].to_numpy().astype(bool) for c in ("tt", "bb", "tb"))
    if not (tt != bb).any() or not (tb != bb).any():
        return {**not_estimable("no item on which the checkpoint's prediction and its base's "
                                "self-prediction differ in being right (a gain has no "
                                "information)", rule), "n_items": d.height}, None
    self_gain, other_gain = _lor(tt, bb, cl, counts), _lor(tb, bb, cl, counts)
    did = self_gain - other_gain
    q = [(1 - rule.hdi_prob) / 2, (1 + rule.hdi_prob) / 2]
    out = {**_summary(did, rule), "n_items": d.height, "n_clusters": int(np.unique(cl).size),
           "accuracy_self": float(tt.mean()), "accuracy_base_self": float(bb.mean()),
           "accuracy_of_base": float(tb.mean()),
           "self_gain_accuracy": float(tt.mean() - bb.mean()),
           "other_gain_accuracy": float(tb.mean() - bb.mean())}
    for name, g in (("self_gain", self_gain), ("other_gain", other_gain)):
        lo, hi = np.quantile(g[1:], q)
        out.update({name: float(g[0]), f"{name}_low": float(lo), f"{name}_high": float(hi)})
    return out, did


def _vs_predictors(d: pl.DataFrame, index: Mapping[str, int], counts: np.ndarray,
                   rule: DecisionRule) -> list[dict[str, Any]]:
    """The contrast against each other predictor of both targets (where the data have it)."""
    out = []
    for p in sorted(c[3:] for c in d.columns if c.startswith("pt:")):
        sub = d.filter(pl.col(f"pt:{p}").is_not_null() & pl.col(f"pb:{p}").is_not_null())
        if sub.height < MIN_ITEMS:
            out.append({"predictor": p, "n_items": sub.height, **not_estimable(
                f"{sub.height} item(s) where '{p}' predicted both the checkpoint and its base; "
                f"at least {MIN_ITEMS} are needed", rule)})
            continue
        cl = np.array([index[c] for c in sub["cluster"].to_list()], dtype=np.int64)
        y = {c: sub[c].to_numpy().astype(bool) for c in ("tt", "tb", f"pt:{p}", f"pb:{p}")}
        draws = (_lor(y["tt"], y[f"pt:{p}"], cl, counts)
                 - _lor(y["tb"], y[f"pb:{p}"], cl, counts))
        out.append({"predictor": p, "n_items": sub.height, **_summary(draws, rule)})
    return out


def _no_cross_reason(model: str, base: str) -> str:
    return (f"the records hold no prediction by '{model}' of its base '{base}' (rows with "
            f"predictor = '{model}' and model = '{base}'), so whether its gains are privileged "
            "cannot be told from predicting its base; rescoring its self-predictions against "
            "the base's outcomes answers another question and is not used")


def _none_cross_reason(models: Sequence[str]) -> str:
    return (f"the records hold no checkpoint's prediction of its base (rows with predictor = "
            f"the checkpoint and model = its base; checkpoints: {', '.join(models)}), so "
            "whether the gains from training are privileged cannot be told; rescoring the "
            "checkpoints' self-predictions against their bases' outcomes answers another "
            "question and is not used")


def _checkpoint(row: Mapping[str, Any], d: pl.DataFrame, index: Mapping[str, int],
                counts: np.ndarray, rule: DecisionRule
                ) -> tuple[dict[str, Any], np.ndarray | None]:
    """One checkpoint's entry: trained-task contrast on top, held-out and other predictors."""
    head = {"model": row["model"], "base_model": row["base_model"], "family": row["family"],
            "trained_tasks": row["trained_tasks"]}
    trained = d.filter(pl.col("task").is_in(row["trained_tasks"]))
    main, draws = _contrast(trained, index, counts, rule, "the three predictions")
    held, _ = _contrast(d.filter(~pl.col("task").is_in(row["trained_tasks"])), index, counts,
                        rule, "the three predictions")
    entry = {**head, **main, "reading": READING[main["decision"]], "held_out": held,
             "vs_other_predictors": _vs_predictors(trained, index, counts, rule)}
    return entry, draws


#: The operating characteristics' summary (``validation/privileged_access.py --ship`` writes it).
OPERATING_CHARACTERISTICS_DATA: Final = PACKAGE_DATA / "privileged_operating_characteristics.json"


def operating_characteristics(path: Path = OPERATING_CHARACTERISTICS_DATA) -> dict[str, Any]:
    """The shipped operating characteristics of this decision (independent generator), or why not.

    Measured on ``validation/privileged_generator.py`` data, not on the user's data:
    ``available`` is false without the file.
    """
    return shipped_study(path)


def privileged_access(records: pl.DataFrame, checkpoints: Sequence[Mapping[str, Any]], *,
                      rule: DecisionRule, seed: int, n_boot: int = N_BOOT) -> dict[str, Any]:
    """The ``privileged_access`` part of ``training_effect`` (see the module docstring).

    Parameters
    ----------
    records
        Canonical records, cross-predictions included (``predictor`` set).
    checkpoints
        ``selfmodel.analyses.training.derived_checkpoints(registry)``: model, base_model, family,
        trained_tasks.
    rule
        The declared rule (``min_models`` is 1 here: a paired contrast needs one pair).
    seed, n_boot
        Bootstrap seed and replicates.
    """
    r = replace(rule, min_models=1)
    base: dict[str, Any] = {"method": METHOD, "decision_basis": DECISION_BASIS, "units": UNITS,
                            "n_boot": n_boot,
                            "min_items": MIN_ITEMS, "rule": r.as_dict(), "per_checkpoint": [],
                            "operating_characteristics": operating_characteristics()}
    rows = _readable(records)
    items, reasons = {}, {}
    for ck in checkpoints:
        d = checkpoint_items(rows, ck["model"], ck["base_model"])
        if rows.filter((pl.col("predictor") == ck["model"])
                       & (pl.col("target") == ck["base_model"])).height == 0:
            reasons[ck["model"]] = _no_cross_reason(ck["model"], ck["base_model"])
        items[ck["model"]] = d
    all_clusters = [c for d in items.values() for c in d["cluster"].to_list()]
    index, counts = cluster_weights(all_clusters, n_boot=n_boot, seed=seed)
    draws = []
    for ck in checkpoints:
        if ck["model"] in reasons:
            why = reasons[ck["model"]]
            base["per_checkpoint"].append({
                "model": ck["model"], "base_model": ck["base_model"], "family": ck["family"],
                "trained_tasks": ck["trained_tasks"], **not_estimable(why, r),
                "reading": READING["not_estimable"]})
            continue
        entry, dr = _checkpoint(ck, items[ck["model"]], index, counts, r)
        base["per_checkpoint"].append(entry)
        if dr is not None:
            draws.append(dr)
    base["available"] = bool(draws)
    if not draws:
        base["reason"] = (
            "the registry declares no derived checkpoint (base_model)" if not checkpoints
            else _none_cross_reason(sorted(reasons)) if len(reasons) == len(checkpoints)
            else "no checkpoint's contrast is estimable (each says why)")
        base["mean"] = not_estimable(base["reason"], r)
        return base
    mean = np.mean(draws, axis=0)
    base["mean"] = {**_summary(mean, r), "n_checkpoints": len(draws)}
    return base


__all__ = ["N_BOOT", "READING", "checkpoint_items", "cluster_weights", "operating_characteristics",
           "privileged_access"]
