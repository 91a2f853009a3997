r"""A mapping file for plain record files (JSONL, CSV, Parquet): ``format = "records"``.

``selfmodel ingest|run|describe|fit FILES --mapping study.toml`` reads the files as ingest
always does (every row accounted for, by file and line) and applies this mapping to each
file's rows before validation. It is data, never executed: it renames columns and fixes
constants or reads them from paths, melts wide tables, gives rows a status by rule, recodes
values, reads a stated confidence on a declared scale, says whether the task was answered
right and derives "I will be right" from a threshold, and joins answer keys. A ``correct``
column is ambiguous (the task, or the self-prediction?), so mapping it needs
``correct_means``. The reference of every key, with examples: ``docs/mapping.md``.
"""

from __future__ import annotations

import glob
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, ClassVar, Final

import regex as rx
from pydantic import Field, StringConstraints, ValidationInfo, field_validator, model_validator

from selfmodel.common.toml_errors import did_you_mean
from selfmodel.records import toml_tables
from selfmodel.records.contract import InputError
from selfmodel.records.registry import format_input_error
from selfmodel.records.snippets import snippet
from selfmodel.records.toml_tables import BadValueError, Table

__all__ = ["RECORDS_KEYS", "RecordsMapping", "Rule", "load_records_mapping"]

#: Top-level keys of a records mapping.
RECORDS_KEYS: Final = ("format", "task", "model", "predictor", "run_id", "item_id",
                       "correct_means", "map", "path", "melt", "rule", "recode", "confidence",
                       "answered", "prediction", "join")
CONSTANTS: Final = ("task", "model", "predictor", "run_id")
#: Values of a top-level constant read from each record file's path, not written out.
PATH_VALUES: Final = ("@folder", "@file")
#: The one value of the top-level ``item_id``: the row's position in its file.
ROW: Final = "@row"
#: Canonical columns ``[map]`` may fill.
MAP_FIELDS: Final = ("model", "task", "item_id", "prediction", "outcome", "correct",
                     "predictor", "confidence", "cluster", "condition", "status", "run_id",
                     "sample")
#: Fields a ``[path]`` pattern or a ``[melt]`` pattern may give (named groups).
PART_FIELDS: Final = ("task", "model", "predictor", "condition", "run_id", "cluster")
#: The named group of a ``[melt]`` pattern that names the column within a group.
MELT_COLUMN: Final = "column"
CONFIDENCE_KEYS: Final = ("column", "scale", "options", "chosen", "normalize")
ANSWERED_KEYS: Final = ("column", "answer", "key")
PREDICTION_KEYS: Final = ("threshold",)
JOIN_KEYS: Final = ("file", "on", "left_on", "right_on", "prefix", "path")
PATH_KEYS: Final = ("pattern",)
MELT_KEYS: Final = ("columns",)
RULE_KEYS: Final = ("column", "equals", "missing", "then")
#: What a ``[[rule]]`` does to a row it matches: a record status, or ``excluded`` (left out,
#: and counted under that name: not a status).
RULE_ACTIONS: Final = ("unparsed", "refused", "error", "unanswered", "not_asked", "excluded")
CORRECT_MEANS: Final = ("task", "self_prediction")
#: Seconds a ``[path]``/``[melt]``/``[join] path`` pattern may run on one name.
PATTERN_TIMEOUT: Final = 2.0


@dataclass(frozen=True)
class Rule:
    """One ``[[rule]]``: rows whose ``column`` has one of ``values`` (or is missing) get ``then``.

    ``values`` are text, booleans or numbers as written in the mapping; ``missing`` matches
    an empty, ``null``, ``NaN`` or ``none`` cell.
    """

    column: str
    values: tuple[str | bool | int | float, ...] = ()
    missing: bool = False
    then: str = "excluded"

    def describe(self) -> str:
        """The rule in words, as the accounting names it.

        >>> Rule("Coerce", (False,), then="unparsed").describe()
        'Coerce = false -> unparsed'
        """
        shown = [("true" if v else "false") if isinstance(v, bool) else str(v)
                 for v in self.values]
        cond = ("missing" if self.missing else
                f"= {shown[0]}" if len(shown) == 1 else f"in [{', '.join(shown)}]")
        return f"{self.column} {cond} -> {self.then}"


