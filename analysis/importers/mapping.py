"""Mapping files: where the canonical fields live in a foreign log's samples.

A mapping is data (TOML), never executed. It names, for each canonical record field, a
*dotted path* into one logged sample (a nested dict/list as the log format stores it), or
into the log's metadata. The format readers (:mod:`analysis.importers.lmeval`,
:mod:`analysis.importers.inspect_logs`) turn each log into :class:`LogSample` objects; this
module applies the mapping to them.

Layout::

    format = "lmeval"                 # or "inspect"
    task = "refusal"                  # constant task (or give fields.task as a path)
    # model = "llama-3-8b"            # optional constant; default is "@model"
    # run_id = "run-7"                # optional constant

    [fields]                          # canonical field -> where it lives in a sample
    item_id = "doc.id"                # dotted path: dict keys and list indices ("resps.0.0")
    prediction = { path = "filtered_resps.0", map = { A = "true", B = "false" } }
    outcome = { path = "acc", type = "bool" }
    cluster = "doc.type"
    model = "@model"                  # '@' reads the log's metadata: @model, @task, @<path>

    [where]                           # optional: keep only samples whose path equals a value
    filter = "strict-match"

    [join]                            # optional: an object-level and a hypothetical log
    object = "object/samples_x.jsonl" # what the model did        (relative to SRC or this file)
    hypothetical = "hyp/samples_y.jsonl"  # what a model predicted it would do
    key = "doc.id"                    # item key, same path in both (or object_key/
                                      # hypothetical_key; a list of paths for a compound key)

Field values
    A string is a path; a table has ``path`` and optionally ``map`` (raw value, stripped, ->
    canonical string; a value not in the map becomes null), ``type`` (``"str"``, ``"bool"``:
    read with :func:`analysis.contract.parse_bool` into ``"true"``/``"false"``, ``"float"``,
    ``"int"``) and ``default`` (used when the path is absent in a sample). Canonical fields:
    ``model, task, item_id, prediction, outcome, correct, predictor, confidence, cluster,
    status, run_id, sample``.

Joined logs
    Each field is read from one side. ``prediction``, ``confidence`` and ``predictor`` come
    from the hypothetical log, everything else from the object-level log; prefix a path with
    ``object:`` or ``hypothetical:`` to choose explicitly. ``model`` defaults to the object
    log's ``@model`` and ``predictor`` to the hypothetical log's ``@model``: when they differ
    the records are cross-predictions. ``item_id`` defaults to the key. An item with no
    hypothetical sample becomes a record with status ``"error"`` and null prediction; a
    hypothetical sample with no object-level sample is dropped; both are counted.

Errors
    A path that resolves in none of a log's samples is an :class:`~analysis.contract.InputError`
    naming the mapping field, the file and line, the step that failed and the keys the sample
    actually has at that level, with a "did you mean" suggestion.
"""

from __future__ import annotations

import difflib
import math
import tomllib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Literal

import polars as pl

from analysis.contract import RECORD_SCHEMA, REGISTRY_SCHEMA, STATUSES, InputError, parse_bool
from analysis.importers.result import ImportResult

__all__ = [
    "FieldSpec",
    "JoinSpec",
    "LogSample",
    "MappedImport",
    "Mapping",
    "apply_mapping",
    "load_mapping",
    "parse_mapping",
    "resolve_path",
]

Format = Literal["lmeval", "inspect"]
Side = Literal["object", "hypothetical"]
ValueType = Literal["str", "bool", "float", "int"]

