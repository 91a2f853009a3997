"""The reduction as SQL, written once for every engine; only :class:`Dialect` differs.

Input is a relation of *raw* rows, one per row read (blank rows already skipped), with the
columns ``source_file``, ``_err`` (a read failure such as ``invalid JSON``, else NULL) and
every canonical input column of :mod:`selfmodel.records.contract` as text (NULL where the file has
no such column). The queries below then do what :func:`selfmodel.records.ingest.ingest` and
:func:`selfmodel.records.cells.to_cells` do, in this order:

1. :func:`checked_sql` -- normalise each row exactly as ingest does (text stripped of
   Unicode white space; empty and ``null``/``NaN``/``None`` in any case = NULL; booleans
   written any way, ``1.0``/``0.0`` too, become ``'true'``/``'false'``; ``status``
   lower-cased, default ``ok``, ``unparsed`` for an ``ok`` row with neither a prediction
   nor a ``correct``; ``correct`` derived from ``prediction = outcome`` when absent and
   NULL when unreadable; ``predictor`` defaults to ``model``; ``sample`` defaults to 0) and
   name the first failing validation rule in ``_cat`` (the numbering of
   :mod:`selfmodel.records.ingest`).
2. :func:`grouped_sql` -- one GROUP BY over the checked rows: valid rows per (file, key)
   with their copies and the count, smallest and largest value of each compared column;
   failing rows per (file, category). Everything after this reads that table.
3. :func:`variants_sql` -- copies summed over files; a key whose copies differ in a
   compared value is a conflicting duplicate (all its copies are quarantined), a key whose
   copies agree is used once and its other copies are exact duplicates (the key includes
   ``run_id``: runs are separate samples). Then ingest's binary-task rule: in a task whose
   outcomes are all booleans, a non-boolean ``ok`` prediction becomes ``unparsed``.
4. :func:`cells_sql` -- the GROUP BY to model x task cells of :func:`selfmodel.records.cells.to_cells`
   (self-predictions only), and :func:`accounting_sql` -- the row accounting.

Ingest keeps the first copy of an exact duplicate; which copy is kept cannot change a cell
(copies agree on every column a cell reads), so no row order is needed and the queries
run unchanged on engines that do not keep one (Spark, BigQuery).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from selfmodel.records.contract import (
    FALSE_STRINGS,
    KEY,
    MISSING_STRINGS,
    REQUIRED,
    STATUSES,
    TRUE_STRINGS,
)
from selfmodel.records.ingest import COMPARED, INPUT_COLUMNS
from selfmodel.records.ingest.rules import ID_COLUMNS, NOT_AN_ID, OBJECT_START

__all__ = [
    "DUCKDB",
    "SPARK",
    "Dialect",
    "accounting_sql",
    "cells_sql",
    "canonical_raw_sql",
    "checked_sql",
    "grouped_sql",
    "reduction_sql",
    "variants_sql",
]

#: Unicode White_Space characters: what polars' ``str.strip_chars()`` (Rust ``trim``) strips.
WHITE_SPACE: Final = (
    "\t\n\x0b\x0c\r \x85\xa0\u1680"
    + "".join(chr(c) for c in range(0x2000, 0x200B))
    + "\u2028\u2029\u202f\u205f\u3000"
)

#: Integers as polars' strict-off ``cast(Int64)`` reads them.
INT_PATTERN: Final = "^[+-]?[0-9]+$"
#: Decimal numbers (no ``_`` separators, no hex): what polars' ``cast(Float64)`` reads.
FLOAT_PATTERN: Final = "^[+-]?([0-9]+[.]?[0-9]*|[.][0-9]+)([eE][+-]?[0-9]+)?$"
#: Special values polars reads as floats (they fail the confidence rule anyway); ``nan``
#: never gets here: it is a spelling of a missing value (:data:`MISSING_STRINGS`).
FLOAT_SPECIAL: Final = ("inf", "+inf", "-inf", "infinity", "+infinity", "-infinity")

#: Columns of a used record that the cells and the accounting read.
RECORD_COLUMNS: Final = (*KEY, *COMPARED)


@dataclass(frozen=True)
class Dialect:
    """What differs between SQL engines: quoting, regular expressions, a finiteness test.

    Everything else in this module (CASE, COALESCE, NULLIF, TRY_CAST, GROUP BY, a window
    COUNT) is common to DuckDB, Spark SQL and BigQuery.
    """

    name: str
    #: identifier quote character (DuckDB ``"``, Spark and BigQuery ``` ` ```)
    ident_quote: str
    #: whether backslashes in string literals are escapes (Spark, BigQuery) or literal
    backslash_escapes: bool
    #: ``regexp_matches(x, p)`` (DuckDB) / ``x RLIKE p`` (Spark) / ``REGEXP_CONTAINS`` (BigQuery)
    match_template: str
    #: finite double test
    finite_template: str
    #: TRY_CAST (DuckDB, Spark) / SAFE_CAST (BigQuery)
    try_cast: str = "TRY_CAST"

    def ident(self, name: str) -> str:
        """A quoted identifier."""
        q = self.ident_quote
        return q + name.replace(q, q + q) + q

    def literal(self, text: str) -> str:
        """A quoted string literal holding ``text`` exactly."""
        if self.backslash_escapes:
            return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"
        return "'" + text.replace("'", "''") + "'"

    def matches(self, expr: str, pattern: str) -> str:
        """Whether ``expr`` contains a match of the regular expression ``pattern``."""
        return self.match_template.format(x=expr, p=self.literal(pattern))

    def finite(self, expr: str) -> str:
        """Whether the double ``expr`` is neither NaN nor infinite."""
        return self.finite_template.format(x=expr)

    def cast(self, expr: str, type_: str) -> str:
        """A cast that gives NULL instead of failing."""
        return f"{self.try_cast}({expr} AS {type_})"

    def strip(self, expr: str) -> str:
        """``expr`` without surrounding Unicode white space; NULL when nothing is left.

        A value that starts and ends with a printable ASCII character (the usual case)
        is left as it is without a regular expression; comparing one-character strings
        in byte order is what every engine does fastest.
        """
        ws = "[" + WHITE_SPACE + "]"
        plain = (f"left({expr}, 1) BETWEEN '!' AND '~' "
                 f"AND right({expr}, 1) BETWEEN '!' AND '~'")
        inner = f"regexp_extract({expr}, {self.literal(f'(?s)^{ws}*(.*?){ws}*$')}, 1)"
        return f"NULLIF(CASE WHEN {plain} THEN {expr} ELSE {inner} END, '')"


DUCKDB: Final = Dialect(
    name="duckdb",
    ident_quote='"',
    backslash_escapes=False,
    match_template="regexp_matches({x}, {p})",
    finite_template="isfinite({x})",
)

SPARK: Final = Dialect(
    name="spark",
    ident_quote="`",
    backslash_escapes=True,
    match_template="({x} RLIKE {p})",
    finite_template="(NOT isnan({x}) AND abs({x}) < double('Infinity'))",
)


def _in(expr: str, values: tuple[str, ...] | list[str] | frozenset[str], d: Dialect) -> str:
    return f"{expr} IN ({', '.join(d.literal(v) for v in sorted(values))})"


def checked_sql(raw: str, d: Dialect, *, tasks: tuple[str, ...] | None = None) -> str:
    """Normalise and validate ``raw``: one row per row read, ``_cat`` the first failing rule.

    Output columns: ``source_file``, ``_cat`` (NULL for a valid row) and, meaningful for
    valid rows, :data:`RECORD_COLUMNS` as ingest writes them to ``records.parquet``.
    """
    i = d.ident
    true_s, false_s = sorted(TRUE_STRINGS), sorted(FALSE_STRINGS)

    def binary(c: str) -> str:
        low = f"lower({i(c)})"
        return (f"CASE WHEN {_in(low, true_s, d)} THEN 'true' "
                f"WHEN {_in(low, false_s, d)} THEN 'false' ELSE {i(c)} END")

    low_corr = f"lower({i('correct')})"
    conf = i("confidence")
    smp = i("sample")
    conf_num = (f"CASE WHEN {d.matches(conf, FLOAT_PATTERN)} OR {_in(f'lower({conf})', FLOAT_SPECIAL, d)} "
                f"THEN {d.cast(conf, 'DOUBLE')} END")
    smp_f = f"CASE WHEN {d.matches(smp, FLOAT_PATTERN)} THEN {d.cast(smp, 'DOUBLE')} END"
    smp_num = (
        f"COALESCE(CASE WHEN {d.matches(smp, INT_PATTERN)} THEN {d.cast(smp, 'BIGINT')} END, "
        f"CASE WHEN {d.finite('_sf')} THEN CASE WHEN abs(_sf) < 9007199254740992.0 THEN "
        f"CASE WHEN _sf = floor(_sf) THEN {d.cast('_sf', 'BIGINT')} END END END)"
    )  # nested CASEs: no floor or cast of a value too large for BIGINT (ANSI mode errors)
    rules: list[tuple[str, str]] = [("missing value", f"{i(c)} IS NULL") for c in REQUIRED]
    rules += [(NOT_AN_ID, _nested(i(c), d)) for c in ID_COLUMNS]
    rules += [
        ("invalid status", f"NOT {_in('_status', STATUSES, d)}"),
        ("invalid confidence",
         f"({conf} IS NOT NULL AND _conf IS NULL) OR "
         f"(_conf IS NOT NULL AND (NOT {d.finite('_conf')} OR _conf < 0 OR _conf > 1))"),
        ("invalid sample", f"({smp} IS NOT NULL AND _smp IS NULL) OR _smp < 0"),
        ("invalid correct", f"{i('correct')} IS NOT NULL AND _corr IS NULL"),
    ]
    if tasks is not None:
        rules.append(("unknown task", f"NOT {_in(i('task'), tasks, d)}"))
    rules += [
        ("no outcome", "_out IS NULL AND _corr IS NULL AND _status = 'ok'"),
        ("correct disagrees",
         "_eff = 'ok' AND _corr IS NOT NULL AND _eq IS NOT NULL AND _corr <> _eq"),
    ]
    cat = "CASE WHEN _err IS NOT NULL THEN _err\n    " + "\n    ".join(
        f"WHEN COALESCE({cond}, FALSE) THEN {d.literal(name)}" for name, cond in rules
    ) + " END"
    return f"""
