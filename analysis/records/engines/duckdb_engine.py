"""DuckDB (embedded) as the engine of :func:`selfmodel.records.engines.reduce_records`.

How files are read (the rules and the GROUP BY are :mod:`selfmodel.records.reduction`):

* Parquet: ``read_parquet``, every used column cast to text (a double's text is its
  shortest round-trip form, so ``confidence`` comes back bit for bit).
* CSV: ``read_csv`` with the header ingest reads (names stripped, duplicates an error),
  every column as text, ``,`` and ``"`` as polars reads them. Rows DuckDB cannot use go to
  its rejects table and are counted there: too many fields (``wrong number of fields``),
  invalid UTF-8; a row with too few fields is read again in Python with its missing
  trailing fields empty, as polars reads it. Blank rows are skipped, as ingest skips them.
* JSONL: each line read as one text value (a control character no JSON text can hold
  raw is the field separator), blank lines skipped, ``json_valid``/``json_type`` decide
  ``invalid JSON`` and ``not a JSON object``, ``json_extract_string`` reads the keys.
  Lines that are not UTF-8 land in the rejects table (``invalid UTF-8``).
"""

from __future__ import annotations

import csv
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from typing import Any, Final

import narwhals as nw
import polars as pl

from selfmodel.records.contract import InputError
from selfmodel.records.engines import EngineUnavailableError, nested
from selfmodel.records.ingest.discover import InputFile
from selfmodel.records.ingest.duplicate_keys import DUPLICATE_KEY
from selfmodel.records.reduction import WHITE_SPACE

#: Field separator for reading JSONL as lines: a raw U+001F cannot occur in valid JSON.
_LINE_SEP: Final = "\x1f"
#: Longest line or CSV record DuckDB reads (its default is 2 MB).
MAX_LINE: Final = 16 * 2**20

_CSV_REJECTS: Final = {
    "TOO MANY COLUMNS": "wrong number of fields",
    "INVALID ENCODING": "invalid UTF-8",
    "INVALID UNICODE": "invalid UTF-8",
}
#: A line whose top-level object names a key twice (``json_keys`` keeps every occurrence).
_REPEATS_A_KEY: Final = "len(json_keys(line)) <> len(list_distinct(json_keys(line)))"
_JSON_REJECTS: Final = {"INVALID ENCODING": "invalid UTF-8", "INVALID UNICODE": "invalid UTF-8"}
#: Rejects of either format that are the engine's limit, not the row's fault.
_LIMITS: Final = {"LINE SIZE OVER MAXIMUM": f"line longer than {MAX_LINE} bytes (engine limit)"}


def literal(text: str) -> str:
    """A DuckDB string literal holding ``text`` exactly."""
    return "'" + text.replace("'", "''") + "'"


def ident(name: str) -> str:
    """A quoted DuckDB identifier."""
    return '"' + name.replace('"', '""') + '"'


def blank(expr: str) -> str:
    """Whether ``expr`` is null or only Unicode white space."""
    return f"coalesce(trim({expr}, {literal(WHITE_SPACE)}) = '', TRUE)"



def _reject_options(rejects: int | None) -> str:
    """DuckDB ``read_csv`` options: skip bad lines, or keep them in numbered reject tables."""
    if rejects is None:
        return ", ignore_errors = true"
    return (f", store_rejects = true, rejects_table = 'sm_rej_{rejects}', "
            f"rejects_scan = 'sm_scan_{rejects}'")

