"""Records -> sufficient statistics per model x task cell, joined with the registry.

Every Bayesian and frequentist model downstream sees only these counts (aggregated
binomial likelihood), so fitting cost grows with cells, not records. The columns of a cell
(counts of readable, unreadable and unscored records, the signal-detection counts, the mode
baseline): ``docs/records.md`` ("Cells").
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Final

import narwhals as nw
import numpy as np
import polars as pl

from selfmodel.records.contract import SCALE_COLUMNS, InputError
from selfmodel.records.reduction import (
    CELL_KEY,
    CONDITION_CELL_KEY,
    cell_rows,
    cells,
    finish_cells,
)

__all__ = ["CELL_KEY", "CONDITION_CELL_KEY", "NO_CONDITION", "OWN_FAMILY", "build_cells",
           "derived_models", "join_registry", "scale_values", "self_predictions",
           "to_cells", "to_condition_cells", "to_item_cells", "to_pair_cells"]


def self_predictions(records: pl.DataFrame) -> pl.DataFrame:
    """Keep records where the predictor is the model itself."""
    return records.filter(pl.col("predictor").is_null() | (pl.col("predictor") == pl.col("model")))


def to_cells(records: pl.DataFrame, *, keys: Sequence[str] = CELL_KEY) -> pl.DataFrame:
    """Aggregate canonical records into one row per model x task (or per ``keys``).

    Parameters
    ----------
    records
        Canonical records (``selfmodel.records.contract.RECORD_SCHEMA``).
    keys
        The cell key: :data:`CELL_KEY` (conditions pooled, as every scale model reads them)
        or :data:`CONDITION_CELL_KEY` (one cell per condition too, after ``task``; a missing
        ``condition`` column is a null condition). The GROUP BY is the engines' own
        (:func:`selfmodel.records.reduction.cells`).

    Returns
    -------
    polars.DataFrame
        One row per (model, task), sorted, with the columns described in the module
        docstring.

    Examples
    --------
    >>> import polars as pl
    >>> r = pl.DataFrame({"model": ["a", "a", "a"], "task": ["t"] * 3, "predictor": ["a"] * 3,
    ...     "prediction": ["true", "true", None], "outcome": ["true", "false", "true"],
    ...     "correct": [True, False, None], "status": ["ok", "ok", "unparsed"]})
    >>> to_cells(r).select("n_total", "n", "k", "k_strict", "hits", "false_alarms").row(0)
    (3, 2, 1, 1, 1, 1)
    """
    if any(k not in records.columns for k in keys):
        records = records.with_columns(pl.lit(None, dtype=pl.Utf8).alias(k)
                                       for k in keys if k not in records.columns)
    rows = cell_rows(nw.from_native(records.lazy()), keys=keys)
    return finish_cells(cells(rows, keys=keys).collect().to_native(), keys=keys)


#: Family label of a model without one (see :func:`join_registry`).
OWN_FAMILY: Final = "{} (own family)"


def join_registry(cells: pl.DataFrame, registry: pl.DataFrame | None) -> pl.DataFrame:
    """Add the registry's columns (family, sizes, capability) to the cells.

    Models absent from the registry keep null covariates: they still count where no
    covariate is needed. A model without a family (absent from the registry, or its
    ``family`` left empty) is never pooled with others: it is its own family, labelled
    ``"<model> (own family)"`` (:data:`OWN_FAMILY`) so that tables and the report say so.
    """
    cols = ["family", "params_b", "active_params_b", "open_weights", "reasoning", "capability"]
    if registry is None or registry.height == 0:
        joined = cells.with_columns(
            pl.lit(None, dtype=pl.Utf8).alias("family"),
            *[
                pl.lit(None, dtype=pl.Float64).alias(c)
                for c in ("params_b", "active_params_b", "capability")
            ],
            *[pl.lit(None, dtype=pl.Boolean).alias(c) for c in ("open_weights", "reasoning")],
        )
    else:
        joined = cells.join(registry.select(["model", *cols]), on="model", how="left")
    return joined.with_columns(
        pl.col("family").fill_null(pl.format(OWN_FAMILY, pl.col("model"))).alias("family")
    )


def scale_values(
    cells: pl.DataFrame, scale: str, *, derived: Collection[str] = ()
) -> pl.DataFrame:
    r"""Add ``scale_raw`` (registry value) and ``x`` (model-level centred predictor).

    Sizes enter as :math:`\\log_{10}` billions of parameters, so a slope is "per 10x";
    capability enters on its own scale. ``x`` is centred on the mean over *models* (not
    cells) that have the variable, and is null where the model lacks it. Models in
    ``derived`` (checkpoints with a registry ``base_model``) get a null ``x`` too: they share
    their base's size and would be extra points at one size (``analysis/analyses/training.py``).
    """
    if scale not in SCALE_COLUMNS:
        raise InputError(f"unknown --scale '{scale}'. Use one of: {', '.join(SCALE_COLUMNS)}.")
    col = SCALE_COLUMNS[scale]
    raw = pl.col(col)
    if scale in ("params", "active_params"):
        bad = cells.filter(raw.is_not_null() & (raw <= 0))
        if bad.height:
            raise InputError(
                f"registry: model '{bad['model'][0]}' has non-positive {col}; sizes must be > 0 billions."
            )
        val = raw.log10()
    else:
        val = raw
    if derived:
        val = pl.when(pl.col("model").is_in(list(derived))).then(None).otherwise(val)
    out = cells.with_columns(raw.alias("scale_raw"), val.alias("_v"))
    per_model = (
        out.select("model", "_v").unique().drop_nulls().sort("model")
    )  # fixed summation order
    center = float(np.mean(per_model["_v"].to_numpy())) if per_model.height else 0.0
    return (
        out.with_columns((pl.col("_v") - center).alias("x"))
        .drop("_v")
        .with_columns(pl.lit(center).alias("x_center"))
    )


def build_cells(
    records: pl.DataFrame, registry: pl.DataFrame | None, *, scale: str = "params"
) -> pl.DataFrame:
    """Records -> cells with registry covariates and the centred scale predictor.

    Derived checkpoints (a registry ``base_model``) have no scale value (see
    :func:`scale_values`).
    """
    return scale_values(
        join_registry(to_cells(records), registry), scale, derived=derived_models(registry)
    )


def derived_models(registry: pl.DataFrame | None) -> list[str]:
    """Registry models with a ``base_model`` (derived checkpoints), sorted."""
    if registry is None or "base_model" not in registry.columns:
        return []
    return sorted(registry.filter(pl.col("base_model").is_not_null())["model"].to_list())


def to_item_cells(records: pl.DataFrame) -> pl.DataFrame:
    """Aggregate self-predictions into one row per model x task x item (for ``models/items.py``).

    Repeats of an item (``sample``) are summed, so ``k`` out of ``n`` is binomial over
    repeats (``n = 1`` when every item is asked once).

    ``records`` are canonical records, as for :func:`to_cells`. Returns a polars.DataFrame
    with columns ``model, task, item_id, n_total, n, k`` and ``n_models_item`` (models with
    a readable record on this item of this task: items seen by one model carry no crossed
    information), sorted by model, task, item. Join the registry and the
        scale predictor with :func:`join_registry` and :func:`scale_values`, as for cells.

    Examples
    --------
    >>> import polars as pl
    >>> r = pl.DataFrame({"model": ["a", "a", "b"], "task": ["t"] * 3, "item_id": ["i1"] * 3,
    ...     "predictor": [None] * 3, "correct": [True, False, True], "status": ["ok"] * 3})
    >>> to_item_cells(r).select("model", "n", "k", "n_models_item").rows()
    [('a', 2, 1, 2), ('b', 1, 1, 2)]
    """
    recs = self_predictions(records)
    readable = (pl.col("status") == "ok") & pl.col("correct").is_not_null()
    items = (
        recs.group_by(["model", "task", "item_id"])
        .agg(
            pl.len().alias("n_total"),
            readable.sum().alias("n"),
            (readable & pl.col("correct")).sum().alias("k"),
        )
        .with_columns(
            (pl.col("n") > 0).sum().over(["task", "item_id"]).alias("n_models_item"),
        )
        .sort(["model", "task", "item_id"])
    )
    counts = ("n_total", "n", "k", "n_models_item")
    return items.with_columns([pl.col(c).cast(pl.Int64) for c in counts])


def to_pair_cells(records: pl.DataFrame) -> pl.DataFrame:
    """Aggregate all predictions into one row per predictor x target model x task.

    For cross-prediction (``models/self_vs_other.py``): ``predictor`` predicts the
    behaviour of ``model``; a null ``predictor`` means the model itself.

    Returns
    -------
    polars.DataFrame
        Columns ``predictor, model, task, n_total, n, k, is_self``, sorted.

    Examples
    --------
    >>> import polars as pl
    >>> r = pl.DataFrame({"model": ["a", "a", "a"], "task": ["t"] * 3, "item_id": ["i"] * 3,
    ...     "predictor": [None, "a", "b"], "correct": [True, False, True], "status": ["ok"] * 3})
    >>> to_pair_cells(r).select("predictor", "model", "n", "k", "is_self").rows()
    [('a', 'a', 2, 1, True), ('b', 'a', 1, 1, False)]
    """
    readable = (pl.col("status") == "ok") & pl.col("correct").is_not_null()
    pairs = (
        records.with_columns(pl.coalesce(pl.col("predictor"), pl.col("model")).alias("predictor"))
        .group_by(["predictor", "model", "task"])
        .agg(
            pl.len().alias("n_total"),
            readable.sum().alias("n"),
            (readable & pl.col("correct")).sum().alias("k"),
        )
        .with_columns((pl.col("predictor") == pl.col("model")).alias("is_self"))
        .sort(["predictor", "model", "task"])
    )
    return pairs.with_columns([pl.col(c).cast(pl.Int64) for c in ("n_total", "n", "k")])


#: Condition label of records without one (a study with one condition), in the contrast
#: model's table (:func:`to_condition_cells`).
NO_CONDITION: Final = "(none)"


def to_condition_cells(records: pl.DataFrame) -> pl.DataFrame:
    """Self-predictions per model x task x condition x item (for ``models/contrast.py``).

    Repeats of an item (``sample``, runs) are summed, as in :func:`to_item_cells`. A record
    without a condition (the column absent or null) is in condition :data:`NO_CONDITION`.
    Rows without a readable self-prediction (``n == 0``) are left out.

    Examples
    --------
    >>> import polars as pl
    >>> r = pl.DataFrame({"model": ["a"] * 3, "task": ["t"] * 3, "item_id": ["i1"] * 3,
    ...     "condition": ["x", "x", None], "predictor": [None] * 3,
    ...     "correct": [True, False, True], "status": ["ok"] * 3})
    >>> to_condition_cells(r).select("condition", "n", "k").rows()
    [('(none)', 1, 1), ('x', 2, 1)]
    """
    recs = self_predictions(records)
    condition = (pl.col("condition").fill_null(NO_CONDITION) if "condition" in recs.columns
                 else pl.lit(NO_CONDITION))
    readable = (pl.col("status") == "ok") & pl.col("correct").is_not_null()
    return (
        recs.with_columns(condition.cast(pl.Utf8).alias("condition"))
        .group_by(["model", "task", "condition", "item_id"])
        .agg(readable.sum().cast(pl.Int64).alias("n"),
             (readable & pl.col("correct")).sum().cast(pl.Int64).alias("k"))
        .filter(pl.col("n") > 0)
        .sort(["model", "task", "condition", "item_id"])
    )
