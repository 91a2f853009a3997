"""Resolving the columns of a file to the canonical record columns (mapping, case variants, suggestions)."""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence

import polars as pl

from selfmodel.contract import (
    REQUIRED,
    InputError,
)
from selfmodel.ingest.config import INPUT_COLUMNS
from selfmodel.ingest.discover import _Input
from selfmodel.ingest.readers import _LINE, _Read
from selfmodel.ingest.rules import ID_COLUMNS
from selfmodel.registry import format_input_error

# --------------------------------------------------------------------------- columns


def _closest(word: str, candidates: Sequence[str]) -> str | None:
    if not candidates:
        return None
    ranked = sorted(
        candidates,
        key=lambda c: (-difflib.SequenceMatcher(None, word.lower(), c.lower()).ratio(), c),
    )
    return ranked[0]


def _resolve(
    inp: _Input,
    read: _Read,
    mapping: Mapping[str, str],
    defaults: Mapping[str, str],
) -> tuple[pl.DataFrame, set[str]]:
    """Select the canonical columns of one file; return them and the unused columns."""
    present = read.present
    present_set = set(present)
    sources: dict[str, str | None] = {}
    for canonical in INPUT_COLUMNS:
        mapped = mapping.get(canonical)
        if mapped is not None:
            sources[canonical] = mapped if mapped in present_set else None
        else:
            sources[canonical] = canonical if canonical in present_set else None
    used = {s for s in sources.values() if s is not None}
    unused = [c for c in present if c not in used]
    line = 1 if inp.format == "csv" else None
    shown = ", ".join(present[:20]) + (", ..." if len(present) > 20 else "")
    for canonical in INPUT_COLUMNS:
        mapped = mapping.get(canonical)
        if sources[canonical] is not None or (mapped is None and canonical in defaults):
            continue
        if mapped is not None:
            if canonical in unused:
                todo = f"Drop --map {canonical}={mapped} to use the file's own '{canonical}' column"
            else:
                guess = _closest(mapped, unused)
                todo = f"Fix the mapping, e.g. --map {canonical}={guess}" if guess else "Fix it"
            raise InputError(
                format_input_error(
                    inp.name,
                    f"mapped column '{mapped}' (--map {canonical}={mapped}) is not in the file "
                    f"(present: {shown or 'none'})",
                    todo,
                    line=line,
                    column=mapped,
                )
            )
        if canonical in REQUIRED:
            guess = _closest(canonical, unused)
            raise InputError(
                format_input_error(
                    inp.name,
                    f"required column '{canonical}' is missing (present: {shown or 'none'})",
                    f"Map it with --map {canonical}={guess}"
                    if guess
                    else f"Add a '{canonical}' column",
                    line=line,
                    column=canonical,
                )
            )
    exprs = []
    schema = read.frame.schema
    for canonical in INPUT_COLUMNS:
        source = sources[canonical]
        if source is not None:
            dtype = schema[source]
            if dtype.is_nested() and canonical in ID_COLUMNS:
                exprs.append(_json_text(source).alias(canonical))  # quarantined by the ID rule
                continue
            if dtype.is_nested() or dtype == pl.Binary:
                raise InputError(
                    format_input_error(
                        inp.name,
                        f"column '{source}' holds {dtype} values, not scalars",
                        "Flatten it to text or numbers before ingesting",
                        column=source,
                    )
                )
            exprs.append(pl.col(source).alias(canonical))
        elif canonical in defaults:
            exprs.append(pl.lit(defaults[canonical], dtype=pl.Utf8).alias(canonical))
        else:
            exprs.append(pl.lit(None, dtype=pl.Utf8).alias(canonical))
    exprs.append(pl.col(_LINE))
    return read.frame.select(exprs), set(unused)


def _json_text(column: str) -> pl.Expr:
    """A list or struct column as the JSON text of each value (``null`` stays null)."""
    encoded = pl.struct(pl.col(column).alias("v")).struct.json_encode()
    text = encoded.str.slice(5).str.head(-1)  # {"v":<value>} -> <value>
    return pl.when(pl.col(column).is_null()).then(None).otherwise(text)