FORMATS: Final = ("lmeval", "inspect")
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
    "status",
    "run_id",
    "sample",
)
#: Top-level keys of a mapping file.
TOP_KEYS: Final = ("format", "task", "model", "predictor", "run_id", "fields", "where", "join")
#: Constants allowed at the top level.
CONSTANTS: Final = ("task", "model", "predictor", "run_id")
FIELD_KEYS: Final = ("path", "map", "type", "default")
JOIN_KEYS: Final = ("object", "hypothetical", "key", "object_key", "hypothetical_key")
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
        Optional conversion: ``"str"``, ``"bool"``, ``"float"`` or ``"int"``.
    default
        Value used when the path is absent in a sample (``None`` = absent is null).
    """

    path: str
    side: Side | None = None
    map: dict[str, str] | None = None
    type: ValueType | None = None
    default: Any = None


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
        Path -> required value; other samples are skipped (counted).
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
    where: dict[str, Any] = field(default_factory=dict)
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


#: What a mapped import returns (the one import result type of every importer).
MappedImport = ImportResult


# ----------------------------------------------------------------------------------------------
# reading a mapping


def _suggest(word: str, options: Iterable[str]) -> str:
    close = difflib.get_close_matches(word, list(options), n=1)
    return f" Did you mean {close[0]!r}?" if close else ""


def _unknown_keys(table: dict[str, Any], allowed: Sequence[str], where: str, source: str) -> None:
    for key in table:
        if key not in allowed:
            raise InputError(
                f"{source}: unknown key {key!r} in {where}.{_suggest(key, allowed)} "
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
        data = tomllib.loads(p.read_text(encoding="utf-8"))
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

    Returns
    -------
    Mapping

    Raises
    ------
    InputError
        On an unknown key (with a suggestion), a missing ``format``, or a bad value.

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
    if fmt not in FORMATS:
        raise InputError(
            f'{source}: \'format\' is {fmt!r}; write format = "lmeval" or format = "inspect".'
        )
    constants: dict[str, str] = {}
    for key in CONSTANTS:
        if key in data:
            if not isinstance(data[key], str) or not data[key]:
                raise InputError(f"{source}: '{key}' must be a non-empty string.")
            constants[key] = data[key]
    raw_fields = data.get("fields", {})
    if not isinstance(raw_fields, dict):
        raise InputError(f'{source}: [fields] must be a table of field = "path".')
    _unknown_keys(raw_fields, FIELDS, "[fields]", source)
    fields: dict[str, FieldSpec] = {}
    for name, spec in raw_fields.items():
        if name in constants:
            raise InputError(
                f"{source}: '{name}' is given both as a constant and in [fields]; keep one."
            )
        fields[name] = _field_spec(name, spec, source)
    where = data.get("where", {})
    if not isinstance(where, dict):
        raise InputError(f"{source}: [where] must be a table of path = value.")
    joins = _joins(data.get("join"), source)
    if not joins and any(f.side is not None for f in fields.values()):
        raise InputError(f"{source}: 'object:'/'hypothetical:' prefixes need a [join] table.")
    has_task = "task" in constants or "task" in fields
    if not has_task:
        raise InputError(
            f'{source}: no task; add task = "refusal" (a constant) or fields.task = "path".'
        )
    if "item_id" not in fields and not joins:
        raise InputError(f'{source}: no item_id; add fields.item_id = "path.to.id".')
    if "prediction" not in fields and "confidence" not in fields:
        raise InputError(f'{source}: no prediction; add fields.prediction = "path".')
    if "outcome" not in fields and "correct" not in fields:
        raise InputError(f'{source}: no outcome; add fields.outcome = "path" (or fields.correct).')
    return Mapping(
        format=fmt,
        constants=constants,
        fields=fields,
        where=dict(where),
        joins=joins,
        source=source,
        base=Path(base),
    )


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
    if vtype is not None and vtype not in ("str", "bool", "float", "int"):
        raise InputError(
            f"{source}: fields.{name}.type is {vtype!r}; use str, bool, float or int."
            + _suggest(str(vtype), ("str", "bool", "float", "int"))
        )
    return FieldSpec(path=path, side=side, map=mapping, type=vtype, default=table.get("default"))


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


# ----------------------------------------------------------------------------------------------
# resolving paths


class _PathError(Exception):
    """A dotted path failed at one step; carries what a message needs."""

    def __init__(self, path: str, step: int, reason: str, options: list[str]) -> None:
        super().__init__(reason)
        self.path = path
        self.step = step
        self.reason = reason
        self.options = options


def _steps(path: str) -> list[str]:
    return [s for s in path.split(".") if s != ""] if path else []


def resolve_path(obj: Any, path: str) -> Any:
    """Follow a dotted path through nested dicts and lists.

    Parameters
    ----------
    obj
        Nested dicts/lists.
    path
        Dot-separated steps; a step is a dict key, or an integer index into a list
        (negative counts from the end). The empty path returns ``obj``.

    Returns
    -------
    object
        The value found.

    Raises
    ------
    KeyError
        When a step is absent; the message names the step and the keys present there.

    Examples
    --------
    >>> resolve_path({"doc": {"id": 7}, "resps": [["A"]]}, "resps.0.0")
    'A'
    """
    try:
        return _resolve(obj, path)
    except _PathError as exc:
        raise KeyError(_describe(exc)) from None


def _resolve(obj: Any, path: str) -> Any:
    cur = obj
    for i, step in enumerate(_steps(path)):
        if isinstance(cur, dict):
            if step in cur:
                cur = cur[step]
                continue
            raise _PathError(path, i, f"no key {step!r}", [str(k) for k in cur])
        if isinstance(cur, list | tuple):
            try:
                index = int(step)
            except ValueError:
                raise _PathError(
                    path,
                    i,
                    f"{step!r} is not a list index (a list of {len(cur)})",
                    [str(n) for n in range(len(cur))],
                ) from None
            if -len(cur) <= index < len(cur):
                cur = cur[index]
                continue
            raise _PathError(
                path,
                i,
                f"index {index} is outside a list of {len(cur)}",
                [str(n) for n in range(len(cur))],
            )
        kind = "null" if cur is None else type(cur).__name__
        raise _PathError(path, i, f"{step!r} cannot be looked up in a {kind} value", [])
    return cur


def _describe(exc: _PathError) -> str:
    steps = _steps(exc.path)
    at = ".".join(steps[: exc.step]) or "the top level"
    step = steps[exc.step] if exc.step < len(steps) else ""
    present = ", ".join(exc.options[:20]) + (" ..." if len(exc.options) > 20 else "")
    text = f"path {exc.path!r} fails at {at!r}: {exc.reason}"
    if exc.options:
        text += f". Keys there: {present}.{_suggest(step, exc.options)}"
    return text


# ----------------------------------------------------------------------------------------------
# applying a mapping


def _convert(raw: Any, spec: FieldSpec) -> tuple[Any, bool]:
    """Return (value, readable). ``readable`` is False when a present value could not be read."""
    if raw is None:
        return None, True
    if spec.map is not None:
        key = raw if isinstance(raw, str) else _text(raw)
        key = key.strip()
        if key in spec.map:
            return spec.map[key], True
        return None, False
    if spec.type == "bool":
        flag = parse_bool(raw.strip() if isinstance(raw, str) else raw)
        if flag is None:
            return None, False
        return ("true" if flag else "false"), True
    if spec.type == "float":
        try:
            value = float(raw)
        except (TypeError, ValueError):
            return None, False
        return (value if math.isfinite(value) else None), math.isfinite(value)
    if spec.type == "int":
        try:
            return int(raw), True
        except (TypeError, ValueError):
            return None, False
    return raw, True


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


@dataclass
class _Reader:
    """Reads fields from samples, remembering per-field failures for the notes."""

    mapping: Mapping
    absent: dict[str, int] = field(default_factory=dict)
    unreadable: dict[str, int] = field(default_factory=dict)
    resolved: dict[tuple[str, str], bool] = field(default_factory=dict)
    first_error: dict[tuple[str, str], tuple[_PathError, LogSample]] = field(default_factory=dict)

    def get(self, name: str, spec: FieldSpec, sample: LogSample, log: str) -> tuple[Any, bool]:
        if spec.path.startswith(META_PREFIX):
            target, path = sample.meta, spec.path[len(META_PREFIX) :]
        else:
            target, path = sample.data, spec.path
        key = (name, log)
        try:
            raw = _resolve(target, path)
        except _PathError as exc:
            self.first_error.setdefault(key, (exc, sample))
            self.resolved.setdefault(key, False)
            self.absent[name] = self.absent.get(name, 0) + 1
            if spec.default is not None:
                return _convert(spec.default, spec)
            return None, True
        self.resolved[key] = True
        value, ok = _convert(raw, spec)
        if not ok:
            self.unreadable[name] = self.unreadable.get(name, 0) + 1
        return value, ok

    def check(self) -> None:
        """Raise InputError for a field whose path resolved in no sample of a log."""
        for key, ok in self.resolved.items():
            if ok:
                continue
            name, log = key
            exc, sample = self.first_error[key]
            spec = self.mapping.fields.get(name)
            label = f"fields.{name} = {spec.path!r}" if spec is not None else name
            where = (
                "the log's metadata"
                if spec and spec.path.startswith(META_PREFIX)
                else (f"{sample.source_file} (line {sample.source_line})")
            )
            raise InputError(
                f"{self.mapping.source}: {label} resolves in no sample of {log}; in {where} "
                f"the {_describe(exc)}"
            )


def _matches(sample: LogSample, where: dict[str, Any]) -> bool:
    for path, wanted in where.items():
        try:
            value = _resolve(sample.data, path)
        except _PathError:
            return False
        if value != wanted and _text(value) != _text(wanted):
            return False
    return True


def _record(
    values: dict[str, Any], sample: LogSample, status: str | None, stats: dict[str, int]
) -> dict[str, Any]:
    rec: dict[str, Any] = {k: None for k in RECORD_SCHEMA}
    rec.update({k: v for k, v in values.items() if k in RECORD_SCHEMA})
    rec["source_file"] = sample.source_file
    rec["source_line"] = sample.source_line
    for key in (
        "model",
        "task",
        "item_id",
        "prediction",
        "outcome",
        "predictor",
        "cluster",
        "run_id",
    ):
        if rec[key] is not None and not isinstance(rec[key], str):
            rec[key] = _text(rec[key])
    if rec["predictor"] is None:
        rec["predictor"] = rec["model"]
    cast: type[int] | type[float]
    for key, cast in (("sample", int), ("confidence", float)):
        value = rec[key]
        if value is None or (isinstance(value, cast) and not isinstance(value, bool)):
            continue
        try:
            rec[key] = cast(value)
        except (TypeError, ValueError):
            stats[f"{key}_unreadable"] = stats.get(f"{key}_unreadable", 0) + 1
            rec[key] = None
    if rec["sample"] is None:
        rec["sample"] = sample.sample_index
    conf = rec["confidence"]
    if conf is not None and not (math.isfinite(conf) and 0.0 <= conf <= 1.0):
        stats["confidence_out_of_range"] = stats.get("confidence_out_of_range", 0) + 1
        rec["confidence"] = None
    if rec["correct"] is not None:
        rec["correct"] = parse_bool(rec["correct"])
    elif rec["prediction"] is not None and rec["outcome"] is not None:
        rec["correct"] = rec["prediction"] == rec["outcome"]
    if status is not None:
        rec["status"] = status
    return rec


def apply_mapping(
    mapping: Mapping,
    samples: Sequence[LogSample] | None = None,
    *,
    joined: Sequence[tuple[Sequence[LogSample], Sequence[LogSample]]] = (),
    log_name: Callable[[Sequence[LogSample]], str] | None = None,
) -> MappedImport:
    """Turn logged samples into canonical records with a mapping.

    Parameters
    ----------
    mapping
        A checked :class:`Mapping`.
    samples
        Samples of single logs (no join), in order.
    joined
        ``(object_samples, hypothetical_samples)`` pairs, one per :class:`JoinSpec`.
    log_name
        How to name a log in messages (default: the first sample's ``source_file``).

    Returns
    -------
    MappedImport

    Raises
    ------
    InputError
        When a mapped path resolves in none of a log's samples, or no record has a required
        field (model, task, item_id).
    """
    notes: list[str] = []
    counts: dict[str, Any] = {}
    reader = _Reader(mapping)
    name = log_name or (lambda s: s[0].source_file if s else "<empty log>")
    records: list[dict[str, Any]] = []
    skipped_where = 0
    value_stats: dict[str, int] = {}

    def read_fields(sample: LogSample, names: Iterable[str], log: str) -> tuple[dict, bool]:
        values: dict[str, Any] = {}
        readable = True
        for fname in names:
            value, ok = reader.get(fname, mapping.fields[fname], sample, log)
            values[fname] = value
            if not ok and fname in ("prediction", "outcome", "correct", "confidence"):
                readable = False
        return values, readable

    def finish(values: dict[str, Any], sample: LogSample, readable: bool) -> dict[str, Any]:
        for key, value in mapping.constants.items():
            values.setdefault(key, value)
        # status: mapped > the reader's (e.g. an errored sample) > unreadable > ok
        if values.get("status") is not None:
            status = str(values["status"])
        elif sample.status != "ok":
            status = sample.status
        elif not readable or (values.get("prediction") is None and "prediction" in mapping.fields):
            status = "unparsed"
        elif values.get("outcome") is None and values.get("correct") is None:
            status = "unparsed"
        else:
            status = "ok"
        return _record(values, sample, status, value_stats)

    if samples:
        by_log: dict[str, list[LogSample]] = {}
        for s in samples:
            by_log.setdefault(s.source_file, []).append(s)
        for group in by_log.values():
            log = name(group)
            for s in group:
                if mapping.where and not _matches(s, mapping.where):
                    skipped_where += 1
                    continue
                values, readable = read_fields(s, mapping.fields, log)
                if "model" not in mapping.fields and "model" not in mapping.constants:
                    values["model"] = s.meta.get("model")
                records.append(finish(values, s, readable))

    def index(
        group: Sequence[LogSample], paths: tuple[str, ...], log: str
    ) -> dict[tuple[str, ...], LogSample]:
        out: dict[tuple[str, ...], LogSample] = {}
        for s in group:
            if mapping.where and not _matches(s, mapping.where):
                continue
            parts: list[str] = []
            for p in paths:
                value, _ = reader.get(f"[join] key {p!r}", FieldSpec(p), s, log)
                if value is None:
                    break
                parts.append(_text(value))
            else:
                key = tuple(parts)
                if key in out:
                    join_counts["duplicate_keys"] += 1
                else:
                    out[key] = s
        return out

    join_counts = {"object_only": 0, "hypothetical_only": 0, "duplicate_keys": 0}
    for spec, (obj_samples, hyp_samples) in zip(mapping.joins, joined, strict=True):
        obj_log, hyp_log = name(obj_samples), name(hyp_samples)
        obj_fields = [f for f in mapping.fields if _side(f, mapping.fields[f]) == "object"]
        hyp_fields = [f for f in mapping.fields if _side(f, mapping.fields[f]) == "hypothetical"]

        hyp_index = index(hyp_samples, spec.hypothetical_key, hyp_log)
        obj_index = index(obj_samples, spec.object_key, obj_log)
        for key, obj in obj_index.items():
            values, readable = read_fields(obj, obj_fields, obj_log)
            values.setdefault("item_id", "::".join(key))
            if "model" not in mapping.fields and "model" not in mapping.constants:
                values["model"] = obj.meta.get("model")
            hyp = hyp_index.get(key)
            if hyp is None:
                join_counts["object_only"] += 1
                values.pop("prediction", None)
                if "predictor" not in mapping.constants and "predictor" not in mapping.fields:
                    values["predictor"] = hyp_samples[0].meta.get("model") if hyp_samples else None
                rec = finish(values, obj, readable)
                rec["status"] = "error"
                rec["prediction"] = None
                rec["correct"] = None
                records.append(rec)
                continue
            hvalues, hreadable = read_fields(hyp, hyp_fields, hyp_log)
            values.update(hvalues)
            if "predictor" not in mapping.fields and "predictor" not in mapping.constants:
                values["predictor"] = hyp.meta.get("model")
            records.append(finish(values, obj, readable and hreadable))
        join_counts["hypothetical_only"] += sum(1 for k in hyp_index if k not in obj_index)

    reader.check()

    frame = (
        pl.DataFrame(records, schema=RECORD_SCHEMA, orient="row")
        if records
        else pl.DataFrame(schema=RECORD_SCHEMA)
    )
    for required in ("model", "task", "item_id"):
        missing = frame[required].null_count()
        if missing:
            raise InputError(
                f"{mapping.source}: {missing} record(s) have no {required}; map it in [fields] "
                f'or give it as a constant ({required} = "...").'
            )
    bad_status = sorted(set(frame["status"].drop_nulls().to_list()) - set(STATUSES))
    if bad_status:
        raise InputError(
            f"{mapping.source}: status values {bad_status} are not {', '.join(STATUSES)}; "
            "recode them with fields.status.map."
        )
    before = frame.height
    frame = frame.unique(
        subset=["model", "predictor", "task", "item_id", "sample"],
        keep="first",
        maintain_order=True,
    )
    duplicates = before - frame.height

    counts.update(
        records=frame.height,
        skipped_by_where=skipped_where,
        duplicates_dropped=duplicates,
        absent_values=dict(sorted(reader.absent.items())),
        unreadable_values=dict(sorted(reader.unreadable.items())),
        records_by_status={
            s: n for s, n in frame.group_by("status").len().sort("status").iter_rows()
        },
        cross_predictions=int((frame["predictor"] != frame["model"]).sum()) if frame.height else 0,
    )
    if mapping.joins:
        counts.update({f"join_{k}": v for k, v in join_counts.items()})
        notes.append(
            f"join: {join_counts['object_only']} item(s) with no hypothetical sample became "
            f"records with status 'error'; {join_counts['hypothetical_only']} hypothetical "
            f"sample(s) with no object-level sample were dropped; "
            f"{join_counts['duplicate_keys']} repeated key(s) kept first."
        )
    for what, n in sorted(value_stats.items()):
        notes.append(f"{n} record(s): {what.replace('_', ' ')}; set to null (or the default).")
    counts["value_problems"] = dict(sorted(value_stats.items()))
    if skipped_where:
        notes.append(f"{skipped_where} sample(s) skipped by [where] {mapping.where}.")
    if duplicates:
        notes.append(
            f"{duplicates} duplicate record(s) (same model, predictor, task, item_id, "
            "sample) dropped; the first was kept."
        )
    for fname, n in sorted(reader.absent.items()):
        notes.append(f"{n} sample(s) lack the path of {fname}; the value is null (or default).")
    for fname, n in sorted(reader.unreadable.items()):
        notes.append(
            f"{n} value(s) of {fname} could not be read (not in its map, or not of its type); "
            "null, status 'unparsed'."
        )
    models = sorted(set(frame["model"].to_list()) | set(frame["predictor"].to_list()))
    registry = pl.DataFrame({"model": models}, schema={"model": pl.Utf8()}).with_columns(
        [
            pl.lit(None, dtype=dtype).alias(col)
            for col, dtype in REGISTRY_SCHEMA.items()
            if col != "model"
        ]
    )
    return MappedImport(records=frame, notes=notes, counts=counts, registry=registry)


def _side(name: str, spec: FieldSpec) -> Side:
    if spec.side is not None:
        return spec.side
    return "hypothetical" if name in HYPOTHETICAL_FIELDS else "object"


# ----------------------------------------------------------------------------------------------
# shared driver for the format modules


def as_mapping(mapping: Mapping | Path | str, *, fmt: Format) -> Mapping:
    """Load ``mapping`` if it is a path, and check that it is for format ``fmt``."""
    m = mapping if isinstance(mapping, Mapping) else load_mapping(mapping)
    if m.format != fmt:
        raise InputError(
            f"{m.source}: format = {m.format!r}, but these are {fmt} logs; "
            f'set format = "{fmt}" or use the {m.format} importer.'
        )
    return m


def import_logs(
    src: Path | str | None,
    *,
    mapping: Mapping,
    find: Callable[[Path], list[Path]],
    read: Callable[[Path, Path], tuple[list[LogSample], list[str]]],
    what: str,
) -> MappedImport:
    """Read logs with a format's ``find``/``read`` and apply ``mapping`` (used by the formats).

    Parameters
    ----------
    src
        A log file or a folder of logs. With a ``[join]``, relative join paths are resolved
        against ``src`` when it is a folder, else against the mapping file's folder.
    mapping
        A checked mapping of the right format.
    find
        Lists the log files in a folder.
    read
        ``read(path, root) -> (samples, notes)`` for one log file; ``root`` is the folder
        ``source_file`` is made relative to.
    what
        How to describe the logs in messages ("lm-evaluation-harness samples files").

    Returns
    -------
    MappedImport
    """
    notes: list[str] = []
    root = Path(src) if src is not None else None
    if root is not None and not root.exists():
        raise InputError(f"{root}: no such file or folder; give a {what} file or a folder of them.")
    if mapping.joins:
        base = root if root is not None and root.is_dir() else mapping.base
        pairs = []
        for spec in mapping.joins:
            sides = []
            for label, loc in (("object", spec.object), ("hypothetical", spec.hypothetical)):
                path = Path(loc) if Path(loc).is_absolute() else base / loc
                if not path.is_file():
                    raise InputError(
                        f"{mapping.source}: [join] {label} = {loc!r} not found (looked at "
                        f"{path}); paths are relative to SRC when it is a folder, else to the "
                        "mapping file."
                    )
                samples, more = read(path, base)
                notes.extend(more)
                sides.append(samples)
            pairs.append((sides[0], sides[1]))
        result = apply_mapping(mapping, joined=pairs)
    else:
        if root is None:
            raise InputError(f"{mapping.source}: no logs given; pass SRC or add a [join] table.")
        files = [root] if root.is_file() else find(root)
        if not files:
            raise InputError(f"{root}: no {what} found; point at a log file or its folder.")
        base = root.parent if root.is_file() else root
        collected: list[LogSample] = []
        for path in files:
            got, more = read(path, base)
            notes.extend(more)
            collected.extend(got)
        result = apply_mapping(mapping, collected)
        result.counts["files"] = len(files)
    result.notes[:0] = notes
    return result
