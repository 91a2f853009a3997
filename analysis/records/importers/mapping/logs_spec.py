"""The log mapping of ``import lmeval|inspect``: its fields, reading and checking it (line numbers, did-you-mean)."""

from __future__ import annotations

import re
import tomllib
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Literal

import regex as rx

from selfmodel.common.toml_errors import did_you_mean
from selfmodel.common.toml_errors import loads as toml_loads
from selfmodel.records.contract import InputError
from selfmodel.records.importers.registry import get as get_importer
from selfmodel.records.importers.registry import log_formats
from selfmodel.records.importers.result import ImportResult
from selfmodel.records.snippets import snippet

#: A log format a mapping names (``format = ...``): one of :func:`registry.log_formats`.
Format = str
Side = Literal["object", "hypothetical"]
ValueType = Literal["str", "bool", "float", "int", "score"]
NormalizeStep = Literal["strip", "casefold", "punctuation"]

#: Canonical fields a mapping may fill (``correct`` is derived when not mapped).
FIELDS: Final = (
    "model",
    "task",
    "item_id",
    "prediction",
    "outcome",
    "correct",
    "predictor",
    "confidence",
    "cluster",
    "condition",
    "status",
    "run_id",
    "sample",
)
#: Top-level keys of a mapping file.
TOP_KEYS: Final = ("format", "task", "model", "predictor", "run_id", "fields", "where", "join")
#: Constants allowed at the top level.
CONSTANTS: Final = ("task", "model", "predictor", "run_id")
#: Seconds a user's ``regex`` may run on one value before the import stops (see :func:`_regex`).
REGEX_TIMEOUT: Final = 2.0
FIELD_KEYS: Final = ("path", "map", "type", "default", "normalize", "regex")
JOIN_KEYS: Final = ("object", "hypothetical", "key", "object_key", "hypothetical_key")
#: Value types of ``fields.<name>.type``.
VALUE_TYPES: Final = ("str", "bool", "float", "int", "score")
#: Steps of ``fields.<name>.normalize``, applied in the order written.
NORMALIZE_STEPS: Final = ("strip", "casefold", "punctuation")
#: Where the item id lives when a mapping does not say (the formats' own sample id).
#: The task when a mapping does not say: the log's own task name.
DEFAULT_TASK: Final = "@task"
#: Fields read from the hypothetical log in a join unless prefixed.
HYPOTHETICAL_FIELDS: Final = frozenset({"prediction", "confidence", "predictor"})
META_PREFIX: Final = "@"
_MISSING: Final = object()


@dataclass(frozen=True)
class FieldSpec:
    """Where one canonical field lives.

    Attributes
    ----------
    path
        Dotted path into the sample (``"doc.id"``, ``"resps.0.0"``) or, starting with ``@``,
        into the log's metadata (``"@model"``).
    side
        In a join, the log to read from; ``None`` = the field's default side.
    map
        Optional recoding of the raw value (stringified, stripped) into a canonical string.
    type
        Optional conversion: ``"str"``, ``"bool"``, ``"float"``, ``"int"`` or ``"score"``
        (Inspect score values: ``C``/``I`` and 1/0 are booleans).
    default
        Value used when the path is absent in a sample (``None`` = absent is null).
    normalize
        Text steps applied, in order, to a text value before ``map`` and ``type``.
    regex
        A compiled pattern: the value becomes its first match (group 1 when the pattern has
        a group); no match makes the value unreadable.
    """

    path: str
    side: Side | None = None
    map: dict[str, str] | None = None
    type: ValueType | None = None
    default: Any = None
    normalize: tuple[NormalizeStep, ...] = ()
    regex: rx.Pattern[str] | None = None


@dataclass(frozen=True)
class JoinSpec:
    """Two logs joined by item: object-level (what was done) and hypothetical (what was predicted).

    Attributes
    ----------
    object, hypothetical
        Log locations as written in the mapping (resolved by the format reader).
    object_key, hypothetical_key
        Dotted paths of the item key in each log's samples; a compound key is a tuple.
    """

    object: str
    hypothetical: str
    object_key: tuple[str, ...]
    hypothetical_key: tuple[str, ...]


@dataclass(frozen=True)
class Mapping:
    """A parsed mapping file (see the module docstring for the TOML layout).

    Attributes
    ----------
    format
        ``"lmeval"`` or ``"inspect"``.
    constants
        Top-level constants (``task``, ``model``, ``predictor``, ``run_id``).
    fields
        Canonical field -> :class:`FieldSpec`.
    where
        Path (``@`` paths read the log's metadata) -> accepted values; other samples are
        skipped (counted).
    joins
        Zero or more :class:`JoinSpec`.
    source
        Where the mapping came from (for messages).
    base
        Folder relative join paths fall back to (the mapping file's folder).
    """

    format: Format
    constants: dict[str, str]
    fields: dict[str, FieldSpec]
    where: dict[str, tuple[Any, ...]] = field(default_factory=dict)
    joins: tuple[JoinSpec, ...] = ()
    source: str = "<mapping>"
    base: Path = field(default_factory=Path)