@dataclass(frozen=True)
class RecordsMapping:
    """A parsed ``format = "records"`` mapping (``docs/mapping.md``).

    Attributes
    ----------
    columns
        Canonical column -> source column (``[map]``).
    constants
        Canonical column -> constant text (top-level ``task``, ``model`` ...).
    item_from_row
        ``item_id = "@row"``: the item id is the row's position in its file.
    path_pattern
        ``[path] pattern``: named groups give fields from each file's path.
    melt
        ``[melt] columns``: the pattern of a wide table's column groups.
    rules
        ``[[rule]]`` in order (the first that matches a row decides).
    recode
        Canonical column -> {value as written in the file: the value it stands for}.
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
    join_files, join_glob, left_on, right_on, prefix, join_pattern
        The files joined (a path or a glob, relative to the mapping file), on ``left_on``
        (records) = ``right_on`` (the joined files), their columns added with ``prefix``;
        ``join_pattern`` gives columns from each joined file's path.
    path
        The mapping file (for messages).
    """

    columns: dict[str, str] = field(default_factory=dict)
    constants: dict[str, str] = field(default_factory=dict)
    item_from_row: bool = False
    path_pattern: rx.Pattern[str] | None = None
    melt: rx.Pattern[str] | None = None
    rules: tuple[Rule, ...] = ()
    recode: dict[str, dict[str, str]] = field(default_factory=dict)
    confidence_column: str | None = None
    scale: tuple[float, float] | None = None
    options: dict[str, str] = field(default_factory=dict)
    chosen: str | None = None
    normalize: bool = False
    answered_column: str | None = None
    answer: str | None = None
    key: str | None = None
    threshold: float | None = None
    join_files: tuple[Path, ...] = ()
    join_glob: str | None = None
    left_on: tuple[str, ...] = ()
    right_on: tuple[str, ...] = ()
    prefix: str = ""
    join_pattern: rx.Pattern[str] | None = None
    path: str | None = None

    @property
    def join_file(self) -> Path | None:
        """The first joined file (``None``: no join)."""
        return self.join_files[0] if self.join_files else None

    def part_fields(self) -> tuple[str, ...]:
        """Fields given by the path pattern or the melt pattern (named groups)."""
        out = [g for g in (self.path_pattern.groupindex if self.path_pattern else {})]
        out += [g for g in (self.melt.groupindex if self.melt else {}) if g != MELT_COLUMN]
        return tuple(out)

    def set_fields(self) -> tuple[str, ...]:
        """Canonical fields the mapping sets itself (constants, path and melt parts)."""
        return (*self.constants, *self.part_fields())

    def source_columns(self) -> set[str]:
        """Every column of the record files the mapping reads (JSONL keys to load)."""
        cols = set(self.columns.values()) | set(self.options.values())
        cols |= {c for c in (self.confidence_column, self.chosen, self.answered_column,
                             self.answer, self.key) if c}
        cols |= set(self.left_on) - set(self.set_fields())
        cols |= {r.column for r in self.rules} - set(self.set_fields()) - set(MAP_FIELDS)
        return cols


_Text = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1)]
_Names = _Text | Annotated[list[_Text], Field(min_length=1)]


def _text_hints(table: str | None, *keys: str, array: bool = False
                ) -> dict[str, tuple[str, str]]:
    where = f"[[{table}]] " if array else f"[{table}] " if table else ""
    return {k: (f"{where}{k} must be a non-empty column name or text",
                "Write " + snippet(f'{k} = "<name>"', table=table, show_table=False,
                                   array=array))
            for k in keys}


