"""Finding the record files of the input paths (file discovery, formats by suffix)."""

from __future__ import annotations

import atexit
import gzip
import shutil
import tempfile
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from selfmodel.contract import (
    InputError,
)
from selfmodel.outputs import MARKER
from selfmodel.registry import format_input_error

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


#: Compressed record files: the format is the suffix before ``.gz``.
GZIP_SUFFIX: Final = ".gz"


def record_format(path: Path) -> str | None:
    """Format of a record file from its name (``x.jsonl``, ``x.csv.gz``), or ``None``."""
    suffixes = [s.lower() for s in path.suffixes]
    if suffixes and suffixes[-1] == GZIP_SUFFIX:
        inner = suffixes[-2] if len(suffixes) > 1 else ""
        return FORMATS.get(inner) if inner != ".parquet" else None
    return FORMATS.get(path.suffix.lower())


def walk_folder(
    root: Path, *, exclude: Sequence[str] = ()
) -> tuple[list[Path], list[dict[str, str]]]:
    """Record files under the folder ``root`` and every other entry with why it is not read.

    Searched recursively, following links to folders (each real folder once). Not read,
    and listed as ``{"path", "reason"}``: hidden files and folders (a name starting with
    ``.``), files of another type, files named in ``exclude`` (e.g. a registry beside the
    records), dangling links, links that loop back into a folder being read, and a folder
    of outputs of a ``selfmodel run``, ``fit`` or ``ingest`` (outputs are never read back
    as input: an ``--out`` inside an input folder does not add its records). The one
    file discovery of ``selfmodel``: ``ingest`` and ``selfmodel.pipeline.resolve_inputs``.
    """
    files: list[Path] = []
    skipped: list[dict[str, str]] = []
    if is_output_folder(root):
        raise InputError(format_input_error(
            root, "this folder holds outputs of selfmodel, which are never read back as input",
            "Name the record files (e.g. its records.parquet), or the folder of the original "
            "records"))
    seen = {root.resolve()}
    stack = [root]
    while stack:
        folder = stack.pop()
        for entry in sorted(folder.iterdir()):
            rel = entry.relative_to(root).as_posix()
            if entry.name.startswith("."):
                skipped.append({"path": rel, "reason": "hidden"})
            elif entry.is_symlink() and not entry.exists():
                skipped.append({"path": rel, "reason": "dangling link"})
            elif entry.is_dir() and is_output_folder(entry):
                skipped.append({"path": rel, "reason": OUTPUT_FOLDER})
            elif entry.is_dir():
                real = entry.resolve()
                if real in seen:
                    skipped.append({"path": rel, "reason": "link loop (folder already read)"})
                    continue
                seen.add(real)
                stack.append(entry)
            elif not entry.is_file():
                skipped.append({"path": rel, "reason": "not a regular file"})
            elif entry.name in exclude:
                skipped.append({"path": rel, "reason": "not records (registry or truth)"})
            elif record_format(entry) is None:
                kind = "".join(entry.suffixes[-2:]) or "(none)"
                skipped.append({"path": rel, "reason": f"unsupported type '{kind}'"})
            else:
                files.append(entry)
    return sorted(files), sorted(skipped, key=lambda s: s["path"])


#: Why an output folder of selfmodel found among the inputs is not read.
OUTPUT_FOLDER: Final = "outputs of selfmodel (an earlier --out): outputs are never inputs"


def is_output_folder(folder: Path) -> bool:
    """Whether ``folder`` is the ``--out`` of a ``selfmodel run``, ``fit`` or ``ingest``.

    It holds ``ingest.json`` beside the marker file ``.selfmodel-out`` (or beside
    ``records.parquet`` and ``quarantine.parquet``, as made before the marker). The output
    folder of ``selfmodel import`` has no ``ingest.json``: its records are read.
    """
    if not (folder / "ingest.json").is_file():
        return False
    return (folder / MARKER).is_file() or (
        (folder / "records.parquet").is_file() and (folder / "quarantine.parquet").is_file())


def data_files(root: Path, *, exclude: Sequence[str] = ()) -> list[Path]:
    """Record files under the folder ``root``, sorted (see :func:`walk_folder`)."""
    return walk_folder(root, exclude=exclude)[0]


_GZ_DIR: list[Path] = []


def _gunzip(path: Path) -> Path:
    """Decompress ``path`` into a private temporary folder (removed at exit)."""
    if not _GZ_DIR:
        _GZ_DIR.append(Path(tempfile.mkdtemp(prefix="selfmodel-gz-")))
        atexit.register(shutil.rmtree, _GZ_DIR[0], True)
    target = _GZ_DIR[0] / f"{len(list(_GZ_DIR[0].iterdir()))}{path.suffixes[-2]}"
    try:
        with gzip.open(path, "rb") as src, target.open("wb") as dst:
            shutil.copyfileobj(src, dst, 1 << 20)
    except (OSError, EOFError, zlib.error) as exc:
        raise InputError(format_input_error(
            path, f"not a readable gzip file ({exc})", "Check the file or decompress it")) from exc
    return target


def _input(path: Path, name: str, hash_name: str, fmt: str) -> _Input:
    """An input; a ``.gz`` file is read from its decompressed copy (named as given)."""
    if path.suffix.lower() == GZIP_SUFFIX:
        return _Input(_gunzip(path), name, hash_name, fmt)
    return _Input(path, name, hash_name, fmt)


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
                if f.resolve() not in found:
                    found[f.resolve()] = _input(
                        f, f.as_posix(), f.relative_to(root).as_posix(), str(record_format(f))
                    )
        elif root.is_file():
            fmt = record_format(root)
            if fmt is None:
                suffix = "".join(root.suffixes[-2:])
                raise InputError(
                    format_input_error(
                        root,
                        f"unsupported file type '{suffix or '(none)'}'",
                        "Use .jsonl, .ndjson, .csv or .parquet files (.jsonl.gz, .csv.gz too)",
                    )
                )
            if root.resolve() not in found:
                found[root.resolve()] = _input(root, root.as_posix(), root.name, fmt)
        else:
            raise InputError(format_input_error(root, "no such file or folder", "Check the path"))
    return sorted(found.values(), key=lambda i: (i.name, str(i.path.resolve())))
