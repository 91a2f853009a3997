"""What every importer returns (``import seb``, ``import lmeval``, ``import inspect``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import polars as pl

from selfmodel.records.contract import REGISTRY_SCHEMA


@dataclass
class ImportResult:
    """The result of an import.

    Attributes
    ----------
    records
        Canonical records, columns and dtypes of :data:`selfmodel.records.contract.RECORD_SCHEMA` in order.
    registry
        One row per imported model (or predictor): :data:`selfmodel.records.contract.REGISTRY_SCHEMA`
        columns (the SEB importer adds ``developer`` and ``aliases``); covariates null when
        the foreign logs carry none.
    notes
        Human-readable account of what was skipped or chosen and why, with counts.
    counts
        Machine-readable counts (records per task, unparsed, missing, skipped files ...).
    """

    records: pl.DataFrame
    registry: pl.DataFrame = field(default_factory=lambda: pl.DataFrame(schema=REGISTRY_SCHEMA))
    notes: list[str] = field(default_factory=list)
    counts: dict[str, Any] = field(default_factory=dict)
