"""Atomic writes: a temporary file in the target folder, then ``os.replace``.

An interrupted run never leaves a half-written file that a later run would trust.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import polars as pl


@contextmanager
def atomic_path(target: Path | str) -> Iterator[Path]:
    """Yield a temporary path beside ``target``; rename it onto ``target`` on success.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> with atomic_path(d / "x.txt") as tmp:
    ...     _ = tmp.write_text("hello")
    >>> (d / "x.txt").read_text()
    'hello'
    """
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    os.close(fd)
    tmp = Path(name)
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes 0600; give the file the usual permissions
    try:
        yield tmp
        os.replace(tmp, target)
    finally:
        if tmp.exists():
            tmp.unlink()


def write_text(target: Path | str, text: str) -> None:
    """Write text atomically (UTF-8)."""
    with atomic_path(target) as tmp:
        tmp.write_text(text, encoding="utf-8")


def write_bytes(target: Path | str, data: bytes) -> None:
    """Write bytes atomically."""
    with atomic_path(target) as tmp:
        tmp.write_bytes(data)


def write_json(target: Path | str, obj: Any) -> None:
    """Write JSON atomically, sorted keys, 2-space indent, trailing newline."""
    write_text(target, json.dumps(obj, indent=2, sort_keys=True, allow_nan=False) + "\n")


def write_parquet(target: Path | str, frame: pl.DataFrame) -> None:
    """Write a polars frame to Parquet atomically."""
    with atomic_path(target) as tmp:
        frame.write_parquet(tmp)


def write_with(target: Path | str, writer: Callable[[Path], None]) -> None:
    """Call ``writer(tmp_path)`` and move the result onto ``target`` atomically."""
    with atomic_path(target) as tmp:
        writer(tmp)


#: A CSV cell starting with one of these is a formula to a spreadsheet (CSV injection).
FORMULA_STARTS: tuple[str, ...] = ("=", "+", "-", "@", "\t", "\r")


def neutralise_cell(value: str) -> str:
    """``value`` made inert for spreadsheets: a leading ``'`` before a formula start.

    ``selfmodel.records.registry`` reads such a cell back without the quote, so a name round-trips.

    Examples
    --------
    >>> neutralise_cell("=HYPERLINK(1)"), neutralise_cell("gpt-4o"), neutralise_cell("-1")
    ("'=HYPERLINK(1)", 'gpt-4o', "'-1")
    """
    return "'" + value if value.startswith(FORMULA_STARTS) else value


def write_csv(target: Path | str, frame: Any) -> None:
    """Write a polars frame as CSV atomically, text cells neutralised (:func:`neutralise_cell`).

    Numeric columns are written as numbers (a negative number is not text).
    """
    text = [c for c, t in frame.schema.items() if t == pl.Utf8]
    safe = frame.with_columns(
        [pl.col(c).map_elements(neutralise_cell, return_dtype=pl.Utf8) for c in text]
    )
    with atomic_path(target) as tmp:
        safe.write_csv(tmp)
