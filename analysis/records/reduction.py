"""The validation rules and the reduction to cells, written once for every engine.

The expressions are `narwhals <https://narwhals-dev.github.io/narwhals/>`_ expressions: the
same code runs on a polars LazyFrame (in memory, ingest), a DuckDB relation
(out of core) and a Spark DataFrame (on a cluster) -- :mod:`selfmodel.records.engines`. A new
validation rule is one entry of :func:`rules`.

Input is a frame of *raw* rows, one per row read (blank rows already skipped), with the
columns ``source_file``, ``_err`` (a read failure such as ``invalid JSON``, else null) and
every canonical input column of :mod:`selfmodel.records.contract` as text (null where the file has
no such column). Then, in this order:

1. :func:`checked` -- normalise each row as ingest does (text stripped of Unicode white
   space; empty and ``null``/``NaN``/``None`` in any case = null; booleans written any way,
   ``1.0``/``0.0`` too, become ``'true'``/``'false'``; ``status`` lower-cased, default
   ``ok``, ``unparsed`` for an ``ok`` row with neither a prediction nor a ``correct``;
   ``correct`` derived from ``prediction = outcome`` when absent and null when unreadable;
   ``predictor`` defaults to ``model``; ``sample`` defaults to 0) and name the first
   failing rule of :func:`rules` in ``_cat`` (the numbering of :mod:`selfmodel.records.ingest`).
2. :func:`grouped` -- one GROUP BY over the checked rows: valid rows per (file, key) with
   their copies and the count, smallest and largest value of each compared column; failing
   rows per (file, category). Everything after this reads that table.
3. :func:`variants` -- copies summed over files; a key whose copies differ in a compared
   value is a conflicting duplicate (all its copies are quarantined), a key whose copies
   agree is used once and its other copies are exact duplicates (the key includes
   ``run_id``: runs are separate samples). Then ingest's binary-task rule: in a task whose
   outcomes are all booleans, a non-boolean ``ok`` prediction becomes ``unparsed``.
4. :func:`cells` -- the GROUP BY to model x task cells (self-predictions only), shared
   with :func:`selfmodel.records.cells.to_cells`, and :func:`accounting` -- the row accounting.

Ingest keeps the first copy of an exact duplicate; which copy is kept cannot change a cell
(copies agree on every column a cell reads), so no row order is needed and the same code
runs on engines that do not keep one (Spark).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from itertools import product
from typing import Any, Final

import narwhals as nw
import polars as pl

from selfmodel.records.contract import (
    FALSE_STRINGS,
    KEY,
    MISSING_STRINGS,
    NOT_SCORED_STATUSES,
    REQUIRED,
    STATUSES,
    TRUE_STRINGS,
)

__all__ = [
    "CELL_KEY",
    "CELL_SCHEMA",
    "CONDITION_CELL_KEY",
    "COMPARED",
    "ID_COLUMNS",
    "INPUT_COLUMNS",
    "NOT_AN_ID",
    "accounting",
    "binary_task_rule",
    "binary_tasks",
    "cell_rows",
    "cell_schema",
    "cells",
    "cells_of",
    "checked",
    "finish_cells",
    "grouped",
    "not_boolean",
    "raw_records",
    "raw_rows",
    "rules",
    "variants",
]

#: Canonical input columns, in record order (``selfmodel.records.contract.RECORD_SCHEMA``).
INPUT_COLUMNS: Final = ("model", "task", "item_id", "prediction", "outcome", "correct",
                        "predictor", "confidence", "cluster", "condition", "status", "run_id",
                        "sample")
#: Columns compared between copies of a key (copies that differ are conflicting duplicates).
COMPARED: Final = ("prediction", "outcome", "correct", "confidence", "status")
#: Identifier columns: a value that is a list or an object is not an identifier.
ID_COLUMNS: Final = ("model", "predictor", "task", "item_id", "run_id", "cluster", "condition")
#: Quarantine category of an identifier that is a list or an object, holds a control
#: character or has no visible character.
NOT_AN_ID: Final = "invalid identifier"
#: The other input columns: a list or an object is not one value there either.
VALUE_COLUMNS: Final = ("prediction", "outcome", "correct", "confidence", "status", "sample")
#: Quarantine category of a value that is a list or an object.
NOT_A_VALUE: Final = "invalid value"
#: Numeric columns: ``NaN`` and infinity (any spelling) are not numbers there, never missing.
NUMERIC_COLUMNS: Final = ("confidence", "sample")
#: An object's text: ``{`` then (after white space) a quoted key or the closing ``}``.
OBJECT_START: Final = r'^\{\s*["}]'

#: Unicode White_Space characters: what polars' ``str.strip_chars()`` (Rust ``trim``) strips.
WHITE_SPACE: Final = (
    "\t\n\x0b\x0c\r \x85\xa0\u1680"
    + "".join(chr(c) for c in range(0x2000, 0x200B))
    + "\u2028\u2029\u202f\u205f\u3000"
)
#: Control characters that are not white space: C0 but tab, line feed, vertical tab, form
#: feed, carriage return; DEL; C1 but next line (U+0085). An identifier never holds one (a
#: NUL cannot even be saved in a fit). The white-space ones follow the white-space rule.
CONTROL: Final = "[\\x00-\\x08\\x0e-\\x1f\\x7f-\\x84\\x86-\\x9f]"
#: Text with no visible character: only invisible format characters (Unicode category Cf:
#: zero-width space, joiners, word joiner, soft hyphen, byte-order mark ...) and white space.
#: :func:`selfmodel.records.contract.name_key` of such a name is empty.
INVISIBLE: Final = "^[\\p{Cf}" + "".join(f"\\x{{{ord(ch):04X}}}" for ch in WHITE_SPACE) + "]+$"
#: ``NaN`` and infinity in any case and sign (``nan``, ``-inf``, ``Infinity``): no number.
NOT_FINITE: Final = "(?i)^[+-]?(nan|inf|infinity)$"
#: Integers of at most 18 digits: cast to a 64-bit integer on every engine without overflow.
INT_PATTERN: Final = "^[+-]?[0-9]{1,18}$"
#: Integers of 19 digits, read as integers when not above the largest 64-bit integer.
INT19_PATTERN: Final = "^[+]?[0-9]{19}$"
INT64_MAX: Final = str(2**63 - 1)
#: Decimal numbers (no ``_`` separators, no hex): what polars' ``cast(Float64)`` reads.
#: ``inf``/``infinity`` are not matched: they are given but not finite (invalid anyway).
FLOAT_PATTERN: Final = "^[+-]?([0-9]+[.]?[0-9]*|[.][0-9]+)([eE][+-]?[0-9]+)?$"
BOOLEAN_TEXT: Final = ("true", "false")

#: The cell key: one cell per model x task (conditions pooled, as every scale model reads them).
CELL_KEY: Final = ("model", "task")
#: The cell key with conditions kept apart (``condition`` null when the study has one).
CONDITION_CELL_KEY: Final = ("model", "task", "condition")

#: Cell columns and dtypes, in the order :func:`selfmodel.records.cells.to_cells` returns them.
CELL_SCHEMA: Final[dict[str, pl.DataType]] = {
    "model": pl.Utf8(), "task": pl.Utf8(), "n_total": pl.Int64(), "n": pl.Int64(),
    "k": pl.Int64(), "n_unreadable": pl.Int64(), "n_not_asked": pl.Int64(),
    "n_unanswered": pl.Int64(), "binary": pl.Boolean(),
    "n_signal": pl.Int64(), "n_noise": pl.Int64(), "hits": pl.Int64(),
    "false_alarms": pl.Int64(), "n_pred_yes": pl.Int64(), "k_strict": pl.Int64(),
    "mode_outcome_share": pl.Float64(),
}

col = nw.col


def case_variants(words: Iterable[str]) -> list[str]:
    """Every upper/lower-case spelling of ASCII ``words`` (``yes`` -> ``yes, yeS, ..., YES``).

    Matching them is what lower-casing and then comparing would do (no non-ASCII character
    lower-cases to these letters), at a fraction of the cost.
    """
    return sorted({"".join(chars) for w in words
                   for chars in product(*((c.lower(), c.upper()) for c in w))})


TRUE_SPELLINGS: Final = case_variants(TRUE_STRINGS)
FALSE_SPELLINGS: Final = case_variants(FALSE_STRINGS)
MISSING_SPELLINGS: Final = case_variants(MISSING_STRINGS)
#: Spellings of a missing value in a numeric column: ``NaN`` is not one there (it is no number).
NUMBER_MISSING_SPELLINGS: Final = case_variants(MISSING_STRINGS - {"nan"})


def text(c: str, ns: Any = nw, *, numeric: bool = False) -> Any:
    """Ingest's text of a text column: stripped; empty and null/NaN/None (any case) are null.

    ``ns`` is narwhals (the engines) or polars (the records mapping, on eager frames): the
    three value readers here are the one definition both use. In a ``numeric`` column
    (:data:`NUMERIC_COLUMNS`) ``NaN`` is kept, for its rule to quarantine: a NaN confidence
    is a mistake, not a missing one.
    """
    t = ns.col(c).str.strip_chars(WHITE_SPACE)
    missing = NUMBER_MISSING_SPELLINGS if numeric else MISSING_SPELLINGS
    return ns.when((t != "") & ~t.is_in(missing)).then(t)


def boolean(t: Any, ns: Any = nw) -> Any:
    """True/false for a boolean written any way (true/1/1.0/yes/y/t, any case), else null."""
    return (ns.when(t.is_in(TRUE_SPELLINGS)).then(ns.lit(True))
            .when(t.is_in(FALSE_SPELLINGS)).then(ns.lit(False)))


def binary_text(t: Any, ns: Any = nw) -> Any:
    """``'true'``/``'false'`` for a boolean written any way, else the text itself."""
    b = boolean(t, ns)
    return ns.when(b).then(ns.lit("true")).when(~b).then(ns.lit("false")).otherwise(t)


def looks_nested(t: nw.Expr) -> nw.Expr:
    """Whether stripped text is a list (``[...]``) or a JSON object (``{"...}``, ``{}``).

    The one rule for every format: a JSON array or object, a Parquet list or struct (read
    as its JSON text) and CSV text written like one are all the same to it. Text such as
    ``{{ template }}`` is not an object.
    """
    return ((t.str.starts_with("[") & t.str.ends_with("]"))
            | (t.str.ends_with("}") & t.str.contains(OBJECT_START)))


def _sample(t: nw.Expr) -> nw.Expr:
    """A non-negative integer written ``1``, ``+1``, ``1.0`` or ``1e0``; null if not integral."""
    as_int = (nw.when(t.str.contains(INT_PATTERN)
                      | (t.str.contains(INT19_PATTERN) & (t.str.strip_chars_start("+") <= INT64_MAX)))
              .then(t.str.strip_chars_start("+")).cast(nw.Int64))
    f = nw.when(t.str.contains(FLOAT_PATTERN)).then(t).cast(nw.Float64)
    integral = nw.when(f.is_finite() & (f.abs() < 2.0**53) & (f == f.floor())).then(f)
    return nw.coalesce(as_int, integral.cast(nw.Int64))


def parsed(frame: nw.LazyFrame, clean: Collection[str] = ()) -> nw.LazyFrame:
    """Raw rows -> ingest's text of every column and the parsed helper columns (``_pred`` ...).

    ``clean`` columns are already their own text (no value empty, a spelling of a missing
    value, or with surrounding white space): a shortcut ingest finds from distinct values.
    """
    texts = [text(c, numeric=c in NUMERIC_COLUMNS).alias(c) for c in INPUT_COLUMNS
             if c not in clean]
    frame = frame.with_columns(*texts) if texts else frame
    frame = frame.with_columns(
        binary_text(col("prediction")).alias("_pred"),
        binary_text(col("outcome")).alias("_out"),
        boolean(col("correct")).alias("_corr"),
        col("status").str.to_lowercase().fill_null("ok").alias("_status"),
        nw.when(col("confidence").str.contains(FLOAT_PATTERN)).then(col("confidence"))
        .cast(nw.Float64).alias("_conf"),
        _sample(col("sample")).alias("_smp"),
    )
    pred, corr, status = col("_pred"), col("_corr"), col("_status")
    return frame.with_columns(
        nw.when((status == "ok") & pred.is_null() & corr.is_null()).then(nw.lit("unparsed"))
        .otherwise(status).alias("_eff"),
        (pred == col("_out")).alias("_eq"),
    )


def _says(*parts: str | nw.Expr) -> nw.Expr:
    """A reason text: literal parts and column values (a missing value shown as ``null``)."""
    return nw.concat_str([nw.lit(p) if isinstance(p, str) else p for p in parts])


def shown(c: str) -> nw.Expr:
    """The (stripped) text of ``c`` in a reason, ``null`` where it is missing."""
    return col(c).fill_null("null")


Rule = tuple[str, nw.Expr, nw.Expr]


def rules(tasks: tuple[str, ...] | None = None) -> list[Rule]:
    """``(category, condition, reason)`` of each validation rule over :func:`parsed` rows.

    In order: the first rule whose condition is true names the row's quarantine category
    (and its reason, the text ingest writes to the quarantine); a null condition is not a
    failure. These are rules 1-8 of :mod:`selfmodel.records.ingest`.
    """
    conf, smp, corr, eq = col("_conf"), col("_smp"), col("_corr"), col("_eq")
    out: list[Rule] = [("missing value", col(c).is_null(),
                        _says(f"missing value in required column '{c}'")) for c in REQUIRED]
    out += [(NOT_AN_ID, looks_nested(col(c)), _says(
        f"invalid {c} '", shown(c), "' (a list or object is not an identifier; flatten it to text)"))
        for c in ID_COLUMNS]
    out += [(NOT_AN_ID, col(c).str.contains(CONTROL), _says(
        f"invalid {c} '", col(c).str.replace_all(CONTROL, "\ufffd"), "' (it holds a control "
        "character, shown as \ufffd, such as a NUL byte: an identifier never does; remove it)"))
        for c in ID_COLUMNS]
    out += [(NOT_AN_ID, col(c).str.contains(INVISIBLE), _says(
        f"invalid {c} (no visible character, only invisible format characters such as a "
        "zero-width space and white space; write the name)")) for c in ID_COLUMNS]
    out += [(NOT_A_VALUE, looks_nested(col(c)), _says(
        f"invalid {c} '", shown(c), "' (a list or object is not one value; write the value "
        "itself)")) for c in VALUE_COLUMNS]
    out += [
        ("invalid status", ~col("_status").is_in(list(STATUSES)),
         _says("invalid status '", shown("status"), f"' (allowed: {', '.join(STATUSES)})")),
        ("invalid confidence", col("confidence").str.contains(NOT_FINITE),
         _says("invalid confidence '", shown("confidence"), "' (not a finite number: NaN and "
               "infinity are never a confidence; leave it empty or write null for none)")),
        ("invalid confidence",
         (~col("confidence").is_null() & conf.is_null())
         | (~conf.is_null() & (~conf.is_finite() | (conf < 0) | (conf > 1))),
         _says("invalid confidence '", shown("confidence"), "' (must be a finite number in [0, 1])")),
        ("invalid sample", col("sample").str.contains(NOT_FINITE),
         _says("invalid sample '", shown("sample"), "' (not a number: NaN and infinity are "
               "never a sample index; leave it empty for sample 0)")),
        ("invalid sample", (~col("sample").is_null() & smp.is_null()) | (smp < 0),
         _says("invalid sample '", shown("sample"), "' (must be a non-negative integer)")),
        ("invalid correct", ~col("correct").is_null() & corr.is_null(),
         _says("invalid correct '", shown("correct"), "' (must be true/false/1/0/yes/no)")),
    ]
    if tasks is not None:
        out.append(("unknown task", ~col("task").is_in(list(tasks)),
                    _says("unknown task '", shown("task"), f"' (configured tasks: {', '.join(tasks)})")))
    out += [
        # a row declared unreadable (unparsed/refused/error) or with nothing to score
        # (not_asked/unanswered) is kept without an outcome
        ("no outcome", col("_out").is_null() & corr.is_null() & (col("_status") == "ok"),
         _says("no outcome and no correct (nothing to check the prediction against)")),
        ("correct disagrees",
         (col("_eff") == "ok") & ~corr.is_null() & ~eq.is_null() & (corr != eq),
         _says("correct disagrees with prediction == outcome (correct=", corr.cast(nw.String),
               ", prediction='", col("_pred"), "', outcome='", col("_out"), "')")),
    ]
    return out


def checked(raw: Any, *, tasks: tuple[str, ...] | None = None, keep: tuple[str, ...] = (),
            clean: Collection[str] = (), why: bool = False) -> nw.LazyFrame:
    """Normalise and validate raw rows: one row per row read, ``_cat`` the first failing rule.

    Output columns: ``source_file``, ``_cat`` (null for a valid row), with ``why`` its reason
    ``_reason`` (the text ingest writes to the quarantine; ingest asks for it on failing rows
    only), the record columns as ingest writes them to ``records.parquet`` (meaningful for
    valid rows) and ``keep``.
    """
    frame = parsed(nw.from_native(raw), clean)
    found = rules(tasks)
    cat = nw.coalesce(col("_err"), *(nw.when(cond).then(nw.lit(name)) for name, cond, _ in found))
    # a reason is never null where its condition holds: the first true rule gives both
    reason = nw.coalesce(col("_err"), *(nw.when(cond).then(text) for _, cond, text in found))
    eff, corr = col("_eff"), col("_corr")
    record = {
        "prediction": col("_pred"), "outcome": col("_out"),
        "correct": nw.when(eff == "ok").then(
            nw.when(~corr.is_null()).then(corr).otherwise(col("_eq"))),
        "predictor": nw.coalesce(col("predictor"), col("model")),
        "confidence": col("_conf"), "status": eff, "sample": col("_smp").fill_null(0),
    }
    return frame.select("source_file", cat.alias("_cat"), *([reason.alias("_reason")] if why else []),
                        *(record[c].alias(c) if c in record else col(c) for c in INPUT_COLUMNS),
                        *keep)


def grouped(checked_rows: nw.LazyFrame) -> nw.LazyFrame:
    """Valid rows per (file, key), failing rows per (file, category).

    Per group: the rows (``copies``) and, for each compared column ``c``, the number of
    non-null values ``c_n`` and their ``c_min`` and ``c_max`` (``correct`` as 0/1). For a
    failing row the key is null, so that all failing rows of a file and category collapse
    into one group.
    """
    picked = checked_rows.select(
        "source_file", "_cat", *KEY,
        *(col(c).cast(nw.Int64).alias(c) if c == "correct" else col(c) for c in COMPARED))
    by = ("source_file", "_cat", *KEY)
    aggs = [e for c in COMPARED for e in (col(c).count().alias(f"{c}_n"),
                                          col(c).min().alias(f"{c}_min"),
                                          col(c).max().alias(f"{c}_max"))]
    per_key = picked.group_by(*by, drop_null_keys=False).agg(nw.len().alias("copies"), *aggs)
    # then a failing row's key is nulled: one reference to _cat per key column *after* the
    # first aggregation, where it is a plain column (before it, DuckDB's optimizer spends
    # most of a query's planning time on the copies of the rules it inlines there)
    valid = col("_cat").is_null()
    return per_key.with_columns(*(nw.when(valid).then(col(c)).alias(c) for c in KEY)).group_by(
        *by, drop_null_keys=False).agg(
        col("copies").sum(),
        *(e for c in COMPARED for e in (nw.when(valid).then(col(f"{c}_n")).fill_null(0).sum().alias(f"{c}_n"),
                                        nw.when(valid).then(col(f"{c}_min")).min().alias(f"{c}_min"),
                                        nw.when(valid).then(col(f"{c}_max")).max().alias(f"{c}_max"))))


def variants(grouped_rows: nw.LazyFrame) -> nw.LazyFrame:
    """One row per key of a valid record: its copies, and whether the copies conflict.

    The copies of a key agree on a compared column when the column is null in all of them
    or in none and its smallest and largest values are equal (nulls compare equal, as in
    ingest). A key whose copies agree is used once, with those values.

    Then the rule ingest applies to the used records (``binary_task_rule``): in a task
    whose outcomes are all ``true``/``false``, an ``ok`` record whose prediction is some
    other text (``maybe``) becomes ``unparsed`` without ``correct``; ``not_boolean`` marks
    it, for the count per task (``predictions_not_boolean``).
    """
    per_key = grouped_rows.filter(col("_cat").is_null()).group_by(*KEY, drop_null_keys=False).agg(
        col("copies").sum(),
        *(e for c in COMPARED for e in (col(f"{c}_n").sum().alias(f"{c}_n"),
                                        col(f"{c}_min").min().alias(c),
                                        col(f"{c}_max").max().alias(f"{c}_max"))),
    )
    agree = [(col(f"{c}_n") == 0) | ((col(f"{c}_n") == col("copies")) & (col(c) == col(f"{c}_max")))
             for c in COMPARED]
    v = per_key.with_columns(
        (~nw.all_horizontal(*agree, ignore_nulls=False)).alias("conflicting"),
        (col("correct") == 1).alias("correct"),
    )
    used = ~col("conflicting")
    flagged = v.join(binary_tasks(v, used).with_columns(nw.lit(True).alias("_binary")),
                     on="task", how="left")
    return flagged.with_columns(not_boolean(~col("_binary").is_null(), used)).with_columns(
        *binary_task_rule()).select(
        *KEY, "copies", "conflicting", "prediction", "outcome", "correct", "confidence",
        "status", "not_boolean")


def binary_tasks(records: nw.LazyFrame, used: nw.Expr) -> nw.LazyFrame:
    """The tasks (column ``task``) whose used records' outcomes are all ``true``/``false``."""
    is_bool = col("outcome").is_in(list(BOOLEAN_TEXT)).cast(nw.Int64)
    return (records.filter(used & ~col("outcome").is_null())
            .group_by("task").agg(is_bool.min().alias("_all_bool"))
            .filter(col("_all_bool") == 1).select("task"))


def not_boolean(in_binary_task: nw.Expr, used: nw.Expr) -> nw.Expr:
    """Column ``not_boolean``: a used ``ok`` record, in a binary task, predicting no boolean."""
    pred = col("prediction")
    return (in_binary_task & used & (col("status") == "ok") & ~pred.is_null()
            & ~pred.is_in(list(BOOLEAN_TEXT))).fill_null(False).alias("not_boolean")


def binary_task_rule() -> list[nw.Expr]:
    """Ingest's binary-task rule on records marked by :func:`not_boolean`.

    In a task whose outcomes are all ``true``/``false``, an ``ok`` record whose prediction
    is some other text (``maybe``) becomes ``unparsed`` without ``correct``: it counts as
    wrong in ``accuracy_strict`` and is left out of ``accuracy``, like any unreadable
    prediction, instead of being scored as an ordinary wrong answer.
    """
    flag = col("not_boolean")
    return [nw.when(~flag).then(col("correct")).alias("correct"),
            nw.when(flag).then(nw.lit("unparsed")).otherwise(col("status")).alias("status")]


def cell_rows(records: nw.LazyFrame, *, keys: Sequence[str] = CELL_KEY) -> nw.LazyFrame:
    """Used records -> the rows :func:`cells` adds up (self-predictions only).

    ``readable``: status ``ok`` and ``correct`` known; ``correct`` as 0/1. ``keys`` are the
    cell key's columns (:data:`CELL_KEY`, or :data:`CONDITION_CELL_KEY`). ``status`` is
    kept for the counts of rows with nothing to score (``not_asked``, ``unanswered``).
    """
    return records.filter(col("predictor").is_null() | (col("predictor") == col("model"))).select(
        *keys, "prediction", "outcome", col("correct").cast(nw.Int64),
        ((col("status") == "ok") & ~col("correct").is_null()).alias("readable"), "status")


def cells(rows: nw.LazyFrame, *, keys: Sequence[str] = CELL_KEY) -> nw.LazyFrame:
    """The GROUP BY to cells (see :mod:`selfmodel.records.cells` for the columns).

    ``rows`` has the ``keys`` columns (default model x task), ``prediction, outcome,
    correct`` (0/1), ``readable`` and ``status``: :func:`cell_rows` of records. Returns the sums and ``mode_n`` (rows of the most common outcome among
    readable ones); :func:`finish_cells` makes the table of
    :func:`selfmodel.records.cells.to_cells`. A row with nothing to score (status
    ``not_asked`` or ``unanswered``) is counted in ``n_not_asked`` / ``n_unanswered`` alone:
    it is in neither ``n_total`` (so not wrong in strict accuracy) nor ``n_unreadable``.

    Two GROUP BYs, the first per cell and outcome, the second per cell (the mode is the
    largest readable count of an outcome), and no join: a null key (``condition`` of a
    study with one condition) groups as one value on every engine.
    """
    r = col("readable").fill_null(False)
    not_asked, unanswered = col("status") == "not_asked", col("status") == "unanswered"
    scored = ~col("status").is_in(list(NOT_SCORED_STATUSES)).fill_null(False)
    out_t, out_f, pred_t = col("outcome") == "true", col("outcome") == "false", col("prediction") == "true"
    both = (col("prediction").is_in(list(BOOLEAN_TEXT))
            & col("outcome").is_in(list(BOOLEAN_TEXT))).fill_null(True)

    def csum(cond: nw.Expr) -> nw.Expr:
        return nw.when(cond.fill_null(False)).then(1).otherwise(0).sum()

    summed = ("n_total", "n", "k", "n_unreadable", "n_not_asked", "n_unanswered", "n_signal",
              "n_noise", "hits", "false_alarms", "n_pred_yes")
    per_outcome = rows.group_by(*keys, "outcome", drop_null_keys=False).agg(
        csum(scored).alias("n_total"), csum(r).alias("n"),
        nw.when(r).then(col("correct")).otherwise(0).sum().alias("k"),
        csum(~r & scored).alias("n_unreadable"), csum(not_asked).alias("n_not_asked"),
        csum(unanswered).alias("n_unanswered"),
        nw.when(~r | both).then(1).otherwise(0).min().alias("binary"),
        csum(r & out_t).alias("n_signal"), csum(r & out_f).alias("n_noise"),
        csum(r & out_t & pred_t).alias("hits"), csum(r & out_f & pred_t).alias("false_alarms"),
        csum(r & pred_t).alias("n_pred_yes"),
    )
    return per_outcome.group_by(*keys, drop_null_keys=False).agg(
        *(col(c).sum() for c in summed), col("binary").min(),
        col("n").max().alias("mode_n"),
    )


def finish_cells(sums: pl.DataFrame, *, keys: Sequence[str] = CELL_KEY) -> pl.DataFrame:
    """:func:`cells` collected -> the columns, dtypes and order of ``to_cells``.

    ``mode_outcome_share`` is NaN where no record is readable (``n = 0``). With ``keys``
    beyond model x task, their columns follow ``task`` (text; a null key sorts first).
    """
    ints = [c for c, t in CELL_SCHEMA.items() if t == pl.Int64() and c != "k_strict"]
    extra = [k for k in keys if k not in CELL_SCHEMA]
    return sums.with_columns(
        *(pl.col(c).cast(pl.Int64) for c in ints),
        *(pl.col(k).cast(pl.Utf8) for k in extra),
        (pl.col("binary") == 1).alias("binary"),
        pl.col("k").cast(pl.Int64).alias("k_strict"),
        (pl.col("mode_n").fill_null(0).cast(pl.Float64) / pl.col("n").cast(pl.Float64))
        .alias("mode_outcome_share"),
    ).select(list(cell_schema(keys))).sort(*CELL_KEY, *extra, nulls_last=False)


def cell_schema(keys: Sequence[str] = CELL_KEY) -> dict[str, pl.DataType]:
    """Columns and dtypes of the cells of ``keys``: :data:`CELL_SCHEMA`, extra keys after ``task``.

    >>> list(cell_schema(CONDITION_CELL_KEY))[:4]
    ['model', 'task', 'condition', 'n_total']
    """
    extra = {k: pl.Utf8() for k in keys if k not in CELL_SCHEMA}
    rest = {c: t for c, t in CELL_SCHEMA.items() if c not in CELL_KEY}
    return {**{c: CELL_SCHEMA[c] for c in CELL_KEY}, **extra, **rest}


def accounting(grouped_rows: nw.LazyFrame, variant_rows: nw.LazyFrame) -> tuple[Any, Any]:
    """Two small tables behind ``read = used + quarantined + duplicate``.

    Rows read per (file, category) (category null for valid rows), and per (conflicting,
    status, model, task, not_boolean) the keys and their copies.
    """
    per_file = grouped_rows.group_by("source_file", "_cat", drop_null_keys=False).agg(
        col("copies").sum().alias("n"))
    per_variant = variant_rows.group_by(
        "conflicting", "status", "model", "task", "not_boolean", drop_null_keys=False
    ).agg(nw.len().alias("keys"), col("copies").sum().alias("n"))
    return per_file, per_variant


def raw_rows(frame: Any, source_file: str, sources: Mapping[str, str | None],
             defaults: Mapping[str, str] | None = None, err: str | None = "_err") -> nw.LazyFrame:
    """The raw rows :func:`checked` reads, from any frame narwhals reads (one file's rows).

    Each canonical column is its source column (``sources``) cast to text, else its
    default, else null; every row is named ``source_file``; ``err`` is the frame's column
    of read failures (``None``: the frame has none). The one column mapping of the
    engines.
    """
    defaults = defaults or {}
    return nw.from_native(frame).lazy().select(
        nw.lit(source_file).alias("source_file"),
        (col(err) if err is not None else nw.lit(None, nw.String)).alias("_err"),
        *((col(s).cast(nw.String) if s is not None else nw.lit(defaults.get(c), nw.String))
          .alias(c) for c, s in ((c, sources.get(c)) for c in INPUT_COLUMNS)))


def raw_records(records: Any, *, source_file: str = "records") -> nw.LazyFrame:
    """Raw rows of a table that already has canonical column names (any types).

    The table is any frame narwhals reads (a Spark DataFrame of ``records.parquet`` on a
    cluster, a DuckDB relation, a polars frame); its columns are cast to text, the absent
    ones read as null, and every row is named ``source_file``.
    """
    present = set(nw.from_native(records).lazy().collect_schema().names())
    return raw_rows(records, source_file, {c: c for c in INPUT_COLUMNS if c in present}, err=None)


def cells_of(raw: Any, *, tasks: tuple[str, ...] | None = None,
             keys: Sequence[str] = CELL_KEY) -> pl.DataFrame:
    """The whole reduction of raw rows (on their engine) to the cells of ``to_cells``."""
    v = variants(grouped(checked(raw, tasks=tasks)))
    sums = cells(cell_rows(v.filter(~col("conflicting")), keys=keys), keys=keys)
    return finish_cells(sums.collect(backend="polars").to_native(), keys=keys)
