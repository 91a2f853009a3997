"""The ingest column map: ``--map`` options and the TOML ``--config`` file (line-numbered errors, did-you-mean)."""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, ClassVar, Final

from pydantic import Field, StringConstraints, field_validator, model_validator

from selfmodel.common.toml_errors import did_you_mean
from selfmodel.records import toml_tables
from selfmodel.records.contract import (
    MISSING_STRINGS,
    RECORD_SCHEMA,
    STATUSES,
    InputError,
    name_key,
    parse_bool,
)
from selfmodel.records.importers.registry import log_formats
from selfmodel.records.reduction import CONTROL, ID_COLUMNS
from selfmodel.records.registry import format_input_error
from selfmodel.records.toml_tables import BadValueError, Table

#: Canonical columns an input may provide (``source_*`` are filled by ingestion).
INPUT_COLUMNS: Final = tuple(c for c in RECORD_SCHEMA if c not in ("source_file", "source_line"))


# --------------------------------------------------------------------------- public types


@dataclass(frozen=True)
class IngestConfig:
    """Ingestion options read from a small TOML file (see :func:`load_config`).

    Attributes
    ----------
    mapping
        Canonical column -> source column.
    tasks
        Allowed tasks; records of other tasks are quarantined (``None``: any task).
    defaults
        Canonical column -> constant text used when a file has no such column.
    path
        The file the options came from, for messages.
    transform
        A records mapping applied to each file's rows before validation (``--mapping``,
        :class:`selfmodel.records.importers.mapping.records_apply.RecordsTransform`): called as
        ``transform(file_name, frame) -> (frame, [(line, category, reason, raw)])``, with a
        ``read_columns`` set and a ``summary()`` for ``ingest.json``.
    """

    mapping: dict[str, str] = field(default_factory=dict)
    tasks: tuple[str, ...] | None = None
    defaults: dict[str, str] = field(default_factory=dict)
    path: str | None = None
    transform: Any = None
    #: Filled while ingesting: ignored column -> rows it alone tells apart (repeat hint).
    hints: dict[str, int] = field(default_factory=dict)


# --------------------------------------------------------------------------- options


def check_canonical(name: str, origin: str, *, file: str | None = None, line: int | None = None):
    """Stop with did-you-mean when ``name`` is not a canonical input column."""
    if name not in INPUT_COLUMNS:
        raise InputError(
            format_input_error(
                file,
                f"{origin}: unknown canonical column '{name}'.{did_you_mean(name, INPUT_COLUMNS)}",
                f"Canonical columns are {', '.join(INPUT_COLUMNS)}",
                line=line,
            )
        )


def parse_map_options(items: Sequence[str]) -> dict[str, str]:
    """Parse ``--map CANONICAL=SOURCE`` options.

    Parameters
    ----------
    items
        Strings such as ``"item_id=question_id"``; the canonical name is on the left.

    Returns
    -------
    dict
        Canonical column -> source column.

    Raises
    ------
    InputError
        For a missing ``=``, an empty side, an unknown canonical name (with a "did you
        mean"), or one canonical name mapped twice to different sources.

    Examples
    --------
    >>> parse_map_options(["item_id=question_id", "model = target_model"])
    {'item_id': 'question_id', 'model': 'target_model'}
    """
    out: dict[str, str] = {}
    for item in items:
        canonical, sep, source = item.partition("=")
        canonical, source = canonical.strip(), source.strip()
        if not sep or not canonical or not source:
            raise InputError(
                format_input_error(
                    None,
                    f"--map '{item}': expected CANONICAL=SOURCE",
                    "Write it like --map item_id=question_id",
                )
            )
        check_canonical(canonical, f"--map '{item}'")
        if canonical in out and out[canonical] != source:
            raise InputError(
                format_input_error(
                    None,
                    f"--map '{item}': '{canonical}' is already mapped to '{out[canonical]}'",
                    "Give one source column per canonical column",
                )
            )
        out[canonical] = source
    return out


#: What a good default of each typed column looks like (for the messages).
_DEFAULT_EXAMPLES: Final = {"correct": "true", "confidence": "0.5", "sample": "0",
                            "status": '"ok"'}


