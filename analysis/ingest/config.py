"""The ingest configuration: ``--map`` options and the TOML ``--config`` file (line-numbered errors, did-you-mean)."""

from __future__ import annotations

import math
import tomllib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from selfmodel.contract import (
    MISSING_STRINGS,
    RECORD_SCHEMA,
    STATUSES,
    InputError,
    parse_bool,
)
from selfmodel.registry import format_input_error
from selfmodel.toml_errors import did_you_mean, key_line
from selfmodel.toml_errors import loads as toml_loads

#: Canonical columns an input may provide (``source_*`` are filled by ingestion).
INPUT_COLUMNS: Final = tuple(c for c in RECORD_SCHEMA if c not in ("source_file", "source_line"))
_CONFIG_KEYS: Final = ("map", "tasks", "defaults")


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
        :class:`selfmodel.importers.mapping.records_apply.RecordsTransform`): called as
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


def _read_toml(path: Path) -> tuple[str, dict[str, Any]]:
    """The text and parsed document of a config file (one-line errors when unusable)."""
    try:
        text = path.read_bytes().decode("utf-8-sig")
    except OSError as exc:
        raise InputError(
            format_input_error(path, f"cannot read the config ({exc.strerror})", "Check the path")
        ) from exc
    except UnicodeDecodeError as exc:
        raise InputError(
            format_input_error(path, "the config is not valid UTF-8", "Save it as UTF-8")
        ) from exc
    try:
        doc = toml_loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InputError(
            format_input_error(path, f"invalid TOML ({exc})", "Fix the TOML syntax")
        ) from exc
    return text, doc


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


def _load_defaults(doc: dict[str, Any], fail: Callable[..., InputError]) -> dict[str, str]:
    """The ``[defaults]`` table of a config as text, each value checked (:func:`_default_problem`)."""
    defaults: dict[str, str] = {}
    raw_defaults = doc.get("defaults", {})
    if not isinstance(raw_defaults, dict):
        raise fail(
            "'defaults' must be a table", 'Write [defaults] then task = "refusal"', "defaults"
        )
    for canonical, value in raw_defaults.items():
        if canonical not in INPUT_COLUMNS:
            raise fail(
                f"unknown canonical column in [defaults].{did_you_mean(canonical, INPUT_COLUMNS)}",
                f"Canonical columns are {', '.join(INPUT_COLUMNS)}",
                canonical,
                "defaults",
            )
        if isinstance(value, bool):
            defaults[canonical] = "true" if value else "false"
        elif isinstance(value, str | int | float):
            defaults[canonical] = str(value)
        else:
            raise fail(
                "a default must be a string, number or boolean",
                f'Write {canonical} = "<value>"',
                canonical,
                "defaults",
            )
        problem = _default_problem(canonical, value)
        if problem is not None:
            raise fail(f"the default {value!r} {problem}", f"Write {canonical} = "
                       f"{_DEFAULT_EXAMPLES.get(canonical, chr(34) + '<value>' + chr(34))}, or "
                       "remove the line", canonical, "defaults")
    return defaults


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
    path = Path(path)
    text, doc = _read_toml(path)

    def fail(what: str, todo: str, key: str, section: str | None = None) -> InputError:
        return InputError(
            format_input_error(
                path, what, todo, line=key_line(text, key, table=section), column=key
            )
        )

    for key in doc:
        if key not in _CONFIG_KEYS:
            raise fail(
                f"unknown config key.{did_you_mean(key, _CONFIG_KEYS)}",
                f"Allowed keys are {', '.join(_CONFIG_KEYS)}",
                key,
            )
    mapping: dict[str, str] = {}
    raw_map = doc.get("map", {})
    if not isinstance(raw_map, dict):
        raise fail("'map' must be a table", 'Write [map] then lines like item_id = "qid"', "map")
    for canonical, source in raw_map.items():
        if canonical not in INPUT_COLUMNS:
            raise fail(
                f"unknown canonical column in [map].{did_you_mean(canonical, INPUT_COLUMNS)}",
                f"Canonical columns are {', '.join(INPUT_COLUMNS)}",
                canonical,
                "map",
            )
        if not isinstance(source, str) or not source.strip():
            raise fail(
                "the source column must be a non-empty string",
                f'Write {canonical} = "<column in your files>"',
                canonical,
                "map",
            )
        mapping[canonical] = source.strip()
    tasks: tuple[str, ...] | None = None
    if "tasks" in doc:
        raw_tasks = doc["tasks"]
        if (
            not isinstance(raw_tasks, list)
            or not raw_tasks
            or not all(isinstance(t, str) and t.strip() for t in raw_tasks)
        ):
            raise fail(
                "'tasks' must be a non-empty list of task names",
                'Write tasks = ["refusal", "difficulty"]',
                "tasks",
            )
        tasks = tuple(t.strip() for t in raw_tasks)
    defaults = _load_defaults(doc, fail)
    return IngestConfig(mapping=mapping, tasks=tasks, defaults=defaults, path=str(path))
