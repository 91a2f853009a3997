"""The benchmark's model spellings mapped to one name (models.csv aliases), and the registry rows (Rasch ability as capability)."""

from __future__ import annotations

import csv
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from selfmodel.records.contract import REGISTRY_SCHEMA, InputError, parse_bool
from selfmodel.records.importers.seb.layout import RASCH_FILE, REGISTRY_EXTRA

# --------------------------------------------------------------------------------------------
# model names


@dataclass(frozen=True)
class _Models:
    """Canonical ids from ``models.csv`` and the spellings that map to them."""

    table: pl.DataFrame  # registry rows, canonical order
    by_spelling: dict[str, str]  # lower-cased spelling -> canonical id

    def canonical(self, spelling: str) -> str | None:
        """Return the canonical id for ``spelling`` (case-insensitive), or None."""
        return self.by_spelling.get(spelling.strip().lower())


def read_models(path: Path) -> _Models:
    """Read ``models.csv`` into registry rows and an alias map; bad values raise InputError."""
    with path.open(newline="", encoding="utf-8") as fh:
        reader = csv.DictReader(fh)
        header = reader.fieldnames or []
        need = (
            "model",
            "aliases",
            "family",
            "params_b",
            "active_params_b",
            "open_weights",
            "reasoning",
        )
        missing = [c for c in need if c not in header]
        if missing:
            raise InputError(
                f"{path}: missing column(s) {', '.join(missing)}; present: {', '.join(header)}. "
                "Add them (see SOURCE.md for the layout)."
            )
        rows: list[dict[str, Any]] = []
        by_spelling: dict[str, str] = {}
        for line, raw in enumerate(reader, start=1):
            model = (raw["model"] or "").strip()
            if not model:
                raise InputError(f"{path} (data line {line}): empty 'model'; give each row an id.")
            row: dict[str, Any] = {"model": model, "family": (raw["family"] or "").strip() or None}
            for col in ("params_b", "active_params_b"):
                text = (raw[col] or "").strip()
                try:
                    row[col] = float(text) if text else None
                except ValueError:
                    raise InputError(
                        f"{path} (data line {line}): '{col}' is {text!r}, not a number; "
                        "write billions of parameters, or leave it empty."
                    ) from None
            for col in ("open_weights", "reasoning"):
                text = (raw[col] or "").strip()
                value = parse_bool(text) if text else None
                if text and value is None:
                    raise InputError(
                        f"{path} (data line {line}): '{col}' is {text!r}; write true or false."
                    )
                row[col] = value
            row["capability"] = None
            row["developer"] = (raw.get("developer") or "").strip() or None
            aliases = [a.strip() for a in (raw["aliases"] or "").split("|") if a.strip()]
            row["aliases"] = "|".join(aliases) or None
            for spelling in [model, *aliases]:
                key = spelling.lower()
                previous = by_spelling.setdefault(key, model)
                if previous != model:
                    raise InputError(
                        f"{path} (data line {line}): spelling {spelling!r} is listed for both "
                        f"{previous!r} and {model!r}; keep it under one model."
                    )
            rows.append(row)
    schema = {**REGISTRY_SCHEMA, **{c: pl.Utf8() for c in REGISTRY_EXTRA}}
    return _Models(table=pl.DataFrame(rows, schema=schema, orient="row"), by_spelling=by_spelling)


def no_models() -> _Models:
    """An empty model table with the registry's columns."""
    schema = {**REGISTRY_SCHEMA, **{c: pl.Utf8() for c in REGISTRY_EXTRA}}
    return _Models(table=pl.DataFrame(schema=schema), by_spelling={})


class Namer:
    """Map file spellings to canonical ids and remember the unknown ones."""

    def __init__(self, models: _Models) -> None:
        self.models = models
        self.unknown: dict[str, list[str]] = defaultdict(list)  # spelling -> files

    def __call__(self, spelling: str, where: str) -> str:
        """The canonical model name of ``spelling`` (unknown spellings are counted by file)."""
        canonical = self.models.canonical(spelling)
        if canonical is None:
            self.unknown[spelling].append(where)
            return spelling
        return canonical


# --------------------------------------------------------------------------------------------
# registry covariates


def _read_rasch(path: Path, namer: Namer) -> tuple[dict[str, float], list[str]]:
    """Rasch ability per canonical model from ``benchmarks_with_rasch.csv``."""
    ability: dict[str, float] = {}
    unmapped: list[str] = []
    with path.open(newline="", encoding="utf-8") as fh:
        reader = csv.reader(fh)
        header = next(reader, [])
        col = next((i for i, h in enumerate(header) if h.strip().startswith("Ability")), None)
        if col is None or not header or header[0].strip().lower() != "model":
            raise InputError(
                f"{path}: expected a 'model' column and an 'Ability (θ)' column; present: "
                f"{', '.join(header)}."
            )
        for row in reader:
            if not row or not row[0].strip() or row[0].strip().startswith("Difficulty"):
                continue
            name = row[0].strip()
            text = row[col].strip() if col < len(row) else ""
            if not text:
                continue
            try:
                value = float(text)
            except ValueError:
                raise InputError(
                    f"{path}: ability of {name!r} is {text!r}, not a number."
                ) from None
            canonical = namer.models.canonical(name)
            if canonical is None:
                unmapped.append(name)
            else:
                ability[canonical] = value
    return ability, unmapped


def registry_of(
    records: pl.DataFrame,
    namer: Namer,
    rasch: Path,
    notes: list[str],
    counts: dict[str, Any],
) -> pl.DataFrame:
    """Registry rows for the imported models, in models.csv order, unknown names last."""
    table = namer.models.table
    present = records["model"].unique().to_list() if records.height else []
    known = table.filter(pl.col("model").is_in(present))
    extra = sorted(set(present) - set(known["model"].to_list()))
    if extra:
        filler = pl.DataFrame({"model": extra}, schema={"model": pl.Utf8()})
        known = pl.concat([known, filler], how="diagonal_relaxed").select(table.columns)
    if rasch.is_file() and namer.models.by_spelling:
        ability, unmapped = _read_rasch(rasch, namer)
        known = known.with_columns(
            pl.col("model")
            .replace_strict(ability, default=None, return_dtype=pl.Float64())
            .alias("capability")
        )
        covered = sorted(set(ability) & set(present))
        counts["capability_models"] = len(covered)
        notes.append(
            f"registry: capability = Rasch 'Ability (θ)' from {RASCH_FILE} (model spellings "
            f"mapped through models.csv aliases) for {len(covered)} of {len(present)} models; "
            "null for the rest." + (f" Unmapped rows: {', '.join(unmapped)}." if unmapped else "")
        )
    else:
        counts["capability_models"] = 0
        notes.append(f"registry: capability left null ({RASCH_FILE} absent or no models.csv).")
    return known