def _pattern(raw: str, key: str, groups: tuple[str, ...], *, need: tuple[str, ...] = (),
             one_of: tuple[str, ...] = (), table: str) -> rx.Pattern[str]:
    """Compile a user's pattern (``regex``: it takes a time limit) and check its named groups."""
    try:
        pattern = rx.compile(raw)
    except rx.error as exc:
        raise BadValueError(key, f"{key} {raw!r} is not a valid pattern ({exc.msg})", "Write "
                  + snippet(f"{key} = '(?P<task>[^/]+)/[^/]+\\.csv$'", table=table,
                            show_table=False) + " (single quotes keep backslashes)") from None
    named = tuple(pattern.groupindex)
    extra = [g for g in named if g not in groups]
    example = snippet(f"{key} = '(?P<{groups[0]}>[^/]+)_(?P<column>[a-z]+)$'"
                      if need else f"{key} = '(?P<{groups[0]}>[^/]+)/[^/]+\\.csv$'",
                      table=table, show_table=False)
    if extra:
        raise BadValueError(key, f"{key} has the group {extra[0]!r}.{did_you_mean(extra[0], groups)} Its "
                  f"named groups give {', '.join(groups)}", "Write " + example)
    missing = [g for g in need if g not in named]
    if missing or (one_of and not set(one_of) & set(named)) or not named:
        wanted = missing[0] if missing else " or ".join(one_of or groups)
        raise BadValueError(key, f"{key} needs a named group (?P<{wanted}>...)", "Write " + example)
    return pattern


class _Path(Table):
    pattern: _Text | None = None
    UNKNOWN: ClassVar[str] = "unknown key in [path]"
    HINTS: ClassVar[dict[str, tuple[str, str]]] = {"pattern": (
        "[path] pattern must be a pattern text",
        "Write " + snippet("pattern = '(?P<task>[^/]+)/[^/]+\\.csv$'", table="path",
                           show_table=False))}

    @field_validator("pattern")
    @classmethod
    def _compiles(cls, raw: str | None) -> str | None:
        if raw is not None:
            _pattern(raw, "pattern", PART_FIELDS, table="path")
        return raw


class _Melt(Table):
    columns: _Text | None = None
    UNKNOWN: ClassVar[str] = "unknown key in [melt]"
    HINTS: ClassVar[dict[str, tuple[str, str]]] = {"columns": (
        "[melt] columns must be a pattern text",
        "Write " + snippet("columns = '^(?P<model>.+)_(?P<column>confidence|correctness)$'",
                           table="melt", show_table=False))}

    @field_validator("columns")
    @classmethod
    def _compiles(cls, raw: str | None) -> str | None:
        if raw is not None:
            _pattern(raw, "columns", (*PART_FIELDS, MELT_COLUMN), need=(MELT_COLUMN,),
                     one_of=PART_FIELDS, table="melt")
        return raw


_Value = _Text | bool | int | float


