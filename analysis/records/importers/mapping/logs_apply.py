"""Applying a log mapping to log samples: canonical records, the registry, notes and counts."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from selfmodel.records.contract import (
    KEY,
    RECORD_SCHEMA,
    REGISTRY_SCHEMA,
    STATUSES,
    InputError,
    parse_bool,
)
from selfmodel.records.importers.mapping.logs_paths import (
    PathError,
    convert,
    describe_of,
    resolve,
    text_of,
)
from selfmodel.records.importers.mapping.logs_spec import (
    HYPOTHETICAL_FIELDS,
    META_PREFIX,
    REGEX_TIMEOUT,
    FieldSpec,
    Format,
    JoinSpec,
    LogSample,
    MappedImport,
    Mapping,
    Samples,
    Side,
    load_mapping,
)
from selfmodel.records.reduction import binary_text
from selfmodel.records.reduction import text as ingest_text
from selfmodel.records.snippets import snippet


@dataclass
class _Reader:
    """Reads fields from samples, remembering per-field failures for the notes."""

    mapping: Mapping
    absent: dict[str, int] = field(default_factory=dict)
    unreadable: dict[str, int] = field(default_factory=dict)
    resolved: dict[tuple[str, str], bool] = field(default_factory=dict)
    first_error: dict[tuple[str, str], tuple[PathError, LogSample]] = field(default_factory=dict)

    def get(self, name: str, spec: FieldSpec, sample: LogSample, log: str) -> tuple[Any, bool]:
        if spec.path.startswith(META_PREFIX):
            target, path = sample.meta, spec.path[len(META_PREFIX) :]
        else:
            target, path = sample.data, spec.path
        key = (name, log)
        try:
            raw = resolve(target, path)
        except PathError as exc:
            self.first_error.setdefault(key, (exc, sample))
            self.resolved.setdefault(key, False)
            self.absent[name] = self.absent.get(name, 0) + 1
            if spec.default is not None:
                return convert(spec.default, spec)
            return None, True
        self.resolved[key] = True
        try:
            value, ok = convert(raw, spec)
        except TimeoutError:  # the user's regex backtracks without end on this value
            raise InputError(
                f"{self.mapping.source}: fields.{name}.regex {spec.regex.pattern!r} "  # type: ignore[union-attr]
                f"ran for more than {REGEX_TIMEOUT:g} s on the value in "
                f"{sample.source_file} (line {sample.source_line}) and was stopped: it "
                "backtracks without end. Write it without nested repeats (e.g. '^a+$' "
                "rather than '^(a|aa)+$').") from None
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
                f"the {describe_of(exc)}"
            )


def _matches(sample: LogSample, where: dict[str, tuple[Any, ...]]) -> bool:
    """Whether ``sample`` has, at every ``[where]`` path, one of the accepted values."""
    for path, wanted in where.items():
        value = _where_value(sample, path)
        if value is _ABSENT:
            return False
        if not any(value == w or text_of(value) == text_of(w) for w in wanted):
            return False
    return True


_ABSENT: Any = object()


def _where_value(sample: LogSample, path: str) -> Any:
    target, inner = (
        (sample.meta, path[len(META_PREFIX) :])
        if path.startswith(META_PREFIX)
        else (sample.data, path)
    )
    try:
        return resolve(target, inner)
    except PathError:
        return _ABSENT


def _where_seen(samples: Sequence[LogSample], where: dict[str, tuple[Any, ...]]) -> str:
    """The values the ``[where]`` paths have in ``samples`` (for a message), a few each."""
    parts = []
    for path in where:
        seen = sorted({text_of(v) for s in samples if (v := _where_value(s, path)) is not _ABSENT})
        shown = ", ".join(repr(v) for v in seen[:8]) + (" ..." if len(seen) > 8 else "")
        parts.append(f"{path!r}: {shown}" if seen else f"{path!r}: no sample has this path")
    return "; ".join(parts)


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
        "condition",
        "run_id",
    ):
        if rec[key] is not None and not isinstance(rec[key], str):
            rec[key] = text_of(rec[key])
    if rec["predictor"] is None:
        rec["predictor"] = rec["model"]
    if rec["run_id"] is None:  # distinct log files are distinct runs (contract.KEY)
        rec["run_id"] = sample.source_file
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
    if rec["correct"] is not None:  # derived later, on values read as ingest reads them
        rec["correct"] = parse_bool(rec["correct"])
    if status is not None:
        rec["status"] = status
    return rec


def apply_mapping(
    mapping: Mapping,
    samples: Sequence[LogSample] | None = None,
    *,
    joined: Sequence[tuple[Sequence[LogSample], Sequence[LogSample]]] = (),
    log_name: Callable[[Sequence[LogSample]], str] | None = None,
    join_specs: Sequence[JoinSpec] | None = None,
) -> MappedImport:
    """Turn logged samples into canonical records with a mapping.

    Parameters
    ----------
    mapping
        A checked :class:`Mapping`.
    samples
        Samples of single logs (no join), in order.
    joined
        ``(object_samples, hypothetical_samples)`` pairs, one per join spec.
    log_name
        How to name a log in messages (default: the first sample's ``source_file``).
    join_specs
        The join spec of each pair (default: ``mapping.joins``; a glob in a join gives
        several pairs with one spec).

    Returns
    -------
    MappedImport

    Raises
    ------
    InputError
        When a mapped path resolves in none of a log's samples, ``[where]`` matches no
        sample, or a record lacks a required field (model, task, item_id).
    """
    name = log_name or (lambda s: s[0].source_file if s else "<empty log>")
    run = _Applier(mapping)
    if samples:
        run.single_logs(samples, name)
    specs = join_specs if join_specs is not None else mapping.joins
    for spec, (obj_samples, hyp_samples) in zip(specs, joined, strict=True):
        run.join(spec, obj_samples, hyp_samples, name)
    everything = [*(samples or ()), *(s for pair in joined for side in pair for s in side)]
    if mapping.where and everything and not run.records:
        raise InputError(
            f"{mapping.source}: [where] matches none of the {len(everything)} samples read; "
            f"values there: {_where_seen(everything, mapping.where)}."
        )
    run.reader.check()
    frame, duplicates = _checked_frame(mapping, run.records)
    notes: list[str] = []
    counts: dict[str, Any] = {}
    _summarise(run, frame, duplicates, notes, counts)
    sizes = {
        str(s.meta["model"]): s.meta["params_b"]
        for s in everything
        if s.meta.get("params_b") is not None and s.meta.get("model") is not None
    }
    return MappedImport(
        records=frame, notes=notes, counts=counts, registry=_registry(frame, sizes)
    )


@dataclass
class _Applier:
    """The records of one :func:`apply_mapping` call and what reading them met."""

    mapping: Mapping
    reader: _Reader = field(init=False)
    records: list[dict[str, Any]] = field(default_factory=list)
    skipped_where: int = 0
    relabelled: dict[str, dict[str, int]] = field(default_factory=dict)  # key: {"a -> b": n}
    own: dict[str, dict[str, str]] = field(default_factory=dict)  # key: {log's own: first log}
    value_stats: dict[str, int] = field(default_factory=dict)
    join_counts: dict[str, int] = field(
        default_factory=lambda: {"object_only": 0, "hypothetical_only": 0, "duplicate_keys": 0}
    )

    def __post_init__(self) -> None:
        self.reader = _Reader(self.mapping)

    def read_fields(self, sample: LogSample, names: Iterable[str], log: str) -> tuple[dict, bool]:
        values: dict[str, Any] = {}
        readable = True
        for fname in names:
            value, ok = self.reader.get(fname, self.mapping.fields[fname], sample, log)
            values[fname] = value
            if not ok and fname in ("prediction", "outcome", "correct", "confidence"):
                readable = False
        return values, readable

    def finish(self, values: dict[str, Any], sample: LogSample, readable: bool) -> dict[str, Any]:
        mapping = self.mapping
        for key, value in mapping.constants.items():
            if key not in values:
                self.check_constant(key, value, sample)
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
        return _record(values, sample, status, self.value_stats)

    def check_constant(self, key: str, value: Any, sample: LogSample) -> None:
        """A constant ``task`` or ``model`` where the log names its own.

        A log's own name given another is relabelled, and counted (``relabelled`` in the
        counts, a note). Logs of two or more tasks (or models) given one constant would
        become one: an error.
        """
        own = sample.meta.get(key)
        if key not in ("task", "model") or own is None:
            return
        seen = self.own.setdefault(key, {})
        seen.setdefault(str(own), sample.source_file)
        if len(seen) > 1:
            (a, log_a), (b, log_b) = list(seen.items())[:2]
            raise InputError(
                f"{sample.source_file}: the mapping {self.mapping.source} sets {key} = "
                f"{value!r} for logs of {key} {a!r} ({log_a}) and {b!r} ({log_b}): they would "
                f"become one {key}. Read the logs of one {key} only with "
                + snippet(f'"@{key}" = "{a}"', table="where", kind="import")
                + f", or drop the constant to keep each log's own {key} (rename them with "
                + snippet(f'{key} = {{ path = "@{key}", map = {{ "{a}" = "{value}" }} }}',
                          table="fields", kind="import") + ").")
        if str(own) != str(value):
            pair = f"{own} -> {value}"
            self.relabelled.setdefault(key, {})
            self.relabelled[key][pair] = self.relabelled[key].get(pair, 0) + 1

    def single_logs(
        self, samples: Sequence[LogSample], name: Callable[[Sequence[LogSample]], str]
    ) -> None:
        """Records of samples of single logs (no join), log by log."""
        mapping = self.mapping
        by_log: dict[str, list[LogSample]] = {}
        for s in samples:
            by_log.setdefault(s.source_file, []).append(s)
        for group in by_log.values():
            log = name(group)
            for s in group:
                if mapping.where and not _matches(s, mapping.where):
                    self.skipped_where += 1
                    continue
                values, readable = self.read_fields(s, mapping.fields, log)
                if "model" not in mapping.fields and "model" not in mapping.constants:
                    values["model"] = s.meta.get("model")
                self.records.append(self.finish(values, s, readable))

    def index(
        self, group: Sequence[LogSample], paths: tuple[str, ...], log: str
    ) -> dict[tuple[str, ...], LogSample]:
        """Samples of a log by their join key (first of a repeated key kept)."""
        out: dict[tuple[str, ...], LogSample] = {}
        for s in group:
            if self.mapping.where and not _matches(s, self.mapping.where):
                continue
            parts: list[str] = []
            for p in paths:
                value, _ = self.reader.get(f"[join] key {p!r}", FieldSpec(p), s, log)
                if value is None:
                    break
                parts.append(text_of(value))
            else:
                key = tuple(parts)
                if key in out:
                    self.join_counts["duplicate_keys"] += 1
                else:
                    out[key] = s
        return out

    def join(
        self,
        spec: JoinSpec,
        obj_samples: Sequence[LogSample],
        hyp_samples: Sequence[LogSample],
        name: Callable[[Sequence[LogSample]], str],
    ) -> None:
        """Records of one joined pair of logs (object-level and hypothetical samples)."""
        mapping = self.mapping
        obj_log, hyp_log = name(obj_samples), name(hyp_samples)
        obj_fields = [f for f in mapping.fields if _side(f, mapping.fields[f]) == "object"]
        hyp_fields = [f for f in mapping.fields if _side(f, mapping.fields[f]) == "hypothetical"]

        hyp_index = self.index(hyp_samples, spec.hypothetical_key, hyp_log)
        obj_index = self.index(obj_samples, spec.object_key, obj_log)
        for key, obj in obj_index.items():
            values, readable = self.read_fields(obj, obj_fields, obj_log)
            values.setdefault("item_id", "::".join(key))
            if "model" not in mapping.fields and "model" not in mapping.constants:
                values["model"] = obj.meta.get("model")
            hyp = hyp_index.get(key)
            if hyp is None:
                self.join_counts["object_only"] += 1
                values.pop("prediction", None)
                if "predictor" not in mapping.constants and "predictor" not in mapping.fields:
                    values["predictor"] = hyp_samples[0].meta.get("model") if hyp_samples else None
                rec = self.finish(values, obj, readable)
                rec["status"] = "error"
                rec["prediction"] = None
                rec["correct"] = None
                self.records.append(rec)
                continue
            hvalues, hreadable = self.read_fields(hyp, hyp_fields, hyp_log)
            values.update(hvalues)
            if "predictor" not in mapping.fields and "predictor" not in mapping.constants:
                values["predictor"] = hyp.meta.get("model")
            self.records.append(self.finish(values, obj, readable and hreadable))
        self.join_counts["hypothetical_only"] += sum(1 for k in hyp_index if k not in obj_index)


def _checked_frame(mapping: Mapping, records: list[dict[str, Any]]) -> tuple[pl.DataFrame, int]:
    """The records as a frame, exact repeats counted once, and how many repeats were dropped.

    Raises InputError when a required field is missing or a status is not in the contract.
    """
    frame = (
        pl.DataFrame(records, schema=RECORD_SCHEMA, orient="row")
        if records
        else pl.DataFrame(schema=RECORD_SCHEMA)
    )
    for required in ("model", "task", "item_id"):
        missing = frame[required].null_count()
        if missing:
            constant = ("" if required == "item_id" else " or give it as a constant ("
                        + snippet(f'{required} = "<name>"', kind="import") + ")")
            raise InputError(
                f"{mapping.source}: {missing} record(s) have no {required}; map it ("
                + snippet(f'{required} = "<path in a sample>"', table="fields", kind="import")
                + ")" + constant + "."
            )
    bad_status = sorted(set(frame["status"].drop_nulls().to_list()) - set(STATUSES))
    if bad_status:
        raise InputError(
            f"{mapping.source}: status values {bad_status} are not {', '.join(STATUSES)}; "
            "recode them with fields.status.map."
        )
    frame = read_values_as_ingest(frame)
    before = frame.height
    # exact repeats only: records that differ in their answer are left to ingest, which
    # quarantines them as conflicts (never resolved by file order)
    answer = ["prediction", "outcome", "correct", "confidence", "status"]
    frame = frame.unique(subset=[*KEY, *answer], keep="first", maintain_order=True)
    duplicates = before - frame.height
    return frame, duplicates


def read_values_as_ingest(frame: pl.DataFrame) -> pl.DataFrame:
    """Prediction and outcome read by ingest's own rule, then ``correct`` derived from them.

    The rule is ingest's (:mod:`selfmodel.records.reduction`): stripped text, the spellings of a
    missing value null, a boolean spelling (``yes``/``no``, ``1``/``0``, any case) read as
    ``"true"``/``"false"``, anything else kept as text. So a ``yes``/``no`` prediction
    against ``true``/``false`` outcomes is scored as ingest scores it and a mapped
    ``correct`` is never contradicted by ingest's ``prediction == outcome``. ``correct`` is
    derived only on ``ok`` records that have both values and no mapped ``correct``.
    """
    frame = frame.with_columns(pl.col("prediction", "outcome").cast(pl.Utf8))
    derived = (
        pl.when(
            pl.col("correct").is_null()
            & (pl.col("status") == "ok")
            & pl.col("prediction").is_not_null()
            & pl.col("outcome").is_not_null()
        )
        .then(pl.col("prediction") == pl.col("outcome"))
        .otherwise(pl.col("correct"))
    )
    return frame.with_columns(
        binary_text(ingest_text(c, pl), pl).alias(c) for c in ("prediction", "outcome")
    ).with_columns(derived.alias("correct"))


def _summarise(
    run: _Applier, frame: pl.DataFrame, duplicates: int, notes: list[str], counts: dict[str, Any]
) -> None:
    """Counts and notes of one :func:`apply_mapping` call."""
    mapping, reader, value_stats = run.mapping, run.reader, run.value_stats
    join_counts, skipped_where = run.join_counts, run.skipped_where
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
    if run.relabelled:
        counts["relabelled"] = {k: dict(sorted(v.items())) for k, v in run.relabelled.items()}
        for key, pairs in sorted(run.relabelled.items()):
            shown = ", ".join(f"{k} ({n})" for k, n in sorted(pairs.items()))
            notes.append(f"the mapping's {key} = {mapping.constants.get(key)!r} relabelled "
                         f"records of logs that name another {key}: {shown}.")
    for what, n in sorted(value_stats.items()):
        notes.append(f"{n} record(s): {what.replace('_', ' ')}; set to null (or the default).")
    counts["value_problems"] = dict(sorted(value_stats.items()))
    if skipped_where:
        wanted = "; ".join(
            f"{path} = {' or '.join(repr(v) for v in values)}"
            for path, values in mapping.where.items()
        )
        notes.append(f"{skipped_where} sample(s) skipped by [where] {wanted}.")
    if duplicates:
        notes.append(
            f"{duplicates} exact duplicate record(s) (same model, predictor, task, item_id, "
            "run_id, sample and answer) counted once."
        )
    for fname, n in sorted(reader.absent.items()):
        notes.append(f"{n} sample(s) lack the path of {fname}; the value is null (or default).")
    for fname, n in sorted(reader.unreadable.items()):
        notes.append(
            f"{n} value(s) of {fname} could not be read (not in its map, or not of its type); "
            "null, status 'unparsed'."
        )


def _registry(frame: pl.DataFrame, sizes: dict[str, float] | None = None) -> pl.DataFrame:
    """A registry with every model and predictor of ``frame``.

    ``params_b`` where the logs state a size (``sizes``: model -> billions of parameters),
    other covariates null.
    """
    models = sorted(set(frame["model"].to_list()) | set(frame["predictor"].to_list()))
    sizes = sizes or {}
    return pl.DataFrame(
        {"model": models, "params_b": [sizes.get(m) for m in models]},
        schema={"model": pl.Utf8(), "params_b": REGISTRY_SCHEMA["params_b"]},
    ).with_columns(
        [
            pl.lit(None, dtype=dtype).alias(col)
            for col, dtype in REGISTRY_SCHEMA.items()
            if col not in ("model", "params_b")
        ]
    ).select(list(REGISTRY_SCHEMA))


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


_GLOB_CHARS = frozenset("*?[")


def _join_files(mapping: Mapping, label: str, loc: str, base: Path) -> list[Path]:
    """The log files of one side of a join: a path, or a glob (relative to ``base``)."""
    if _GLOB_CHARS & set(loc):
        if Path(loc).is_absolute():
            anchor, pattern = Path(Path(loc).anchor), str(Path(loc).relative_to(Path(loc).anchor))
        else:
            anchor, pattern = base, loc
        files = sorted(p for p in anchor.glob(pattern) if p.is_file())
        if not files:
            raise InputError(
                f"{mapping.source}: [join] {label} = {loc!r} matches no file under {anchor}; "
                "globs are relative to SRC when it is a folder, else to the mapping file."
            )
        return files
    path = Path(loc) if Path(loc).is_absolute() else base / loc
    if not path.is_file():
        raise InputError(
            f"{mapping.source}: [join] {label} = {loc!r} not found (looked at "
            f"{path}); paths are relative to SRC when it is a folder, else to the "
            "mapping file."
        )
    return [path]


def _join_pairs(
    mapping: Mapping,
    spec: JoinSpec,
    base: Path,
    read: Callable[[Path, Path], Samples],
    notes: list[str],
) -> list[tuple[list[LogSample], list[LogSample]]]:
    """(object samples, hypothetical samples) of each pair of logs one join names.

    One object log pairs with every hypothetical log (and one hypothetical log with every
    object log); several on both sides pair by model (the object log's ``@model`` with the
    hypothetical log's), each model's self-predictions.
    """
    sides: list[list[tuple[Path, list[LogSample]]]] = []
    for label, loc in (("object", spec.object), ("hypothetical", spec.hypothetical)):
        logs = []
        for path in _join_files(mapping, label, loc, base):
            samples, more = read(path, base)
            notes.extend(more)
            logs.append((path, samples))
        sides.append(logs)
    objs, hyps = sides
    if len(objs) == 1 or len(hyps) == 1:
        return [(o, h) for _, o in objs for _, h in hyps]
    by_model = {o[0].meta.get("model"): o for _, o in objs if o}
    pairs = []
    for path, h in hyps:
        model = h[0].meta.get("model") if h else None
        if model not in by_model:
            raise InputError(
                f"{mapping.source}: [join] hypothetical log {path} (model {model!r}) has no "
                f"object log of the same model among the {len(objs)} that "
                f"{spec.object!r} matches; name the object log of each model, or one object "
                "log for all."
            )
        pairs.append((by_model[model], h))
    return pairs


def import_logs(
    src: Path | str | None,
    *,
    mapping: Mapping | Path | str,
    fmt: Format,
    find: Callable[[Path], list[Path]],
    read: Callable[[Path, Path], Samples],
    what: str,
) -> MappedImport:
    """Read logs with a format's ``find``/``read`` and apply ``mapping`` (used by the formats).

    Parameters
    ----------
    src
        A log file or a folder of logs. With a ``[join]``, relative join paths are resolved
        against ``src`` when it is a folder, else against the mapping file's folder.
    mapping
        A mapping, or its file (checked with :func:`as_mapping`).
    fmt
        The format the mapping must declare.
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
    mapping = as_mapping(mapping, fmt=fmt)
    notes: list[str] = []
    root = Path(src) if src is not None else None
    if root is not None and not root.exists():
        raise InputError(f"{root}: no such file or folder; give a {what} file or a folder of them.")
    if mapping.joins:
        base = root if root is not None and root.is_dir() else mapping.base
        specs: list[JoinSpec] = []
        pairs: list[tuple[list[LogSample], list[LogSample]]] = []
        for spec in mapping.joins:
            for obj, hyp in _join_pairs(mapping, spec, base, read, notes):
                specs.append(spec)
                pairs.append((obj, hyp))
        result = apply_mapping(mapping, joined=pairs, join_specs=specs)
        result.counts["joined_log_pairs"] = len(pairs)
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
