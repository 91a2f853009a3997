r"""Applying a ``format = "records"`` mapping to the rows of one record file.

:class:`RecordsTransform` is called by ingest on each file's rows (every value still as the
file holds it, with its line number) before the validation rules. It returns the mapped rows
and, for the rows the mapping cannot read, ``(line, category, reason)``: those rows are
quarantined with that reason, so the accounting ``read = used + quarantined + duplicate``
still holds and nothing is dropped silently.

Order of the steps: ``[join]`` (the answer key), the top-level constants, ``[map]``, the
confidence (per-option probability, ``normalize``, declared ``scale``), ``[answered]`` (the
outcome), then ``[prediction]`` (confidence >= threshold).
"""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import Any

import polars as pl

from selfmodel.records.contract import InputError
from selfmodel.records.importers.mapping.records_spec import RecordsMapping, load_records_mapping
from selfmodel.records.ingest.columns import kind_fits
from selfmodel.records.reduction import boolean, text
from selfmodel.records.registry import format_input_error

__all__ = ["RecordsTransform", "load_transform"]

LINE = "__line"
_BAD = "__bad_reason"
_CAT = "__bad_cat"


def without_join_file(paths: list[Path], transform: RecordsTransform | None
                      ) -> tuple[list[Path], list[dict[str, str]]]:
    """The record files minus the mapping's joined file, and that file as not read.

    An answer key kept in the records' folder is not records.
    """
    if transform is None or transform.mapping.join_file is None:
        return paths, []
    key = transform.mapping.join_file.resolve()
    kept = [p for p in paths if Path(p).resolve() != key]
    dropped = [{"path": Path(p).as_posix(), "reason": "the file the mapping joins ([join] file)"}
               for p in paths if Path(p).resolve() == key]
    return kept, dropped


def load_transform(path: Path | str) -> RecordsTransform:
    """The transform of the mapping file at ``path`` (see :class:`RecordsTransform`)."""
    return RecordsTransform(load_records_mapping(path))