class _Rule(Table):
    column: _Text | None = None
    equals: _Value | Annotated[list[_Value], Field(min_length=1)] | None = None
    missing: bool | None = None
    then: str | None = None
    UNKNOWN: ClassVar[str] = "unknown key in [[rule]]"
    HINTS: ClassVar[dict[str, tuple[str, str]]] = {
        **_text_hints("rule", "column", array=True),
        "equals": ("[[rule]] equals must be a value or a list of values (text, true/false or "
                   "a number)", "Write " + snippet('equals = ["False", "false"]', table="rule", array=True,
                                                   show_table=False)),
        "equals.*": ("[[rule]] equals must be a value or a list of values (text, true/false "
                     "or a number)", "Write " + snippet("equals = false", table="rule", array=True,
                                                         show_table=False)),
        "missing": ("[[rule]] missing must be true", "Write " + snippet(
            "missing = true", table="rule", array=True, show_table=False)),
        "then": ("[[rule]] then must be text", "Write " + snippet(
            'then = "unparsed"', table="rule", array=True, show_table=False))}

    @model_validator(mode="after")
    def _complete(self) -> _Rule:
        if self.column is None:
            raise BadValueError(None, "[[rule]] needs column", "Write " + snippet(
                'column = "<column>"', table="rule", array=True, show_table=False))
        if self.then is None:
            raise BadValueError(None, "[[rule]] needs then (what the rows it matches become)",
                      "Write " + snippet('then = "excluded"', table="rule", array=True, show_table=False))
        if self.then not in RULE_ACTIONS:
            raise BadValueError("then", f"then = {self.then!r} is not one of {', '.join(RULE_ACTIONS)}."
                      f"{did_you_mean(self.then, RULE_ACTIONS)}",
                      "Write " + snippet('then = "unparsed"', table="rule", array=True, show_table=False))
        if self.missing is False:
            raise BadValueError("missing", "missing = false matches nothing", "Drop it, or write "
                      + snippet("missing = true", table="rule", array=True, show_table=False))
        if (self.equals is None) == (self.missing is None):
            raise BadValueError("equals" if self.equals is not None else None,
                      "[[rule]] needs one of equals or missing (not both)",
                      "Write " + snippet('equals = "cell_empty"', table="rule", array=True,
                                         show_table=False) + ", or "
                      + snippet("missing = true", table="rule", array=True, show_table=False))
        return self


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
                  "Write " + snippet("scale = [0, 10]", table="confidence", show_table=False)
                  + " (or [0, 100]) as the prompt asked"),
        "options": ("options must be a table of option = column",
                    "Write " + snippet('options = { A = "p_A", B = "p_B" }', table="confidence",
                                       show_table=False)),
        "normalize": ("normalize must be true or false",
                      "Write " + snippet("normalize = true", table="confidence",
                                         show_table=False))}

    @model_validator(mode="after")
    def _together(self) -> _Confidence:
        if self.scale is not None and not self.scale[0] < self.scale[1]:
            raise BadValueError("scale", *self.HINTS["scale"])
        if self.options and self.column:
            raise BadValueError("options", "give either column or options, not both",
                      "Keep column for one stated confidence, options for per-option "
                      "probabilities")
        if bool(self.options) != bool(self.chosen):
            raise BadValueError("options" if self.options else "chosen", "options and chosen go together",
                      "Write " + snippet('options = { A = "p_A", B = "p_B" }',
                                         table="confidence", show_table=False) + " and "
                      + snippet('chosen = "<column of the chosen option>"', table="confidence",
                                show_table=False))
        if self.normalize and not self.options:
            raise BadValueError("normalize", "normalize needs options", "Drop normalize, or give options")
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
            raise BadValueError("column", "give either column or answer and key, not both",
                      "column is a boolean column; answer and key are compared")
        if bool(self.answer) != bool(self.key):
            raise BadValueError("answer" if self.answer else "key", "answer and key go together",
                      "Write " + snippet('answer = "<the model\'s answer>"', table="answered",
                                         show_table=False) + " and "
                      + snippet('key = "<the right answer>"', table="answered",
                                show_table=False))
        return self


class _Prediction(Table):
    threshold: Annotated[float, Field(ge=0, le=1)] | None = None
    UNKNOWN: ClassVar[str] = "unknown key in [prediction]"
    HINTS: ClassVar[dict[str, tuple[str, str]]] = {"threshold": (
        "threshold must be a number in [0, 1] (on the rescaled confidence)",
        "Write " + snippet("threshold = 0.5", table="prediction", show_table=False))}


def _names(value: str | list[str] | None) -> tuple[str, ...]:
    return () if value is None else (value,) if isinstance(value, str) else tuple(value)


