"""Resolving the columns of a file to the canonical record columns (mapping, case variants, suggestions)."""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Mapping, Sequence

import polars as pl

from selfmodel.records.contract import (
    REQUIRED,
    InputError,
)
from selfmodel.records.ingest.column_map import INPUT_COLUMNS
from selfmodel.records.ingest.discover import InputFile
from selfmodel.records.ingest.readers import LINE, FileRead
from selfmodel.records.registry import format_input_error
from selfmodel.records.snippets import snippet

# --------------------------------------------------------------------------- columns


#: Columns that name things (a model, a task): a column of numbers or booleans is never one.
_NAME_COLUMNS = frozenset({"model", "task", "predictor"})


def _tokens(name: str) -> set[str]:
    return {t for t in re.split(r"[^0-9a-z]+", name.lower()) if t}


def _shares_part(word: str, column: str) -> bool:
    """A name part in common, or a part of ``column`` ending in one of ``word`` (``qid``)."""
    mine, theirs = _tokens(word), _tokens(column)
    return bool(mine & theirs) or any(t.endswith(m) for t in theirs for m in mine if len(m) >= 2)


def kind_fits(canonical: str, frame: pl.DataFrame | None, column: str) -> bool:
    """Whether ``column``'s values could be a ``canonical`` value (names are not numbers).

    A ``model``, ``task`` or ``predictor`` column is not numbers or booleans, an
    ``item_id`` column not booleans; without ``frame`` (no values at hand) any column fits.
    """
    if frame is None or column not in frame.columns or canonical not in _NAME_COLUMNS | {"item_id"}:
        return True
    values = frame.get_column(column).drop_nulls().head(200).cast(pl.Utf8).str.strip_chars()
    values = values.filter(values != "")
    if values.len() == 0:
        return True
    lower = values.str.to_lowercase()
    boolean = lower.is_in(["true", "false", "yes", "no"]).all()
    numeric = values.cast(pl.Float64, strict=False).is_not_null().all()
    return not boolean and not (numeric and canonical in _NAME_COLUMNS)


def closest(word: str, candidates: Sequence[str], frame: pl.DataFrame | None = None,
            *, kind: str | None = None) -> str | None:
    """The candidate that plausibly is ``word``, or ``None`` when none is.

    Plausible: it shares a name part (``question_id`` for ``item_id``) or is spelled alike
    (difflib ratio >= 0.6), and holds values of the same kind as the canonical column
    ``kind`` it would fill (default ``word``; :func:`kind_fits`).
    """
    kind = word if kind is None else kind
    ratio = {c: difflib.SequenceMatcher(None, word.lower(), c.lower()).ratio() for c in candidates}
    plausible = [c for c in candidates
                 if (ratio[c] >= 0.6 or _shares_part(word, c)) and kind_fits(kind, frame, c)]
    if not plausible:
        return None
    return sorted(plausible, key=lambda c: (-_shares_part(word, c), -ratio[c], c))[0]


