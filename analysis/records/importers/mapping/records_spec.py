r"""A mapping file for plain record files (JSONL, CSV, Parquet): ``format = "records"``.

``selfmodel ingest|run|describe|fit FILES --mapping study.toml`` reads the files as ingest
always does (every row accounted for, by file and line) and applies this mapping to each
file's rows before validation. It is data, never executed. It can

* rename columns (``[map]``, as ``--map``) and fix constants (``task = "trivia"``);
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

import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from selfmodel.common.toml_errors import did_you_mean, key_line
from selfmodel.records.contract import InputError
from selfmodel.records.registry import format_input_error

__all__ = ["RECORDS_KEYS", "RecordsMapping", "load_records_mapping", "parse_records_mapping"]

#: Top-level keys of a records mapping.
RECORDS_KEYS: Final = ("format", "task", "model", "predictor", "run_id", "correct_means",
                       "map", "confidence", "answered", "prediction", "join")
CONSTANTS: Final = ("task", "model", "predictor", "run_id")
#: Canonical columns ``[map]`` may fill.
MAP_FIELDS: Final = ("model", "task", "item_id", "prediction", "outcome", "correct",
                     "predictor", "confidence", "cluster", "status", "run_id", "sample")
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


class _Doc:
    """The TOML text and document, and one-line errors that name the key's line."""

    def __init__(self, path: Path) -> None:
        self.path = path
        try:
            self.text = path.read_bytes().decode("utf-8-sig")
        except OSError as exc:
            raise InputError(format_input_error(
                path, f"cannot read the mapping ({exc.strerror})", "Check the path")) from exc
        except UnicodeDecodeError as exc:
            raise InputError(format_input_error(
                path, "the mapping is not valid UTF-8", "Save it as UTF-8")) from exc
        try:
            self.doc = tomllib.loads(self.text)
        except tomllib.TOMLDecodeError as exc:
            raise InputError(format_input_error(
                path, f"invalid TOML ({exc})", "Fix the TOML syntax")) from exc

    def fail(self, what: str, todo: str, key: str, table: str | None = None) -> InputError:
        return InputError(format_input_error(
            self.path, what, todo, line=key_line(self.text, key, table=table), column=key))

    def table(self, name: str, keys: tuple[str, ...]) -> dict[str, Any]:
        raw = self.doc.get(name, {})
        if not isinstance(raw, dict):
            raise self.fail(f"'{name}' must be a table", f"Write [{name}] on its own line", name)
        for k in raw:
            if k not in keys:
                raise self.fail(f"unknown key in [{name}].{did_you_mean(k, keys)}",
                                f"Allowed keys are {', '.join(keys)}", k, name)
        return raw

    def text_value(self, raw: dict[str, Any], key: str, table: str | None) -> str | None:
        value = raw.get(key)
        if value is None:
            return None
        if not isinstance(value, str) or not value.strip():
            where = f"[{table}] " if table else ""
            raise self.fail(f"{where}{key} must be a non-empty column name or text",
                            f'Write {key} = "<name>"', key, table)
        return value.strip()


def load_records_mapping(path: Path | str) -> RecordsMapping:
    """Read a ``format = "records"`` mapping file.

    Raises
    ------
    InputError
        Unreadable or invalid TOML, an unknown key (with a "did you mean"), a value of the
        wrong type, or a mapping that does not say what is predicted and what happened.
    """
    return parse_records_mapping(_Doc(Path(path)))


def parse_records_mapping(doc: _Doc) -> RecordsMapping:
    """The :class:`RecordsMapping` of a read TOML document."""
    for k in doc.doc:
        if k not in RECORDS_KEYS:
            raise doc.fail(f"unknown mapping key.{did_you_mean(k, RECORDS_KEYS)}",
                           f"Allowed keys are {', '.join(RECORDS_KEYS)} (docs/mapping.md)", k)
    fmt = doc.doc.get("format", "records")
    if fmt != "records":
        raise doc.fail(
            f"format = {fmt!r} is a mapping for 'selfmodel import {fmt}', not for record files",
            f"Run 'selfmodel import {fmt} LOGS --mapping {doc.path}', or write "
            'format = "records" for JSONL/CSV/Parquet records', "format")
    constants = {c: v for c in CONSTANTS if (v := doc.text_value(doc.doc, c, None)) is not None}
    raw_map = doc.table("map", MAP_FIELDS)
    columns = {c: v for c in raw_map if (v := doc.text_value(raw_map, c, "map")) is not None}
    values: dict[str, Any] = {"columns": columns, "constants": constants,
                              "path": str(doc.path)}
    values.update(_confidence(doc))
    values.update(_answered(doc, columns))
    values.update(_prediction(doc))
    values.update(_join(doc))
    m = RecordsMapping(**values)
    _check_design(doc, m)
    return m