@dataclass
class LogSample:
    """One logged sample handed to :func:`apply_mapping` by a format reader.

    Attributes
    ----------
    data
        The sample as nested dicts and lists.
    meta
        The log's metadata (``model``, ``task`` and format-specific keys) for ``@`` paths.
    source_file, source_line
        Provenance (1-based line in a JSONL file, 1-based sample position otherwise).
    sample_index
        Repeat index used when the mapping has no ``sample`` field (e.g. Inspect epoch - 1).
    status
        Status used when the mapping has no ``status`` field (e.g. ``"error"`` for a sample
        that failed).
    """

    data: Any
    meta: dict[str, Any]
    source_file: str
    source_line: int
    sample_index: int = 0
    status: str = "ok"


#: What a format's reader returns for one log file: its samples, and notes on what was
#: skipped or guessed (see :func:`selfmodel.records.importers.mapping.import_logs`).
Samples = tuple[list[LogSample], list[str]]


def source_name(path: Path, root: Path | str | None = None) -> str:
    """``path`` as a :class:`LogSample`'s ``source_file``.

    Relative to ``root`` (default: the file's own folder), else the path as given when it
    is not below ``root``.
    """
    base = Path(root) if root is not None else path.parent
    try:
        return path.relative_to(base).as_posix()
    except ValueError:
        return path.as_posix()


#: What a mapped import returns (the one import result type of every importer).
MappedImport = ImportResult


# ----------------------------------------------------------------------------------------------
# reading a mapping


def suggest(word: str, options: Iterable[str]) -> str:
    """A did-you-mean suggestion for ``word`` among ``options`` (empty when none is close)."""
    return did_you_mean(word, options)


def _unknown_keys(table: dict[str, Any], allowed: Sequence[str], where: str, source: str) -> None:
    for key in table:
        if key not in allowed:
            raise InputError(
                f"{source}: unknown key {key!r} in {where}.{suggest(key, allowed)} "
                f"Allowed: {', '.join(allowed)}."
            )