class RecordsTransform:
    """Apply a records mapping to a file's rows; count what it did for ``ingest.json``.

    Parameters
    ----------
    mapping
        The parsed mapping.
    """

    def __init__(self, mapping: RecordsMapping) -> None:
        self.mapping = mapping
        self.counts: dict[str, int] = {"rows_mapped": 0, "confidence_rescaled": 0,
                                       "predictions_derived": 0, "outcomes_derived": 0,
                                       "joined": 0}
        self._key: pl.DataFrame | None = None

    @property
    def read_columns(self) -> set[str]:
        """Columns of the record files that must be read (JSONL keys), not the joined file's."""
        cols = self.mapping.source_columns()
        if self.mapping.join_file is not None:
            cols -= set(self._key_frame().columns)
        return cols

    def summary(self) -> dict[str, Any]:
        """What the mapping declared and did, for ``ingest.json`` (``study_mapping``)."""
        m = self.mapping
        return {
            "path": m.path,
            "confidence": ({"column": m.confidence_column, "options": m.options or None,
                            "chosen": m.chosen, "normalize": m.normalize,
                            "scale": list(m.scale) if m.scale else [0.0, 1.0]}
                           if (m.confidence_column or m.options) else None),
            "prediction": (f"confidence >= {m.threshold}: the model says it will be right"
                           if m.threshold is not None else None),
            "outcome": ("whether the task was answered right"
                        if (m.answered_column or m.answer) else None),
            "join": (None if m.join_file is None else
                     {"file": str(m.join_file), "left_on": m.left_on, "right_on": m.right_on}),
            "counts": dict(self.counts),
        }

    def __call__(self, name: str, frame: pl.DataFrame, present: list[str]
                 ) -> tuple[pl.DataFrame, list[tuple[int, str, str, str | None]]]:
        """Map one file's rows: the mapped rows and the rows quarantined by the mapping.

        ``present`` are the columns the file has (a JSONL key only when some line gives
        it a value); the joined file's columns are added to them.
        """
        m = self.mapping
        frame = frame.with_columns(pl.lit(None, dtype=pl.Utf8).alias(_BAD),
                                   pl.lit(None, dtype=pl.Utf8).alias(_CAT))
        # the columns read by ingest's value rules (reduction.text), as ingest reads them: text
        read = {m.confidence_column, m.chosen, m.answered_column, m.answer, m.key, m.left_on,
                *m.options.values()}
        frame = frame.with_columns(pl.col(c).cast(pl.Utf8) for c in read if c in frame.columns)
        present = list(present)
        if m.join_file is not None:
            self._check_columns(name, present, [m.left_on or ""])
            frame = self._join(name, frame)
            present += [c for c in self._key_frame().columns if not c.startswith("__")]
        self._check_columns(name, present, sorted(m.source_columns()), frame)
        frame = frame.with_columns(
            *(pl.lit(_constant(v, name), dtype=pl.Utf8).alias(c) for c, v in m.constants.items()),
            *(pl.col(s).alias(c) for c, s in m.columns.items()),
        )
        if m.confidence_column or m.options:
            frame = self._confidence(frame)
        if m.answered_column or m.answer:
            frame = self._answered(frame)
        if m.threshold is not None:
            conf = pl.col("confidence")
            # the record's confidence is the stated probability that the *prediction* is
            # right (docs/records.md): for "I will be wrong" that is 1 - the stated chance
            frame = frame.with_columns(
                pl.when(conf.is_null()).then(None)
                .when(conf >= m.threshold).then(pl.lit("true")).otherwise(pl.lit("false"))
                .alias("prediction"),
                pl.when(conf >= m.threshold).then(conf).otherwise(1.0 - conf).alias("confidence"))
        # the columns read are dropped, unless the mapping wrote that canonical column itself:
        # a file's own 'correct' read by [answered] is task accuracy and must not reach ingest
        # as the self-prediction's 'correct'
        written = set(m.columns) | set(m.constants)
        written |= {"confidence"} if (m.confidence_column or m.options) else set()
        written |= {"outcome"} if (m.answered_column or m.answer) else set()
        written |= {"prediction"} if m.threshold is not None else set()
        consumed = [c for c in m.source_columns() if c not in written and c in frame.columns]
        bad = frame.filter(pl.col(_BAD).is_not_null())
        good = frame.filter(pl.col(_BAD).is_null()).drop(_BAD, _CAT, *consumed)
        self._count(good)
        return good, [(int(r[0]), str(r[1]), str(r[2]), None)
                      for r in bad.select(LINE, _CAT, _BAD).iter_rows()]

    def _count(self, good: pl.DataFrame) -> None:
        m = self.mapping
        n = good.height
        self.counts["rows_mapped"] += n
        if m.scale is not None:
            self.counts["confidence_rescaled"] += int(good["confidence"].is_not_null().sum())
        if m.threshold is not None:
            self.counts["predictions_derived"] += int(good["prediction"].is_not_null().sum())
        if m.answered_column or m.answer:
            self.counts["outcomes_derived"] += int(good["outcome"].is_not_null().sum())
        if m.join_file is not None:
            self.counts["joined"] += n

    # ------------------------------------------------------------------ steps

    def _check_columns(self, name: str, present: list[str], wanted: list[str],
                       frame: pl.DataFrame | None = None) -> None:
        """Every column the mapping names must exist (a typo never falls back silently).

        The closest column suggested is of the kind the mapped field needs: for ``[map]
        model = "modl"`` a column of booleans or numbers is never suggested (``frame``).
        """
        fills = {source: canonical for canonical, source in self.mapping.columns.items()}
        for col in wanted:
            if col in present:
                continue
            canonical = fills.get(col)
            fit = [c for c in present if canonical is None or kind_fits(canonical, frame, c)]
            close = difflib.get_close_matches(col, fit, n=1, cutoff=0.6)
            raise InputError(format_input_error(
                name, f"column '{col}' named in the mapping {self.mapping.path} is not in the "
                f"file (present: {', '.join(present[:20])})",
                f"Fix the mapping, e.g. '{close[0]}'" if close else "Fix the mapping",
                line=1 if name.endswith((".csv", ".csv.gz")) else None, column=col))

    def _fail(self, frame: pl.DataFrame, cond: pl.Expr, cat: str, reason: pl.Expr
              ) -> pl.DataFrame:
        """Mark rows where ``cond`` holds (and no earlier step failed) as quarantined."""
        hit = pl.col(_BAD).is_null() & cond.fill_null(False)
        return frame.with_columns(
            pl.when(hit).then(reason).otherwise(pl.col(_BAD)).alias(_BAD),
            pl.when(hit).then(pl.lit(cat)).otherwise(pl.col(_CAT)).alias(_CAT),
        )

    def _number(self, frame: pl.DataFrame, col: str, what: str
                ) -> tuple[pl.DataFrame, pl.Expr]:
        """A column as a number; text that is not one quarantines its row."""
        value = text(col, pl)
        num = value.cast(pl.Float64, strict=False)
        num = pl.when(num.is_nan() | num.is_infinite()).then(None).otherwise(num)
        frame = self._fail(frame, value.is_not_null() & num.is_null(), "invalid confidence",
                           pl.format(f"{what} '{{}}' (column '{col}') is not a finite number",
                                     value))
        return frame, num

    def _confidence(self, frame: pl.DataFrame) -> pl.DataFrame:
        m = self.mapping
        if m.confidence_column:
            frame, x = self._number(frame, m.confidence_column, "confidence")
            shown = pl.col(m.confidence_column).cast(pl.Utf8)
        else:
            chosen = text(m.chosen or "", pl)
            probs: dict[str, pl.Expr] = {}
            for label, col in m.options.items():
                frame, probs[label] = self._number(frame, col, f"probability of option {label}")
            frame = self._fail(
                frame, chosen.is_not_null() & ~chosen.is_in(list(m.options)), "invalid chosen option",
                pl.format(f"chosen option '{{}}' (column '{m.chosen}') is not one of "
                          f"{', '.join(m.options)}", chosen))
            x = pl.lit(None, dtype=pl.Float64)
            for label in reversed(list(m.options)):
                x = pl.when(chosen == label).then(probs[label]).otherwise(x)
            shown = x.cast(pl.Utf8)
        low, high = m.scale if m.scale is not None else (0.0, 1.0)
        frame = self._fail(
            frame, (x < low) | (x > high), "confidence outside declared scale",
            pl.format(f"confidence {{}} is outside the declared scale [{low:g}, {high:g}]",
                      shown))
        if m.normalize:  # a share of the options' sum: on the scale of the options already
            total = pl.sum_horizontal(*probs.values())
            frame = self._fail(frame, x.is_not_null() & (total <= 0), "invalid confidence",
                               pl.lit("the option probabilities sum to 0"))
            conf = pl.when(total > 0).then(x / total).otherwise(None)
        else:
            conf = (x - low) / (high - low)
        # 12 decimals: 6 of 10 is 0.6 (not 0.6000000000000001), so 5 of 10 meets a 0.5 threshold
        return frame.with_columns(conf.round(12).alias("confidence"))

    def _answered(self, frame: pl.DataFrame) -> pl.DataFrame:
        m = self.mapping
        if m.answered_column:
            col = m.answered_column
            value = text(col, pl)
            b = boolean(value, pl)
            frame = self._fail(frame, value.is_not_null() & b.is_null(), "invalid answered",
                               pl.format(f"'{{}}' (column '{col}', whether the task was "
                                         "answered right) is not a boolean", value))
        else:
            a = text(m.answer or "", pl)
            k = text(m.key or "", pl)
            b = pl.when(a.is_null() | k.is_null()).then(None).otherwise(a == k)
        outcome = pl.when(b.is_null()).then(None).when(b).then(pl.lit("true")) \
            .otherwise(pl.lit("false"))
        return frame.with_columns(outcome.alias("outcome"))

    def _join(self, name: str, frame: pl.DataFrame) -> pl.DataFrame:
        m = self.mapping
        assert m.left_on is not None and m.right_on is not None and m.join_file is not None
        key = self._key_frame()
        clash = sorted(set(key.columns) - {"__key", "__matched"} & set(frame.columns))
        if clash:
            raise InputError(format_input_error(
                m.path, f"columns {', '.join(clash)} of the joined file {m.join_file} are also "
                f"in {name}", 'Set [join] prefix = "key_" to tell them apart', column="prefix"))
        left = text(m.left_on, pl)
        frame = frame.with_columns(left.alias("__key")).join(
            key, on="__key", how="left", maintain_order="left")
        frame = self._fail(frame, pl.col("__key").is_null(), "no join key",
                           pl.lit(f"no join key '{m.left_on}'"))
        frame = self._fail(frame, pl.col("__matched").is_null(), "not in joined file",
                           pl.format(f"no row in {m.join_file.name} with {m.right_on} = '{{}}'",
                                     pl.col("__key")))
        return frame.drop("__key", "__matched")

    def _key_frame(self) -> pl.DataFrame:
        """The joined file, every value as text, its key unique (read once)."""
        if self._key is not None:
            return self._key
        m = self.mapping
        assert m.join_file is not None and m.right_on is not None
        key = _read_any(m.join_file)
        if m.right_on not in key.columns:
            raise InputError(format_input_error(
                m.join_file, f"join key '{m.right_on}' is not a column (present: "
                f"{', '.join(key.columns[:20])})", "Fix [join] right_on (or on) in "
                f"{m.path}", line=1, column=m.right_on))
        key = key.with_columns(text(m.right_on, pl).alias("__key"),
                               pl.lit(True).alias("__matched"))
        dup = key.filter(pl.col("__key").is_not_null() & pl.col("__key").is_duplicated())
        if dup.height:
            raise InputError(format_input_error(
                m.join_file, f"key {m.right_on} = '{dup['__key'][0]}' appears "
                f"{dup.filter(pl.col('__key') == dup['__key'][0]).height} times",
                "Give each key one row in the joined file", column=m.right_on))
        keep = [c for c in key.columns if c not in (m.right_on, "__key", "__matched")]
        key = key.filter(pl.col("__key").is_not_null()).select(
            "__key", "__matched", *(pl.col(c).alias(m.prefix + c) for c in keep))
        self._key = key
        return key


