"""Readers of JSONL, CSV and Parquet record files, with line numbers and raw text for the quarantine."""

from __future__ import annotations

import csv
import hashlib
import io
import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import polars as pl

from selfmodel.records.contract import JSON_ERRORS, InputError, json_problem
from selfmodel.records.ingest.discover import InputFile
from selfmodel.records.ingest.duplicate_keys import split_duplicate_keys
from selfmodel.records.registry import format_input_error

#: Maximum length of the ``raw`` text kept in the quarantine table.
RAW_MAX: Final = 500

_JSON_SAMPLE_LINES: Final = 1000
_JSON_CHUNK_MIN: Final = 64
_CHUNK: Final = 1 << 24  # bytes per read when hashing and counting lines
_BOM: Final = b"\xef\xbb\xbf"
LINE: Final = "__line"


# --------------------------------------------------------------------------- reading


@dataclass
class FileRead:
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


def _empty_read(present: list[str] | None = None) -> FileRead:
    return FileRead(
        frame=pl.DataFrame({LINE: pl.Series([], dtype=pl.Int64)}), rows=0, present=present or []
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
    """What one streaming pass over a file's bytes found (see :func:`scan_file`)."""

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


def scan_file(inp: InputFile, total: Any) -> _FileInfo:
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


def _peek(inp: InputFile) -> tuple[bool, bool]:
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
    _check_encoding(inp, head)
    bom = head.startswith(_BOM)
    body = head[len(_BOM) :] if bom else head
    return bom, bool(body) and not body.isspace()


#: Byte-order marks of the encodings that are not UTF-8 (UTF-32 first: its little-endian
#: mark starts with UTF-16's).
_OTHER_BOMS: Final = (
    (b"\xff\xfe\x00\x00", "UTF-32"), (b"\x00\x00\xfe\xff", "UTF-32"),
    (b"\xff\xfe", "UTF-16"), (b"\xfe\xff", "UTF-16"),
)


def _check_encoding(inp: InputFile, head: bytes) -> None:
    """Stop with one line when a file is UTF-16 or UTF-32, not UTF-8.

    Known by its byte-order mark, or by the NUL bytes between the letters of its first line.
    """
    encoding = next((name for mark, name in _OTHER_BOMS if head.startswith(mark)), None)
    first = head.split(b"\n", 1)[0]
    if encoding is None and len(first) >= 4 and first.count(b"\0") * 3 >= len(first):
        encoding = "UTF-16 or UTF-32"  # no mark, but every other byte of the text is NUL
    if encoding is not None:
        raise InputError(format_input_error(
            inp.name, f"the file is {encoding}, not UTF-8", "Save it as UTF-8 (e.g. iconv -f "
            f"{encoding.split()[0]} -t UTF-8 {Path(inp.name).name} > utf8-copy), then ingest "
            "that copy", line=1))


def _source(inp: InputFile, bom: bool) -> Path | io.BytesIO:
    """What polars reads: the path (memory-mapped), or the bytes after a byte-order mark."""
    if bom:
        return io.BytesIO(inp.path.read_bytes()[len(_BOM) :])
    return inp.path


def _file_bytes(inp: InputFile) -> bytes:
    """The whole file without its byte-order mark (the line-by-line paths only)."""
    data = inp.path.read_bytes()
    return data[len(_BOM) :] if data.startswith(_BOM) else data


def json_keys(path: Path) -> list[str]:
    """Keys of the JSON objects on the first 1,000 lines of a JSONL file (its sample of keys).

    The one sampling of ingest and the SQL engines.
    """
    keys: dict[str, None] = {}
    with path.open("rb") as stream:
        if stream.read(len(_BOM)) != _BOM:
            stream.seek(0)
        for _, line in zip(range(_JSON_SAMPLE_LINES), stream, strict=False):
            try:
                obj = json.loads(line)
            except JSON_ERRORS:
                continue
            if isinstance(obj, dict):
                keys.update(dict.fromkeys(obj))
    return list(keys)


def read_jsonl_file(inp: InputFile, scan: Callable[[], _FileInfo], wanted: set[str]) -> FileRead:
    """Read a JSONL file; ``scan()`` waits for its hash and line count (see :func:`scan_file`)."""
    bom, filled = _peek(inp)
    if not filled and scan().blank:
        return _empty_read()
    # Keys: the first lines, plus every canonical/mapped name (read as text, null if absent).
    sample_keys = dict.fromkeys(json_keys(inp.path))
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
        frame = frame.with_columns(pl.int_range(1, n_lines + 1, dtype=pl.Int64).alias(LINE))
        frame, dup = split_duplicate_keys(frame, LINE, lambda: _jsonl_texts(inp), _clip)
        return FileRead(frame, n_lines, seen(frame, {}), bad=dup, raw=_line_raw(inp.path))
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
        else pl.DataFrame(schema={**schema, LINE: pl.Int64()})
    )
    frame, dup = split_duplicate_keys(frame, LINE, lambda: _item_texts(items), _clip)
    bad += dup
    return FileRead(frame, rows, seen(frame, extra), bad=bad, raw=_line_raw(inp.path))