def column_sources(
    inp: InputFile,
    present: Sequence[str],
    mapping: Mapping[str, str],
    defaults: Mapping[str, str],
    *,
    frame: pl.DataFrame | None = None,
    has_rows: Callable[[], bool] = lambda: True,
) -> tuple[dict[str, str | None], list[str]]:
    """The source column of each canonical column in a file with columns ``present``.

    The one column resolution of ingest and the SQL engines. Returns
    ``{canonical: source or None}`` and the file's unused columns. A mapped column that is
    not present, or a required one that is missing without a default, is an
    :class:`InputError` suggesting the closest unused column (``frame``, when given, rules
    out columns whose values are of another kind) -- unless ``has_rows()`` says the file
    has no rows to read.
    """
    present_set = set(present)
    wanted = {c: mapping.get(c, c) for c in INPUT_COLUMNS}
    sources = {c: (s if s in present_set else None) for c, s in wanted.items()}
    used = {s for s in sources.values() if s is not None}
    unused = [c for c in present if c not in used]
    line = 1 if inp.format == "csv" else None
    shown = ", ".join(present[:20]) + (", ..." if len(present) > 20 else "")
    for canonical in INPUT_COLUMNS:
        mapped = mapping.get(canonical)
        if sources[canonical] is not None or (mapped is None and canonical in defaults):
            continue
        if (mapped is None and canonical not in REQUIRED) or not has_rows():
            continue
        if mapped is not None:
            if canonical in unused:
                todo = f"Drop --map {canonical}={mapped} to use the file's own '{canonical}' column"
            else:
                guess = closest(mapped, unused, frame, kind=canonical)
                todo = ("Fix the mapping, e.g. " + snippet(f"--map {canonical}={guess}", kind="cli")
                        if guess else "Fix it")
            raise InputError(format_input_error(
                inp.name, f"mapped column '{mapped}' (--map {canonical}={mapped}) is not in the "
                f"file (present: {shown or 'none'})", todo, line=line, column=mapped))
        guess = closest(canonical, unused, frame)
        raise InputError(format_input_error(
            inp.name, f"required column '{canonical}' is missing (present: {shown or 'none'})",
            "Map it with " + snippet(f"--map {canonical}={guess}", kind="cli") if guess
            else f"Add a '{canonical}' column, map one with "
            + snippet(f"--map {canonical}=COLUMN", kind="cli") + _missing_hint(canonical),
            line=line, column=canonical))
    return sources, unused


def _missing_hint(canonical: str) -> str:
    """The rest of the hint for a missing required column: what a mapping file may say.

    A mapping can give one value for every row of ``model`` and ``task``, and the row's
    position as the ``item_id`` (every snippet is one the parsers accept).
    """
    if canonical == "item_id":
        return (", or in a --mapping file " + snippet('item_id = "<column>"', table="map")
                + ", or " + snippet('item_id = "@row"') + " when the file has no id column "
                "(the row's position)")
    return (", or give one value for every row: " + snippet(f'{canonical} = "<name>"')
            + " in a --mapping file, or " + snippet(f'{canonical} = "<name>"', table="defaults",
                                                     kind="config") + " in --config")


def resolve_columns(
    inp: InputFile,
    read: FileRead,
    mapping: Mapping[str, str],
    defaults: Mapping[str, str],
) -> tuple[pl.DataFrame, set[str]]:
    """Select the canonical columns of one file; return them and the unused columns."""
    sources, unused = column_sources(inp, read.present, mapping, defaults, frame=read.frame)
    exprs = []
    schema = read.frame.schema
    for canonical in INPUT_COLUMNS:
        source = sources[canonical]
        if source is not None:
            dtype = schema[source]
            if dtype.is_nested():  # each value quarantined (invalid identifier or value)
                exprs.append(_json_text(source).alias(canonical))
                continue
            if dtype == pl.Binary:
                raise InputError(
                    format_input_error(
                        inp.name,
                        f"column '{source}' holds {dtype} values, not text or numbers",
                        "Decode it to text before ingesting",
                        column=source,
                    )
                )
            exprs.append(pl.col(source).alias(canonical))
        elif canonical in defaults:
            exprs.append(pl.lit(defaults[canonical], dtype=pl.Utf8).alias(canonical))
        else:
            exprs.append(pl.lit(None, dtype=pl.Utf8).alias(canonical))
    exprs.append(pl.col(LINE))
    return read.frame.select(exprs), set(unused)


def _json_text(column: str) -> pl.Expr:
    """A list or struct column as the JSON text of each value (``null`` stays null)."""
    encoded = pl.struct(pl.col(column).alias("v")).struct.json_encode()
    text = encoded.str.slice(5).str.head(-1)  # {"v":<value>} -> <value>
    return pl.when(pl.col(column).is_null()).then(None).otherwise(text)
