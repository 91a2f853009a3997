"""Apache Spark (pyspark) as the engine of :func:`selfmodel.records.engines.reduce_records`.

Local mode (``local[*]``) by default; pass ``master`` (``spark://host:7077``, ``yarn``,
``k8s://...``) or a running ``session`` to use a cluster. How files are read (the rest is
the rules and the GROUP BY of :mod:`selfmodel.records.reduction`):

* Parquet: ``spark.read.parquet``, every used column cast to text (Java's shortest
  round-trip form for doubles, so ``confidence`` comes back bit for bit).
* CSV: ``spark.read.csv`` with the header ingest reads as the schema (all text), quoted
  fields may span lines, ``PERMISSIVE`` mode with a corrupt-record column: a row Spark
  flags is ``wrong number of fields`` when it has more fields than the header (counted
  outside quotes) and is kept with its missing trailing fields null when it has fewer,
  as polars reads it. Blank rows are skipped.
* JSONL: ``spark.read.text`` (one row per line), blank lines skipped, ``from_json`` into
  a ``map<string,string>``: NULL is ``invalid JSON`` unless ``get_json_object(line, '$')``
  parses it (``not a JSON object``).

A ``NaN``, ``Infinity`` or ``-Infinity`` literal comes out of ``from_json`` quoted
(``"NaN"``) and is unquoted, so that it reads as ingest reads it (``NaN`` missing,
``Infinity`` not a valid confidence).

Spark decodes text with replacement characters and cannot tell invalid UTF-8 from a real
U+FFFD: a JSONL line or CSV row holding U+FFFD is quarantined as ``invalid UTF-8`` (ingest
quarantines invalid bytes and keeps a genuine U+FFFD).
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Mapping, Sequence
from typing import Any, Final

import narwhals as nw
import polars as pl

from selfmodel.records.engines import EngineUnavailableError, nested
from selfmodel.records.ingest.discover import InputFile
from selfmodel.records.ingest.duplicate_keys import DUPLICATE_KEY
from selfmodel.records.reduction import WHITE_SPACE

_REPLACEMENT: Final = "\ufffd"
#: A line whose top-level object names a key twice (``json_object_keys`` keeps each one).
_REPEATS_A_KEY: Final = ("size(json_object_keys(line)) <> "
                         "size(array_distinct(json_object_keys(line)))")
_BOM: Final = "\ufeff"
#: A double-quoted CSV field (``""`` inside is an escaped quote).
_QUOTED: Final = '"([^"]|"")*"'

#: Spark settings for a small local session (a cluster's own settings win).
LOCAL_CONF: Final = {
    "spark.ui.enabled": "false",
    "spark.sql.shuffle.partitions": "8",
    "spark.sql.adaptive.enabled": "true",
    "spark.driver.memory": "2g",
    "spark.sql.session.timeZone": "UTC",
}


def spark_session(master: str | None = None, conf: Mapping[str, str] | None = None) -> Any:
    """A SparkSession (``local[*]`` unless ``master`` or ``$SPARK_MASTER`` says otherwise)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            from pyspark.sql import SparkSession
    except ImportError as exc:
        raise EngineUnavailableError(
            "engine 'spark' is not installed. Install it with "
            "`pip install 'selfmodel[engines]'` (or `pip install pyspark`; it needs Java 17+)."
        ) from exc
    builder = SparkSession.builder.appName("selfmodel-reduce").master(
        master or os.environ.get("SPARK_MASTER", "local[*]")
    )
    for k, v in {**LOCAL_CONF, **dict(conf or {})}.items():
        builder = builder.config(k, v)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            session = builder.getOrCreate()
    except Exception as exc:  # noqa: BLE001 - no Java, or a cluster that cannot be reached
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise EngineUnavailableError(
            f"engine 'spark' could not start ({first}). It needs Java 17+ on PATH or "
            "JAVA_HOME, and for a cluster a reachable --spark-master."
        ) from exc
    session.sparkContext.setLogLevel("ERROR")
    return session


def literal(text: str) -> str:
    """A Spark SQL string literal holding ``text`` exactly."""
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def ident(name: str) -> str:
    """A quoted Spark SQL identifier."""
    return "`" + name.replace("`", "``") + "`"


def blank(expr: str) -> str:
    """Whether ``expr`` is null or only Unicode white space."""
    return f"coalesce(btrim({expr}, {literal(WHITE_SPACE)}) = '', TRUE)"


