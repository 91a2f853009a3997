"""Line numbers and did-you-mean suggestions for errors in the TOML files users write.

Every TOML file ``selfmodel`` reads (ingest ``--config``, ``hypotheses.toml``, a power
``--design``, an importer ``--mapping``) reports a mistake as one line naming the file, the
line of the key at fault and what to do (``selfmodel.records.registry.format_input_error``), with a
"Did you mean ...?" for a misspelt key or name. The two helpers here are the only
implementation of each; :mod:`selfmodel.records.toml_tables` declares the files as pydantic models and
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


#: Arrays and inline tables nested deeper than this are refused before parsing: tomllib
#: recurses once per level and runs out of stack a few hundred levels down.
MAX_NESTING = 256


def loads(text: str) -> dict[str, Any]:
    """``tomllib.loads``, with nesting too deep for it a ``TOMLDecodeError`` naming the line.

    The nesting is measured first, without recursion (:func:`nesting_line`), so that a
    file nested 50,000 deep never reaches the parser's recursion at all.

    Examples
    --------
    >>> loads("x = " + "[" * 50_000 + "]" * 50_000)
    Traceback (most recent call last):
    ...
    tomllib.TOMLDecodeError: nested too deeply, over 256 levels (at line 1)
    """
    line = nesting_line(text, MAX_NESTING)
    if line is not None:
        raise tomllib.TOMLDecodeError(f"nested too deeply, over {MAX_NESTING} levels (at line {line})")
    try:
        return tomllib.loads(text)
    except RecursionError:  # pragma: no cover - nesting_line finds it first
        raise tomllib.TOMLDecodeError(
            f"nested too deeply, over {MAX_NESTING} levels (at line 1)") from None


def nesting_line(text: str, depth: int) -> int | None:
    r"""The first line where arrays or inline tables nest more than ``depth`` deep, else ``None``.

    Brackets inside strings (basic, literal, multi-line) and comments are not counted.

    >>> nesting_line('a = "[[[["\nb = [[1]]  # [[[', 1), nesting_line("a = [\n[1]]", 1)
    (2, 2)
    """
    level, line, i, n = 0, 1, 0, len(text)
    while i < n:
        ch = text[i]
        if ch == "\n":
            line += 1
        elif ch == "#":
            end = text.find("\n", i)
            i = n if end < 0 else end
            continue
        elif ch in "\"'":
            end = _string_end(text, i)
            line += text.count("\n", i, end)
            i = end
            continue
        elif ch in "[{":
            level += 1
            if level > depth:
                return line
        elif ch in "]}":
            level -= 1
        i += 1
    return None


def _string_end(text: str, start: int) -> int:
    """The index just after the string that opens at ``start`` (the end of text if unclosed)."""
    quote = text[start]
    close = quote * 3 if text.startswith(quote * 3, start) else quote
    i = start + len(close)
    while True:
        end = text.find(close, i)
        if end < 0:
            return len(text)
        if quote == "\"":  # a basic string: a backslash escapes the next character
            slashes = len(text[i:end]) - len(text[i:end].rstrip("\\"))
            if slashes % 2:
                i = end + 1
                continue
        if len(close) == 1 and "\n" in text[i - 1:end]:
            return text.index("\n", i)  # a one-line string never crosses a line end
        return end + len(close)
