r"""A mapping file for plain record files (JSONL, CSV, Parquet): ``format = "records"``.

``selfmodel ingest|run|describe|fit FILES --mapping study.toml`` reads the files as ingest
always does (every row accounted for, by file and line) and applies this mapping to each
file's rows before validation. It is data, never executed. It can

* rename columns (``[map]``, as ``--map``) and fix constants (``task = "trivia"``), or read
  them from each file's path (``model = "@folder"``: one folder of logs per model);
* read a stated confidence on a *declared* scale (``[confidence] scale = [0, 10]``, never
  guessed) or as the probability of the chosen option among per-option columns;
* say whether the task was answered right (``[answered]``: a boolean column, or the
  answer against an answer key), which is the *behaviour* being predicted, not a
  self-prediction;
* derive the self-prediction "I will be right" as confidence >= ``[prediction] threshold``;
* join a second file (an answer key) on a key (``[join]``).

A ``correct`` column is ambiguous (was the *task* answered right, or the
*self-prediction*?), so mapping it needs ``correct_means = "task"`` or
``"self_prediction"``; task accuracy alone is never analysed as self-prediction. The
reference of every key is ``docs/mapping.md``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, ClassVar, Final

from pydantic import Field, StringConstraints, ValidationInfo, field_validator, model_validator

from selfmodel.common.toml_errors import did_you_mean
from selfmodel.records import toml_model
from selfmodel.records.toml_model import Bad, Table

__all__ = ["RECORDS_KEYS", "RecordsMapping", "load_records_mapping"]

#: Top-level keys of a records mapping.
RECORDS_KEYS: Final = ("format", "task", "model", "predictor", "run_id", "correct_means",
                       "map", "confidence", "answered", "prediction", "join")
CONSTANTS: Final = ("task", "model", "predictor", "run_id")
#: Values of a top-level constant read from each record file's path, not written out.
PATH_VALUES: Final = ("@folder", "@file")
#: Canonical columns ``[map]`` may fill.
MAP_FIELDS: Final = ("model", "task", "item_id", "prediction", "outcome", "correct",
                     "predictor", "confidence", "cluster", "condition", "status", "run_id",
                     "sample")
CONFIDENCE_KEYS: Final = ("column", "scale", "options", "chosen", "normalize")
ANSWERED_KEYS: Final = ("column", "answer", "key")
PREDICTION_KEYS: Final = ("threshold",)
JOIN_KEYS: Final = ("file", "on", "left_on", "right_on", "prefix")
CORRECT_MEANS: Final = ("task", "self_prediction")


@dataclass(frozen=True)
class RecordsMapping:
    """A parsed ``format = "records"`` mapping (see the module docstring).

    Attributes
    ----------
    columns
        Canonical column -> source column (``[map]``).
    constants
        Canonical column -> constant text (top-level ``task``, ``model`` ...).
    confidence_column
        The column of a stated confidence (``[confidence] column``).
    scale
        The declared scale ``(low, high)`` of the confidence: ``(x - low) / (high - low)``.
    options
        Option label -> column of its stated probability (``[confidence] options``).
    chosen
        The column naming the chosen option (with ``options``).
    normalize
        Divide the chosen option's probability by the sum over the options.
    answered_column
        A boolean column: was the task answered right (the outcome).
    answer, key
        Columns compared to say whether the task was answered right (``answer == key``).
    threshold
        ``prediction`` = confidence >= threshold ("I will be right").
    join_file, left_on, right_on, prefix
        The second file joined on ``left_on`` (records) = ``right_on`` (that file), its
        columns added with ``prefix``.
    path
        The mapping file (for messages).
    """

    columns: dict[str, str] = field(default_factory=dict)
    constants: dict[str, str] = field(default_factory=dict)
    confidence_column: str | None = None
    scale: tuple[float, float] | None = None
    options: dict[str, str] = field(default_factory=dict)
    chosen: str | None = None
    normalize: bool = False
    answered_column: str | None = None
    answer: str | None = None
    key: str | None = None
    threshold: float | None = None
    join_file: Path | None = None
    left_on: str | None = None
    right_on: str | None = None
    prefix: str = ""
    path: str | None = None

    def source_columns(self) -> set[str]:
        """Every column of the record files the mapping reads (JSONL keys to load)."""
        cols = set(self.columns.values()) | set(self.options.values())
        cols |= {c for c in (self.confidence_column, self.chosen, self.answered_column,
                             self.answer, self.key, self.left_on) if c}
        return cols


_Text = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1)]


def _text_hints(table: str | None, *keys: str) -> dict[str, tuple[str, str]]:
    where = f"[{table}] " if table else ""
    return {k: (f"{where}{k} must be a non-empty column name or text", f'Write {k} = "<name>"')
            for k in keys}


class _Confidence(Table):
    column: _Text | None = None
    scale: Annotated[list[float], Field(min_length=2, max_length=2)] | None = None
    options: dict[str, _Text] = {}
    chosen: _Text | None = None
    normalize: bool = False
    UNKNOWN: ClassVar[str] = "unknown key in [confidence]"
    HINTS: ClassVar[dict[str, tuple[str, str]]] = {
        **_text_hints("confidence", "column", "chosen"),
        "scale": ("scale must be [low, high] with low < high",
                  "Write scale = [0, 10] (or [0, 100]) as the prompt asked"),
        "options": ("options must be a table of option = column",
                    'Write options = { A = "p_A", B = "p_B" }'),
        "normalize": ("normalize must be true or false", "Write normalize = true")}

    @model_validator(mode="after")
    def _together(self) -> _Confidence:
        if self.scale is not None and not self.scale[0] < self.scale[1]:
            raise Bad("scale", *self.HINTS["scale"])
        if self.options and self.column:
            raise Bad("options", "give either column or options, not both",
                      "Keep column for one stated confidence, options for per-option "
                      "probabilities")
        if bool(self.options) != bool(self.chosen):
            raise Bad("options" if self.options else "chosen", "options and chosen go together",
                      'Write options = { A = "p_A", ... } and chosen = "<column of the chosen '
                      'option>"')
        if self.normalize and not self.options:
            raise Bad("normalize", "normalize needs options", "Drop normalize, or give options")
        return self


class _Answered(Table):
    column: _Text | None = None
    answer: _Text | None = None
    key: _Text | None = None
    UNKNOWN: ClassVar[str] = "unknown key in [answered]"
    HINTS: ClassVar[dict[str, tuple[str, str]]] = _text_hints("answered", *ANSWERED_KEYS)

    @model_validator(mode="after")
    def _together(self) -> _Answered:
        if self.column and (self.answer or self.key):
            raise Bad("column", "give either column or answer and key, not both",
                      "column is a boolean column; answer and key are compared")
        if bool(self.answer) != bool(self.key):
            raise Bad("answer" if self.answer else "key", "answer and key go together",
                      'Write answer = "<the model\'s answer>" and key = "<the right answer>"')
        return self


class _Prediction(Table):
    threshold: Annotated[float, Field(ge=0, le=1)] | None = None
    UNKNOWN: ClassVar[str] = "unknown key in [prediction]"
    HINTS: ClassVar[dict[str, tuple[str, str]]] = {"threshold": (
        "threshold must be a number in [0, 1] (on the rescaled confidence)",
        "Write threshold = 0.5")}


class _Join(Table):
    file: _Text | None = None
    on: _Text | None = None
    left_on: _Text | None = None
    right_on: _Text | None = None
    prefix: str = ""
    UNKNOWN: ClassVar[str] = "unknown key in [join]"
    HINTS: ClassVar[dict[str, tuple[str, str]]] = {
        **_text_hints("join", "file", "on", "left_on", "right_on"),
        "prefix": ("prefix must be text", 'Write prefix = "key_"')}

    @model_validator(mode="after")
    def _keys(self) -> _Join:
        if self.model_fields_set and self.file is None:
            raise Bad(None, "[join] needs file", 'Write file = "answer_key.csv"')
        if self.file is not None and None in (self.left_on or self.on, self.right_on or self.on):
            raise Bad(None, "[join] needs on (or left_on and right_on)",
                      'Write on = "question_id" (the key column in both files)')
        return self


class _File(Table):
    """The TOML layout of a records mapping (the module docstring; ``docs/mapping.md``)."""

    format: str = "records"
    task: _Text | None = None
    model: _Text | None = None
    predictor: _Text | None = None
    run_id: _Text | None = None
    correct_means: str | None = None
    map: dict[str, _Text] = {}
    confidence: _Confidence = _Confidence()
    answered: _Answered = _Answered()
    prediction: _Prediction = _Prediction()
    join: _Join = _Join()
    UNKNOWN: ClassVar[str] = "unknown mapping key"
    HINTS: ClassVar[dict[str, tuple[str, str]]] = {
        **_text_hints(None, *CONSTANTS), "map.*": _text_hints("map", "{key}")["{key}"],
        **{t: (f"'{t}' must be a table", f"Write [{t}] on its own line")
           for t in ("map", "confidence", "answered", "prediction", "join")}}

    @field_validator("format")
    @classmethod
    def _format(cls, fmt: str, info: ValidationInfo) -> str:
        if fmt != "records":
            raise Bad("format", f"format = {fmt!r} is a mapping for 'selfmodel import {fmt}', "
                      f"not for record files", f"Run 'selfmodel import {fmt} LOGS --mapping "
                      f"{(info.context or {}).get('path')}', or write format = \"records\" for "
                      "JSONL/CSV/Parquet records")
        return fmt

    @field_validator(*CONSTANTS)
    @classmethod
    def _path_value(cls, value: str | None, info: ValidationInfo) -> str | None:
        if value is not None and value.startswith("@") and value not in PATH_VALUES:
            raise Bad(info.field_name, f"{info.field_name} = {value!r}: a value starting with "
                      f"'@' must be one of {', '.join(PATH_VALUES)}",
                      f'Write {info.field_name} = "@folder" (the name of the folder holding '
                      'each file) or "@file" (the file name without its extension)')
        return value

    @field_validator("correct_means")
    @classmethod
    def _means(cls, means: str | None) -> str | None:
        if means is not None and means not in CORRECT_MEANS:
            raise Bad("correct_means", f"correct_means must be one of {', '.join(CORRECT_MEANS)}",
                      'Write correct_means = "task" (the task was answered right) or '
                      '"self_prediction" (the self-prediction was right)')
        return means

    @field_validator("map")
    @classmethod
    def _map(cls, columns: dict[str, str]) -> dict[str, str]:
        for k in columns:
            if k not in MAP_FIELDS:
                raise Bad(k, f"unknown key in [map].{did_you_mean(k, MAP_FIELDS)}",
                          f"Allowed keys are {', '.join(MAP_FIELDS)}")
        return columns

    @model_validator(mode="after")
    def _design(self) -> _File:
        _check_design(self)
        return self


def load_records_mapping(path: Path | str) -> RecordsMapping:
    """Read a ``format = "records"`` mapping file.

    Raises
    ------
    InputError
        Unreadable or invalid TOML, an unknown key (with a "did you mean"), a value of the
        wrong type, or a mapping that does not say what is predicted and what happened.
    """
    path = Path(path)
    f, _ = toml_model.load(path, _File, "mapping")
    columns = dict(f.map)
    c, a, j = f.confidence, f.answered, f.join
    join: dict[str, Any] = {}
    if j.file is not None:
        file = Path(j.file) if Path(j.file).is_absolute() else path.parent / j.file
        join = {"join_file": file, "left_on": j.left_on or j.on, "right_on": j.right_on or j.on,
                "prefix": j.prefix}
    return RecordsMapping(
        columns=columns, path=str(path), scale=None if c.scale is None else (c.scale[0], c.scale[1]),
        constants={k: v for k in CONSTANTS if (v := getattr(f, k)) is not None},
        confidence_column=c.column, options=dict(c.options), chosen=c.chosen,
        normalize=c.normalize, answer=a.answer, key=a.key,
        answered_column=columns.pop("correct") if f.correct_means == "task" else a.column,
        threshold=f.prediction.threshold, **join)


def _check_design(f: _File) -> None:
    """The mapping must say what was predicted and what happened; nothing half-declared."""
    columns, means = f.map, f.correct_means
    answered_by_table = bool(f.answered.column or f.answered.answer)
    if "correct" in columns and means is None:
        raise Bad("correct", "[map] correct is ambiguous: it may mean the task was answered "
                  "right or the self-prediction was right", 'Say which with correct_means = '
                  '"task" or correct_means = "self_prediction"', table="map")
    if means is not None and "correct" not in columns:
        raise Bad("correct_means", "correct_means without [map] correct", "Map the column: "
                  '[map] correct = "<column>", or drop correct_means')
    if means == "task" and answered_by_table:
        raise Bad("correct", "correct_means = \"task\" and [answered] both say whether the "
                  "task was answered right", "Keep one of them", table="map")
    has_confidence = bool(f.confidence.column or f.confidence.options)
    answered = answered_by_table or means == "task"
    threshold = f.prediction.threshold
    predicted = "prediction" in columns
    if threshold is not None and not has_confidence:
        raise Bad("threshold", "[prediction] threshold needs a confidence",
                  'Add [confidence] column = "<stated chance of being right>"', table="prediction")
    if threshold is not None and predicted:
        raise Bad("threshold", "prediction is both mapped and derived", "Keep [map] prediction "
                  "or [prediction] threshold", table="prediction")
    if answered and "outcome" in columns:
        raise Bad("outcome", "the outcome is both mapped and given by [answered]",
                  "Keep [map] outcome or [answered]", table="map")
    if answered and threshold is None and not predicted:
        key = "correct" if "correct" in columns else "answered"
        raise Bad(key, "task accuracy (whether the task was answered right) is not "
                  "self-prediction: nothing says what the model predicted about itself",
                  "Derive the prediction from the stated confidence ([prediction] threshold = "
                  "0.5 with [confidence] column) or map a prediction column",
                  table="map" if key == "correct" else None)
    if f.confidence.scale is not None and not has_confidence:
        raise Bad("scale", "scale needs column or options", 'Add column = "<confidence column>"',
                  table="confidence")