class SparkEngine:
    """Spark SQL over temporary views, one per file."""

    def __init__(self, *, session: Any = None, master: str | None = None,
                 conf: Mapping[str, str] | None = None) -> None:
        self._own = session is None
        self.spark = session if session is not None else spark_session(master, conf)
        # a JSON object with a key twice: keep one value instead of failing the job
        self.spark.conf.set("spark.sql.mapKeyDedupPolicy", "LAST_WIN")
        self._views: list[str] = []
        self._cached: list[Any] = []

    # ------------------------------------------------------------------ reading

    def _text(self, inp: InputFile) -> Any:
        """Non-blank lines of a text file as ``line`` (byte-order mark dropped)."""
        line = f"regexp_replace(value, {literal('^' + _BOM)}, '')"
        return (self.spark.read.text(inp.path.as_posix())
                .selectExpr(f"{line} AS line").where(f"NOT {blank('line')}"))

    def _csv(self, inp: InputFile, header: Sequence[str]) -> Any:
        from pyspark.sql.types import StringType, StructField, StructType

        schema = StructType(
            [StructField(h, StringType()) for h in header]
            + [StructField("_sm_corrupt", StringType())]
        )
        return self.spark.read.csv(
            inp.path.as_posix(), schema=schema, header=True, mode="PERMISSIVE",
            columnNameOfCorruptRecord="_sm_corrupt", multiLine=True, quote='"', escape='"',
            ignoreLeadingWhiteSpace=False, ignoreTrailingWhiteSpace=False, encoding="UTF-8",
            enforceSchema=True,
        )

    def _csv_rows(self, inp: InputFile, header: Sequence[str], view: str) -> str:
        """SQL of a CSV file's non-blank rows, with ``_sm_fields`` of a flagged row."""
        self._csv(inp, header).createOrReplaceTempView(view)
        empty = " AND ".join(blank(ident(h)) for h in header)
        unquoted = f"regexp_replace(_sm_corrupt, {literal(_QUOTED)}, '')"
        fields = f"(length({unquoted}) - length(replace({unquoted}, ',', '')) + 1)"
        return (f"SELECT *, CASE WHEN _sm_corrupt IS NOT NULL THEN {fields} END AS _sm_fields "
                f"FROM {view} WHERE NOT ({empty}) OR _sm_corrupt IS NOT NULL")

    def read(self, index: int | None, inp: InputFile, keys: Sequence[str],
             types: Mapping[str, pl.DataType]) -> Any:
        """A DataFrame of one file's rows: ``_err`` and the columns ``keys``."""
        header = list(types)
        bad_utf8 = literal("invalid UTF-8")
        view = f"sm_file_{index}"
        self._views.append(view)
        if inp.format == "jsonl":
            self._text(inp).createOrReplaceTempView(view)
            cols = ", ".join(f"{_json_value(k)} AS {ident(k)}" for k in keys)
            err = (f"CASE WHEN instr(line, {literal(_REPLACEMENT)}) > 0 THEN {bad_utf8} "
                   f"WHEN _m IS NOT NULL AND {_REPEATS_A_KEY} THEN {literal(DUPLICATE_KEY)} "
                   "WHEN _m IS NOT NULL THEN NULL "
                   "WHEN get_json_object(line, '$') IS NOT NULL THEN 'not a JSON object' "
                   "ELSE 'invalid JSON' END")
            return self.spark.sql(
                f"SELECT {err} AS _err, {cols} FROM (SELECT line, "
                f"from_json(line, 'map<string,string>') AS _m FROM {view}) AS parsed")
        if inp.format == "parquet":
            self.spark.read.parquet(inp.path.as_posix()).createOrReplaceTempView(view)
            lists = nested(types)
            # a list or struct identifier as JSON text (the ID rule's input)
            cols = ", ".join(f"to_json({ident(k)}) AS {ident(k)}" if k in lists else ident(k)
                             for k in keys)
            return self.spark.sql(f"SELECT CAST(NULL AS STRING) AS _err, {cols} FROM {view}")
        rows = self._csv_rows(inp, header, view + "_csv")
        joined = "concat_ws('', " + ", ".join(ident(h) for h in header) + ")"
        err = (f"CASE WHEN _sm_fields > {len(header)} THEN 'wrong number of fields' "
               f"WHEN instr({joined}, {literal(_REPLACEMENT)}) > 0 THEN {bad_utf8} END")
        return self.spark.sql(
            f"SELECT {err} AS _err, {', '.join(map(ident, keys))} FROM ({rows}) AS {view}")

    def read_failures(self) -> list[tuple[int, Any]]:
        """Spark flags unreadable rows in place (see :meth:`read`): nothing to add."""
        return []

    # ------------------------------------------------------------------ running

    def materialize(self, name: str, frame: nw.LazyFrame) -> nw.LazyFrame:
        """Cache the frame (memory, then disk)."""
        from pyspark import StorageLevel

        df = frame.to_native().persist(StorageLevel.MEMORY_AND_DISK)
        self._cached.append(df)
        return nw.from_native(df)

    def close(self) -> None:
        """Drop the views and caches; stop the session if this engine started it."""
        for df in self._cached:
            df.unpersist()
        for view in self._views:
            self.spark.catalog.dropTempView(view)
        if self._own:
            self.spark.stop()


#: JSON literals Python's parser reads as numbers (ingest), which ``from_json`` hands back
#: quoted (``"NaN"``) when it reads them into a string.
_NON_NUMERIC: Final = ("NaN", "Infinity", "-Infinity")


def _json_value(key: str) -> str:
    """The value of ``key`` in the parsed line ``_m``; a ``NaN``/``Infinity`` literal unquoted."""
    v = f"try_element_at(_m, {literal(key)})"
    quoted = ", ".join(literal(f'"{w}"') for w in _NON_NUMERIC)
    return f"CASE WHEN {v} IN ({quoted}) THEN substring({v}, 2, length({v}) - 2) ELSE {v} END"