class DuckDBEngine:
    """One in-memory DuckDB connection, spilling to a temporary folder of its own when needed.

    The folder is made in the system's temporary folder (``TMPDIR``), not DuckDB's default
    ``.tmp`` in the working folder, and removed by :meth:`close` (a connection passed in
    keeps its own setting).
    """

    def __init__(self, *, threads: int | None = None, memory_limit: str | None = None,
                 connection: Any = None) -> None:
        try:
            import duckdb
        except ImportError as exc:
            raise EngineUnavailableError(
                "engine 'duckdb' is not installed. Install it with "
                "`pip install duckdb` (selfmodel depends on it; was it installed with --no-deps?)."
            ) from exc
        self.con = connection if connection is not None else duckdb.connect(":memory:")
        self.con.execute("SET preserve_insertion_order = false")  # no row order is needed
        if threads:
            self.con.execute(f"SET threads = {int(threads)}")
        if memory_limit:
            try:
                self.con.execute(f"SET memory_limit = {literal(memory_limit)}")
            except duckdb.Error as exc:
                raise InputError(
                    f"reduce: memory limit '{memory_limit}' is not a size DuckDB reads "
                    "(write it like 2GB or 500MB)."
                ) from exc
        self._spill: str | None = None  # made last: nothing after it can fail and leave it
        if connection is None:
            self._spill = tempfile.mkdtemp(prefix="selfmodel-duckdb-")
            self.con.execute(f"SET temp_directory = {literal(self._spill)}")
        self._plans: dict[int, tuple[InputFile, Sequence[str], Sequence[str]]] = {}

    # ------------------------------------------------------------------ reading

    def _csv(self, inp: InputFile, header: Sequence[str], rejects: int | None) -> str:
        cols = "{" + ", ".join(f"{literal(h)}: 'VARCHAR'" for h in header) + "}"
        opts = (f"header = true, columns = {cols}, delim = ',', quote = '\"', escape = '\"', "
                f"auto_detect = false, max_line_size = {MAX_LINE}, "
                f"buffer_size = {2 * MAX_LINE}")
        opts += _reject_options(rejects)
        return f"read_csv({literal(inp.path.as_posix())}, {opts})"

    def _lines(self, inp: InputFile, rejects: int | None) -> str:
        # strict_mode off: a file may mix CRLF and LF line ends (a CR left is JSON white space)
        opts = (f"header = false, columns = {{'line': 'VARCHAR'}}, "
                f"delim = {literal(_LINE_SEP)}, quote = '', escape = '', strict_mode = false, "
                f"auto_detect = false, max_line_size = {MAX_LINE}, "
                f"buffer_size = {2 * MAX_LINE}")
        opts += _reject_options(rejects)
        line = "ltrim(line, chr(65279))"  # a UTF-8 byte-order mark on the first line
        return (f"(SELECT {line} AS line FROM read_csv({literal(inp.path.as_posix())}, "
                f"{opts}) WHERE NOT {blank('line')}) AS lines")

    def read(self, index: int | None, inp: InputFile, keys: Sequence[str],
             types: Mapping[str, pl.DataType]) -> Any:
        """A relation of one file's rows: ``_err`` and the columns ``keys``."""
        header = list(types)
        if index is not None:  # rows it rejects are counted (read_failures)
            self._plans[index] = (inp, keys, header)
        if inp.format == "jsonl":
            paths = "[" + ", ".join(literal(_json_path(k)) for k in keys) + "]"
            cols = ", ".join(f"_v[{n + 1}] AS {ident(k)}" for n, k in enumerate(keys))
            err = ("CASE WHEN NOT json_valid(line) THEN 'invalid JSON' "
                   "WHEN json_type(line) <> 'OBJECT' THEN 'not a JSON object' "
                   f"WHEN {_REPEATS_A_KEY} THEN {literal(DUPLICATE_KEY)} END")
            return self.con.sql(
                f"SELECT _err, {cols} FROM (SELECT _err, CASE WHEN _err IS NULL THEN "
                f"json_extract_string(line, {paths}) END AS _v FROM (SELECT line, {err} AS _err "
                f"FROM {self._lines(inp, index)}) AS judged) AS extracted")
        if inp.format == "parquet":
            lists = nested(types)
            # a list or struct identifier as JSON text (the ID rule's input)
            cols = ", ".join(f"to_json({ident(k)}) AS {ident(k)}" if k in lists else ident(k)
                             for k in keys)
            src = f"read_parquet({literal(inp.path.as_posix())})"
            return self.con.sql(f"SELECT CAST(NULL AS VARCHAR) AS _err, {cols} FROM {src}")
        empty = " AND ".join(blank(ident(h)) for h in header)
        return self.con.sql(f"SELECT CAST(NULL AS VARCHAR) AS _err, {', '.join(map(ident, keys))} "
                            f"FROM {self._csv(inp, header, index)} WHERE NOT ({empty})")

    def read_failures(self) -> list[tuple[int, Any]]:
        """Relations of the rows DuckDB rejected while reading (counted, never dropped)."""
        found: list[tuple[int, Any]] = []
        for index, (inp, keys, header) in sorted(self._plans.items()):
            if inp.format == "parquet":
                continue
            try:
                short = self.con.sql(f"SELECT csv_line FROM sm_rej_{index} WHERE error_type = "
                                     "'MISSING COLUMNS' ORDER BY line").fetchall()
                (other,), = self.con.sql(f"SELECT count(*) FROM sm_rej_{index} WHERE error_type <> "
                                         "'MISSING COLUMNS'").fetchall()
            except Exception:  # noqa: BLE001 - no rejects table: nothing was rejected
                continue
            jsonl = inp.format == "jsonl"
            named = {**(_JSON_REJECTS if jsonl else _CSV_REJECTS), **_LIMITS}
            cases = " ".join(f"WHEN {literal(k)} THEN {literal(v)}" for k, v in named.items())
            unnamed = ("'invalid JSON'" if jsonl
                       else "'unreadable CSV row (' || lower(CAST(error_type AS VARCHAR)) || ')'")
            nulls = ", ".join(f"CAST(NULL AS VARCHAR) AS {ident(k)}" for k in keys)
            if other:  # an empty relation would cost a query plan, and add nothing
                found.append((index, self.con.sql(
                    f"SELECT CASE CAST(error_type AS VARCHAR) {cases} ELSE {unnamed} END AS _err, "
                    f"{nulls} FROM sm_rej_{index} WHERE error_type <> 'MISSING COLUMNS'")))
            if short:  # a row with too few fields: read as polars reads it, the rest empty
                fields = [next(csv.reader([line or ""]), []) for (line,) in short]
                frame = pl.DataFrame([[v or None for v in row] + [None] * (len(header) - len(row))
                                      for row in fields],
                                     schema={h: pl.Utf8 for h in header}, orient="row")
                view = f"sm_short_{index}"
                self.con.register(view, frame.to_arrow())
                found.append((index, self.con.sql(
                    f"SELECT CAST(NULL AS VARCHAR) AS _err, {', '.join(map(ident, keys))} FROM {view}")))
        return found

    # ------------------------------------------------------------------ running

    def materialize(self, name: str, frame: nw.LazyFrame) -> nw.LazyFrame:
        """``CREATE TEMP TABLE name AS`` the frame's query."""
        self.con.execute(f"CREATE OR REPLACE TEMP TABLE {name} AS {frame.to_native().sql_query()}")
        return nw.from_native(self.con.table(name))

    def close(self) -> None:
        """Close the connection and remove its spill folder."""
        self.con.close()
        if self._spill is not None:
            shutil.rmtree(self._spill, ignore_errors=True)


def _json_path(key: str) -> str:
    return '$."' + key.replace("\\", "\\\\").replace('"', '\\"') + '"'