class _Join(Table):
    file: _Text | None = None
    on: _Names | None = None
    left_on: _Names | None = None
    right_on: _Names | None = None
    prefix: str = ""
    path: _Text | None = None
    UNKNOWN: ClassVar[str] = "unknown key in [join]"
    HINTS: ClassVar[dict[str, tuple[str, str]]] = {
        **_text_hints("join", "file", "path"),
        **{k: (f"[join] {k} must be a column name or a list of column names",
               "Write " + snippet(f'{k} = ["task", "question_id"]', table="join",
                                  show_table=False)) for k in ("on", "left_on", "right_on")},
        "prefix": ("prefix must be text", "Write " + snippet(
            'prefix = "key_"', table="join", show_table=False))}

    @field_validator("path")
    @classmethod
    def _compiles(cls, raw: str | None) -> str | None:
        if raw is not None:
            _pattern(raw, "path", PART_FIELDS, table="join")
        return raw

    @model_validator(mode="after")
    def _keys(self) -> _Join:
        if self.model_fields_set and self.file is None:
            raise BadValueError(None, "[join] needs file", "Write " + snippet(
                'file = "answer_key.csv"', table="join", show_table=False))
        left, right = _names(self.left_on or self.on), _names(self.right_on or self.on)
        if self.file is not None and not (left and right):
            raise BadValueError(None, "[join] needs on (or left_on and right_on)", "Write " + snippet(
                'on = "question_id"', table="join", show_table=False)
                + " (the key column in both files)")
        if len(left) != len(right):
            raise BadValueError("left_on", f"left_on has {len(left)} columns and right_on {len(right)}",
                      "Give the same number of key columns on both sides")
        return self


_RECODE_VALUE = str | bool | int | float


