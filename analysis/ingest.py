r"""Ingest logged self-prediction records: read, map, validate, deduplicate, account.

:func:`ingest` reads JSONL (``.jsonl``/``.ndjson``), CSV (``.csv``) and Parquet
(``.parquet``) files, or folders of them (searched recursively, hidden files skipped),
into the canonical record table of :mod:`analysis.contract`. Every row read ends in exactly
one of three places, so that ``records_read == records_used + records_quarantined +
records_duplicate`` always holds:

* ``records`` -- valid rows, one per :data:`~analysis.contract.KEY`;
* ``quarantine`` -- rows that cannot be used, each with its file, line, a reason and the
  raw text (at most 500 characters);
* ``records_duplicate`` -- extra copies of a row that is exactly equal on
  ``prediction, outcome, correct, confidence, status`` to one already kept (the copy from
  the first file in reading order, then the lowest line, is kept).

Reading
-------
Files are read in sorted path order; a path given twice is read once. The fast path is
vectorised polars: a JSONL file is parsed whole with every key read as text, a CSV file
with every column as text, a Parquet file as stored. Only when that fails (a truncated
line, a non-object line, invalid UTF-8, fields spanning lines, too many fields) does the
file go line by line -- and for JSONL even then the good stretches are parsed by polars in
chunks, with Python's :mod:`json` used only on small chunks that contain a bad line.

* A UTF-8 byte-order mark is dropped; CRLF line ends are accepted.
* Blank lines are skipped and not counted as read.
* A JSONL line that is not valid JSON or not an object is quarantined
  (``invalid JSON``, ``not a JSON object``); the rest of the file is read.
* Bytes that are not valid UTF-8 are never replaced silently: the line (JSONL) or record
  (CSV) holding them is quarantined as ``invalid UTF-8``, its ``raw`` text shown with
  U+FFFD replacement characters. A CSV *header* that is not UTF-8 is an
  :class:`~analysis.contract.InputError`.
* A CSV row with more fields than the header is quarantined (``wrong number of fields``);
  a row with fewer has its missing trailing fields read as empty (polars' rule).
* JSONL keys are found from the first 1,000 lines plus the canonical and mapped column
  names, which are always read (a canonical or mapped key counts as present when some line
  gives it a non-null value); an unknown key first appearing after line 1,000 is ignored
  without being listed in ``ignored_columns``.
* An empty or header-only file contributes 0 rows and is listed in ``files``.

Columns
-------
Column names may be mapped (``--map item_id=question_id``, canonical name on the left).
Every mapped source column must exist in every file that has rows (a typo in a mapping is
an error, never a silent fall-back to another column). A ``[defaults]`` value from a config
file fills an unmapped canonical column that a file does not have. A file without a
required column (``model``, ``task``, ``item_id``) raises
:class:`~analysis.contract.InputError` suggesting ``--map <column>=<closest present>``.
Columns that are not used are listed in ``ignored_columns``.

Validation (first failing rule names the reason)
------------------------------------------------
Text values are stripped of surrounding white space; an empty string is null.

1. ``model``, ``task``, ``item_id`` must be non-empty (``missing value``).
2. ``status`` (case-insensitive, default ``ok``) must be one of
   :data:`~analysis.contract.STATUSES` (``invalid status``).
3. ``confidence`` must be a finite number in [0, 1] (``invalid confidence``).
4. ``sample`` must be a non-negative integer (``1``, ``"1"``, ``1.0``); default 0
   (``invalid sample``).
5. ``correct`` must be a boolean (true/false/1/0/yes/no, any case) (``invalid correct``).
6. With a config listing ``tasks``, ``task`` must be one of them (``unknown task``).
7. A row with status ``ok`` needs an ``outcome`` or a ``correct`` (``no outcome``); a row
   declared ``unparsed``, ``refused`` or ``error`` is kept without one (it is unreadable).
8. A given ``correct`` must agree with ``prediction == outcome`` when both are present
   and the status is ``ok`` (``correct disagrees``).

``prediction`` and ``outcome`` become ``"true"``/``"false"`` when they read as booleans,
otherwise the stripped text, so free-text predictions compare exactly (case-sensitive).
A row with status ``ok`` but no prediction gets status ``unparsed``. ``correct`` is derived
as ``prediction == outcome`` when absent, and is null whenever the status is not ``ok``
(an unreadable prediction is neither right nor wrong; ``accuracy_strict`` downstream
counts it as wrong). ``predictor`` defaults to ``model``. Text such as ``<script>`` or
``=cmd|' /C calc'!A0`` is kept verbatim as data; escaping it is the report's job.

Duplicates
----------
Rows with the same :data:`~analysis.contract.KEY` (across files too) that differ in
``prediction, outcome, correct, confidence`` or ``status`` are *all* quarantined with the
reason ``conflicting duplicate of <file>:<line>`` (naming the first other copy).
Rows that agree on those are exact duplicates: one is kept, the others are counted in
``records_duplicate``. Other columns (``cluster``, ``run_id``) do not make rows differ.

Data hash
---------
``summary["sha256"]`` is the SHA-256 of, for each file in reading order: its name (path
relative to the folder argument it was found in, or the bare file name for a file
argument; UTF-8, ``/`` separators), a NUL byte, its size as an 8-byte big-endian integer,
and its bytes. Moving the data folder does not change the hash; renaming a file does.
Mapping, config and registry are not part of it.
"""

from __future__ import annotations

import csv
import difflib
import hashlib
import io
import json
import math
import re
import tomllib
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from itertools import product
from pathlib import Path
from typing import Any, Final

import polars as pl

from analysis import atomic
from analysis.contract import (
    FALSE_STRINGS,
    KEY,
    QUARANTINE_SCHEMA,
    RECORD_SCHEMA,
    REQUIRED,
    STATUSES,
    TRUE_STRINGS,
    InputError,
)
from analysis.registry import did_you_mean, format_input_error, load_registry, registry_report

__all__ = [
    "IngestConfig",
    "IngestResult",
    "ingest",
    "load_config",
    "parse_map_options",
    "write_ingest",
]

#: File suffix -> format name.
FORMATS: Final[dict[str, str]] = {
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".csv": "csv",
    ".parquet": "parquet",
}

#: Canonical columns an input may provide (``source_*`` are filled by ingestion).
INPUT_COLUMNS: Final = tuple(c for c in RECORD_SCHEMA if c not in ("source_file", "source_line"))

#: Columns that must agree for two rows with the same KEY to be exact duplicates.
COMPARED: Final = ("prediction", "outcome", "correct", "confidence", "status")

#: Maximum length of the ``raw`` text kept in the quarantine table.
RAW_MAX: Final = 500

_JSON_SAMPLE_LINES: Final = 1000
_JSON_CHUNK_MIN: Final = 64
_CHUNK: Final = 1 << 24  # bytes per read when hashing and counting lines
_FORM_PROBE: Final = 10_000  # rows sampled to judge whether a column has few distinct values
_BOM: Final = b"\xef\xbb\xbf"
_CONFIG_KEYS: Final = ("map", "tasks", "defaults")
_LINE: Final = "__line"


# --------------------------------------------------------------------------- public types


@dataclass(frozen=True)
class IngestConfig:
    """Ingestion options read from a small TOML file (see :func:`load_config`).

    Attributes
    ----------
    mapping
        Canonical column -> source column.
    tasks
        Allowed tasks; records of other tasks are quarantined (``None``: any task).
    defaults
        Canonical column -> constant text used when a file has no such column.
    path
        The file the options came from, for messages.
    """

    mapping: dict[str, str] = field(default_factory=dict)
    tasks: tuple[str, ...] | None = None
    defaults: dict[str, str] = field(default_factory=dict)
    path: str | None = None


