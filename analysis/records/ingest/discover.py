"""Finding the record files of the input paths (file discovery, formats by suffix)."""

from __future__ import annotations

import atexit
import gzip
import io
import os
import shutil
import tempfile
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from selfmodel.common.outputs import MARKER
from selfmodel.records.contract import (
    InputError,
)
from selfmodel.records.registry import format_input_error

#: File suffix -> format name.
FORMATS: Final[dict[str, str]] = {
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".csv": "csv",
    ".parquet": "parquet",
}


# --------------------------------------------------------------------------- file discovery


@dataclass(frozen=True)
class InputFile:
    """One record file to read: its path, names and format (``jsonl``, ``csv``, ``parquet``)."""

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
    and listed as ``{"path", "reason"}``: selfmodel's manifest ``.selfmodel-out`` of a
    folder it wrote (e.g. ``simulate --out``), other hidden files and folders (a name starting with
    ``.``), files of another type, files named in ``exclude`` (e.g. a registry beside the
    records), dangling links, links that loop back into a folder being read, and a folder
    of outputs of a ``selfmodel run``, ``fit`` or ``ingest`` (outputs are never read back
    as input: an ``--out`` inside an input folder does not add its records). The one
    file discovery of ``selfmodel``: ``ingest`` and :func:`resolve_inputs`.
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
            if entry.name == MARKER and entry.is_file():
                skipped.append({"path": rel, "reason": MANIFEST_FILE})
            elif entry.name.startswith("."):
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


#: Why selfmodel's own manifest in an input folder (e.g. ``data_raw/``) is not read.
MANIFEST_FILE: Final = "selfmodel's manifest of the files it wrote (not records)"

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

#: The environment variable that sets the largest decompressed size of one ``.gz`` input
#: (bytes, or with a K, M, G or T suffix: ``SELFMODEL_MAX_GUNZIP=50G``).
GUNZIP_ENV: Final = "SELFMODEL_MAX_GUNZIP"
#: Unless it is set, a ``.gz`` file may expand to 100 times its size, and to 256 MiB at
#: least: far beyond logs (JSONL compresses 5 to 20 times), far below a gzip bomb (1 MB
#: of blank lines expands to 1 GiB).
GUNZIP_RATIO: Final = 100
GUNZIP_FLOOR: Final = 256 << 20
_UNITS: Final = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


def gunzip_limit(compressed: int) -> int:
    """Largest decompressed size allowed for a ``.gz`` file of ``compressed`` bytes.

    Examples
    --------
    >>> gunzip_limit(1 << 20) == 256 << 20, gunzip_limit(10 << 20) == 1000 << 20
    (True, True)
    """
    return env_size(GUNZIP_ENV, max(GUNZIP_FLOOR, GUNZIP_RATIO * compressed))


def env_size(name: str, default: int) -> int:
    """A size in bytes from the environment variable ``name`` (``20G``, ``500M``), else ``default``.

    A value that is no size is an :class:`InputError` naming the variable.
    """
    text = os.environ.get(name, "").strip().upper().removesuffix("B").removesuffix("I")
    if not text:
        return default
    unit = text[-1] if text[-1] in _UNITS and not text[-1].isdigit() else ""
    try:
        value = float(text[: len(text) - len(unit)])
    except ValueError:
        value = -1.0
    if not 0 <= value < 1e18:
        raise InputError(format_input_error(
            None, f"{name}={os.environ[name]!r} is not a size",
            f"Set it to a number of bytes, e.g. {name}=20G, or unset it"))
    return int(value * _UNITS[unit])


def _too_big(path: Path, limit: int) -> InputError:
    return InputError(format_input_error(
        path, f"it decompresses to more than {_size(limit)}, the limit for a gzip file of "
        f"{_size(path.stat().st_size)} (a gzip bomb?)",
        f"If the file is genuine, raise the limit, e.g. {GUNZIP_ENV}=20G"))


def _size(n: int) -> str:
    for unit in ("GiB", "MiB", "KiB"):
        scale = _UNITS[unit[0]]
        if n >= scale:
            return f"{n / scale:.1f}".removesuffix(".0") + f" {unit}"
    return f"{n} bytes"


class BoundedReader(io.RawIOBase):
    """A readable stream that stops with :class:`InputError` past ``limit`` bytes.

    Wraps a decompressing stream (``gzip.open(path, "rb")``), so a gzip bomb is refused
    after at most ``limit`` bytes, whatever reads it.
    """

    def __init__(self, raw: Any, path: Path, limit: int) -> None:
        self._raw, self._path, self._limit, self.total = raw, path, limit, 0

    def readable(self) -> bool:  # noqa: D102
        return True

    def readinto(self, buffer: Any) -> int:  # noqa: D102
        n = self._raw.readinto(buffer)
        self.total += n or 0
        if self.total > self._limit:
            raise _too_big(self._path, self._limit)
        return n

    def close(self) -> None:  # noqa: D102
        self._raw.close()
        super().close()


def open_gzip_text(path: Path, *, encoding: str = "utf-8") -> io.TextIOWrapper:
    """Open a ``.gz`` file as text, its decompressed size bounded (:func:`gunzip_limit`)."""
    raw = BoundedReader(gzip.open(path, "rb"), path, gunzip_limit(path.stat().st_size))
    return io.TextIOWrapper(io.BufferedReader(raw), encoding=encoding)


