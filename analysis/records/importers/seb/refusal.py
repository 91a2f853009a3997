"""Experiment 2 (XSTest refusal prediction): the blocks of its result files."""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

from selfmodel.records.contract import InputError
from selfmodel.records.importers.seb.layout import BLOCK_MARKER

# --------------------------------------------------------------------------------------------
# experiment 2: refusal


@dataclass
class Block:
    """One block of an XSTest-style refusal file: its 1-based index and its CSV rows."""

    index: int  # 1-based
    rows: list[tuple[int, list[str]]]  # (1-based CSV row in the file, fields)

    @property
    def size(self) -> int:
        """Number of non-empty rows."""
        return sum(1 for _, r in self.rows if any(f.strip() for f in r))


def blocks_of(path: Path) -> tuple[list[Block], int]:
    """Split a headerless, appended experiment-2 file into runs; also count stray rows."""
    blocks: list[Block] = []
    stray = 0
    with path.open(newline="", encoding="utf-8") as fh:
        for line, row in enumerate(csv.reader(fh), start=1):
            if [f.strip() for f in row] == BLOCK_MARKER:
                blocks.append(Block(index=len(blocks) + 1, rows=[]))
            elif blocks:
                blocks[-1].rows.append((line, row))
            elif any(f.strip() for f in row):
                stray += 1
    return blocks, stray


def read_xstest(path: Path) -> dict[str, str | None]:
    """XSTest prompt id -> type, in file order."""
    with path.open(newline="", encoding="utf-8") as fh:
        reader = csv.DictReader(fh)
        header = reader.fieldnames or []
        if "id" not in header:
            raise InputError(
                f"{path}: no 'id' column; present: {', '.join(header)}. "
                "Restore xstest_prompts.csv from the repository."
            )
        return {(r["id"] or "").strip(): ((r.get("type") or "").strip() or None) for r in reader}