@dataclass(frozen=True)
class IngestResult:
    """What :func:`ingest` returns.

    Attributes
    ----------
    records
        Canonical :data:`~analysis.contract.RECORD_SCHEMA` columns in that order: used rows
        only, deduplicated, sorted by :data:`~analysis.contract.KEY`, then ``source_file``,
        ``source_line``.
    quarantine
        :data:`~analysis.contract.QUARANTINE_SCHEMA`: ``source_file``, ``source_line``,
        ``reason``, ``raw`` (the row as text, at most 500 characters), in reading order.
    summary
        JSON-serialisable accounting (see :func:`ingest`).
    """

    records: pl.DataFrame
    quarantine: pl.DataFrame
    summary: dict[str, Any]


# --------------------------------------------------------------------------- options


def _check_canonical(name: str, origin: str, *, file: str | None = None, line: int | None = None):
    if name not in INPUT_COLUMNS:
        raise InputError(
            format_input_error(
                file,
                f"{origin}: unknown canonical column '{name}'.{did_you_mean(name, INPUT_COLUMNS)}",
                f"Canonical columns are {', '.join(INPUT_COLUMNS)}",
                line=line,
            )
        )


def parse_map_options(items: Sequence[str]) -> dict[str, str]:
    """Parse ``--map CANONICAL=SOURCE`` options.

    Parameters
    ----------
    items
        Strings such as ``"item_id=question_id"``; the canonical name is on the left.

    Returns
    -------
    dict
        Canonical column -> source column.

    Raises
    ------
    InputError
        For a missing ``=``, an empty side, an unknown canonical name (with a "did you
        mean"), or one canonical name mapped twice to different sources.

    Examples
    --------
    >>> parse_map_options(["item_id=question_id", "model = target_model"])
    {'item_id': 'question_id', 'model': 'target_model'}
    """
    out: dict[str, str] = {}
    for item in items:
        canonical, sep, source = item.partition("=")
        canonical, source = canonical.strip(), source.strip()
        if not sep or not canonical or not source:
            raise InputError(
                format_input_error(
                    None,
                    f"--map '{item}': expected CANONICAL=SOURCE",
                    "Write it like --map item_id=question_id",
                )
            )
        _check_canonical(canonical, f"--map '{item}'")
        if canonical in out and out[canonical] != source:
            raise InputError(
                format_input_error(
                    None,
                    f"--map '{item}': '{canonical}' is already mapped to '{out[canonical]}'",
                    "Give one source column per canonical column",
                )
            )
        out[canonical] = source
    return out


def _key_line(lines: list[str], key: str, *, section: str | None = None) -> int | None:
    """Best-effort line of ``key = ...`` (inside ``[section]`` when given) or ``[key]``."""
    in_section = section is None
    pat = re.compile(rf"\s*(\[\s*)?[\"']?{re.escape(key)}[\"']?\s*(=|\])")
    for number, text in enumerate(lines, start=1):
        header = re.match(r"\s*\[\s*([^\]]+?)\s*\]", text)
        if section is not None and header:
            in_section = header.group(1).strip("\"' ") == section
            continue
        if in_section and pat.match(text):
            return number
    return None


def load_config(path: Path | str) -> IngestConfig:
    r"""Read ingestion options from a TOML file.

    The file may hold ``tasks = [...]`` (allowed tasks), a ``[map]`` table
    (``item_id = "question_id"``: canonical name = source column) and a ``[defaults]``
    table (``task = "refusal"``: a constant value for a column a file does not have).

    Parameters
    ----------
    path
        The TOML file.

    Returns
    -------
    IngestConfig

    Raises
    ------
    InputError
        For unreadable or invalid TOML, an unknown key (with a "did you mean"), or a value
        of the wrong type.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "ingest.toml"
    >>> _ = p.write_text('tasks = ["refusal"]\n[map]\nitem_id = "qid"\n')
    >>> cfg = load_config(p)
    >>> cfg.mapping, cfg.tasks
    ({'item_id': 'qid'}, ('refusal',))
    """
    path = Path(path)
    try:
        text = path.read_bytes().decode("utf-8-sig")
    except OSError as exc:
        raise InputError(
            format_input_error(path, f"cannot read the config ({exc.strerror})", "Check the path")
        ) from exc
    except UnicodeDecodeError as exc:
        raise InputError(
            format_input_error(path, "the config is not valid UTF-8", "Save it as UTF-8")
        ) from exc
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InputError(
            format_input_error(path, f"invalid TOML ({exc})", "Fix the TOML syntax")
        ) from exc
    lines = text.splitlines()

    def fail(what: str, todo: str, key: str, section: str | None = None) -> InputError:
        return InputError(
            format_input_error(
                path, what, todo, line=_key_line(lines, key, section=section), column=key
            )
        )

    for key in doc:
        if key not in _CONFIG_KEYS:
            raise fail(
                f"unknown config key.{did_you_mean(key, _CONFIG_KEYS)}",
                f"Allowed keys are {', '.join(_CONFIG_KEYS)}",
                key,
            )
    mapping: dict[str, str] = {}
    raw_map = doc.get("map", {})
    if not isinstance(raw_map, dict):
        raise fail("'map' must be a table", 'Write [map] then lines like item_id = "qid"', "map")
    for canonical, source in raw_map.items():
        if canonical not in INPUT_COLUMNS:
            raise fail(
                f"unknown canonical column in [map].{did_you_mean(canonical, INPUT_COLUMNS)}",
                f"Canonical columns are {', '.join(INPUT_COLUMNS)}",
                canonical,
                "map",
            )
        if not isinstance(source, str) or not source.strip():
            raise fail(
                "the source column must be a non-empty string",
                f'Write {canonical} = "<column in your files>"',
                canonical,
                "map",
            )
        mapping[canonical] = source.strip()
    tasks: tuple[str, ...] | None = None
    if "tasks" in doc:
        raw_tasks = doc["tasks"]
        if (
            not isinstance(raw_tasks, list)
            or not raw_tasks
            or not all(isinstance(t, str) and t.strip() for t in raw_tasks)
        ):
            raise fail(
                "'tasks' must be a non-empty list of task names",
                'Write tasks = ["refusal", "difficulty"]',
                "tasks",
            )
        tasks = tuple(t.strip() for t in raw_tasks)
    defaults: dict[str, str] = {}
    raw_defaults = doc.get("defaults", {})
    if not isinstance(raw_defaults, dict):
        raise fail(
            "'defaults' must be a table", 'Write [defaults] then task = "refusal"', "defaults"
        )
    for canonical, value in raw_defaults.items():
        if canonical not in INPUT_COLUMNS:
            raise fail(
                f"unknown canonical column in [defaults].{did_you_mean(canonical, INPUT_COLUMNS)}",
                f"Canonical columns are {', '.join(INPUT_COLUMNS)}",
                canonical,
                "defaults",
            )
        if isinstance(value, bool):
            defaults[canonical] = "true" if value else "false"
        elif isinstance(value, str | int | float):
            defaults[canonical] = str(value)
        else:
            raise fail(
                "a default must be a string, number or boolean",
                f'Write {canonical} = "<value>"',
                canonical,
                "defaults",
            )
    return IngestConfig(mapping=mapping, tasks=tasks, defaults=defaults, path=str(path))


# --------------------------------------------------------------------------- file discovery


@dataclass(frozen=True)
class _Input:
    path: Path
    name: str  # ``source_file``: the path as found, POSIX separators
    hash_name: str  # name inside the data hash: relative to its folder argument
    format: str


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
            files = sorted(
                f
                for f in root.rglob("*")
                if f.is_file()
                and f.suffix.lower() in FORMATS
                and not any(part.startswith(".") for part in f.relative_to(root).parts)
            )
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


# --------------------------------------------------------------------------- reading