def _gunzip(path: Path) -> Path:
    """Decompress ``path`` into a private temporary folder (removed at exit).

    The decompressed size is bounded (:func:`gunzip_limit`); a read that fails is "not a
    readable gzip file", a write that fails (a full temporary disk) says so.
    """
    limit = gunzip_limit(path.stat().st_size)
    try:
        if not _GZ_DIR:
            _GZ_DIR.append(Path(tempfile.mkdtemp(prefix="selfmodel-gz-")))
            atexit.register(shutil.rmtree, _GZ_DIR[0], True)
        target = _GZ_DIR[0] / f"{len(list(_GZ_DIR[0].iterdir()))}{path.suffixes[-2]}"
        dst = target.open("wb")
    except OSError as exc:
        raise _no_room(path, exc) from exc
    total = 0
    try:
        with dst, gzip.open(path, "rb") as src:
            while True:
                try:
                    chunk = src.read(1 << 20)
                except (OSError, EOFError, zlib.error) as exc:
                    raise InputError(format_input_error(
                        path, f"not a readable gzip file ({exc})",
                        "Check the file or decompress it")) from exc
                if not chunk:
                    break
                total += len(chunk)
                if total > limit:
                    raise _too_big(path, limit)
                try:
                    dst.write(chunk)
                except OSError as exc:
                    raise _no_room(path, exc) from exc
    except BaseException:
        target.unlink(missing_ok=True)  # frees the space at once
        raise
    return target


def _no_room(path: Path, exc: OSError) -> InputError:
    """A ``.gz`` file that could not be decompressed into the temporary folder."""
    where = _GZ_DIR[0] if _GZ_DIR else Path(tempfile.gettempdir())
    return InputError(format_input_error(
        path, f"cannot decompress it into the temporary folder {where} "
        f"({exc.strerror or exc}; the file itself was not at fault)",
        "Free space there, or set TMPDIR to a folder with room"))


def _input(path: Path, name: str, hash_name: str, fmt: str) -> InputFile:
    """An input; a ``.gz`` file is read from its decompressed copy (named as given)."""
    if path.suffix.lower() == GZIP_SUFFIX:
        return InputFile(_gunzip(path), name, hash_name, fmt)
    return InputFile(path, name, hash_name, fmt)


def discover_inputs(paths: Sequence[Path | str], *, exclude: Sequence[str] = ()) -> list[InputFile]:
    """The record files of files and folders, in reading order (sorted, each once).

    ``exclude``: file names not read in folders (see :func:`walk_folder`).
    """
    if isinstance(paths, str | Path):
        paths = [paths]
    if not paths:
        raise InputError(
            format_input_error(None, "no input paths given", "Name data files or folders")
        )
    found: dict[Path, InputFile] = {}
    for given in paths:
        root = Path(given)
        if root.is_dir():
            files = data_files(root, exclude=exclude)
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


# --------------------------------------------------------------------------- input paths

#: Names of a registry file at the top of an input folder (never read as records).
REGISTRY_NAMES: Final = ("registry.csv", "registry.toml")


@dataclass(frozen=True)
class Inputs:
    """Resolved inputs: record files, registry and (for simulated data) the truth."""

    record_paths: list[Path]
    registry: Path | None
    truth: Path | None
    #: every other entry under an input folder, with why it is not read (``ingest.json``)
    not_read: list[dict[str, str]] = field(default_factory=list)


def input_path(p: Path) -> Path:
    """An input path to open later: relative to the working directory when inside it.

    Unlike :func:`selfmodel.pipeline.stages.display_path` never relative to the package's folder, which the working
    directory need not be (an editable install's checkout holds ``data_raw/``).
    """
    try:
        return p.resolve().relative_to(Path.cwd().resolve())
    except (ValueError, OSError):
        return p


def resolve_inputs(paths: Sequence[Path | str], registry: Path | str | None) -> Inputs:
    """Expand folders; a folder's top-level ``registry.csv``/``.toml`` is its registry.

    A ``truth.json`` beside the records (simulated data) is picked up for the truth
    comparison. Registry files are never read as records.
    """
    record_paths: list[Path] = []
    not_read: list[dict[str, str]] = []
    found_registry: Path | None = Path(registry) if registry else None
    truth: Path | None = None
    for raw in paths:
        p = Path(raw)
        if not p.exists():
            raise InputError(f"{p}: no such file or folder. Check the path.")
        if p.is_dir():
            for name in REGISTRY_NAMES:
                if (p / name).is_file() and found_registry is None:
                    found_registry = p / name
            if (p / "truth.json").is_file():
                truth = p / "truth.json"
            files, skipped = walk_folder(p, exclude=(*REGISTRY_NAMES, "truth.json"))
            not_read += [
                {"path": (input_path(p) / s["path"]).as_posix(), "reason": s["reason"]}
                for s in skipped
            ]
            if not files:
                raise InputError(
                    f"{p}: folder has no record files ({', '.join(tuple(FORMATS))}). Point to your logs."
                )
            record_paths.extend(files)
        else:
            record_paths.append(p)
    return Inputs(
        [input_path(p) for p in record_paths],
        input_path(found_registry) if found_registry else None,
        input_path(truth) if truth else None,
        not_read,
    )