SELECT source_file, _cat,
  {i('model')} AS model, COALESCE({i('predictor')}, {i('model')}) AS predictor,
  {i('task')} AS task, {i('item_id')} AS item_id, COALESCE(_smp, 0) AS sample,
  _pred AS prediction, _out AS outcome,
  CASE WHEN _eff <> 'ok' THEN NULL WHEN _corr IS NOT NULL THEN _corr ELSE _eq END AS correct,
  _conf AS confidence, _eff AS status, {i('run_id')} AS run_id
FROM (
  SELECT *, {cat} AS _cat
  FROM (
    SELECT *,
      CASE WHEN _status = 'ok' AND _pred IS NULL AND _corr IS NULL THEN 'unparsed'
           ELSE _status END AS _eff,
      (_pred = _out) AS _eq,
      {smp_num} AS _smp
    FROM (
      SELECT *,
        {binary('prediction')} AS _pred,
        {binary('outcome')} AS _out,
        CASE WHEN {_in(low_corr, true_s, d)} THEN TRUE
             WHEN {_in(low_corr, false_s, d)} THEN FALSE END AS _corr,
        COALESCE(lower({i('status')}), 'ok') AS _status,
        {conf_num} AS _conf,
        {smp_f} AS _sf
      FROM {_text_sql(raw, d)}
    ) AS parsed
  ) AS derived
) AS ruled
"""


def _nested(x: str, d: Dialect) -> str:
    """SQL of :func:`selfmodel.records.ingest.rules.looks_nested`: ``[...]`` or ``{"...}`` text."""
    return (f"((left({x}, 1) = '[' AND right({x}, 1) = ']') OR "
            f"(right({x}, 1) = '}}' AND {d.matches(x, OBJECT_START)}))")


def _text_sql(raw: str, d: Dialect) -> str:
    """Every input column of ``raw`` as ingest's text: stripped, empty and null/NaN/None NULL."""
    i = d.ident
    text = ",\n    ".join(f"{d.strip(i(c))} AS {i(c)}" for c in INPUT_COLUMNS)
    lengths = sorted({len(m) for m in MISSING_STRINGS})
    present = ",\n    ".join(
        f"CASE WHEN length({i(c)}) BETWEEN {lengths[0]} AND {lengths[-1]} AND "
        f"{_in(f'lower({i(c)})', MISSING_STRINGS, d)} THEN NULL ELSE {i(c)} END AS {i(c)}"
        for c in INPUT_COLUMNS
    )
    return f"""(
        SELECT source_file, _err,
    {present}
        FROM (
          SELECT source_file, _err,
    {text}
          FROM {raw}
        ) AS stripped
      ) AS present"""


def _as_number(c: str) -> str:
    """A compared column in a form MIN/MAX accept on every engine (booleans as 0/1)."""
    return f"CASE WHEN {c} THEN 1 WHEN NOT {c} THEN 0 END" if c == "correct" else c


def grouped_sql(checked: str) -> str:
    """Valid rows per (file, key), failing rows per (file, category).

    Per group: the rows (``copies``) and, for each compared column ``c``, the number of
    non-null values ``c_n`` and their ``c_min`` and ``c_max``. For a failing row the key is
    NULL, so that all failing rows of a file and category collapse into one group.
    """
    key = ", ".join(KEY)
    picked = ", ".join(f"CASE WHEN _cat IS NULL THEN {c} END AS {c}" for c in RECORD_COLUMNS)
    aggs = ", ".join(
        f"COUNT({c}) AS {c}_n, MIN({_as_number(c)}) AS {c}_min, MAX({_as_number(c)}) AS {c}_max"
        for c in COMPARED
    )
    return f"""
SELECT source_file, _cat, {key}, COUNT(*) AS copies, {aggs}
FROM (SELECT source_file, _cat, {picked} FROM {checked}) AS picked
GROUP BY source_file, _cat, {key}
"""


def variants_sql(grouped: str) -> str:
    """One row per key of a valid record: its copies, and whether the copies conflict.

    The copies of a key agree on a compared column when the column is NULL in all of them
    or in none and its smallest and largest values are equal (NULLs compare equal, as in
    ingest). A key whose copies agree is used once, with those values.

    Then the rule ingest applies to the used records (``binary_task_rule``): in a task
    whose outcomes are all ``true``/``false``, an ``ok`` record whose prediction is some
    other text (``maybe``) becomes ``unparsed`` without ``correct``; ``not_boolean`` marks
    it, for the count per task (``predictions_not_boolean``).
    """
    key = ", ".join(KEY)
    agree = " AND ".join(
        f"(SUM({c}_n) = 0 OR (SUM({c}_n) = SUM(copies) AND MIN({c}_min) = MAX({c}_max)))"
        for c in COMPARED
    )
    values = ", ".join(
        f"MIN({c}_min) = 1 AS {c}" if c == "correct" else f"MIN({c}_min) AS {c}"
        for c in COMPARED
    )
    return f"""
WITH v AS (
  SELECT {key}, SUM(copies) AS copies, NOT ({agree}) AS conflicting, {values}
  FROM {grouped} WHERE _cat IS NULL
  GROUP BY {key}
),
binary_tasks AS (
  SELECT task AS binary_task FROM v
  WHERE NOT conflicting AND outcome IS NOT NULL
  GROUP BY task
  HAVING MIN(CASE WHEN outcome IN ('true', 'false') THEN 1 ELSE 0 END) = 1
),
flagged AS (
  SELECT v.*, COALESCE(binary_task IS NOT NULL AND NOT conflicting AND status = 'ok'
                       AND prediction NOT IN ('true', 'false'), FALSE) AS not_boolean
  FROM v LEFT JOIN binary_tasks ON v.task = binary_tasks.binary_task
)
SELECT {key}, copies, conflicting, prediction, outcome,
  CASE WHEN not_boolean THEN NULL ELSE correct END AS correct, confidence,
  CASE WHEN not_boolean THEN 'unparsed' ELSE status END AS status, not_boolean
FROM flagged
"""


def cells_sql(variants: str) -> str:
    """Model x task cells of :func:`selfmodel.records.cells.to_cells` from the used records.

    ``mode_outcome_share`` is NULL where ``n = 0`` (``to_cells`` gives NaN) and ``binary``
    is called ``is_binary`` (a type name in DuckDB and Spark): the engines convert both
    when they hand the table back.
    """
    return f"""
WITH r AS (
  SELECT model, task, prediction, outcome, correct,
         (status = 'ok' AND correct IS NOT NULL) AS readable
  FROM {variants}
  WHERE NOT conflicting AND predictor = model
),
cells AS (
  SELECT model, task,
    COUNT(*) AS n_total,
    SUM(CASE WHEN readable THEN 1 ELSE 0 END) AS n,
    SUM(CASE WHEN readable AND correct THEN 1 ELSE 0 END) AS k,
    SUM(CASE WHEN readable THEN 0 ELSE 1 END) AS n_unreadable,
    MIN(CASE WHEN NOT readable OR COALESCE(prediction IN ('true', 'false')
             AND outcome IN ('true', 'false'), TRUE) THEN 1 ELSE 0 END) = 1 AS is_binary,
    SUM(CASE WHEN readable AND outcome = 'true' THEN 1 ELSE 0 END) AS n_signal,
    SUM(CASE WHEN readable AND outcome = 'false' THEN 1 ELSE 0 END) AS n_noise,
    SUM(CASE WHEN readable AND outcome = 'true' AND prediction = 'true'
             THEN 1 ELSE 0 END) AS hits,
    SUM(CASE WHEN readable AND outcome = 'false' AND prediction = 'true'
             THEN 1 ELSE 0 END) AS false_alarms,
    SUM(CASE WHEN readable AND prediction = 'true' THEN 1 ELSE 0 END) AS n_pred_yes
  FROM r
  GROUP BY model, task
),
modes AS (
  SELECT model, task, MAX(c) AS mode_n
  FROM (SELECT model, task, outcome, COUNT(*) AS c
        FROM r WHERE readable GROUP BY model, task, outcome) AS per_outcome
  GROUP BY model, task
)
SELECT cells.model, cells.task, n_total, n, k, n_unreadable, is_binary, n_signal, n_noise,
       hits, false_alarms, n_pred_yes, k AS k_strict,
       CAST(COALESCE(mode_n, 0) AS DOUBLE) / CAST(NULLIF(n, 0) AS DOUBLE)
         AS mode_outcome_share
FROM cells LEFT JOIN modes ON cells.model = modes.model AND cells.task = modes.task
ORDER BY model, task
"""


def accounting_sql(grouped: str, variants: str) -> str:
    """Counts behind ``read = used + quarantined + duplicate``, as ``(what, label, count)`` rows.

    ``what`` is ``file`` (rows read per file), ``reason`` (quarantined rows per category,
    conflicting duplicates included), ``used``, ``duplicate``, ``status`` (used records per
    status), ``model`` and ``task`` (used records per model and task) and ``not_boolean``
    (per task, used records made ``unparsed`` by the binary-task rule).
    """
    used = f"(SELECT * FROM {variants} WHERE NOT conflicting) AS u"
    return f"""
SELECT 'file' AS what, source_file AS label, SUM(copies) AS n FROM {grouped} GROUP BY source_file
UNION ALL
SELECT 'reason', _cat, SUM(copies) FROM {grouped} WHERE _cat IS NOT NULL GROUP BY _cat
UNION ALL
SELECT 'reason', 'conflicting duplicate', SUM(copies) FROM {variants} WHERE conflicting
UNION ALL
SELECT 'used', '', COUNT(*) FROM {used}
UNION ALL
SELECT 'duplicate', '', SUM(copies - 1) FROM {used}
UNION ALL
SELECT 'status', status, COUNT(*) FROM {used} GROUP BY status
UNION ALL
SELECT 'model', model, COUNT(*) FROM {used} GROUP BY model
UNION ALL
SELECT 'task', task, COUNT(*) FROM {used} GROUP BY task
UNION ALL
SELECT 'not_boolean', task, COUNT(*) FROM {used} WHERE not_boolean GROUP BY task
"""


def canonical_raw_sql(
    table: str, d: Dialect, *, columns: tuple[str, ...] | list[str],
    source_file: str | None = None,
) -> str:
    """Raw rows of a table that already has canonical column names (any types).

    ``columns`` are the canonical columns the table has (the others read as NULL);
    ``source_file`` is an SQL expression naming the file of a row (Spark:
    ``input_file_name()``; BigQuery: ``_FILE_NAME`` of an external table), default the
    table name.
    """
    text = "STRING" if d.name == "spark" else "VARCHAR"
    cols = ", ".join(
        f"CAST({d.ident(c)} AS {text}) AS {c}" if c in columns else f"CAST(NULL AS {text}) AS {c}"
        for c in INPUT_COLUMNS
    )
    src = source_file or d.literal(table)
    return f"SELECT {src} AS source_file, CAST(NULL AS {text}) AS _err, {cols} FROM {table}"


def reduction_sql(
    raw: str, d: Dialect, *, tasks: tuple[str, ...] | None = None
) -> dict[str, str]:
    """The whole reduction as named statements over the relation ``raw``.

    Create ``grouped`` and then ``variants`` as tables (or cached views), then run
    ``cells`` and ``accounting``: the order :func:`selfmodel.records.engines.reduce_records` runs
    them in. ``raw`` is a table name or a parenthesised query with an alias.
    """
    return {
        "grouped": grouped_sql(f"({checked_sql(raw, d, tasks=tasks)}) AS checked"),
        "variants": variants_sql("grouped"),
        "cells": cells_sql("variants"),
        "accounting": accounting_sql("grouped", "variants"),
    }