@dataclass
class _Read:
    """One file after reading: text-ish columns plus ``__line``, and read-level failures."""

    frame: pl.DataFrame
    rows: int
    present: list[str]  # columns (keys) the file has, in file order
    bad: list[tuple[int, str, str, str]] = field(default_factory=list)  # line, cat, reason, raw
    raw: Callable[[Sequence[int]], dict[int, str]] = lambda lines: {}


def _clip(text: str) -> str:
    return text if len(text) <= RAW_MAX else text[:RAW_MAX]


def _has_surrogates(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _printable(text: str) -> str:
    """Text that polars can hold: lone surrogates from ``surrogateescape`` become U+FFFD."""
    return text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def _line_raw(path: Path, spans: Mapping[int, int] | None = None) -> Callable:
    """Return a lookup ``lines -> {line: raw text}`` that re-reads ``path`` when needed."""

    def lookup(lines: Sequence[int]) -> dict[int, str]:
        if not lines:
            return {}
        data = path.read_bytes()
        if data.startswith(_BOM):
            data = data[len(_BOM) :]
        physical = data.split(b"\n")
        out = {}
        for line in lines:
            end = (spans or {}).get(line, line)
            chunk = b"\n".join(p.rstrip(b"\r") for p in physical[line - 1 : end])
            out[line] = _clip(chunk.decode("utf-8", "replace"))
        return out

    return lookup


def _empty_read(present: list[str] | None = None) -> _Read:
    return _Read(
        frame=pl.DataFrame({_LINE: pl.Series([], dtype=pl.Int64)}), rows=0, present=present or []
    )


def _json_text(value: object) -> str | None:
    """Render one JSON value as text the way the polars fast path does."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        if math.isfinite(value) and value.is_integer() and abs(value) < 2**53:
            return str(int(value))
        return repr(value)
    if isinstance(value, int | str):
        return str(value)
    return json.dumps(value, ensure_ascii=False)


@dataclass(frozen=True)
class _FileInfo:
    """What one streaming pass over a file's bytes found (see :func:`_scan`)."""

    sha256: str
    size: int
    newlines: int
    ends_with_newline: bool
    bom: bool
    blank: bool  # no bytes, or only ASCII white space, after the byte-order mark

    @property
    def lines(self) -> int:
        """Physical lines: newlines, plus one for a last line without a newline."""
        return self.newlines + (0 if self.ends_with_newline or self.size == 0 else 1)


def _scan(inp: _Input, total: Any) -> _FileInfo:
    """Hash ``inp`` in chunks (its own SHA-256 and the data hash ``total``) and count lines.

    The file is never held in memory whole: polars reads it from the path afterwards.
    """
    try:
        size = inp.path.stat().st_size
        handle = inp.path.open("rb")
    except OSError as exc:
        raise InputError(
            format_input_error(
                inp.name, f"cannot read the file ({exc.strerror})", "Check its permissions"
            )
        ) from exc
    total.update(inp.hash_name.encode("utf-8"))
    total.update(b"\0")
    total.update(size.to_bytes(8, "big"))
    own = hashlib.sha256()
    newlines = seen = 0
    last = b""
    bom = False
    blank = True
    with handle:
        while chunk := handle.read(_CHUNK):
            body = chunk
            if seen == 0:
                bom = chunk.startswith(_BOM)
                body = chunk[len(_BOM) :] if bom else chunk
            seen += len(chunk)
            own.update(chunk)
            total.update(chunk)
            newlines += chunk.count(b"\n")
            if blank and body and not body.isspace():
                blank = False
            last = chunk[-1:]
    if seen != size:
        raise InputError(
            format_input_error(
                inp.name, "the file changed while it was read", "Ingest files that are complete"
            )
        )
    return _FileInfo(own.hexdigest(), size, newlines, last == b"\n", bom, blank)


def _peek(inp: _Input) -> tuple[bool, bool]:
    """``(has a byte-order mark, certainly not blank)`` from the first bytes of a file."""
    try:
        with inp.path.open("rb") as handle:
            head = handle.read(1 << 16)
    except OSError as exc:
        raise InputError(
            format_input_error(
                inp.name, f"cannot read the file ({exc.strerror})", "Check its permissions"
            )
        ) from exc
    bom = head.startswith(_BOM)
    body = head[len(_BOM) :] if bom else head
    return bom, bool(body) and not body.isspace()


def _source(inp: _Input, bom: bool) -> Path | io.BytesIO:
    """What polars reads: the path (memory-mapped), or the bytes after a byte-order mark."""
    if bom:
        return io.BytesIO(inp.path.read_bytes()[len(_BOM) :])
    return inp.path


def _file_bytes(inp: _Input) -> bytes:
    """The whole file without its byte-order mark (the line-by-line paths only)."""
    data = inp.path.read_bytes()
    return data[len(_BOM) :] if data.startswith(_BOM) else data


def _read_jsonl(inp: _Input, scan: Callable[[], _FileInfo], wanted: set[str]) -> _Read:
    """Read a JSONL file; ``scan()`` waits for its hash and line count (see :func:`_scan`)."""
    bom, filled = _peek(inp)
    if not filled and scan().blank:
        return _empty_read()
    # Keys: the first lines, plus every canonical/mapped name (read as text, null if absent).
    sample_keys: dict[str, None] = {}
    with inp.path.open("rb") as stream:
        if bom:
            stream.seek(len(_BOM))
        for _ in range(_JSON_SAMPLE_LINES):
            chunk = stream.readline()
            if not chunk:
                break
            try:
                obj = json.loads(chunk)
            except ValueError:
                continue
            if isinstance(obj, dict):
                sample_keys.update(dict.fromkeys(obj))
    keys = [*sample_keys, *sorted(set(wanted) - set(sample_keys))]
    schema: dict[str, pl.DataType] = {k: pl.Utf8() for k in keys}

    def seen(frame: pl.DataFrame, extra: Mapping[str, None]) -> list[str]:
        """Keys of the file: sampled ones, later ones, and read ones with any value."""
        late = [k for k in keys if k not in sample_keys and frame[k].null_count() < frame.height]
        return [*sample_keys, *late, *(k for k in extra if k not in schema)]

    # Fast path: polars parses the whole file. It fails on invalid UTF-8 and invalid JSON,
    # and a blank line makes its row count differ from the line count: all go line by line.
    try:
        frame = pl.read_ndjson(_source(inp, bom), schema=schema)
    except Exception:  # noqa: BLE001 - any parse failure sends the file line by line
        frame = None
    n_lines = scan().lines
    if frame is not None and frame.height == n_lines:
        frame = frame.with_columns(pl.int_range(1, n_lines + 1, dtype=pl.Int64).alias(_LINE))
        return _Read(frame, n_lines, seen(frame, {}), raw=_line_raw(inp.path))
    del frame

    # Line by line: skip blanks, quarantine invalid UTF-8, parse the rest in chunks.
    data = _file_bytes(inp)
    try:
        data.decode("utf-8")
        valid = True
    except UnicodeDecodeError:
        valid = False
    text_lines = data.decode("utf-8", "surrogateescape").split("\n")
    del data
    bad: list[tuple[int, str, str, str]] = []
    items: list[tuple[int, str]] = []
    for number, line in enumerate(text_lines, start=1):
        if not line.strip():
            continue
        if not valid and _has_surrogates(line):
            bad.append((number, "invalid UTF-8", "invalid UTF-8", _clip(_printable(line))))
            continue
        items.append((number, line))
    frames: list[pl.DataFrame] = []
    extra: dict[str, None] = {}
    _parse_json_chunks(items, schema, frames, bad, extra)
    rows = len(items) + sum(1 for b in bad if b[1] == "invalid UTF-8")
    frame = (
        pl.concat(frames, how="vertical")
        if frames
        else pl.DataFrame(schema={**schema, _LINE: pl.Int64()})
    )
    return _Read(frame, rows, seen(frame, extra), bad=bad, raw=_line_raw(inp.path))


def _parse_json_chunks(
    items: list[tuple[int, str]],
    schema: dict[str, pl.DataType],
    frames: list[pl.DataFrame],
    bad: list[tuple[int, str, str, str]],
    extra: dict[str, None],
) -> None:
    """Parse ``(line, text)`` items with polars, bisecting down to per-line json on failure."""
    if not items:
        return
    if len(items) > _JSON_CHUNK_MIN:
        payload = "\n".join(text for _, text in items).encode("utf-8")
        try:
            frame = pl.read_ndjson(io.BytesIO(payload), schema=schema)
        except Exception:  # noqa: BLE001 - bisect to find the bad lines
            frame = None
        if frame is not None and frame.height == len(items):
            lines = pl.Series(_LINE, [n for n, _ in items], dtype=pl.Int64)
            frames.append(frame.with_columns(lines))
            return
        mid = len(items) // 2
        _parse_json_chunks(items[:mid], schema, frames, bad, extra)
        _parse_json_chunks(items[mid:], schema, frames, bad, extra)
        return
    rows: dict[str, list[Any]] = {k: [] for k in schema}
    rows[_LINE] = []
    for number, text in items:
        try:
            obj = json.loads(text)
        except json.JSONDecodeError as exc:
            bad.append(
                (
                    number,
                    "invalid JSON",
                    f"invalid JSON ({exc.msg} at column {exc.colno})",
                    _clip(text),
                )
            )
            continue
        if not isinstance(obj, dict):
            kind = {list: "array", str: "string", bool: "boolean", type(None): "null"}.get(
                type(obj), "number"
            )
            bad.append(
                (number, "not a JSON object", f"not a JSON object (got {kind})", _clip(text))
            )
            continue
        for key in obj:
            if key not in schema:
                extra.setdefault(key, None)
        for key in schema:
            rows[key].append(_json_text(obj.get(key)))
        rows[_LINE].append(number)
    if rows[_LINE]:
        frames.append(pl.DataFrame(rows, schema={**schema, _LINE: pl.Int64()}))


def _csv_header(inp: _Input, lines: Iterable[str]) -> list[str]:
    reader = csv.reader(lines)
    try:
        header = next(reader)
    except (StopIteration, csv.Error) as exc:
        raise InputError(
            format_input_error(
                inp.name,
                f"cannot read the CSV header ({exc})",
                "Put the column names on line 1",
                line=1,
            )
        ) from exc
    names = [h.strip() for h in header]
    if not any(names):
        raise InputError(
            format_input_error(
                inp.name, "the header line is empty", "Put the column names on line 1", line=1
            )
        )
    if any(_has_surrogates(n) for n in names):
        raise InputError(
            format_input_error(
                inp.name, "the header is not valid UTF-8", "Save the file as UTF-8", line=1
            )
        )
    seen: set[str] = set()
    for n in names:
        if n in seen:
            raise InputError(
                format_input_error(
                    inp.name,
                    "duplicate column name in the header",
                    "Rename one of the two columns",
                    line=1,
                    column=n,
                )
            )
        if not n:
            raise InputError(
                format_input_error(
                    inp.name, "a column has no name in the header", "Name every column", line=1
                )
            )
        seen.add(n)
    return names


def _drop_blank_rows(frame: pl.DataFrame, columns: list[str]) -> pl.DataFrame:
    """Drop rows whose every cell is empty or white space (a blank row is not read)."""

    def empty(c: str) -> pl.Expr:
        return pl.col(c).is_null() | (pl.col(c).str.strip_chars() == "")

    # Only rows with an empty first cell can be blank: check the other cells on those only.
    maybe = frame.filter(empty(columns[0]))
    if maybe.height == 0:
        return frame
    blank = maybe.filter(pl.all_horizontal([empty(c) for c in columns])).get_column(_LINE)
    return frame.filter(~pl.col(_LINE).is_in(blank.implode())) if blank.len() else frame


def _read_csv(inp: _Input, scan: Callable[[], _FileInfo]) -> _Read:
    """Read a CSV file; ``scan()`` waits for its hash and line count (see :func:`_scan`)."""
    bom, filled = _peek(inp)
    if not filled and scan().blank:
        return _empty_read()
    with inp.path.open("rb") as raw:
        if bom:
            raw.seek(len(_BOM))
        lines = io.TextIOWrapper(raw, encoding="utf-8", errors="surrogateescape", newline="")
        header = _csv_header(inp, lines)
    try:
        frame = pl.read_csv(_source(inp, bom), infer_schema=False, has_header=True)
    except Exception:  # noqa: BLE001 - malformed rows and invalid UTF-8 go line by line
        frame = None
    n_lines = scan().lines
    if frame is not None and frame.width == len(header) and frame.height == n_lines - 1:
        frame.columns = header
        frame = frame.with_columns(pl.int_range(2, n_lines + 1, dtype=pl.Int64).alias(_LINE))
        frame = _drop_blank_rows(frame, header)
        return _Read(frame, frame.height, header, raw=_line_raw(inp.path))
    del frame
    return _read_csv_slow(inp, _file_bytes(inp).decode("utf-8", "surrogateescape"), header)


def _read_csv_slow(inp: _Input, text: str, header: list[str]) -> _Read:
    reader = csv.reader(io.StringIO(text, newline=""))
    columns: dict[str, list[str | None]] = {h: [] for h in header}
    lines: list[int] = []
    bad: list[tuple[int, str, str, str]] = []
    spans: dict[int, int] = {}
    rows = 0
    last = 0
    try:
        for index, record in enumerate(reader):
            start, last = last + 1, reader.line_num
            if index == 0:
                continue  # header
            if not any(cell.strip() for cell in record):
                continue
            rows += 1
            if last > start:
                spans[start] = last
            raw = _clip(_printable(",".join(record)))
            if any(_has_surrogates(cell) for cell in record):
                bad.append((start, "invalid UTF-8", "invalid UTF-8", raw))
                continue
            if len(record) > len(header):
                bad.append(
                    (
                        start,
                        "wrong number of fields",
                        f"wrong number of fields (expected {len(header)}, got {len(record)})",
                        raw,
                    )
                )
                continue
            record = record + [""] * (len(header) - len(record))
            for name, cell in zip(header, record, strict=True):
                columns[name].append(cell if cell != "" else None)
            lines.append(start)
    except csv.Error as exc:
        raise InputError(
            format_input_error(
                inp.name, f"malformed CSV ({exc})", "Fix the quoting of this row", line=last + 1
            )
        ) from exc
    frame = pl.DataFrame(
        {**columns, _LINE: lines}, schema={**{h: pl.Utf8() for h in header}, _LINE: pl.Int64()}
    )
    return _Read(frame, rows, header, bad=bad, raw=_line_raw(inp.path, spans))


def _read_parquet(inp: _Input) -> _Read:
    try:
        frame = pl.read_parquet(inp.path)
    except Exception as exc:  # noqa: BLE001 - any failure is the file's fault
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise InputError(
            format_input_error(
                inp.name,
                f"cannot read Parquet ({first})",
                "Check that the file is a complete Parquet file",
            )
        ) from exc
    present = list(frame.columns)
    frame = frame.with_columns(pl.int_range(1, frame.height + 1, dtype=pl.Int64).alias(_LINE))

    def lookup(lines: Sequence[int]) -> dict[int, str]:
        if not lines:
            return {}
        rows = pl.read_parquet(inp.path).select(present)[[n - 1 for n in lines]].to_dicts()
        return {
            n: _clip(json.dumps(row, ensure_ascii=False, default=str))
            for n, row in zip(lines, rows, strict=True)
        }

    return _Read(frame, frame.height, present, raw=lookup)


# --------------------------------------------------------------------------- columns


def _closest(word: str, candidates: Sequence[str]) -> str | None:
    if not candidates:
        return None
    ranked = sorted(
        candidates,
        key=lambda c: (-difflib.SequenceMatcher(None, word.lower(), c.lower()).ratio(), c),
    )
    return ranked[0]


def _resolve(
    inp: _Input,
    read: _Read,
    mapping: Mapping[str, str],
    defaults: Mapping[str, str],
) -> tuple[pl.DataFrame, set[str]]:
    """Select the canonical columns of one file; return them and the unused columns."""
    present = read.present
    present_set = set(present)
    sources: dict[str, str | None] = {}
    for canonical in INPUT_COLUMNS:
        mapped = mapping.get(canonical)
        if mapped is not None:
            sources[canonical] = mapped if mapped in present_set else None
        else:
            sources[canonical] = canonical if canonical in present_set else None
    used = {s for s in sources.values() if s is not None}
    unused = [c for c in present if c not in used]
    line = 1 if inp.format == "csv" else None
    shown = ", ".join(present[:20]) + (", ..." if len(present) > 20 else "")
    for canonical in INPUT_COLUMNS:
        mapped = mapping.get(canonical)
        if sources[canonical] is not None or (mapped is None and canonical in defaults):
            continue
        if mapped is not None:
            if canonical in unused:
                todo = f"Drop --map {canonical}={mapped} to use the file's own '{canonical}' column"
            else:
                guess = _closest(mapped, unused)
                todo = f"Fix the mapping, e.g. --map {canonical}={guess}" if guess else "Fix it"
            raise InputError(
                format_input_error(
                    inp.name,
                    f"mapped column '{mapped}' (--map {canonical}={mapped}) is not in the file "
                    f"(present: {shown or 'none'})",
                    todo,
                    line=line,
                    column=mapped,
                )
            )
        if canonical in REQUIRED:
            guess = _closest(canonical, unused)
            raise InputError(
                format_input_error(
                    inp.name,
                    f"required column '{canonical}' is missing (present: {shown or 'none'})",
                    f"Map it with --map {canonical}={guess}"
                    if guess
                    else f"Add a '{canonical}' column",
                    line=line,
                    column=canonical,
                )
            )
    exprs = []
    schema = read.frame.schema
    for canonical in INPUT_COLUMNS:
        source = sources[canonical]
        if source is not None:
            dtype = schema[source]
            if dtype.is_nested() or dtype == pl.Binary:
                raise InputError(
                    format_input_error(
                        inp.name,
                        f"column '{source}' holds {dtype} values, not scalars",
                        "Flatten it to text or numbers before ingesting",
                        column=source,
                    )
                )
            exprs.append(pl.col(source).alias(canonical))
        elif canonical in defaults:
            exprs.append(pl.lit(defaults[canonical], dtype=pl.Utf8).alias(canonical))
        else:
            exprs.append(pl.lit(None, dtype=pl.Utf8).alias(canonical))
    exprs.append(pl.col(_LINE))
    return read.frame.select(exprs), set(unused)


# --------------------------------------------------------------------------- validation


def _text(name: str, dtype: pl.DataType) -> pl.Expr:
    """Stripped text of a column of any scalar dtype; empty becomes null."""
    expr = pl.col(name)
    if dtype != pl.Utf8:
        expr = expr.cast(pl.Utf8)
    expr = expr.str.strip_chars()
    return pl.when(expr == "").then(None).otherwise(expr)


def _case_variants(words: Iterable[str]) -> list[str]:
    """Every upper/lower-case spelling of ASCII ``words`` (``yes`` -> ``yes, yeS, ..., YES``)."""
    return sorted(
        {"".join(chars) for w in words for chars in product(*((c.lower(), c.upper()) for c in w))}
    )


#: Spellings of the booleans in any case: matching them is what lower-casing and then
#: comparing would do (no non-ASCII character lower-cases to these letters), at a fraction
#: of the cost.
_TRUE_SPELLINGS: Final = _case_variants(TRUE_STRINGS)
_FALSE_SPELLINGS: Final = _case_variants(FALSE_STRINGS)


def _bool_of(text: pl.Expr) -> pl.Expr:
    return (
        pl.when(text.is_in(_TRUE_SPELLINGS))
        .then(True)
        .when(text.is_in(_FALSE_SPELLINGS))
        .then(False)
        .otherwise(None)
    )


def _forms(frame: pl.DataFrame, absent: frozenset[str]) -> dict[str, str]:
    """Text columns whose values need no normalisation, found from their distinct values.

    ``"clean"``: no value is empty or has surrounding white space, so the column is its own
    stripped text; ``"binary"``: clean and only ``true``/``false``; ``"status"``: clean and
    only lower-case statuses. Checking the distinct values is cheap for the usual
    low-cardinality columns; a column with many distinct values (judged from its first
    rows) is not checked and is normalised row by row.
    """
    forms: dict[str, str] = {}
    for c in INPUT_COLUMNS:
        if c in absent or frame.schema[c] != pl.Utf8:
            continue
        column = frame.get_column(c)
        if column.head(_FORM_PROBE).n_unique() > _FORM_PROBE // 4:
            continue
        values = column.unique().drop_nulls()
        if values.len() * 4 > column.len():
            continue
        if (values == "").any() or not (values.str.strip_chars() == values).all():
            continue
        forms[c] = "clean"
        if c == "status" and values.is_in(list(STATUSES)).all():
            forms[c] = "status"
        elif values.is_in(["true", "false"]).all():
            forms[c] = "binary"
    return forms


def _validate(
    frame: pl.DataFrame, *, tasks: tuple[str, ...] | None
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Split canonical columns of one file into valid records and ``(line, cat, reason)``.

    One fused lazy query normalises every row and computes a single "fails some rule" flag;
    the first failing rule and its reason text are worked out only for the failing rows.
    A column that is null throughout (absent from the file) is not processed at all, and a
    typed column (Boolean ``correct``, numeric ``confidence``/``sample``) is not turned into
    text.
    """
    height = frame.height
    absent = frozenset(c for c in INPUT_COLUMNS if frame.get_column(c).null_count() == height)
    rules, outputs, stages, reason_texts = _rules(
        frame.schema, absent, _forms(frame, absent), tasks
    )
    failing = pl.any_horizontal([cond.fill_null(False) for _, cond, _ in rules])
    lazy = frame.lazy()
    for stage in stages:
        lazy = lazy.with_columns(stage)
    checked = lazy.select(*outputs, failing.alias("__bad")).collect()
    mask = checked.get_column("__bad")
    good = checked.drop("__bad").cast(pl.Schema(_GOOD_SCHEMA))
    if not mask.any():
        return good, pl.DataFrame(schema=_BAD_SCHEMA)
    good = good.filter(~mask)
    # The failing rows only: number of the first failing rule, then its reason.
    failed = frame.filter(mask).lazy()
    if reason_texts:
        failed = failed.with_columns(reason_texts)
    for stage in stages:
        failed = failed.with_columns(stage)
    rule = pl.coalesce(
        [
            pl.when(cond.fill_null(False)).then(pl.lit(number, dtype=pl.Int32))
            for number, (_, cond, _) in enumerate(rules)
        ]
    )
    reason = pl.coalesce(
        [pl.when(pl.col("__rule") == number).then(why) for number, (_, _, why) in enumerate(rules)]
    )
    bad = (
        failed.with_columns(rule.alias("__rule"))
        .select(
            pl.col(_LINE),
            pl.col("__rule")
            .replace_strict(
                list(range(len(rules))), [name for name, _, _ in rules], return_dtype=pl.Utf8
            )
            .alias("__cat"),
            reason.alias("__reason"),
        )
        .collect()
    )
    return good, bad


#: Columns of the valid rows :func:`_validate` returns (``source_file`` is added at the end).
_GOOD_SCHEMA: Final = {**{c: t for c, t in RECORD_SCHEMA.items() if c != "source_file"}}
_BAD_SCHEMA: Final = {_LINE: pl.Int64(), "__cat": pl.Utf8(), "__reason": pl.Utf8()}


def _rules(
    schema: Mapping[str, pl.DataType],
    absent: frozenset[str],
    forms: Mapping[str, str],
    tasks: tuple[str, ...] | None,
) -> tuple[list[tuple[str, pl.Expr, pl.Expr]], list[pl.Expr], list[list[pl.Expr]], list[pl.Expr]]:
    """Expressions of the validation: ``(rules, outputs, stages)``.

    ``stages`` are ``with_columns`` steps that add the normalised helper columns
    (``reason_texts`` adds the text of typed columns, needed for reason messages only);
    ``rules`` are ``(category, condition, reason)`` in order (the first failing one names
    the reason); ``outputs`` are the record columns of a valid row.
    """
    null_text = pl.lit(None, dtype=pl.Utf8)

    def tc(c: str) -> pl.Expr:
        if c in absent:
            return null_text
        return pl.col(c) if c in forms else pl.col(f"__t_{c}")

    def given(c: str) -> pl.Expr:
        """Whether the row has a (non-empty) value in ``c``."""
        if c in absent:
            return pl.lit(False)
        return tc(c).is_not_null() if schema[c] == pl.Utf8 else pl.col(c).is_not_null()

    def typed(c: str) -> bool:
        return c not in absent and schema[c] != pl.Utf8

    # Text of every column that needs it; a typed column's text only for reason messages,
    # which are built on the failing rows alone (cheap there).
    native = {
        c
        for c in ("confidence", "sample", "correct")
        if typed(c)
        and (
            schema[c] == pl.Boolean
            or (c == "confidence" and schema[c].is_numeric())
            or (c == "sample" and (schema[c].is_integer() or schema[c].is_float()))
        )
    }
    texts = [
        _text(c, schema[c]).alias(f"__t_{c}")
        for c in INPUT_COLUMNS
        if c not in absent and c not in native and c not in forms
    ]
    reason_texts = [_text(c, schema[c]).alias(f"__t_{c}") for c in sorted(native)]

    # prediction / outcome: canonical booleans or stripped text
    def binary_text(c: str) -> pl.Expr:
        if c in absent:
            return null_text
        if forms.get(c) == "binary":
            return pl.col(c)
        b = _bool_of(tc(c))
        return pl.when(b).then(pl.lit("true")).when(~b).then(pl.lit("false")).otherwise(tc(c))

    # correct
    if typed("correct") and schema["correct"] == pl.Boolean:
        correct = pl.col("correct")
    elif "correct" in absent:
        correct = pl.lit(None, dtype=pl.Boolean)
    elif forms.get("correct") == "binary":
        correct = pl.col("correct") == "true"
    else:
        correct = _bool_of(tc("correct"))
    # confidence
    cdt = schema["confidence"]
    if "confidence" in absent:
        confidence = pl.lit(None, dtype=pl.Float64)
    elif cdt.is_numeric():
        confidence = pl.col("confidence").cast(pl.Float64)
    elif cdt == pl.Boolean:
        confidence = pl.lit(None, dtype=pl.Float64)
    else:
        confidence = tc("confidence").cast(pl.Float64, strict=False)
    # sample
    sdt = schema["sample"]
    if "sample" in absent:
        sample = pl.lit(None, dtype=pl.Int64)
    elif sdt.is_integer():
        sample = pl.col("sample").cast(pl.Int64)
    elif sdt == pl.Boolean:
        sample = pl.lit(None, dtype=pl.Int64)
    else:
        as_float = (
            pl.col("sample").cast(pl.Float64)
            if sdt.is_float()
            else tc("sample").cast(pl.Float64, strict=False)
        )
        integral = pl.when(
            as_float.is_finite() & (as_float == as_float.floor()) & (as_float.abs() < 2.0**53)
        ).then(as_float.cast(pl.Int64))
        sample = (
            integral
            if sdt.is_float()
            else pl.coalesce(tc("sample").cast(pl.Int64, strict=False), integral)
        )
    if "status" in absent:
        status_text = pl.lit("ok")
    elif forms.get("status") == "status":
        status_text = pl.col("status").fill_null("ok")
    else:
        status_text = tc("status").str.to_lowercase().fill_null("ok")
    derived = [
        binary_text("prediction").alias("__pred"),
        binary_text("outcome").alias("__out"),
        correct.alias("__corr"),
        confidence.alias("__conf"),
        sample.alias("__sample"),
        status_text.alias("__status"),
    ]
    pred, out, corr = pl.col("__pred"), pl.col("__out"), pl.col("__corr")
    conf, smp, status = pl.col("__conf"), pl.col("__sample"), pl.col("__status")
    eff_status = (
        pl.when((status == "ok") & pred.is_null()).then(pl.lit("unparsed")).otherwise(status)
    )
    equal = pred == out

    def shown(c: str) -> pl.Expr:
        return tc(c).fill_null("null")

    rules: list[tuple[str, pl.Expr, pl.Expr]] = [
        ("missing value", tc(c).is_null(), pl.lit(f"missing value in required column '{c}'"))
        for c in REQUIRED
    ]
    if "status" not in absent:
        rules.append(
            (
                "invalid status",
                ~status.is_in(list(STATUSES)),
                pl.format(
                    "invalid status '{}' (allowed: {})",
                    shown("status"),
                    pl.lit(", ".join(STATUSES)),
                ),
            )
        )
    if "confidence" not in absent:
        rules.append(
            (
                "invalid confidence",
                (given("confidence") & conf.is_null())
                | (
                    conf.is_not_null()
                    & (conf.is_nan() | conf.is_infinite() | (conf < 0) | (conf > 1))
                ),
                pl.format(
                    "invalid confidence '{}' (must be a finite number in [0, 1])",
                    shown("confidence"),
                ),
            )
        )
    if "sample" not in absent:
        rules.append(
            (
                "invalid sample",
                (given("sample") & smp.is_null()) | (smp < 0),
                pl.format("invalid sample '{}' (must be a non-negative integer)", shown("sample")),
            )
        )
    if "correct" not in absent:
        rules.append(
            (
                "invalid correct",
                given("correct") & corr.is_null(),
                pl.format("invalid correct '{}' (must be true/false/1/0/yes/no)", shown("correct")),
            )
        )
    if tasks is not None:
        rules.append(
            (
                "unknown task",
                ~tc("task").is_in(list(tasks)),
                pl.format(
                    "unknown task '{}' (configured tasks: {})",
                    shown("task"),
                    pl.lit(", ".join(tasks)),
                ),
            )
        )
    rules += [
        (
            "no outcome",
            # A row declared unreadable (unparsed/refused/error) is kept without an outcome:
            # it counts as wrong in accuracy_strict, as in papers that score failures as wrong.
            out.is_null() & corr.is_null() & (status == "ok"),
            pl.lit("no outcome and no correct (nothing to check the prediction against)"),
        ),
        (
            "correct disagrees",
            (eff_status == "ok") & corr.is_not_null() & equal.is_not_null() & (corr != equal),
            pl.format(
                "correct disagrees with prediction == outcome "
                "(correct={}, prediction='{}', outcome='{}')",
                corr.cast(pl.Utf8),
                pred,
                out,
            ),
        ),
    ]
    outputs = [
        tc("model").alias("model"),
        tc("task").alias("task"),
        tc("item_id").alias("item_id"),
        pred.alias("prediction"),
        out.alias("outcome"),
        pl.when(eff_status != "ok")
        .then(None)
        .when(corr.is_not_null())
        .then(corr)
        .otherwise(equal)
        .alias("correct"),
        pl.coalesce(tc("predictor"), tc("model")).alias("predictor"),
        conf.alias("confidence"),
        tc("cluster").alias("cluster"),
        eff_status.alias("status"),
        tc("run_id").alias("run_id"),
        smp.fill_null(0).alias("sample"),
        pl.col(_LINE).alias("source_line"),
    ]
    return rules, outputs, [texts, derived], reason_texts


def _key_codes(records: pl.DataFrame) -> pl.Expr | list[str]:
    """One ``UInt64`` sort key that orders rows as ``KEY`` does, or the columns to sort by.

    Each key column becomes the rank of its value among the column's distinct values
    (strings in byte order, as polars sorts them), and the ranks are packed into one
    integer: sorting that is much cheaper than a multi-column string sort. When the packed
    ranks would not fit in 64 bits, the ``KEY`` columns themselves are returned.
    """
    codes: list[tuple[pl.Expr, int]] = []
    total = 1
    for c in KEY:
        column = records.get_column(c)
        if column.dtype == pl.Utf8:
            levels = column.unique().sort()
            n_levels = levels.len()
            if n_levels * 4 <= column.len():
                code = pl.col(c).cast(pl.Enum(levels)).to_physical().cast(pl.UInt64)
            else:  # many distinct values: ranking sorts the column anyway
                code = pl.col(c).rank("dense").cast(pl.UInt64) - 1
        else:  # sample: a non-negative Int64
            low, high = column.min(), column.max()
            if not isinstance(low, int) or not isinstance(high, int) or low < 0 or high >= 2**32:
                return list(KEY)
            n_levels = high + 1
            code = pl.col(c).cast(pl.UInt64)
        total *= max(n_levels, 1)
        if total >= 2**63:
            return list(KEY)
        codes.append((code, max(n_levels, 1)))
    packed = pl.lit(0, dtype=pl.UInt64)
    for code, size in codes:
        packed = packed * pl.lit(size, dtype=pl.UInt64) + code
    return packed


def _order_and_deduplicate(
    records: pl.DataFrame,
) -> tuple[pl.DataFrame, pl.DataFrame, int]:
    """Sort valid rows by ``KEY`` and reading order; return ``(kept, conflicts, n_copies)``.

    ``records`` must be in reading order (files by index, lines ascending): the sort is
    stable, so rows with equal keys stay in reading order, which is the order of
    ``source_file, source_line`` (files are indexed in sorted name order). Copies of a key
    are then adjacent. ``conflicts`` has ``__file_idx``, ``source_line``, ``__ref_file``,
    ``__ref_line`` (the first other copy) of every conflicting copy.
    """
    empty_conflicts = pl.DataFrame(
        schema={
            "__file_idx": pl.Int64(),
            "source_line": pl.Int64(),
            "__ref_file": pl.Int64(),
            "__ref_line": pl.Int64(),
        }
    )
    if records.height == 0:
        return records, empty_conflicts, 0
    key = _key_codes(records)
    if isinstance(key, list):
        same = pl.all_horizontal([pl.col(c) == pl.col(c).shift(1) for c in key]).fill_null(False)
        ordered = records.sort(key, maintain_order=True).with_columns(
            (~same).cum_sum().alias("__key")
        )
    else:
        ordered = records.with_columns(key.alias("__key")).sort("__key", maintain_order=True)
    k = pl.col("__key")
    in_group = ((k == k.shift(1)) | (k == k.shift(-1))).fill_null(False)
    flags = ordered.select(in_group.alias("__multi")).get_column("__multi")
    if not flags.any():
        return ordered.drop("__key"), empty_conflicts, 0
    multi = (
        ordered.with_row_index("__row")
        .filter(flags)
        .with_columns(
            pl.struct(list(COMPARED)).n_unique().over("__key").alias("__nv"),
            pl.int_range(pl.len()).over("__key").alias("__rank"),
        )
    )

    def ref(col: str) -> pl.Expr:
        first = pl.col(col).first().over("__key")
        second = pl.col(col).slice(1, 1).first().over("__key")
        return pl.when(pl.col("__rank") == 0).then(second).otherwise(first)

    conflicts = multi.filter(pl.col("__nv") > 1).select(
        pl.col("__file_idx"),
        pl.col("source_line"),
        ref("__file_idx").alias("__ref_file"),
        ref("source_line").alias("__ref_line"),
    )
    dropped = multi.filter((pl.col("__nv") > 1) | (pl.col("__rank") > 0))
    n_copies = dropped.height - conflicts.height
    kept = (
        ordered.with_row_index("__row")
        .filter(~pl.col("__row").is_in(dropped.get_column("__row").implode()))
        .drop("__row", "__key")
    )
    return kept, conflicts, n_copies


# --------------------------------------------------------------------------- ingest


def _merge_options(
    mapping: Mapping[str, str] | None, config: Path | str | IngestConfig | None
) -> IngestConfig:
    cfg = (
        config
        if isinstance(config, IngestConfig)
        else (load_config(config) if config is not None else IngestConfig())
    )
    merged = dict(cfg.mapping)
    for canonical, source in (mapping or {}).items():
        _check_canonical(canonical, f"mapping '{canonical}={source}'")
        if not isinstance(source, str) or not source.strip():
            raise InputError(
                format_input_error(
                    None,
                    f"mapping '{canonical}={source}': the source column must be a non-empty name",
                    "Write it like --map item_id=question_id",
                )
            )
        merged[canonical] = source.strip()
    return IngestConfig(
        mapping=dict(sorted(merged.items())),
        tasks=cfg.tasks,
        defaults=dict(cfg.defaults),
        path=cfg.path,
    )


def ingest(
    paths: Sequence[Path | str],
    *,
    mapping: Mapping[str, str] | None = None,
    config: Path | str | IngestConfig | None = None,
    registry: Path | str | None = None,
) -> IngestResult:
    r"""Read, validate and deduplicate self-prediction records, accounting for every row.

    Parameters
    ----------
    paths
        Files (``.jsonl``, ``.ndjson``, ``.csv``, ``.parquet``) and/or folders searched
        recursively for them.
    mapping
        Canonical column -> source column (``{"item_id": "question_id"}``); overrides the
        config's ``[map]``.
    config
        A TOML file read by :func:`load_config` (or an :class:`IngestConfig`).
    registry
        A model registry (see :func:`analysis.registry.load_registry`); when given, the
        summary gets its ``registry_report``.

    Returns
    -------
    IngestResult
        ``summary`` keys: ``records_read``, ``records_used``, ``records_quarantined``,
        ``records_duplicate`` (read == used + quarantined + duplicate), ``files``
        (``[{path, format, rows, sha256}]``), ``sha256`` (see the module docstring),
        ``models``, ``tasks`` (sorted, of used records), ``quarantine_reasons``
        (``{category: count}``), ``unreadable_predictions`` (used records whose status
        is not ``ok``), ``statuses`` (``{status: count}``), ``mapping``, ``defaults``,
        ``allowed_tasks`` (list or null), ``ignored_columns`` and, with a registry,
        ``registry_report``.

    Raises
    ------
    InputError
        For a missing path, an unsupported file, a folder without data files, a file
        lacking a required column, bad options, a bad registry, or when no record at all
        is usable.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "r.jsonl"
    >>> _ = p.write_text('{"model": "m", "task": "t", "item_id": "1", '
    ...                  '"prediction": "yes", "outcome": true}\n{"model": "m"\n')
    >>> res = ingest([p])
    >>> res.records.select("prediction", "outcome", "correct").rows()
    [('true', 'true', True)]
    >>> res.quarantine.select("source_line", "reason").row(0)
    (2, "invalid JSON (Expecting ',' delimiter at column 14)")
    """
    options = _merge_options(mapping, config)
    inputs = _discover(paths)
    registry_frame = load_registry(registry) if registry is not None else None
    wanted = set(INPUT_COLUMNS) | set(options.mapping.values())

    goods: list[pl.DataFrame] = []
    bads: list[pl.DataFrame] = []
    reads: list[_Read] = []
    files: list[dict[str, Any]] = []
    total = hashlib.sha256()
    ignored: set[str] = set()
    bad_schema = {
        "__file_idx": pl.Int64(),
        "source_line": pl.Int64(),
        "__cat": pl.Utf8(),
        "reason": pl.Utf8(),
        "raw": pl.Utf8(),
    }
    names = pl.Series("source_file", [i.name for i in inputs], dtype=pl.Utf8)
    # Each file is hashed (and its lines counted) in a second thread while polars parses
    # it: hashlib and polars both release the GIL. One file at a time, in reading order.
    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ingest-hash")
    for index, inp in enumerate(inputs):
        scanning = pool.submit(_scan, inp, total)
        try:
            if inp.format == "jsonl":
                read = _read_jsonl(inp, scanning.result, wanted)
            elif inp.format == "csv":
                read = _read_csv(inp, scanning.result)
            else:
                read = _read_parquet(inp)
            info = scanning.result()
        except BaseException:
            scanning.cancel()
            pool.shutdown(wait=True)
            raise
        reads.append(read)
        files.append(
            {"path": inp.name, "format": inp.format, "rows": read.rows, "sha256": info.sha256}
        )
        if read.bad:
            bads.append(
                pl.DataFrame(
                    {
                        "__file_idx": [index] * len(read.bad),
                        "source_line": [b[0] for b in read.bad],
                        "__cat": [b[1] for b in read.bad],
                        "reason": [b[2] for b in read.bad],
                        "raw": [b[3] for b in read.bad],
                    },
                    schema=bad_schema,
                )
            )
        if read.frame.height == 0:
            continue
        canonical, unused = _resolve(inp, read, options.mapping, options.defaults)
        read.frame = read.frame.clear()  # the canonical columns are all that is needed now
        ignored |= unused
        good, bad = _validate(canonical, tasks=options.tasks)
        del canonical
        goods.append(good.with_columns(pl.lit(index, dtype=pl.Int64).alias("__file_idx")))
        if bad.height:
            bads.append(
                bad.select(
                    pl.lit(index, dtype=pl.Int64).alias("__file_idx"),
                    pl.col(_LINE).alias("source_line"),
                    pl.col("__cat"),
                    pl.col("__reason").alias("reason"),
                    pl.lit(None, dtype=pl.Utf8).alias("raw"),
                )
            )

    pool.shutdown(wait=True)
    all_good = (
        pl.concat(goods, how="vertical", rechunk=False)  # reading order: files, then lines
        if goods
        else pl.DataFrame(schema={**_GOOD_SCHEMA, "__file_idx": pl.Int64()})
    )
    del goods
    kept, conflicts, n_copies = _order_and_deduplicate(all_good)
    del all_good
    if conflicts.height:
        bads.append(
            conflicts.select(
                pl.col("__file_idx"),
                pl.col("source_line"),
                pl.lit("conflicting duplicate").alias("__cat"),
                pl.format(
                    "conflicting duplicate of {}:{}",
                    pl.col("__ref_file").map_elements(lambda i: names[i], return_dtype=pl.Utf8),
                    pl.col("__ref_line"),
                ).alias("reason"),
                pl.lit(None, dtype=pl.Utf8).alias("raw"),
            )
        )
    quarantine_full = (
        pl.concat(bads, how="vertical").sort("__file_idx", "source_line")
        if bads
        else pl.DataFrame(schema=bad_schema)
    )
    quarantine_full = _fill_raw(quarantine_full, reads)
    records = kept.with_columns(
        names.gather(kept.get_column("__file_idx")).alias("source_file")
    ).select(list(RECORD_SCHEMA))
    del kept
    quarantine = quarantine_full.select(
        pl.col("__file_idx")
        .replace_strict(list(range(len(inputs))), [i.name for i in inputs], return_dtype=pl.Utf8)
        .alias("source_file"),
        "source_line",
        "reason",
        "raw",
    ).cast(pl.Schema(QUARANTINE_SCHEMA))

    n_read = sum(r.rows for r in reads)
    if n_read != records.height + quarantine.height + n_copies:  # pragma: no cover - invariant
        raise RuntimeError(
            f"ingest accounting broken: read {n_read} != used {records.height} + quarantined "
            f"{quarantine.height} + duplicate {n_copies}"
        )
    reasons = Counter(quarantine_full.get_column("__cat").to_list())
    if records.height == 0:
        top = ", ".join(f"{cat} {n}" for cat, n in reasons.most_common(3))
        label = ", ".join(str(p) for p in paths) if not isinstance(paths, str | Path) else paths
        raise InputError(
            format_input_error(
                label,
                f"no records to analyse ({n_read} read, {quarantine.height} quarantined"
                + (f": {top}" if top else "")
                + f", {n_copies} duplicate)",
                "Check that the files hold records with model, task, item_id and an outcome",
            )
        )
    statuses = records.group_by("status").len().sort("status").rows()
    summary: dict[str, Any] = {
        "records_read": n_read,
        "records_used": records.height,
        "records_quarantined": quarantine.height,
        "records_duplicate": n_copies,
        "files": files,
        "sha256": total.hexdigest(),
        "models": sorted(records.get_column("model").unique().to_list()),
        "tasks": sorted(records.get_column("task").unique().to_list()),
        "quarantine_reasons": dict(sorted(reasons.items())),
        "unreadable_predictions": int(records.filter(pl.col("status") != "ok").height),
        "statuses": {str(s): int(n) for s, n in statuses},
        "mapping": dict(options.mapping),
        "defaults": dict(sorted(options.defaults.items())),
        "allowed_tasks": list(options.tasks) if options.tasks is not None else None,
        "ignored_columns": sorted(ignored),
    }
    if registry_frame is not None:
        summary["registry_report"] = registry_report(records, registry_frame)
    return IngestResult(records=records, quarantine=quarantine, summary=summary)


def _fill_raw(quarantine: pl.DataFrame, reads: Sequence[_Read]) -> pl.DataFrame:
    """Fill missing ``raw`` texts by asking each file's lookup for its quarantined lines."""
    missing = quarantine.filter(pl.col("raw").is_null())
    if missing.height == 0:
        return quarantine
    fills: list[tuple[int, int, str]] = []
    for (file_idx,), part in missing.group_by(["__file_idx"], maintain_order=True):
        lines = part.get_column("source_line").to_list()
        found = reads[int(file_idx)].raw(lines)
        fills.extend((int(file_idx), n, found.get(n, "")) for n in lines)
    fill = pl.DataFrame(
        fills,
        schema={"__file_idx": pl.Int64(), "source_line": pl.Int64(), "__fill": pl.Utf8()},
        orient="row",
    ).unique(["__file_idx", "source_line"], keep="first")
    return (
        quarantine.join(fill, on=["__file_idx", "source_line"], how="left", maintain_order="left")
        .with_columns(pl.coalesce("raw", "__fill").alias("raw"))
        .drop("__fill")
    )


def write_ingest(result: IngestResult, out: Path | str) -> None:
    """Write ``records.parquet``, ``quarantine.parquet`` and ``ingest.json`` into ``out``.

    Each file is written atomically (see :mod:`analysis.atomic`); ``out`` is created if
    needed.

    Parameters
    ----------
    result
        What :func:`ingest` returned.
    out
        The output folder.
    """
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    atomic.write_parquet(out / "records.parquet", result.records)
    atomic.write_parquet(out / "quarantine.parquet", result.quarantine)
    atomic.write_json(out / "ingest.json", result.summary)
