"""Line numbers and did-you-mean suggestions for errors in the TOML files users write.

Every TOML file ``selfmodel`` reads (ingest ``--config``, ``hypotheses.toml``, a power
``--design``, an importer ``--mapping``) reports a mistake as one line naming the file, the
line of the key at fault and what to do (``selfmodel.records.registry.format_input_error``), with a
"Did you mean ...?" for a misspelt key or name. The two helpers here are the only
implementation of each; :mod:`selfmodel.records.toml_model` declares the files as pydantic models and
maps their errors to lines with :func:`key_line`. :func:`loads` is how they parse TOML: nesting too deep for the
parser is a ``TOMLDecodeError`` with its line like any other syntax error.
"""

from __future__ import annotations

import difflib
import re
import tomllib
from collections.abc import Iterable
from typing import Any

_HEADER = re.compile(r"^\s*(\[\[?)\s*([^\]]+?)\s*\]\]?")


def _table_name(raw: str) -> str:
    return ".".join(part.strip().strip("\"'").strip() for part in raw.split("."))


def key_line(text: str, key: str, *, table: str | None = None, index: int | None = None) -> int | None:
    """1-based line of ``key`` in ``table`` of a TOML text, or ``None`` when not found.

    Parameters
    ----------
    text
        The file's text.
    key
        A bare key (``rope``), found as ``key = ...``, or as the header of the sub-table
        ``[table.key]`` (``[key]`` at the top level).
    table
        The table the key is in (``None``: the top level, before any header).
    index
        For an array of tables (``[[table]]``): which one, 0-based (``None``: any table
        called ``table``).

    Examples
    --------
    >>> lines = ['tasks = ["a"]', "[map]", 'item_id = "q"', "[[h]]", "rope = 1", "[[h]]", "rope = 2"]
    >>> text = chr(10).join(lines)
    >>> key_line(text, "tasks"), key_line(text, "item_id", table="map"), key_line(text, "map")
    (1, 3, 2)
    >>> key_line(text, "rope", table="h", index=1), key_line(text, "rope", table="map")
    (7, None)
    """
    key_re = re.compile(rf"^\s*[\"']?{re.escape(key)}[\"']?\s*=")
    wanted_header = key if table is None else f"{table}.{key}"
    current: str | None = None
    seen: dict[str, int] = {}
    inside = table is None
    for number, line in enumerate(text.splitlines(), start=1):
        header = _HEADER.match(line)
        if header:
            current = _table_name(header.group(2))
            if header.group(1) == "[[":
                seen[current] = seen.get(current, -1) + 1
            if current == wanted_header:
                return number
            inside = current == table and (index is None or seen.get(current, -1) == index)
            continue
        if inside and key_re.match(line):
            return number
    return None


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """Return ``" Did you mean 'x'?"`` for the closest choice, or ``""`` when none is close.

    Examples
    --------
    >>> did_you_mean("parms_b", ["params_b", "family"])
    " Did you mean 'params_b'?"
    >>> did_you_mean("zzz", ["params_b"])
    ''
    """
    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f" Did you mean '{close[0]}'?" if close else ""


def loads(text: str) -> dict[str, Any]:
    """``tomllib.loads``, with nesting too deep for it a ``TOMLDecodeError`` naming the line.

    Examples
    --------
    >>> loads("x = " + "[" * 50_000 + "]" * 50_000)
    Traceback (most recent call last):
    ...
    tomllib.TOMLDecodeError: nested too deeply, over about 1,000 levels (at line 1)
    """
    try:
        return tomllib.loads(text)
    except RecursionError:
        raise tomllib.TOMLDecodeError(
            f"nested too deeply, over about 1,000 levels (at line {_deep_line(text)})") from None


def _deep_line(text: str, depth: int = 500) -> int:
    """The first line where brackets outside strings nest ``depth`` deep (else line 1)."""
    level, quote, line = 0, "", 1
    for ch in text:
        if ch == "\n":
            line += 1
        elif quote:
            quote = "" if ch == quote else quote
        elif ch in "\"'":
            quote = ch
        elif ch in "[{":
            level += 1
            if level >= depth:
                return line
        elif ch in "]}":
            level -= 1
    return 1