def _confidence(doc: _Doc) -> dict[str, Any]:
    raw = doc.table("confidence", CONFIDENCE_KEYS)
    out: dict[str, Any] = {"confidence_column": doc.text_value(raw, "column", "confidence"),
                           "chosen": doc.text_value(raw, "chosen", "confidence")}
    if "scale" in raw:
        scale = raw["scale"]
        ok = (isinstance(scale, list) and len(scale) == 2
              and all(isinstance(x, int | float) and not isinstance(x, bool) for x in scale)
              and scale[0] < scale[1])
        if not ok:
            raise doc.fail("scale must be [low, high] with low < high",
                           "Write scale = [0, 10] (or [0, 100]) as the prompt asked", "scale",
                           "confidence")
        out["scale"] = (float(scale[0]), float(scale[1]))
    options = raw.get("options", {})
    if not isinstance(options, dict) or not all(
            isinstance(v, str) and v.strip() for v in options.values()):
        raise doc.fail("options must be a table of option = column",
                       'Write options = { A = "p_A", B = "p_B" }', "options", "confidence")
    out["options"] = {str(k): v.strip() for k, v in options.items()}
    normalize = raw.get("normalize", False)
    if not isinstance(normalize, bool):
        raise doc.fail("normalize must be true or false", "Write normalize = true",
                       "normalize", "confidence")
    out["normalize"] = normalize
    if out["options"] and out["confidence_column"]:
        raise doc.fail("give either column or options, not both",
                       "Keep column for one stated confidence, options for per-option "
                       "probabilities", "options", "confidence")
    if bool(out["options"]) != bool(out["chosen"]):
        raise doc.fail("options and chosen go together",
                       'Write options = { A = "p_A", ... } and chosen = "<column of the chosen '
                       'option>"', "options" if out["options"] else "chosen", "confidence")
    if normalize and not out["options"]:
        raise doc.fail("normalize needs options", "Drop normalize, or give options",
                       "normalize", "confidence")
    return out


def _answered(doc: _Doc, columns: dict[str, str]) -> dict[str, Any]:
    raw = doc.table("answered", ANSWERED_KEYS)
    out = {k: doc.text_value(raw, k, "answered") for k in ANSWERED_KEYS}
    if out["column"] and (out["answer"] or out["key"]):
        raise doc.fail("give either column or answer and key, not both",
                       "column is a boolean column; answer and key are compared", "column",
                       "answered")
    if bool(out["answer"]) != bool(out["key"]):
        raise doc.fail("answer and key go together",
                       'Write answer = "<the model\'s answer>" and key = "<the right answer>"',
                       "answer" if out["answer"] else "key", "answered")
    means = doc.doc.get("correct_means")
    if means is not None and means not in CORRECT_MEANS:
        raise doc.fail(f"correct_means must be one of {', '.join(CORRECT_MEANS)}",
                       'Write correct_means = "task" (the task was answered right) or '
                       '"self_prediction" (the self-prediction was right)', "correct_means")
    if "correct" in columns:
        if means is None:
            raise doc.fail(
                "[map] correct is ambiguous: it may mean the task was answered right or the "
                "self-prediction was right", 'Say which with correct_means = "task" or '
                'correct_means = "self_prediction"', "correct", "map")
        if means == "task":
            if out["column"] or out["answer"]:
                raise doc.fail("correct_means = \"task\" and [answered] both say whether the "
                               "task was answered right", "Keep one of them", "correct", "map")
            out["column"] = columns.pop("correct")
    elif means is not None:
        raise doc.fail("correct_means without [map] correct", "Map the column: [map] "
                       'correct = "<column>", or drop correct_means', "correct_means")
    return {"answered_column": out["column"], "answer": out["answer"], "key": out["key"]}


def _prediction(doc: _Doc) -> dict[str, Any]:
    raw = doc.table("prediction", PREDICTION_KEYS)
    if "threshold" not in raw:
        return {}
    t = raw["threshold"]
    if isinstance(t, bool) or not isinstance(t, int | float) or not 0 <= t <= 1:
        raise doc.fail("threshold must be a number in [0, 1] (on the rescaled confidence)",
                       "Write threshold = 0.5", "threshold", "prediction")
    return {"threshold": float(t)}


def _join(doc: _Doc) -> dict[str, Any]:
    raw = doc.table("join", JOIN_KEYS)
    if not raw:
        return {}
    file = doc.text_value(raw, "file", "join")
    if file is None:
        raise doc.fail("[join] needs file", 'Write file = "answer_key.csv"', "join")
    on = doc.text_value(raw, "on", "join")
    left = doc.text_value(raw, "left_on", "join") or on
    right = doc.text_value(raw, "right_on", "join") or on
    if left is None or right is None:
        raise doc.fail("[join] needs on (or left_on and right_on)",
                       'Write on = "question_id" (the key column in both files)', "join")
    prefix = raw.get("prefix", "")
    if not isinstance(prefix, str):
        raise doc.fail("prefix must be text", 'Write prefix = "key_"', "prefix", "join")
    path = Path(file)
    if not path.is_absolute():
        path = doc.path.parent / path
    return {"join_file": path, "left_on": left, "right_on": right, "prefix": prefix}


def _check_design(doc: _Doc, m: RecordsMapping) -> None:
    """The mapping must say what was predicted and what happened; nothing half-declared."""
    has_confidence = bool(m.confidence_column or m.options)
    answered = bool(m.answered_column or m.answer)
    if m.threshold is not None and not has_confidence:
        raise doc.fail("[prediction] threshold needs a confidence",
                       'Add [confidence] column = "<stated chance of being right>"',
                       "threshold", "prediction")
    if m.threshold is not None and "prediction" in m.columns:
        raise doc.fail("prediction is both mapped and derived", "Keep [map] prediction or "
                       "[prediction] threshold", "threshold", "prediction")
    if answered and "outcome" in m.columns:
        raise doc.fail("the outcome is both mapped and given by [answered]",
                       "Keep [map] outcome or [answered]", "outcome", "map")
    if answered and m.threshold is None and "prediction" not in m.columns:
        key = "correct" if "correct" in doc.doc.get("map", {}) else "answered"
        raise doc.fail(
            "task accuracy (whether the task was answered right) is not self-prediction: "
            "nothing says what the model predicted about itself",
            "Derive the prediction from the stated confidence ([prediction] threshold = 0.5 "
            "with [confidence] column) or map a prediction column", key,
            "map" if key == "correct" else None)
    if (m.scale is not None) and not has_confidence:
        raise doc.fail("scale needs column or options", 'Add column = "<confidence column>"',
                       "scale", "confidence")
