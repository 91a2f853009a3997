"""JSON objects that name a key twice: found cheaply, quarantined whatever else the file holds.

A JSONL line whose top-level object has the same key twice (``{"prediction": "yes", ...,
"prediction": "no"}``) has no one reading: polars keeps the first value, Python's
:mod:`json` the last. Such a line is quarantined as ``duplicate key`` by every reader
(the fast polars path and the line-by-line path of :mod:`selfmodel.records.ingest.readers` alike,
and the SQL engines of :mod:`selfmodel.records.engines`). Keys of nested objects are not checked:
ingest reads only the top-level keys.

The check costs little on ordinary logs. Every top-level key of a line is followed by a
``":`` token, so a line whose number of ``":`` tokens equals the number of non-null values
polars read from it cannot repeat a key (vectorised, one literal count per line). On the
other lines (a null value, a nested object, a key outside the columns read, a ``"``
followed by white space) the key tokens are listed by a regular expression, also
vectorised; only a line on which some key name occurs twice (at any depth) is parsed
again in Python to look at its top-level keys.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Final

import polars as pl

#: Quarantine category of a line whose JSON object names a key twice.
DUPLICATE_KEY: Final = "duplicate key"

_TEXT: Final = "__text"
#: A key token: a JSON string followed by a colon. Scanning a line for these finds every key
#: of every object on it, except after a key whose text starts with a colon, and except keys
#: with white space before their colon (those lines are parsed in any case).
_KEY_TOKEN: Final = r'"(?:[^"\\]|\\.)*":'
#: A key whose text starts with a colon (``{":k": 1}``): such lines are always parsed.
_COLON_FIRST: Final = r'[,{][ \t\r]*"[ \t\r]*:'


def top_level_duplicates(text: str) -> list[str]:
    """Keys named more than once in the top-level object of one JSON text, in order.

    ``[]`` when there is none, or when ``text`` is not a JSON object Python can read.

    >>> top_level_duplicates('{"a": 1, "b": {"c": 1, "c": 2}, "a": 2}')
    ['a']
    """
    calls: list[list[str]] = []

    def hook(pairs: list[tuple[str, object]]) -> dict[str, object]:
        calls.append([k for k, _ in pairs])
        return dict(pairs)

    try:
        obj = json.loads(text, object_pairs_hook=hook)
    except (ValueError, RecursionError):
        return []
    if not isinstance(obj, dict) or not calls:
        return []
    keys = calls[-1]  # the hook runs innermost first: the top-level object comes last
    seen: set[str] = set()
    repeated: dict[str, None] = {}
    for key in keys:
        if key in seen:
            repeated.setdefault(key, None)
        seen.add(key)
    return list(repeated)


def duplicate_key_reason(keys: list[str]) -> str:
    """The quarantine reason of a line whose object names ``keys`` twice."""
    shown = ", ".join(f"'{k}'" for k in keys[:5]) + (", ..." if len(keys) > 5 else "")
    return f"duplicate key {shown} in one JSON object (it has no single value; keep one)"


def split_duplicate_keys(
    frame: pl.DataFrame,
    line_column: str,
    texts: Callable[[], pl.LazyFrame],
    clip: Callable[[str], str],
) -> tuple[pl.DataFrame, list[tuple[int, str, str, str]]]:
    """Remove the rows of ``frame`` whose JSON line names a key twice.

    Parameters
    ----------
    frame
        Rows parsed from JSON lines: text columns (one per key read) and ``line_column``.
    line_column
        The column with each row's line number.
    texts
        Returns ``(line_column, "__text")`` lazily: the raw text of (at least) every line
        in ``frame``. It is scanned once, keeping only the lines that need a closer look,
        so a file's text is never held in memory whole.
    clip
        Shortens a raw text for the quarantine.

    Returns
    -------
    The frame without those rows, and ``(line, category, reason, raw)`` for each.
    """
    if frame.height == 0:
        return frame, []
    values = [c for c in frame.columns if c != line_column]
    present = pl.sum_horizontal([pl.col(c).is_not_null() for c in values]) if values else pl.lit(0)
    t = pl.col(_TEXT)
    spaced = t.str.contains_any(['" ', '"\t', '"\r'])  # white space before a colon, maybe
    counted = frame.lazy().select(line_column, present.alias("__n"))
    first = (  # one streaming pass over the text: the lines that may repeat a key
        texts().join(counted, on=line_column, how="inner")
        .filter((t.str.count_matches('":', literal=True) > pl.col("__n")) | spaced)
        .select(line_column, _TEXT).collect(engine="streaming")
    )
    if first.height == 0:
        return frame, []
    keys = t.str.extract_all(_KEY_TOKEN)
    maybe = first.filter(  # a key name repeats somewhere on the line (nested keys too)
        (keys.list.n_unique() < keys.list.len()) | t.str.contains(_COLON_FIRST) | spaced
    )
    bad: list[tuple[int, str, str, str]] = []
    for number, text in maybe.iter_rows():
        repeated = top_level_duplicates(text) if text is not None else []
        if repeated:
            bad.append((int(number), DUPLICATE_KEY, duplicate_key_reason(repeated), clip(text)))
    if not bad:
        return frame, []
    drop = pl.Series([b[0] for b in bad], dtype=pl.Int64)
    return frame.filter(~pl.col(line_column).is_in(drop.implode())), bad
