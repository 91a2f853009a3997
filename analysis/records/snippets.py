"""The snippets of user files that error messages suggest: one builder, so each can be checked.

An error message that tells the user what to write ("Write scale = [0, 10]", "Add
[confidence] column = ...", "Map it with --map item_id=question_id") must suggest something
the parser then accepts. Every such suggestion is built by :func:`snippet`, which returns the
text for the message and records the snippet: the file it belongs in (``kind``), the table it
goes under and its TOML (or ``--map``) body. ``tests/records/test_mapping_keys.py`` triggers the errors,
then parses every recorded snippet with the real parser of its kind.

Kinds: ``"records"`` (a ``format = "records"`` ``--mapping`` file), ``"import"`` (an
``import lmeval|inspect`` mapping), ``"config"`` (an ingest ``--config`` file) and ``"cli"``
(a ``--map canonical=column`` option).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal

__all__ = ["KINDS", "Snippet", "built", "snippet"]

Kind = Literal["records", "import", "config", "cli"]
KINDS: Final = ("records", "import", "config", "cli")


@dataclass(frozen=True)
class Snippet:
    """One suggestion: ``body`` (TOML lines, or a ``--map`` option) under ``table`` in a ``kind`` file."""

    kind: Kind
    table: str | None
    body: str
    array: bool = False  # the table is one of an array of tables ([[rule]])

    def header(self) -> str:
        """``[table]`` or ``[[table]]``."""
        return f"[[{self.table}]]" if self.array else f"[{self.table}]"

    def toml(self) -> str:
        """The snippet as a TOML document (its table header, then the body)."""
        return (self.header() + "\n" if self.table else "") + self.body + "\n"


_BUILT: dict[Snippet, None] = {}


def snippet(body: str, *, table: str | None = None, kind: Kind = "records",
            show_table: bool = True, array: bool = False) -> str:
    """Record a suggested snippet and return its text for a message.

    Parameters
    ----------
    body
        What to write: one or more ``key = value`` lines (TOML; ``"<column>"``-style
        placeholders are quoted text), or ``--map canonical=column`` for ``kind="cli"``.
    table
        The table it goes under (``"confidence"``, ``"join"``); ``None``: the top level.
    kind
        The file (or option) it belongs in.
    show_table
        Put ``[table]`` before the body in the text (off when the message already names the
        table, e.g. the error's key is in it).
    array
        The table is one of an array of tables: ``[[table]]``.

    Examples
    --------
    >>> snippet("scale = [0, 10]", table="confidence")
    '[confidence] scale = [0, 10]'
    >>> Snippet("records", "confidence", "scale = [0, 10]") in built()
    True
    """
    made = Snippet(kind, table, body, array)
    _BUILT[made] = None
    shown = body.replace("\n", " and ")  # one line: each TOML line as written
    return f"{made.header()} {shown}" if table and show_table else shown


def built() -> tuple[Snippet, ...]:
    """Every snippet built so far in this process (at import: the static ones)."""
    return tuple(_BUILT)
