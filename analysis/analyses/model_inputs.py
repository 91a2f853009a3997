"""The data tables a model can declare (``SPEC.table`` in ``models/``), built from a run.

``cells``
    model x task counts of the models that have the scale variable (the scale fit's input);
``binary_cells``
    those cells of binary tasks whose d' the data can inform: both outcomes observed and
    not a constant responder (``selfmodel.analyses.skill.sdt_cells``; the others are listed with
    the reason by ``excluded_sdt_cells``);
``item_cells``
    model x item counts with the scale variable (``selfmodel.records.cells.to_item_cells``);
``pair_cells``
    predictor x target x task counts (``selfmodel.records.cells.to_pair_cells``);
``training_pairs``
    discordant-item counts of each derived checkpoint against its base
    (``selfmodel.analyses.training.training_table``);
``condition_cells``
    model x task x condition x item counts of self-predictions
    (``selfmodel.records.cells.to_condition_cells``; ``models/contrast.py``).

A table is built the first time a requested model needs it and reused after that.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import polars as pl

from selfmodel.analyses.skill import excluded_sdt_cells, sdt_cells
from selfmodel.analyses.training import training_table
from selfmodel.records.cells import (
    derived_models,
    join_registry,
    scale_values,
    to_condition_cells,
    to_item_cells,
    to_pair_cells,
)

__all__ = ["Tables", "excluded_sdt_cells", "models_per_task", "sdt_cells"]


def models_per_task(data: pl.DataFrame, tasks: list[str] | None = None) -> dict[str, int]:
    """Number of distinct models per task (``tasks``: these, default every task in ``data``)."""
    names = tasks if tasks is not None else sorted(data["task"].unique().to_list())
    return {str(t): data.filter(pl.col("task") == t)["model"].n_unique() for t in names}


@dataclass
class Tables:
    """Builds and keeps the tables of one run (``usable``: the scale fit's cells)."""

    usable: pl.DataFrame
    records: pl.DataFrame
    registry: pl.DataFrame | None
    scale: str
    built: dict[str, pl.DataFrame] = field(default_factory=dict)

    def get(self, kind: str) -> pl.DataFrame:
        """The table ``kind`` (one of ``selfmodel.models.spec.Table``)."""
        if kind not in self.built:
            self.built[kind] = self._build(kind)
        return self.built[kind]

    def excluded(self, kind: str) -> list[dict[str, str]]:
        """Cells of the run that the table ``kind`` leaves out, with the reason (model, task, reason)."""
        if kind == "binary_cells":
            return excluded_sdt_cells(self.usable)
        return []

    def _build(self, kind: str) -> pl.DataFrame:
        if kind == "cells":
            return self.usable
        if kind == "binary_cells":
            return sdt_cells(self.usable)
        if kind == "item_cells":
            items = scale_values(
                join_registry(to_item_cells(self.records), self.registry), self.scale,
                derived=derived_models(self.registry),
            )
            return items.filter(pl.col("x").is_not_null() & (pl.col("n") > 0))
        if kind == "pair_cells":
            return to_pair_cells(self.records).filter(pl.col("n") > 0)
        if kind == "training_pairs":
            return training_table(self.records, self.registry, sorted(self.records["task"].unique()))
        if kind == "condition_cells":
            return to_condition_cells(self.records)
        raise ValueError(
            f"unknown data table '{kind}' (cells, binary_cells, item_cells, pair_cells, "
            "training_pairs, condition_cells)"
        )
