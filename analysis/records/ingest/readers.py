"""Readers of JSONL, CSV and Parquet record files, with line numbers and raw text for the quarantine.

A file is read in *batches* (:func:`read_batches`) so that memory does not grow with its
size: a JSONL file in runs of whole lines of about :data:`BATCH_BYTES` bytes, a CSV file
likewise (cut only at line ends that end a record: when every line of the file is one
record, else record by record with Python's :mod:`csv`), a Parquet file in slices of
:data:`PARQUET_BATCH_ROWS` rows. A file smaller than one batch is one batch, read as a whole
file always was. Every batch is read the same way whether the records are then kept in
memory or streamed to disk (:mod:`selfmodel.records.ingest.run`), so both give the same rows.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import math
from collections.abc import Callable, Iterator, Mapping, Sequence
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

#: Bytes of a JSONL or CSV file read as one batch (whole lines; a longer line is one batch).
BATCH_BYTES: Final = 16 * 2**20
#: Records of a CSV file read as one batch by Python's csv reader (a file with line breaks
#: inside quoted fields).
CSV_BATCH_RECORDS: Final = 100_000
#: Rows of a Parquet file read as one batch.
PARQUET_BATCH_ROWS: Final = 250_000

_JSON_SAMPLE_LINES: Final = 1000
_JSON_CHUNK_MIN: Final = 64
_CHUNK: Final = 1 << 24  # bytes per read when hashing and counting lines
_BOM: Final = b"\xef\xbb\xbf"
LINE: Final = "__line"


# --------------------------------------------------------------------------- reading


@dataclass
class FileRead:
    """One batch of a file: text-ish columns plus ``__line``, and read-level failures."""

    frame: pl.DataFrame
    rows: int
    present: list[str]  # columns (keys) the batch has, in file order
    bad: list[tuple[int, str, str, str]] = field(default_factory=list)  # line, cat, reason, raw
    spans: dict[int, int] = field(default_factory=dict)  # a CSV record's first line -> last


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


class RawTexts:
    """The raw text of a file's rows by line (row) number, read when first asked.

    Lines must be asked for in ascending order (over any number of calls): the file is read
    forward once, never held in memory whole. In a CSV file whose records span lines
    (``records_span_lines``), a record's text is all its lines, found by reading the file
    with Python's csv reader alongside (the lines of each record are not kept while
    reading: in such a file every record may span lines). A Parquet file's row is shown as
    JSON.
    """

    def __init__(self, inp: InputFile) -> None:
        self.inp = inp
        self.records_span_lines = False
        self.present: list[str] = []  # a Parquet file's columns
        self._handle: Any = None
        self._line = 0  # physical lines consumed
        self._records: Any = None  # the csv reader of a CSV file whose records span lines
        self._stream: Any = None  # the text it reads
        self._record = (0, 0)  # the first and last line of the last record it read

    def __call__(self, lines: Sequence[int]) -> dict[int, str]:
        """``{line: raw text}`` of ``lines`` (ascending, each at least the last one asked)."""
        if not lines:
            return {}
        if self.inp.format == "parquet":
            return self._rows(lines)
        out: dict[int, str] = {}
        for line in lines:
            end = self._record_end(line) if self.records_span_lines else line
            parts = self._physical(line, end)
            out[line] = _clip(b"\n".join(parts).decode("utf-8", "replace"))
        return out

    def _physical(self, first: int, last: int) -> list[bytes]:
        """Physical lines ``first..last`` (1-based), each without its line end."""
        if self._handle is None or first <= self._line:  # asked again: read from the start
            self.close()
            self._handle = self.inp.path.open("rb")
            self._line = 0
        got: list[bytes] = []
        while self._line < last:
            raw = self._handle.readline()
            self._line += 1
            if self._line == 1 and raw.startswith(_BOM):
                raw = raw[len(_BOM):]
            if self._line >= first:
                got.append((raw[:-1] if raw.endswith(b"\n") else raw).rstrip(b"\r"))
            if not raw:  # past the end: nothing more to read
                break
        return got

    def _record_end(self, line: int) -> int:
        """The last line of the CSV record that starts on ``line`` (``line`` if none does)."""
        if self._records is None or line < self._record[0]:  # asked again: from the start
            self._close_records()
            raw = self.inp.path.open("rb")
            if raw.read(len(_BOM)) != _BOM:
                raw.seek(0)
            self._stream = io.TextIOWrapper(raw, encoding="utf-8", errors="surrogateescape",
                                            newline="")
            self._records, self._record = csv.reader(self._stream), (0, 0)
        while self._record[0] < line:
            if next(self._records, None) is None:
                return line
            self._record = (self._record[1] + 1, self._records.line_num)
        return self._record[1] if self._record[0] == line else line

    def _rows(self, lines: Sequence[int]) -> dict[int, str]:
        wanted = pl.Series(lines, dtype=pl.Int64).implode()
        rows = (pl.scan_parquet(self.inp.path).with_row_index("__row", offset=1)
                .filter(pl.col("__row").cast(pl.Int64).is_in(wanted))
                .select(self.present).collect(engine="streaming").to_dicts())
        return {n: _clip(json.dumps(row, ensure_ascii=False, default=str))
                for n, row in zip(lines, rows, strict=True)}

    def _close_records(self) -> None:
        if self._stream is not None:
            self._stream.close()
        self._stream = self._records = None

    def close(self) -> None:
        """Close the file, if open."""
        if self._handle is not None:
            self._handle.close()
            self._handle = None
        self._close_records()


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


def line_batches(inp: InputFile, bom: bool, start: int = 0) -> Iterator[tuple[int, bytes]]:
    """``(number of the first line, bytes)`` of runs of whole lines, about :data:`BATCH_BYTES` each.

    From byte ``start`` after the byte-order mark, if any (line 1 is the line there); a
    batch ends with a line end unless it is
    the file's last line. A line longer than a batch is one batch. A file that fits in one
    batch is one batch, so it is read exactly as a whole file.
    """
    size = BATCH_BYTES
    with inp.path.open("rb") as handle:
        handle.seek(start + (len(_BOM) if bom else 0))
        line, rest = 1, b""
        while True:
            block = handle.read(size)
            if not block:
                if rest:
                    yield line, rest
                return
            data = rest + block if rest else block
            end = data.rfind(b"\n") + 1
            if end == 0:
                rest = data
                continue
            batch, rest = (data, b"") if end == len(data) else (data[:end], data[end:])
            yield line, batch
            line += batch.count(b"\n")


def _physical_lines(data: bytes) -> int:
    """Physical lines of ``data``: line ends, plus one for a last line without one."""
    return data.count(b"\n") + (0 if not data or data.endswith(b"\n") else 1)


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


def read_jsonl_batches(inp: InputFile, scan: Callable[[], _FileInfo], wanted: set[str],
                       critical: set[str]) -> Iterator[FileRead]:
    """Read a JSONL file in batches; ``scan()`` waits for its hash and line count.

    ``critical``: keys whose presence in the file (some line gives a value) decides its
    columns (a required, mapped or defaulted column): when the file is more than one batch
    and such a key is not among the sampled keys, the whole file is looked at for it first,
    so that every batch resolves its columns as the whole file would.
    """
    bom, filled = _peek(inp)
    if not filled and scan().blank:
        return
    # Keys: the first lines, plus every canonical/mapped name (read as text, null if absent).
    sample_keys = dict.fromkeys(json_keys(inp.path))
    keys = [*sample_keys, *sorted(set(wanted) - set(sample_keys))]
    schema: dict[str, pl.DataType] = {k: pl.Utf8() for k in keys}
    late = sorted(set(critical) - set(sample_keys))
    forced: set[str] = set()
    if late and inp.path.stat().st_size > BATCH_BYTES:
        forced = _keys_with_values(inp, bom, late)
    for first, data in line_batches(inp, bom):
        yield _jsonl_batch(data, first, schema, sample_keys, forced)


def _keys_with_values(inp: InputFile, bom: bool, keys: list[str]) -> set[str]:
    """Which of ``keys`` some line of the file gives a (non-null) value."""
    found: set[str] = set()
    schema = {k: pl.Utf8() for k in keys}
    for _, data in line_batches(inp, bom):
        try:
            frame = pl.read_ndjson(io.BytesIO(data), schema=schema)
            found |= {k for k in keys if frame[k].null_count() < frame.height}
        except Exception:  # noqa: BLE001 - a bad line: look line by line
            for line in data.decode("utf-8", "replace").split("\n"):
                try:
                    obj = json.loads(line)
                except JSON_ERRORS:
                    continue
                if isinstance(obj, dict):
                    found |= {k for k in keys if obj.get(k) is not None}
        if len(found) == len(keys):
            break
    return found


def _jsonl_batch(data: bytes, first: int, schema: dict[str, pl.DataType],
                 sample_keys: Mapping[str, None], forced: set[str]) -> FileRead:
    """One batch of whole JSONL lines starting at line ``first``."""
    keys = list(schema)

    def seen(frame: pl.DataFrame, extra: Mapping[str, None]) -> list[str]:
        """Keys of the batch: sampled ones, later ones with a value, and unknown ones."""
        late = [k for k in keys if k not in sample_keys
                and (k in forced or frame[k].null_count() < frame.height)]
        return [*sample_keys, *late, *(k for k in extra if k not in schema)]

    # Fast path: polars parses the batch. It fails on invalid UTF-8 and invalid JSON,
    # and a blank line makes its row count differ from the line count: all go line by line.
    n_lines = _physical_lines(data)
    try:
        frame = pl.read_ndjson(io.BytesIO(data), schema=schema)
    except Exception:  # noqa: BLE001 - any parse failure sends the batch line by line
        frame = None
    if frame is not None and frame.height == n_lines:
        frame = frame.with_columns(
            pl.int_range(first, first + n_lines, dtype=pl.Int64).alias(LINE))
        frame, dup = split_duplicate_keys(frame, LINE, lambda: _batch_texts(data, first), _clip)
        return FileRead(frame, n_lines, seen(frame, {}), bad=dup)
    del frame

    # Line by line: skip blanks, quarantine invalid UTF-8, parse the rest in chunks.
    try:
        data.decode("utf-8")
        valid = True
    except UnicodeDecodeError:
        valid = False
    text_lines = data.decode("utf-8", "surrogateescape").split("\n")
    bad: list[tuple[int, str, str, str]] = []
    items: list[tuple[int, str]] = []
    for number, line in enumerate(text_lines, start=first):
        line = line.rstrip("\r")  # a CRLF line end: the raw text is shown without it
        if not line.strip():
            continue
        if not valid and _has_surrogates(line):
            bad.append((number, "invalid UTF-8", "invalid UTF-8", _clip(_printable(line))))
            continue
        items.append((number, line))
    del text_lines
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
    return FileRead(frame, rows, seen(frame, extra), bad=bad)


def _batch_texts(data: bytes, first: int) -> pl.LazyFrame:
    """``(__line, __text)`` of every line of a batch the fast path read (lazily).

    Read as one-column CSV split at U+001F: polars' JSON reader rejects a raw U+001F
    anywhere in a line, so a batch that took the fast path has none.
    """
    lines = pl.read_csv(io.BytesIO(data), has_header=False, separator="\x1f", quote_char=None,
                        schema={"__text": pl.Utf8()})
    return lines.lazy().with_row_index(LINE, offset=first).select(
        pl.col(LINE).cast(pl.Int64), pl.col("__text"))


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


def read_csv_batches(inp: InputFile, scan: Callable[[], _FileInfo]) -> Iterator[FileRead]:
    """Read a CSV file in batches; ``scan()`` waits for its hash and line count.

    A file of one batch is read whole, as always: by polars, or, when polars' rows are not
    its lines (a line break inside a quoted field, a ragged or non-UTF-8 row), record by
    record. A longer file is cut at line ends when every line of it is one record (polars
    counts as many rows as data lines); otherwise it is read record by record throughout.
    """
    bom, filled = _peek(inp)
    if not filled and scan().blank:
        return
    header = read_csv_header(inp)
    size = inp.path.stat().st_size
    with inp.path.open("rb") as handle:
        if bom:
            handle.read(len(_BOM))
        header_line = handle.readline()
    start = len(header_line)  # after the byte-order mark
    if size <= BATCH_BYTES:
        text = inp.path.read_bytes()
        yield _csv_batch(inp, header, header_line, text[len(_BOM) + start if bom else start:], 2,
                         whole=True)
        return
    if not _one_record_per_line(inp, scan):
        yield from _read_csv_slow(inp, header)
        return
    for first, data in line_batches(inp, bom, start):
        yield _csv_batch(inp, header, header_line, data, first + 1, whole=False)


def _one_record_per_line(inp: InputFile, scan: Callable[[], _FileInfo]) -> bool:
    """Whether polars reads as many rows as the file has data lines (no line inside a field)."""
    try:
        rows = pl.scan_csv(inp.path, infer_schema=False, has_header=True).select(
            pl.len()).collect(engine="streaming").item()
    except Exception:  # noqa: BLE001 - a file polars cannot read is read record by record
        return False
    return int(rows) == scan().lines - 1


def _csv_batch(inp: InputFile, header: list[str], header_line: bytes, data: bytes, first: int,
               *, whole: bool) -> FileRead:
    """Data lines ``data`` (first one: line ``first``) of a CSV file whose header is ``header``."""
    n_lines = _physical_lines(data)
    try:
        frame = pl.read_csv(io.BytesIO(header_line + data), infer_schema=False, has_header=True)
    except Exception:  # noqa: BLE001 - malformed rows and invalid UTF-8 go line by line
        frame = None
    if frame is not None and frame.width == len(header) and frame.height == n_lines:
        frame.columns = header
        frame = frame.with_columns(
            pl.int_range(first, first + n_lines, dtype=pl.Int64).alias(LINE))
        frame = _drop_blank_rows(frame, header)
        return FileRead(frame, frame.height, header)
    del frame
    text = (header_line + data).decode("utf-8", "surrogateescape")
    batches = list(_read_csv_slow(inp, header, io.StringIO(text, newline=""), first - 2,
                                  records=None))
    return batches[0] if batches else _empty_read(header)


def _read_csv_slow(inp: InputFile, header: list[str], stream: Any = None, offset: int = 0, *,
                   records: int | None = -1) -> Iterator[FileRead]:
    """Read CSV text record by record (Python's csv), in batches of ``records`` records.

    ``stream``: the text, header first (default: the file); ``offset``: lines before its
    first line; ``records`` ``None``: one batch, -1: :data:`CSV_BATCH_RECORDS`.
    """
    if stream is None:
        raw = inp.path.open("rb")
        if raw.read(len(_BOM)) != _BOM:
            raw.seek(0)
        stream = io.TextIOWrapper(raw, encoding="utf-8", errors="surrogateescape", newline="")
    size = CSV_BATCH_RECORDS if records == -1 else records
    reader = csv.reader(stream)
    last = 0
    with stream:
        while True:
            columns: dict[str, list[str | None]] = {h: [] for h in header}
            lines: list[int] = []
            bad: list[tuple[int, str, str, str]] = []
            spans: dict[int, int] = {}
            rows = 0
            done = True
            try:
                for record in reader:
                    start, last = last + 1, reader.line_num
                    if start == 1:
                        continue  # header
                    if not any(cell.strip() for cell in record):
                        continue
                    rows += 1
                    if last > start:
                        spans[start + offset] = last + offset
                    raw_text = _clip(_printable(",".join(record)))
                    if any(_has_surrogates(cell) for cell in record):
                        bad.append((start + offset, "invalid UTF-8", "invalid UTF-8", raw_text))
                    elif len(record) > len(header):
                        bad.append((start + offset, "wrong number of fields",
                                    f"wrong number of fields (expected {len(header)}, "
                                    f"got {len(record)})", raw_text))
                    else:
                        record = record + [""] * (len(header) - len(record))
                        for name, cell in zip(header, record, strict=True):
                            columns[name].append(cell if cell != "" else None)
                        lines.append(start + offset)
                    if size is not None and rows >= size:
                        done = False
                        break
            except csv.Error as exc:
                raise InputError(
                    format_input_error(
                        inp.name, f"malformed CSV ({exc})", "Fix the quoting of this row",
                        line=last + 1 + offset,
                    )
                ) from exc
            frame = pl.DataFrame(
                {**columns, LINE: lines},
                schema={**{h: pl.Utf8() for h in header}, LINE: pl.Int64()},
            )
            yield FileRead(frame, rows, header, bad=bad, spans=spans)
            if done:
                return


def read_parquet_batches(inp: InputFile) -> Iterator[FileRead]:
    """Read a Parquet record file as stored, :data:`PARQUET_BATCH_ROWS` rows at a time.

    An unreadable file is an :class:`InputError`.
    """
    try:
        scan = pl.scan_parquet(inp.path)
        present = list(scan.collect_schema().names())
        n = int(scan.select(pl.len()).collect().item())
        step = PARQUET_BATCH_ROWS
        for offset in range(0, max(n, 1), step):
            frame = (pl.read_parquet(inp.path) if n <= step
                     else scan.slice(offset, step).collect())
            yield FileRead(frame.with_columns(
                pl.int_range(offset + 1, offset + frame.height + 1, dtype=pl.Int64).alias(LINE)),
                frame.height, present)
    except Exception as exc:  # noqa: BLE001 - any failure is the file's fault
        if isinstance(exc, InputError):
            raise
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise InputError(
            format_input_error(
                inp.name,
                f"cannot read Parquet ({first})",
                "Check that the file is a complete Parquet file",
            )
        ) from exc


def read_batches(inp: InputFile, scan: Callable[[], _FileInfo], wanted: set[str],
                 critical: set[str]) -> Iterator[FileRead]:
    """The batches of one record file, whatever its format (see the module docstring)."""
    if inp.format == "jsonl":
        return read_jsonl_batches(inp, scan, wanted, critical)
    if inp.format == "csv":
        return read_csv_batches(inp, scan)
    return read_parquet_batches(inp)