def _default_problem(column: str, value: object) -> str | None:
    """Why a ``[defaults]`` value could never pass the record rules, or ``None``.

    A bad default would quarantine every row that lacks the column (or make every row
    unreadable), so it is refused where it is written: the config's line.
    """
    text = str(value).strip()
    if text == "" or text.lower() in MISSING_STRINGS or (
            isinstance(value, float) and not math.isfinite(value)):
        return "is empty or a missing value, which is no default"
    if column in ID_COLUMNS and re.search(CONTROL, text):
        return "holds a control character, which an identifier never does"
    if column in ID_COLUMNS and name_key(text) == "":
        return "has no visible character, which an identifier needs"
    if column == "correct" and parse_bool(value) is None:
        return "is not true/false/1/0/yes/no"
    if column == "confidence":
        try:
            number = float(value)  # type: ignore[arg-type]
        except (TypeError, ValueError):
            number = math.nan
        if isinstance(value, bool) or not 0.0 <= number <= 1.0:
            return "is not a number in [0, 1]"
    if column == "sample" and (isinstance(value, bool) or not (
            isinstance(value, int) and value >= 0 or (text.isascii() and text.isdigit()))):
        return "is not a non-negative integer"
    if column == "status" and text.lower() not in STATUSES:
        return f"is not a status ({', '.join(STATUSES)})"
    return None


_Text = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1)]


def _canonical_keys(table: str, keys: Iterable[str]) -> None:
    for canonical in keys:
        if canonical not in INPUT_COLUMNS:
            raise BadValueError(canonical, f"unknown canonical column in [{table}]."
                      f"{did_you_mean(canonical, INPUT_COLUMNS)}",
                      f"Canonical columns are {', '.join(INPUT_COLUMNS)}")


class _ConfigFile(Table):
    """The TOML layout of an ingest ``--config`` file."""

    map: dict[str, _Text] = {}
    tasks: Annotated[list[_Text], Field(min_length=1)] | None = None
    defaults: dict[str, str | bool | int | float] = {}

    UNKNOWN: ClassVar[str] = "unknown config key"
    HINTS: ClassVar[dict[str, tuple[str, str]]] = {
        "map": ("'map' must be a table", 'Write [map] then lines like item_id = "qid"'),
        "map.*": ("the source column must be a non-empty string",
                  'Write {key} = "<column in your files>"'),
        "tasks": ("'tasks' must be a non-empty list of task names",
                  'Write tasks = ["refusal", "difficulty"]'),
        "defaults": ("'defaults' must be a table", 'Write [defaults] then task = "refusal"'),
        "defaults.*": ("a default must be a string, number or boolean",
                       'Write {key} = "<value>"'),
    }

    @model_validator(mode="before")
    @classmethod
    def _not_a_mapping(cls, doc: Any) -> Any:
        """A records mapping (``format = ...``) given as ``--config``: say where it goes."""
        if not (isinstance(doc, dict) and "format" in doc):
            return doc
        fmt = doc["format"]
        todo = (f"Import the logs with selfmodel import {fmt} LOGS --mapping FILE"
                if fmt in log_formats() else
                "Pass it with --mapping (selfmodel ingest, selfmodel run). selfmodel reduce "
                "applies no mapping: run selfmodel ingest FILES --mapping FILE --out DIR, then "
                "reduce DIR/records.parquet")
        raise BadValueError("format", f"this is a mapping (format = {fmt!r}), not an ingest config", todo)

    @field_validator("map")
    @classmethod
    def _map(cls, value: dict[str, str]) -> dict[str, str]:
        _canonical_keys("map", value)
        return value

    @field_validator("defaults")
    @classmethod
    def _defaults(cls, value: dict[str, Any]) -> dict[str, Any]:
        """Each default checked (:func:`_default_problem`), where it is written."""
        _canonical_keys("defaults", value)
        for canonical, default in value.items():
            if (problem := _default_problem(canonical, default)) is not None:
                example = _DEFAULT_EXAMPLES.get(canonical, '"<value>"')
                raise BadValueError(canonical, f"the default {default!r} {problem}",
                          f"Write {canonical} = {example}, or remove the line")
        return value


def load_config(path: Path | str) -> IngestConfig:
    r"""Read ingestion options from a TOML file.

    The file may hold ``tasks = [...]`` (allowed tasks), a ``[map]`` table
    (``item_id = "question_id"``: canonical name = source column) and a ``[defaults]``
    table (``task = "refusal"``: a constant value for a column a file does not have).

    Parameters
    ----------
    path
        The TOML file.

    Returns
    -------
    IngestConfig

    Raises
    ------
    InputError
        For unreadable or invalid TOML, an unknown key (with a "did you mean"), or a value
        of the wrong type.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "ingest.toml"
    >>> _ = p.write_text('tasks = ["refusal"]\n[map]\nitem_id = "qid"\n')
    >>> cfg = load_config(p)
    >>> cfg.mapping, cfg.tasks
    ({'item_id': 'qid'}, ('refusal',))
    """
    cfg, _ = toml_tables.load(path, _ConfigFile, "config")
    defaults = {k: ("true" if v else "false") if isinstance(v, bool) else str(v)
                for k, v in cfg.defaults.items()}
    return IngestConfig(mapping=dict(cfg.map), tasks=None if cfg.tasks is None else
                        tuple(cfg.tasks), defaults=defaults, path=str(path))