def _constant(value: str, name: str) -> str:
    """A top-level constant; ``@folder`` and ``@file`` are read from the file's path ``name``.

    >>> _constant("@folder", "logs/gpt-4o/sciq.csv"), _constant("@file", "logs/gpt-4o/sciq.csv")
    ('gpt-4o', 'sciq')
    >>> _constant("trivia", "logs/gpt-4o/sciq.csv")
    'trivia'
    """
    if value == "@folder":
        return Path(name).absolute().parent.name
    if value == "@file":
        return Path(Path(name).name.removesuffix(".gz")).stem
    return value


def _read_any(path: Path) -> pl.DataFrame:
    """A CSV, JSONL or Parquet file with every column as text (one-line error otherwise)."""
    name = path.name.lower()
    try:
        if name.endswith((".csv", ".csv.gz")):
            return pl.read_csv(path, infer_schema=False)
        if name.endswith((".jsonl", ".ndjson", ".jsonl.gz")):
            frame = pl.read_ndjson(path, infer_schema_length=None)
        elif name.endswith(".parquet"):
            frame = pl.read_parquet(path)
        else:
            raise InputError(format_input_error(
                path, "the joined file must be .csv, .jsonl or .parquet", "Convert it"))
    except (OSError, pl.exceptions.PolarsError) as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise InputError(format_input_error(path, f"cannot read the joined file ({first})",
                                            "Check the path and format")) from None
    return frame.with_columns(pl.all().cast(pl.Utf8))

