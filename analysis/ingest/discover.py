"""Finding the record files of the input paths (file discovery, formats by suffix)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from analysis.contract import (
    InputError,
)
from analysis.registry import format_input_error

#: File suffix -> format name.
FORMATS: Final[dict[str, str]] = {
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".csv": "csv",
    ".parquet": "parquet",
}


# --------------------------------------------------------------------------- file discovery


@dataclass(frozen=True)
class _Input:
    path: Path
    name: str  # ``source_file``: the path as found, POSIX separators
    hash_name: str  # name inside the data hash: relative to its folder argument
    format: str


def data_files(root: Path, *, exclude: Sequence[str] = ()) -> list[Path]:
    """Record files under the folder ``root``: suffix in :data:`FORMATS`, sorted.

    Searched recursively; hidden files and folders (a part starting with ``.``) and files
    named in ``exclude`` (e.g. a registry beside the records) are skipped. The one file
    discovery of ``selfmodel``: ``ingest`` and ``analysis.pipeline.resolve_inputs`` use it.
    """
    return sorted(
        f
        for f in root.rglob("*")
        if f.is_file()
        and f.suffix.lower() in FORMATS
        and f.name not in exclude
        and not any(part.startswith(".") for part in f.relative_to(root).parts)
    )


def _discover(paths: Sequence[Path | str]) -> list[_Input]:
    if isinstance(paths, str | Path):
        paths = [paths]
    if not paths:
        raise InputError(
            format_input_error(None, "no input paths given", "Name data files or folders")
        )
    found: dict[Path, _Input] = {}
    for given in paths:
        root = Path(given)
        if root.is_dir():
            files = data_files(root)
            if not files:
                raise InputError(
                    format_input_error(
                        root,
                        "this folder holds no .jsonl, .ndjson, .csv or .parquet files",
                        "Point to a folder with data files, or to the files themselves",
                    )
                )
            for f in files:
                found.setdefault(
                    f.resolve(),
                    _Input(
                        f, f.as_posix(), f.relative_to(root).as_posix(), FORMATS[f.suffix.lower()]
                    ),
                )
        elif root.is_file():
            suffix = root.suffix.lower()
            if suffix not in FORMATS:
                raise InputError(
                    format_input_error(
                        root,
                        f"unsupported file type '{suffix or '(none)'}'",
                        "Use .jsonl, .ndjson, .csv or .parquet files",
                    )
                )
            found.setdefault(
                root.resolve(), _Input(root, root.as_posix(), root.name, FORMATS[suffix])
            )
        else:
            raise InputError(format_input_error(root, "no such file or folder", "Check the path"))
    return sorted(found.values(), key=lambda i: (i.name, str(i.path.resolve())))