def _jsonl_texts(inp: InputFile) -> pl.LazyFrame:
    """``(__line, __text)`` of every line of a JSONL file the fast path read whole (lazily).

    Read as one-column CSV split at U+001F: polars' JSON reader rejects a raw U+001F
    anywhere in a line, so a file that took the fast path has none.
    """
    lines = pl.scan_csv(inp.path, has_header=False, separator="\x1f", quote_char=None,
                        schema={"__text": pl.Utf8()})
    return lines.with_row_index(LINE, offset=1).select(
        pl.col(LINE).cast(pl.Int64), pl.col("__text").str.strip_chars_start(_BOM.decode())
    )


def _item_texts(items: list[tuple[int, str]]) -> pl.LazyFrame:
    """``(__line, __text)`` of the lines the line-by-line path parsed."""
    return pl.LazyFrame({LINE: [n for n, _ in items], "__text": [t for _, t in items]},
                        schema={LINE: pl.Int64(), "__text": pl.Utf8()})


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
            lines = pl.Series(LINE, [n for n, _ in items], dtype=pl.Int64)
            frames.append(frame.with_columns(lines))
            return
        mid = len(items) // 2
        _parse_json_chunks(items[:mid], schema, frames, bad, extra)
        _parse_json_chunks(items[mid:], schema, frames, bad, extra)
        return
    rows: dict[str, list[Any]] = {k: [] for k in schema}
    rows[LINE] = []
    for number, text in items:
        try:
            obj = json.loads(text)
        except JSON_ERRORS as exc:  # a syntax error, nesting too deep, a 5,000-digit number
            bad.append((number, "invalid JSON", f"invalid JSON ({json_problem(exc)})",
                        _clip(text)))
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
        rows[LINE].append(number)
    if rows[LINE]:
        frames.append(pl.DataFrame(rows, schema={**schema, LINE: pl.Int64()}))


def read_csv_header(inp: InputFile) -> list[str]:
    """The header of a CSV file; a duplicate or unreadable one is an error.

    Names are stripped, and an empty one is ``column_<position>``. The one reading of a
    header: ingest's and the SQL engines'.
    """
    with inp.path.open("rb") as raw:
        if raw.read(len(_BOM)) != _BOM:
            raw.seek(0)
        lines = io.TextIOWrapper(raw, encoding="utf-8", errors="surrogateescape", newline="")
        try:
            header = next(csv.reader(lines))
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
    if len(names) == 1:
        for sep, label in ((";", "semicolons"), ("\t", "tabs"), ("|", "vertical bars")):
            if names[0].count(sep) >= 2:
                raise InputError(format_input_error(
                    inp.name, f"the header is one column holding {label} "
                    f"({_clip(names[0])[:80]!r}): the file is separated by {label}, not commas",
                    "Save it as comma-separated CSV (in a spreadsheet: CSV, comma-delimited), "
                    f"or convert it, e.g. pl.read_csv(path, separator={sep!r})"
                    ".write_csv(new_path) in Python", line=1))
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
    # a column with no name is named by its position: R's write.csv writes its row names so
    names = [n or f"column_{i}" for i, n in enumerate(names, 1)]
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
    blank = maybe.filter(pl.all_horizontal([empty(c) for c in columns])).get_column(LINE)
    return frame.filter(~pl.col(LINE).is_in(blank.implode())) if blank.len() else frame


def read_csv_file(inp: InputFile, scan: Callable[[], _FileInfo]) -> FileRead:
    """Read a CSV file; ``scan()`` waits for its hash and line count (see :func:`scan_file`)."""
    bom, filled = _peek(inp)
    if not filled and scan().blank:
        return _empty_read()
    header = read_csv_header(inp)
    try:
        frame = pl.read_csv(_source(inp, bom), infer_schema=False, has_header=True)
    except Exception:  # noqa: BLE001 - malformed rows and invalid UTF-8 go line by line
        frame = None
    n_lines = scan().lines
    if frame is not None and frame.width == len(header) and frame.height == n_lines - 1:
        frame.columns = header
        frame = frame.with_columns(pl.int_range(2, n_lines + 1, dtype=pl.Int64).alias(LINE))
        frame = _drop_blank_rows(frame, header)
        return FileRead(frame, frame.height, header, raw=_line_raw(inp.path))
    del frame
    return _read_csv_slow(inp, _file_bytes(inp).decode("utf-8", "surrogateescape"), header)


def _read_csv_slow(inp: InputFile, text: str, header: list[str]) -> FileRead:
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
        {**columns, LINE: lines}, schema={**{h: pl.Utf8() for h in header}, LINE: pl.Int64()}
    )
    return FileRead(frame, rows, header, bad=bad, raw=_line_raw(inp.path, spans))


def read_parquet_file(inp: InputFile) -> FileRead:
    """Read a Parquet record file as stored (an unreadable file is an InputError)."""
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
    frame = frame.with_columns(pl.int_range(1, frame.height + 1, dtype=pl.Int64).alias(LINE))

    def lookup(lines: Sequence[int]) -> dict[int, str]:
        if not lines:
            return {}
        rows = pl.read_parquet(inp.path).select(present)[[n - 1 for n in lines]].to_dicts()
        return {
            n: _clip(json.dumps(row, ensure_ascii=False, default=str))
            for n, row in zip(lines, rows, strict=True)
        }

    return FileRead(frame, frame.height, present, raw=lookup)