class _File(Table):
    """The TOML layout of a records mapping (``docs/mapping.md``)."""

    format: str = "records"
    task: _Text | None = None
    model: _Text | None = None
    predictor: _Text | None = None
    run_id: _Text | None = None
    item_id: _Text | None = None
    correct_means: str | None = None
    map: dict[str, _Text] = {}
    path: _Path = _Path()
    melt: _Melt = _Melt()
    rule: list[_Rule] = []
    recode: dict[str, dict[str, _RECODE_VALUE]] = {}
    confidence: _Confidence = _Confidence()
    answered: _Answered = _Answered()
    prediction: _Prediction = _Prediction()
    join: _Join = _Join()
    UNKNOWN: ClassVar[str] = "unknown mapping key"
    HINTS: ClassVar[dict[str, tuple[str, str]]] = {
        **_text_hints(None, *CONSTANTS),
        # {key} is the [map] key at fault, one the [map] validator accepts (a canonical
        # column), so the hint is the shape of snippet('item_id = "<name>"', table="map")
        "map.*": ("[map] {key} must be a non-empty column name or text",
                  'Write {key} = "<name>"'),
        "item_id": ("item_id at the top level must be \"@row\"",
                    "Write " + snippet('item_id = "@row"') + " (the row's position), or map "
                    "a column: " + snippet('item_id = "<column>"', table="map")),
        "rule": ("'rule' must be an array of tables", "Write [[rule]] on its own line"),
        "recode": ("[recode] must be a table of field = { value = value }",
                   "Write " + snippet('prediction = { KEEP = true, WITHDRAW = false }',
                                      table="recode")),
        "recode.*": ("[recode] must be a table of field = { value = value }",
                     "Write " + snippet('prediction = { KEEP = true, WITHDRAW = false }',
                                        table="recode")),
        **{t: (f"'{t}' must be a table", f"Write [{t}] on its own line")
           for t in ("map", "path", "melt", "confidence", "answered", "prediction", "join")}}

    @field_validator("format")
    @classmethod
    def _format(cls, fmt: str, info: ValidationInfo) -> str:
        if fmt != "records":
            raise BadValueError("format", f"format = {fmt!r} is a mapping for 'selfmodel import {fmt}', "
                      f"not for record files", f"Run 'selfmodel import {fmt} LOGS --mapping "
                      f"{(info.context or {}).get('path')}', or write "
                      + snippet('format = "records"') + " for JSONL/CSV/Parquet records")
        return fmt

    @field_validator(*CONSTANTS)
    @classmethod
    def _path_value(cls, value: str | None, info: ValidationInfo) -> str | None:
        if value is not None and value.startswith("@") and value not in PATH_VALUES:
            raise BadValueError(info.field_name, f"{info.field_name} = {value!r}: a value starting with "
                      f"'@' must be one of {', '.join(PATH_VALUES)}",
                      "Write " + snippet(f'{info.field_name} = "@folder"')
                      + ' (the name of the folder holding each file) or "@file" (the file '
                      "name without its extension)")
        return value

    @field_validator("item_id")
    @classmethod
    def _row(cls, value: str | None) -> str | None:
        if value is not None and value != ROW:
            raise BadValueError("item_id", f"item_id = {value!r}: at the top level item_id can only be "
                      f"{ROW!r}, the row's position in its file", "Map a column with "
                      + snippet('item_id = "<column>"', table="map") + ", or write "
                      + snippet('item_id = "@row"'))
        return value

    @field_validator("correct_means")
    @classmethod
    def _means(cls, means: str | None) -> str | None:
        if means is not None and means not in CORRECT_MEANS:
            raise BadValueError("correct_means", f"correct_means must be one of {', '.join(CORRECT_MEANS)}",
                      "Write " + snippet('correct_means = "task"') + " (the task was answered "
                      'right) or "self_prediction" (the self-prediction was right)')
        return means

    @field_validator("map")
    @classmethod
    def _map(cls, columns: dict[str, str]) -> dict[str, str]:
        for k in columns:
            if k not in MAP_FIELDS:
                raise BadValueError(k, f"unknown key in [map].{did_you_mean(k, MAP_FIELDS)}",
                          f"Allowed keys are {', '.join(MAP_FIELDS)}")
        return columns

    @field_validator("recode")
    @classmethod
    def _recode(cls, tables: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
        for k, values in tables.items():
            if k not in MAP_FIELDS:
                raise BadValueError(k, f"unknown key in [recode].{did_you_mean(k, MAP_FIELDS)}",
                          f"Allowed keys are {', '.join(MAP_FIELDS)}")
            if not values:
                raise BadValueError(k, f"[recode] {k} is empty", "Write " + snippet(
                    f'{k} = {{ KEEP = true, WITHDRAW = false }}', table="recode"))
        return tables

    @model_validator(mode="after")
    def _design(self) -> _File:
        _check_design(self)
        return self


def _value_text(value: Any) -> str:
    """A recode value as record text: booleans as ``true``/``false``."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _join_files(raw: str, base: Path, path: Path) -> tuple[tuple[Path, ...], str | None]:
    """The files a ``[join] file`` names (a path or a glob, relative to ``base``)."""
    full = raw if Path(raw).is_absolute() else str(base / raw)
    if not glob.has_magic(raw):
        return (Path(full),), None
    found = tuple(sorted(Path(p) for p in glob.glob(full, recursive=True) if Path(p).is_file()))
    if not found:
        raise InputError(format_input_error(
            path, f"[join] file = {raw!r} matches no file (relative to {base})",
            "Fix the pattern (a path or a glob such as 'keys/*_key.csv')", column="file"))
    return found, raw


def load_records_mapping(path: Path | str) -> RecordsMapping:
    """Read a ``format = "records"`` mapping file.

    Raises
    ------
    InputError
        Unreadable or invalid TOML, an unknown key (with a "did you mean"), a value of the
        wrong type, or a mapping that does not say what is predicted and what happened.
    """
    path = Path(path)
    f, _ = toml_tables.load(path, _File, "mapping")
    columns = dict(f.map)
    c, a, j = f.confidence, f.answered, f.join
    join: dict[str, Any] = {}
    if j.file is not None:
        files, pattern = _join_files(j.file, path.parent, path)
        join = {"join_files": files, "join_glob": pattern,
                "left_on": _names(j.left_on or j.on), "right_on": _names(j.right_on or j.on),
                "prefix": j.prefix, "join_pattern": rx.compile(j.path) if j.path else None}
    return RecordsMapping(
        columns=columns, path=str(path), scale=None if c.scale is None else (c.scale[0], c.scale[1]),
        constants={k: v for k in CONSTANTS if (v := getattr(f, k)) is not None},
        item_from_row=f.item_id == ROW,
        path_pattern=rx.compile(f.path.pattern) if f.path.pattern else None,
        melt=rx.compile(f.melt.columns) if f.melt.columns else None,
        rules=tuple(Rule(r.column or "", _names_or_values(r.equals), bool(r.missing),
                         r.then or "excluded") for r in f.rule),
        recode={k: {str(raw).strip(): _value_text(v) for raw, v in values.items()}
                for k, values in f.recode.items()},
        confidence_column=c.column, options=dict(c.options), chosen=c.chosen,
        normalize=c.normalize, answer=a.answer, key=a.key,
        answered_column=columns.pop("correct") if f.correct_means == "task" else a.column,
        threshold=f.prediction.threshold, **join)


def _names_or_values(value: Any) -> tuple[Any, ...]:
    if value is None:
        return ()
    return tuple(value) if isinstance(value, list) else (value,)


def _check_design(f: _File) -> None:
    """The mapping must say what was predicted and what happened; nothing half-declared."""
    columns, means = f.map, f.correct_means
    answered_by_table = bool(f.answered.column or f.answered.answer)
    if "correct" in columns and means is None:
        raise BadValueError("correct", "[map] correct is ambiguous: it may mean the task was answered "
                  "right or the self-prediction was right", "Say which with "
                  + snippet('correct_means = "task"') + " or "
                  + snippet('correct_means = "self_prediction"'), table="map")
    if means is not None and "correct" not in columns:
        raise BadValueError("correct_means", "correct_means without [map] correct", "Map the column: "
                  + snippet('correct = "<column>"', table="map") + ", or drop correct_means")
    if means == "task" and answered_by_table:
        raise BadValueError("correct", "correct_means = \"task\" and [answered] both say whether the "
                  "task was answered right", "Keep one of them", table="map")
    has_confidence = bool(f.confidence.column or f.confidence.options)
    answered = answered_by_table or means == "task"
    threshold = f.prediction.threshold
    predicted = "prediction" in columns
    if threshold is not None and not has_confidence:
        raise BadValueError("threshold", "[prediction] threshold needs a confidence",
                  "Add " + snippet('column = "<stated chance of being right>"',
                                   table="confidence"), table="prediction")
    if threshold is not None and predicted:
        raise BadValueError("threshold", "prediction is both mapped and derived", "Keep [map] prediction "
                  "or [prediction] threshold", table="prediction")
    if answered and "outcome" in columns:
        raise BadValueError("outcome", "the outcome is both mapped and given by [answered]",
                  "Keep [map] outcome or [answered]", table="map")
    if answered and threshold is None and not predicted:
        key = "correct" if "correct" in columns else "answered"
        raise BadValueError(key, "task accuracy (whether the task was answered right) is not "
                  "self-prediction: nothing says what the model predicted about itself",
                  "Derive the prediction from the stated confidence ("
                  + snippet("threshold = 0.5", table="prediction") + " with "
                  + snippet('column = "<stated confidence>"', table="confidence")
                  + ") or map a prediction column", table="map" if key == "correct" else None)
    if f.confidence.scale is not None and not has_confidence:
        raise BadValueError("scale", "scale needs column or options", "Add " + snippet(
            'column = "<confidence column>"', table="confidence", show_table=False),
            table="confidence")
    _check_sources(f)


def _check_sources(f: _File) -> None:
    """A field comes from one place: a constant, ``[map]``, the path or the melt pattern."""
    sources: dict[str, str] = {}
    for k in CONSTANTS:
        if getattr(f, k) is not None:
            sources[k] = f"{k} = {getattr(f, k)!r}"
    if f.item_id is not None:
        sources["item_id"] = f"item_id = {f.item_id!r}"
    for k in f.map:
        if k in sources:
            raise BadValueError(k, f"{k} is given twice: {sources[k]} and [map] {k}", "Keep one of them",
                      table="map")
        sources[k] = f"[map] {k}"
    for table, raw, skip in (("path", f.path.pattern, ()), ("melt", f.melt.columns,
                                                            (MELT_COLUMN,))):
        if raw is None:
            continue
        for g in rx.compile(raw).groupindex:
            if g in skip:
                continue
            if g in sources:
                key = "pattern" if table == "path" else "columns"
                raise BadValueError(key, f"{g} is given twice: {sources[g]} and the group (?P<{g}>...) "
                          f"of [{table}]", "Keep one of them", table=table)
            sources[g] = f"[{table}] (?P<{g}>...)"
