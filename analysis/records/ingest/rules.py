"""The validation rules a record must pass, and the normalisation of its values."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from itertools import product
from typing import Final

import polars as pl

from selfmodel.records.contract import (
    FALSE_STRINGS,
    MISSING_STRINGS,
    RECORD_SCHEMA,
    REQUIRED,
    STATUSES,
    TRUE_STRINGS,
)
from selfmodel.records.ingest.config import INPUT_COLUMNS
from selfmodel.records.ingest.readers import _FORM_PROBE, _LINE

# --------------------------------------------------------------------------- validation

#: Identifier columns: a value that is a list or an object is not an identifier.
ID_COLUMNS: Final = ("model", "predictor", "task", "item_id", "run_id", "cluster")
#: Quarantine category of an identifier that is a list or an object.
NOT_AN_ID: Final = "invalid identifier"


#: An object's text: ``{`` then (after white space) a quoted key or the closing ``}``.
OBJECT_START: Final = r'^\{\s*["}]'


def looks_nested(text: pl.Expr) -> pl.Expr:
    """Whether stripped text is a list (``[...]``) or a JSON object (``{"...}``, ``{}``).

    The one rule for every format: a JSON array or object, a Parquet list or struct (read
    as its JSON text) and CSV text written like one are all the same to it. Text such as
    ``{{ template }}`` is not an object.
    """
    return (text.str.starts_with("[") & text.str.ends_with("]")) | (
        text.str.ends_with("}") & text.str.contains(OBJECT_START)
    )


def _text(name: str, dtype: pl.DataType) -> pl.Expr:
    """Stripped text of a column of any scalar dtype; empty, null, NaN, None become null."""
    expr = pl.col(name)
    if dtype != pl.Utf8:
        expr = expr.cast(pl.Utf8)
    expr = expr.str.strip_chars()
    return pl.when((expr == "") | expr.is_in(_MISSING_SPELLINGS)).then(None).otherwise(expr)


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
_MISSING_SPELLINGS: Final = _case_variants(MISSING_STRINGS)


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
        if (
            (values == "").any()
            or values.is_in(_MISSING_SPELLINGS).any()
            or not (values.str.strip_chars() == values).all()
        ):
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


def _native(c: str, dtype: pl.DataType) -> bool:
    """Whether a typed optional column is used as it is (not through its text)."""
    return (
        dtype == pl.Boolean
        or (c == "confidence" and dtype.is_numeric())
        or (c == "sample" and (dtype.is_integer() or dtype.is_float()))
    )


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
    c = _Columns(schema, absent, forms)
    # Text of every column that needs it; a typed column's text only for reason messages,
    # which are built on the failing rows alone (cheap there).
    native = {n for n in ("confidence", "sample", "correct") if c.typed(n) and _native(n, schema[n])}
    texts = [
        _text(n, schema[n]).alias(f"__t_{n}")
        for n in INPUT_COLUMNS
        if n not in absent and n not in native and n not in forms
    ]
    reason_texts = [_text(n, schema[n]).alias(f"__t_{n}") for n in sorted(native)]
    derived = [
        c.binary_text("prediction").alias("__pred"),
        c.binary_text("outcome").alias("__out"),
        _correct(c).alias("__corr"),
        _confidence(c).alias("__conf"),
        _sample(c).alias("__sample"),
        _status(c).alias("__status"),
    ]
    # no prediction: unreadable, unless `correct` scores the row (README: "or correct")
    eff_status = pl.when((_STATUS == "ok") & _PRED.is_null() & _CORR.is_null()).then(
        pl.lit("unparsed")).otherwise(_STATUS)
    rules = _rule_list(c, tasks, eff_status)
    return rules, _outputs(c, eff_status), [texts, derived], reason_texts


_PRED, _OUT, _CORR = pl.col("__pred"), pl.col("__out"), pl.col("__corr")
_CONF, _SMP, _STATUS = pl.col("__conf"), pl.col("__sample"), pl.col("__status")
_NULL_TEXT = pl.lit(None, dtype=pl.Utf8)


class _Columns:
    """The input columns of one file as :func:`_rules` reads them (text, given, typed)."""

    def __init__(
        self, schema: Mapping[str, pl.DataType], absent: frozenset[str], forms: Mapping[str, str]
    ) -> None:
        self.schema, self.absent, self.forms = schema, absent, forms

    def tc(self, c: str) -> pl.Expr:
        """The stripped text of ``c`` (the column itself when it needs no normalisation)."""
        if c in self.absent:
            return _NULL_TEXT
        return pl.col(c) if c in self.forms else pl.col(f"__t_{c}")

    def given(self, c: str) -> pl.Expr:
        """Whether the row has a (non-empty) value in ``c``."""
        if c in self.absent:
            return pl.lit(False)
        if self.schema[c] == pl.Utf8:
            return self.tc(c).is_not_null()
        nan = pl.col(c).is_nan() if self.schema[c].is_float() else pl.lit(False)  # NaN: missing
        return pl.col(c).is_not_null() & ~nan

    def typed(self, c: str) -> bool:
        return c not in self.absent and self.schema[c] != pl.Utf8

    def binary_text(self, c: str) -> pl.Expr:
        """Prediction / outcome: canonical booleans or stripped text."""
        if c in self.absent:
            return _NULL_TEXT
        if self.forms.get(c) == "binary":
            return pl.col(c)
        b = _bool_of(self.tc(c))
        return pl.when(b).then(pl.lit("true")).when(~b).then(pl.lit("false")).otherwise(self.tc(c))

    def shown(self, c: str) -> pl.Expr:
        return self.tc(c).fill_null("null")


def _correct(c: _Columns) -> pl.Expr:
    if c.typed("correct") and c.schema["correct"] == pl.Boolean:
        correct = pl.col("correct")
    elif "correct" in c.absent:
        correct = pl.lit(None, dtype=pl.Boolean)
    elif c.forms.get("correct") == "binary":
        correct = pl.col("correct") == "true"
    else:
        correct = _bool_of(c.tc("correct"))
    return correct


def _confidence(c: _Columns) -> pl.Expr:
    cdt = c.schema["confidence"]
    if "confidence" in c.absent:
        confidence = pl.lit(None, dtype=pl.Float64)
    elif cdt.is_numeric():
        confidence = pl.col("confidence").cast(pl.Float64).fill_nan(None)  # NaN: missing
    elif cdt == pl.Boolean:
        confidence = pl.lit(None, dtype=pl.Float64)
    else:
        confidence = c.tc("confidence").cast(pl.Float64, strict=False)
    return confidence


def _sample(c: _Columns) -> pl.Expr:
    sdt = c.schema["sample"]
    if "sample" in c.absent:
        sample = pl.lit(None, dtype=pl.Int64)
    elif sdt.is_integer():
        sample = pl.col("sample").cast(pl.Int64, strict=False)  # UInt64 > 2**63: invalid
    elif sdt == pl.Boolean:
        sample = pl.lit(None, dtype=pl.Int64)
    else:
        as_float = (
            pl.col("sample").cast(pl.Float64)
            if sdt.is_float()
            else c.tc("sample").cast(pl.Float64, strict=False)
        )
        integral = pl.when(
            as_float.is_finite() & (as_float == as_float.floor()) & (as_float.abs() < 2.0**53)
        ).then(as_float.cast(pl.Int64))
        sample = (
            integral
            if sdt.is_float()
            else pl.coalesce(c.tc("sample").cast(pl.Int64, strict=False), integral)
        )
    return sample


def _status(c: _Columns) -> pl.Expr:
    if "status" in c.absent:
        status_text = pl.lit("ok")
    elif c.forms.get("status") == "status":
        status_text = pl.col("status").fill_null("ok")
    else:
        status_text = c.tc("status").str.to_lowercase().fill_null("ok")
    return status_text


def _rule_list(
    c: _Columns, tasks: tuple[str, ...] | None, eff_status: pl.Expr
) -> list[tuple[str, pl.Expr, pl.Expr]]:
    """``(category, condition, reason)`` of each rule, in order."""
    equal = _PRED == _OUT
    rules: list[tuple[str, pl.Expr, pl.Expr]] = [
        ("missing value", c.tc(n).is_null(), pl.lit(f"missing value in required column '{n}'"))
        for n in REQUIRED
    ]
    rules += [
        (
            NOT_AN_ID,
            looks_nested(c.tc(n)),
            pl.format(
                "invalid {} '{}' (a list or object is not an identifier; flatten it to text)",
                pl.lit(n),
                c.shown(n),
            ),
        )
        for n in ID_COLUMNS
        if n not in c.absent
    ]
    rules += _value_rules(c)
    if tasks is not None:
        rules.append(
            (
                "unknown task",
                ~c.tc("task").is_in(list(tasks)),
                pl.format(
                    "unknown task '{}' (configured tasks: {})",
                    c.shown("task"),
                    pl.lit(", ".join(tasks)),
                ),
            )
        )
    rules += [
        (
            "no outcome",
            # A row declared unreadable (unparsed/refused/error) is kept without an outcome:
            # it counts as wrong in accuracy_strict, as in papers that score failures as wrong.
            _OUT.is_null() & _CORR.is_null() & (_STATUS == "ok"),
            pl.lit("no outcome and no correct (nothing to check the prediction against)"),
        ),
        (
            "correct disagrees",
            (eff_status == "ok") & _CORR.is_not_null() & equal.is_not_null() & (_CORR != equal),
            pl.format(
                "correct disagrees with prediction == outcome "
                "(correct={}, prediction='{}', outcome='{}')",
                _CORR.cast(pl.Utf8),
                _PRED,
                _OUT,
            ),
        ),
    ]
    return rules


def _value_rules(c: _Columns) -> list[tuple[str, pl.Expr, pl.Expr]]:
    """The rules on the optional columns' values (status, confidence, sample, correct)."""
    rules: list[tuple[str, pl.Expr, pl.Expr]] = []
    if "status" not in c.absent:
        rules.append(
            (
                "invalid status",
                ~_STATUS.is_in(list(STATUSES)),
                pl.format(
                    "invalid status '{}' (allowed: {})",
                    c.shown("status"),
                    pl.lit(", ".join(STATUSES)),
                ),
            )
        )
    if "confidence" not in c.absent:
        rules.append(
            (
                "invalid confidence",
                (c.given("confidence") & _CONF.is_null())
                | (
                    _CONF.is_not_null()
                    & (_CONF.is_nan() | _CONF.is_infinite() | (_CONF < 0) | (_CONF > 1))
                ),
                pl.format(
                    "invalid confidence '{}' (must be a finite number in [0, 1])",
                    c.shown("confidence"),
                ),
            )
        )
    if "sample" not in c.absent:
        rules.append(
            (
                "invalid sample",
                (c.given("sample") & _SMP.is_null()) | (_SMP < 0),
                pl.format("invalid sample '{}' (must be a non-negative integer)", c.shown("sample")),
            )
        )
    if "correct" not in c.absent:
        rules.append(
            (
                "invalid correct",
                c.given("correct") & _CORR.is_null(),
                pl.format("invalid correct '{}' (must be true/false/1/0/yes/no)", c.shown("correct")),
            )
        )
    return rules


def _outputs(c: _Columns, eff_status: pl.Expr) -> list[pl.Expr]:
    """The record columns of a valid row."""
    equal = _PRED == _OUT
    outputs = [
        c.tc("model").alias("model"),
        c.tc("task").alias("task"),
        c.tc("item_id").alias("item_id"),
        _PRED.alias("prediction"),
        _OUT.alias("outcome"),
        pl.when(eff_status != "ok")
        .then(None)
        .when(_CORR.is_not_null())
        .then(_CORR)
        .otherwise(equal)
        .alias("correct"),
        pl.coalesce(c.tc("predictor"), c.tc("model")).alias("predictor"),
        _CONF.alias("confidence"),
        c.tc("cluster").alias("cluster"),
        eff_status.alias("status"),
        c.tc("run_id").alias("run_id"),
        _SMP.fill_null(0).alias("sample"),
        pl.col(_LINE).alias("source_line"),
    ]
    return outputs
