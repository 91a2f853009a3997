"""The validation rules a record must pass, and the normalisation of its values."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from itertools import product
from typing import Final

import polars as pl

from analysis.contract import (
    FALSE_STRINGS,
    RECORD_SCHEMA,
    REQUIRED,
    STATUSES,
    TRUE_STRINGS,
)
from analysis.ingest.config import INPUT_COLUMNS
from analysis.ingest.readers import _FORM_PROBE, _LINE

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
