"""A validation study's records: one JSON line per fitted data set, appended as each is done.

Every study in this folder writes its records this way, so a study stopped at any point
resumes where it stopped (it skips the ``(arm, seed)`` pairs already on file). A run killed
mid-write leaves a torn line: :func:`read` skips it (saying so), so that data set is fitted again, and
:func:`append` first ends it, so the next record starts on a line of its own instead of
being glued to the torn one (and lost with it).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

__all__ = ["append", "read"]


def read(path: Path) -> list[dict[str, Any]]:
    """The records of ``path`` (none when it does not exist); a line that is not one is skipped
    with a note on standard error naming the file and line.

    >>> import tempfile
    >>> p = Path(tempfile.mkdtemp()) / "r.jsonl"
    >>> append(p, {"arm": "a", "seed": 1})
    >>> _ = p.write_text(p.read_text() + '{"arm": "a", "se')  # a run killed mid-write
    >>> append(p, {"arm": "a", "seed": 2})
    >>> import contextlib, io
    >>> with contextlib.redirect_stderr(io.StringIO()) as err:
    ...     seeds = [r["seed"] for r in read(p)]
    >>> seeds, err.getvalue().strip().endswith(":2: skipped, not a JSON record (a run killed mid-write?)")
    ([1, 2], True)
    """
    if not path.exists():
        return []
    out = []
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except ValueError:  # a torn line of a killed run: its data set is fitted again
            row = None
        if isinstance(row, dict):
            out.append(row)
        else:  # said, not dropped silently: a torn write, or a line that is not a record
            print(f"{path}:{number}: skipped, not a JSON record (a run killed mid-write?)", file=sys.stderr)
    return out


def append(path: Path, row: Mapping[str, Any], *, sort_keys: bool = True) -> None:
    """Append ``row`` as one line, after ending a torn last line if the file has one."""
    torn = False
    if path.exists() and path.stat().st_size > 0:
        with path.open("rb") as fh:
            fh.seek(-1, 2)
            torn = fh.read(1) != b"\n"
    with path.open("a") as fh:
        fh.write(("\n" if torn else "") + json.dumps(row, sort_keys=sort_keys) + "\n")