def load_mapping(path: Path | str) -> Mapping:
    """Read and check a TOML mapping file.

    Parameters
    ----------
    path
        The mapping file.

    Returns
    -------
    Mapping

    Raises
    ------
    InputError
        When the file is missing, is not TOML, or has an unknown key or bad value.
    """
    p = Path(path)
    if not p.is_file():
        raise InputError(f"{p}: mapping file not found; pass a TOML mapping (see the docs).")
    try:
        data = toml_loads(p.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise InputError(f"{p}: not valid TOML ({exc}).") from None
    return parse_mapping(data, source=str(p), base=p.parent)


def parse_mapping(
    data: dict[str, Any], *, source: str = "<mapping>", base: Path | str = "."
) -> Mapping:
    """Check a mapping given as a dict (what TOML parses to).

    Parameters
    ----------
    data
        The mapping table.
    source
        Name used in messages.
    base
        Folder relative join paths fall back to.

    Returns the parsed :class:`Mapping`; raises :class:`InputError` on an unknown key (with
    a suggestion), a missing ``format``, or a bad value.

    Examples
    --------
    >>> m = parse_mapping({"format": "lmeval", "task": "refusal",
    ...                    "fields": {"item_id": "doc.id", "prediction": "resps.0.0",
    ...                               "outcome": "target"}})
    >>> m.fields["prediction"].path, m.constants["task"]
    ('resps.0.0', 'refusal')
    """
    _unknown_keys(data, TOP_KEYS, "the mapping", source)
    fmt = data.get("format")
    if fmt not in log_formats():
        raise InputError(
            f"{source}: 'format' is {fmt!r}; write "
            + " or ".join(snippet(f'format = "{f}"', kind="import") for f in log_formats()) + "."
        )
    raw_fields = data.get("fields", {})
    if not isinstance(raw_fields, dict):
        raise InputError(f'{source}: [fields] must be a table of field = "path".')
    _unknown_keys(raw_fields, FIELDS, "[fields]", source)
    constants, fields = _constants(data, source)
    for name, spec in raw_fields.items():
        if name in constants or name in fields:
            raise InputError(
                f"{source}: '{name}' is given both at the top level and in [fields]; keep one."
            )
        fields[name] = _field_spec(name, spec, source)
    where = _where(data.get("where", {}), source)
    joins = _joins(data.get("join"), source)
    if not joins and any(f.side is not None for f in fields.values()):
        raise InputError(f"{source}: 'object:'/'hypothetical:' prefixes need a [join] table.")
    if "task" not in constants and "task" not in fields:
        fields["task"] = FieldSpec(DEFAULT_TASK, side="object" if joins else None)
    if "item_id" not in fields and not joins:
        fields["item_id"] = FieldSpec(get_importer(fmt).item_id or "id")
    if not {"prediction", "confidence", "correct"} & set(fields):
        raise InputError(
            f"{source}: nothing to score; add "
            + snippet('prediction = "<path>"', table="fields", kind="import")
            + " (or fields.correct)."
        )
    if "outcome" not in fields and "correct" not in fields:
        raise InputError(f"{source}: no outcome; add "
                         + snippet('outcome = "<path>"', table="fields", kind="import")
                         + " (or fields.correct).")
    return Mapping(
        format=fmt,
        constants=constants,
        fields=fields,
        where=where,
        joins=joins,
        source=source,
        base=Path(base),
    )


def _constants(data: dict[str, Any], source: str) -> tuple[dict[str, str], dict[str, FieldSpec]]:
    """Top-level ``task``/``model``/``predictor``/``run_id``: a constant, or an ``@`` path."""
    constants: dict[str, str] = {}
    fields: dict[str, FieldSpec] = {}
    for key in CONSTANTS:
        if key in data:
            value = data[key]
            if not isinstance(value, str) or not value:
                raise InputError(f"{source}: '{key}' must be a non-empty string.")
            if value.startswith(META_PREFIX):
                fields[key] = FieldSpec(value)
            else:
                constants[key] = value
    return constants, fields


def _where(raw: Any, source: str) -> dict[str, tuple[Any, ...]]:
    """``[where]``: path -> accepted values (a value, or a list of values any of which)."""
    if not isinstance(raw, dict):
        raise InputError(f"{source}: [where] must be a table of path = value.")
    out: dict[str, tuple[Any, ...]] = {}
    for path, wanted in raw.items():
        values = tuple(wanted) if isinstance(wanted, list) else (wanted,)
        if not values or any(isinstance(v, dict | list) for v in values):
            raise InputError(
                f"{source}: [where] {path!r} must be a value or a list of values "
                '(e.g. "@task" = ["a", "b"]).'
            )
        out[str(path)] = values
    return out


def _field_spec(name: str, spec: Any, source: str) -> FieldSpec:
    if isinstance(spec, str):
        table: dict[str, Any] = {"path": spec}
    elif isinstance(spec, dict):
        table = spec
        _unknown_keys(table, FIELD_KEYS, f"fields.{name}", source)
    else:
        raise InputError(f"{source}: fields.{name} must be a path string or a table with 'path'.")
    path = table.get("path")
    if not isinstance(path, str) or not path.strip():
        raise InputError(f"{source}: fields.{name} needs a non-empty 'path'.")
    side: Side | None = None
    for prefix in ("object:", "hypothetical:"):
        if path.startswith(prefix):
            side = "object" if prefix == "object:" else "hypothetical"
            path = path[len(prefix) :]
    mapping = table.get("map")
    if mapping is not None:
        if not isinstance(mapping, dict):
            raise InputError(f'{source}: fields.{name}.map must be a table raw = "value".')
        mapping = {str(k).strip(): str(v) for k, v in mapping.items()}
    vtype = table.get("type")
    if vtype is not None and vtype not in VALUE_TYPES:
        raise InputError(
            f"{source}: fields.{name}.type is {vtype!r}; use {', '.join(VALUE_TYPES)}."
            + suggest(str(vtype), VALUE_TYPES)
        )
    steps = _normalize_steps(table.get("normalize", ()), name, source)
    if mapping is not None:
        mapping = {normalize_text(k, steps): v for k, v in mapping.items()}
    return FieldSpec(
        path=path,
        side=side,
        map=mapping,
        type=vtype,
        default=table.get("default"),
        normalize=steps,
        regex=_regex(table.get("regex"), name, source),
    )


def _normalize_steps(raw: Any, name: str, source: str) -> tuple[NormalizeStep, ...]:
    steps = [raw] if isinstance(raw, str) else raw
    if not isinstance(steps, list | tuple) or not all(isinstance(x, str) for x in steps):
        raise InputError(
            f'{source}: fields.{name}.normalize must be a list such as ["strip", "casefold"].'
        )
    for step in steps:
        if step not in NORMALIZE_STEPS:
            raise InputError(
                f"{source}: fields.{name}.normalize has {step!r}; use "
                f"{', '.join(NORMALIZE_STEPS)}.{suggest(step, NORMALIZE_STEPS)}"
            )
    return tuple(steps)  # type: ignore[arg-type]


def _regex(raw: Any, name: str, source: str) -> rx.Pattern[str] | None:
    """Compile a user's pattern with the ``regex`` package, which takes a ``timeout``.

    A pattern that backtracks without end on some value (``^(a|aa)+$`` on 40 ``a``) is
    stopped after :data:`REGEX_TIMEOUT` seconds on one value, and the import ends with one
    line naming it (``selfmodel.records.importers.mapping.logs_apply``); ``regex`` also finishes many
    such patterns at once (``^(a+)+$``) where ``re`` would not.
    """
    if raw is None:
        return None
    if not isinstance(raw, str) or not raw:
        raise InputError(f"{source}: fields.{name}.regex must be a non-empty pattern string.")
    try:
        pattern = rx.compile(raw)
    except rx.error as exc:
        pos = exc.pos
        try:  # re names where a bad construct starts (regex: where it noticed, often the end)
            re.compile(raw)
        except re.error as std:
            pos = std.pos if std.pos is not None else pos
        col = f" (column {pos + 1})" if pos is not None else ""
        raise InputError(
            f"{source}: fields.{name}.regex {raw!r} is not a valid pattern{col}: {exc.msg}; "
            "TOML strings need doubled backslashes, or write it in single quotes."
        ) from None
    if pattern.groups > 1:
        raise InputError(
            f"{source}: fields.{name}.regex has {pattern.groups} groups; keep one (the "
            "answer) and make the others non-capturing, (?:...)."
        )
    return pattern


def normalize_text(text: str, steps: Sequence[str]) -> str:
    r"""Apply ``normalize`` steps to a text (``map`` keys go through the same steps).

    ``strip`` removes surrounding white space, ``casefold`` folds case (``"YES"`` ->
    ``"yes"``), ``punctuation`` removes punctuation and white space at both ends
    (``"No."`` -> ``"No"``; ``"3.5"`` is kept).

    Examples
    --------
    >>> normalize_text("  Yes.\n", ["punctuation", "casefold"])
    'yes'
    """
    for step in steps:
        if step == "strip":
            text = text.strip()
        elif step == "casefold":
            text = text.casefold()
        elif step == "punctuation":
            text = _strip_punctuation(text)
    return text


def _edge(ch: str) -> bool:
    return ch.isspace() or unicodedata.category(ch).startswith("P")


def _strip_punctuation(text: str) -> str:
    """Punctuation (Unicode category P) and white space off both ends.

    A sign before a digit is kept (``"-3."`` -> ``"-3"``).
    """
    end = len(text)
    while end and _edge(text[end - 1]):
        end -= 1
    start = 0
    while start < end and _edge(text[start]):
        if text[start] in "-+" and start + 1 < end and text[start + 1].isdigit():
            break
        start += 1
    return text[start:end]


def _key_paths(value: Any, what: str, source: str) -> tuple[str, ...]:
    if isinstance(value, str) and value:
        return (value,)
    if isinstance(value, list) and value and all(isinstance(v, str) and v for v in value):
        return tuple(value)
    raise InputError(f"{source}: {what} must be a path or a list of paths.")


def _joins(raw: Any, source: str) -> tuple[JoinSpec, ...]:
    if raw is None:
        return ()
    tables = raw if isinstance(raw, list) else [raw]
    out = []
    for i, table in enumerate(tables):
        where = "[join]" if not isinstance(raw, list) else f"[[join]] #{i + 1}"
        if not isinstance(table, dict):
            raise InputError(f"{source}: {where} must be a table.")
        _unknown_keys(table, JOIN_KEYS, where, source)
        for key in ("object", "hypothetical"):
            if not isinstance(table.get(key), str) or not table[key]:
                raise InputError(f'{source}: {where} needs {key} = "path/to/log".')
        if "key" in table:
            obj_key = hyp_key = _key_paths(table["key"], f"{where} key", source)
        else:
            if "object_key" not in table or "hypothetical_key" not in table:
                raise InputError(
                    f'{source}: {where} needs key = "path" (or object_key and hypothetical_key).'
                )
            obj_key = _key_paths(table["object_key"], f"{where} object_key", source)
            hyp_key = _key_paths(table["hypothetical_key"], f"{where} hypothetical_key", source)
        if len(obj_key) != len(hyp_key):
            raise InputError(f"{source}: {where} object_key and hypothetical_key differ in length.")
        out.append(JoinSpec(table["object"], table["hypothetical"], obj_key, hyp_key))
    return tuple(out)
