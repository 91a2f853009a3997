"""Model registry: one row per model with its family, size and flags, joined on ``model``.

A registry is a CSV or TOML file with the columns of
:data:`selfmodel.records.contract.REGISTRY_SCHEMA`; only ``model`` is required. Its format,
the rules of each column and of derived checkpoints: ``docs/records.md`` ("Registry"). A bad
row raises :class:`~selfmodel.records.contract.InputError` naming the file, the line and the
column, and saying what to do.

This module also holds the two small helpers that format such messages,
:func:`format_input_error` and :func:`did_you_mean`, shared with :mod:`selfmodel.records.ingest`.
"""

from __future__ import annotations

import csv
import difflib
import io
import math
import re
import tomllib
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import polars as pl

from selfmodel.common.atomic import FORMULA_STARTS
from selfmodel.common.toml_errors import did_you_mean
from selfmodel.common.toml_errors import loads as toml_loads
from selfmodel.records.contract import REGISTRY_SCHEMA, InputError, name_key, parse_bool, shown
from selfmodel.records.reduction import CONTROL

__all__ = [
    "did_you_mean",
    "format_input_error",
    "load_registry",
    "model_lines",
    "parse_value",
    "registry_report",
]

_SIZE_COLUMNS = ("params_b", "active_params_b")
_NUMBER_COLUMNS = ("params_b", "active_params_b", "capability")
_BOOL_COLUMNS = ("open_weights", "reasoning")
_TEXT_COLUMNS = ("model", "family", "base_model", "intervention", "trained_tasks")
#: Control characters that are not white space: never in a name (as in the records).
_CONTROL = re.compile(CONTROL)


def format_input_error(
    file: Path | str | None,
    what: str,
    todo: str,
    *,
    line: int | None = None,
    column: str | None = None,
) -> str:
    """Format a one-line input error: ``<file>: line <n>, column '<col>': <what>. <todo>.``.

    Parameters
    ----------
    file
        The file at fault (``None`` for command-line arguments).
    what
        What is wrong.
    todo
        What the user should do about it.
    line, column
        Where, when known; omitted from the message otherwise.

    Returns
    -------
    str
        The message on a single line (newlines in the parts are replaced by spaces).

    Examples
    --------
    >>> format_input_error("r.csv", "size '-3' is negative", "Use a positive number",
    ...                    line=4, column="params_b")
    "r.csv: line 4, column 'params_b': size '-3' is negative. Use a positive number."
    """
    where = []
    if line is not None:
        where.append(f"line {line}")
    if column is not None:
        where.append(f"column '{column}'")
    head = "" if file is None else str(file)
    if where:
        head = f"{head}: {', '.join(where)}" if head else ", ".join(where)
    what, todo = what.rstrip(" ."), todo.rstrip(" .")
    body = f"{what}{'' if what.endswith(('?', '!')) else '.'} {todo}."
    message = f"{head}: {body}" if head else body
    return re.sub(r"\s*[\r\n]+\s*", " ", message)


def parse_value(column: str, value: object) -> tuple[Any, str | None]:
    """Parse one registry value; return ``(value, None)`` or ``(None, problem)``.

    The one reading of a registry column's value: the registry's, and the comparison of a
    records column of the same name with it (``selfmodel.records.ingest.registry_columns``).
    """
    if isinstance(value, str):
        value = value.strip()
        if value == "":
            return None, None
    if value is None:
        return None, None
    if column in _TEXT_COLUMNS:
        if not isinstance(value, str):
            return None, f"'{value}' is not text"
        if value.startswith("'") and value[1:].startswith(FORMULA_STARTS):
            value = value[1:]  # neutralised by selfmodel.common.atomic.write_csv
        control = _CONTROL.search(value)
        if control is not None:  # the records' rule (selfmodel.records.reduction.CONTROL)
            return None, (f"{shown(value)} holds a control character "
                          f"(U+{ord(control.group()):04X}), which a name never does")
        if name_key(value) == "":
            return None, (f"{shown(value)} has no visible character (only invisible format "
                          "characters and white space)")
        return value, None
    if column in _BOOL_COLUMNS:
        parsed = parse_bool(value)
        if parsed is None:
            return None, f"'{value}' is not a boolean (true/false/yes/no/1/0)"
        return parsed, None
    # numeric columns
    if isinstance(value, bool):
        return None, f"'{value}' is not a number"
    try:
        number = float(value) if isinstance(value, int | float) else float(str(value))
    except (TypeError, ValueError):
        return None, f"'{value}' is not a number"
    if not math.isfinite(number):
        return None, f"'{value}' is not a finite number"
    if column in _SIZE_COLUMNS and number <= 0:
        kind = "negative" if number < 0 else "zero"
        return None, f"size '{value}' is {kind}"
    return number, None


def _fix_hint(column: str) -> str:
    if column in _TEXT_COLUMNS:
        return "Write it in visible characters, without control characters"
    if column in _SIZE_COLUMNS:
        return "Write a positive number of billions of parameters, or leave it empty if unknown"
    if column == "capability":
        return "Write a finite number, or leave it empty if unknown"
    if column in _BOOL_COLUMNS:
        return "Write true or false, or leave it empty if unknown"
    return "Fix the value"


def _check_columns(path: Path, columns: list[str], line: int | None) -> None:
    allowed = list(REGISTRY_SCHEMA)
    if "model" not in columns:
        guess = did_you_mean("model", columns)
        raise InputError(
            format_input_error(
                path,
                "the registry has no 'model' column (present: "
                f"{', '.join(columns) if columns else 'none'}).{guess}",
                "Name the column holding model names 'model', spelled as in the records",
                line=line,
                column="model",
            )
        )
    for col in columns:
        if col in REGISTRY_SCHEMA:
            continue
        # An extra column (developer, aliases, notes ...) is allowed and ignored; one that
        # looks like a misspelt registry column is an error, since ignoring it would lose data.
        if difflib.get_close_matches(col, allowed, n=1, cutoff=0.8):
            raise InputError(
                format_input_error(
                    path,
                    f"unknown registry column.{did_you_mean(col, allowed)}",
                    f"Use only {', '.join(allowed)} (other columns are ignored)",
                    line=line,
                    column=col,
                )
            )


def _build_rows(
    path: Path,
    entries: Iterable[tuple[int | None, Mapping[str, object], Mapping[str, int | None]]],
) -> pl.DataFrame:
    """Validate ``(line, {column: value}, {column: line})`` entries into a registry frame."""
    out: dict[str, list[Any]] = {c: [] for c in REGISTRY_SCHEMA}
    seen: dict[str, tuple[str, int | None]] = {}  # name_key -> (name as written, line)
    base_lines: dict[str, int | None] = {}
    for line, values, key_lines in entries:
        parsed: dict[str, Any] = {}
        for col in REGISTRY_SCHEMA:
            value, problem = parse_value(col, values.get(col))
            where = key_lines.get(col, line)
            if problem is not None:
                raise InputError(
                    format_input_error(path, problem, _fix_hint(col), line=where, column=col)
                )
            parsed[col] = value
        model = parsed["model"]
        if model is None:
            raise InputError(
                format_input_error(
                    path,
                    "empty model name",
                    "Name the model exactly as in the records, or delete the row",
                    line=key_lines.get("model", line),
                    column="model",
                )
            )
        key = name_key(model)
        if key in seen:
            spelling, first = seen[key]
            first_txt = f" (first on line {first})" if first is not None else ""
            if spelling != model:  # look-alikes: show both spellings, escaped
                first_txt = (f"{first_txt[:-1]} as {shown(spelling)}, here {shown(model)}: "
                             "the same name once invisible characters, Unicode normal form "
                             "and white space are set aside)" if first_txt else
                             f" ({shown(spelling)} and {shown(model)} are the same name once "
                             "invisible characters, Unicode normal form and white space are "
                             "set aside)")
            raise InputError(
                format_input_error(
                    path,
                    f"duplicate model '{key}'{first_txt}",
                    "Keep one row per model",
                    line=key_lines.get("model", line),
                    column="model",
                )
            )
        seen[key] = (model, key_lines.get("model", line))
        total, active = parsed["params_b"], parsed["active_params_b"]
        if total is not None and active is not None and active > total:
            raise InputError(
                format_input_error(
                    path,
                    f"active_params_b {active:g} is larger than params_b {total:g}",
                    "Active parameters of a mixture-of-experts model cannot exceed its total",
                    line=key_lines.get("active_params_b", line),
                    column="active_params_b",
                )
            )
        if parsed["base_model"] is None and (parsed["intervention"] or parsed["trained_tasks"]):
            col = "intervention" if parsed["intervention"] else "trained_tasks"
            raise InputError(
                format_input_error(
                    path,
                    f"model '{model}' has {col} but no base_model",
                    "Name the checkpoint it was derived from in base_model, or clear "
                    f"{col}",
                    line=key_lines.get(col, line),
                    column=col,
                )
            )
        if parsed["base_model"] is not None:
            base_lines[model] = key_lines.get("base_model", line)
        for col in REGISTRY_SCHEMA:
            out[col].append(parsed[col])
    _check_bases(path, dict(zip(out["model"], out["base_model"], strict=True)), base_lines)
    return pl.DataFrame(out, schema=REGISTRY_SCHEMA)


def _check_bases(
    path: Path, base_of: Mapping[str, str | None], lines: Mapping[str, int | None]
) -> None:
    """Every ``base_model`` names a registry model, and derivation has no cycle."""
    for model, base in base_of.items():
        if base is None:
            continue
        if base not in base_of:
            raise InputError(
                format_input_error(
                    path,
                    f"base_model '{base}' of '{model}' is not in the registry."
                    f"{did_you_mean(base, base_of)}",
                    "Add a row for the base checkpoint, or correct the name",
                    line=lines.get(model),
                    column="base_model",
                )
            )
    for model in base_of:
        chain, current = [model], base_of[model]
        while current is not None:
            if current in chain:
                loop = " -> ".join([*chain[chain.index(current):], current])
                raise InputError(
                    format_input_error(
                        path,
                        f"base_model forms a cycle ({loop})",
                        "A checkpoint cannot be derived from itself or its descendants; "
                        "fix base_model",
                        line=lines.get(model),
                        column="base_model",
                    )
                )
            chain.append(current)
            current = base_of[current]


def model_lines(path: Path | str) -> dict[str, int | None]:
    """The line of each model's row (CSV) or ``[[model]]`` table (TOML) in a registry file.

    For messages about a row found wrong only after the records are read (e.g. a
    ``trained_tasks`` entry naming a task the data do not have).
    """
    path = Path(path)
    text = _read_text(path)
    out: dict[str, int | None] = {}
    if path.suffix.lower() == ".csv":
        reader = csv.reader(io.StringIO(text, newline=""))
        header: list[str] | None = None
        last = 0
        for row in reader:
            line, last = last + 1, reader.line_num
            if header is None:
                if any(cell.strip() for cell in row):
                    header = [cell.strip() for cell in row]
                continue
            values = dict(zip(header, row, strict=False))
            name = (values.get("model") or "").strip()
            if name:
                out.setdefault(name, line)
        return out
    lines = text.splitlines()
    starts = [i + 1 for i, ln in enumerate(lines) if re.match(r"\s*\[\[\s*model\s*\]\]", ln)]
    for model, start in zip(load_registry(path)["model"].to_list(), starts, strict=False):
        out[model] = start
    return out


def _read_text(path: Path) -> str:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise InputError(
            format_input_error(path, f"cannot read the registry ({exc.strerror})", "Check the path")
        ) from exc
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise InputError(
            format_input_error(
                path, "the registry is not valid UTF-8", "Save it as UTF-8", line=line
            )
        ) from exc


def _load_csv(path: Path, text: str) -> pl.DataFrame:
    reader = csv.reader(io.StringIO(text, newline=""))
    header: list[str] | None = None
    for row in reader:
        if any(cell.strip() for cell in row):
            header = [cell.strip() for cell in row]
            header_line = reader.line_num
            break
    if header is None:
        return pl.DataFrame(schema=REGISTRY_SCHEMA)
    _check_columns(path, header, header_line)

    def entries() -> Iterable[tuple[int, dict[str, object], dict[str, int | None]]]:
        last = reader.line_num
        for row in reader:
            line = last + 1
            last = reader.line_num
            if not any(cell.strip() for cell in row):
                continue
            if len(row) > len(header):
                raise InputError(
                    format_input_error(
                        path,
                        f"{len(row)} fields but the header has {len(header)}",
                        "Quote values that contain commas, or remove the extra fields",
                        line=line,
                    )
                )
            yield line, dict(zip(header, row, strict=False)), {}

    return _build_rows(path, entries())


def _load_toml(path: Path, text: str) -> pl.DataFrame:
    try:
        doc = toml_loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InputError(
            format_input_error(path, f"invalid TOML ({exc})", "Fix the TOML syntax")
        ) from exc
    lines = text.splitlines()
    for key in doc:
        if key != "model":
            raise InputError(
                format_input_error(
                    path,
                    f"unknown top-level key.{did_you_mean(key, ['model'])}",
                    "Write one [[model]] table per model",
                    line=_toml_key_line(lines, key) or _toml_key_line(lines, key, header=True),
                    column=key,
                )
            )
    tables = doc.get("model", [])
    if not isinstance(tables, list) or not all(isinstance(t, dict) for t in tables):
        raise InputError(
            format_input_error(
                path, "'model' must be an array of tables", "Write one [[model]] table per model"
            )
        )
    starts = [i + 1 for i, ln in enumerate(lines) if re.match(r"\s*\[\[\s*model\s*\]\]", ln)]

    def entries() -> Iterable[tuple[int | None, dict[str, object], dict[str, int | None]]]:
        for index, table in enumerate(tables):
            start = starts[index] if index < len(starts) else None
            end = starts[index + 1] if index + 1 < len(starts) else len(lines) + 1
            key_lines = {
                key: _toml_key_line(lines, key, start=start or 1, end=end) for key in table
            }
            for key in table:
                if key not in REGISTRY_SCHEMA:
                    raise InputError(
                        format_input_error(
                            path,
                            f"unknown registry key.{did_you_mean(key, REGISTRY_SCHEMA)}",
                            f"Use only {', '.join(REGISTRY_SCHEMA)}",
                            line=key_lines[key],
                            column=key,
                        )
                    )
            if "model" not in table:
                raise InputError(
                    format_input_error(
                        path,
                        "a [[model]] table has no 'model' key",
                        'Add model = "<name>" to every table',
                        line=start,
                        column="model",
                    )
                )
            yield start, table, key_lines

    return _build_rows(path, entries())


def _toml_key_line(
    lines: list[str], key: str, *, start: int = 1, end: int | None = None, header: bool = False
) -> int | None:
    """Best-effort line of ``key = ...`` (or of a ``[key]``/``[[key]]`` header) in a range."""
    name = rf"[\"']?{re.escape(key)}[\"']?"
    pattern = re.compile(rf"\s*\[\[?\s*{name}\s*\]" if header else rf"\s*{name}\s*=")
    stop = len(lines) if end is None else min(end - 1, len(lines))
    for number in range(start, stop + 1):
        if pattern.match(lines[number - 1]):
            return number
    return None


def load_registry(path: Path | str) -> pl.DataFrame:
    r"""Read a model registry from CSV (``.csv``) or TOML (``.toml``).

    Parameters
    ----------
    path
        The registry file. TOML files hold an array of ``[[model]]`` tables whose keys are
        the registry columns; CSV files have a header row with those columns.

    Returns
    -------
    polars.DataFrame
        Columns and dtypes of :data:`selfmodel.records.contract.REGISTRY_SCHEMA`, in file order;
        optional columns that are absent are null.

    Raises
    ------
    InputError
        With a one-line message naming file, line and column for: a missing ``model``
        column, an unknown column (with a "did you mean"), an empty model name, a duplicate
        model, a negative, zero or non-numeric size, a non-boolean flag.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "reg.csv"
    >>> _ = p.write_text("model,family,params_b\nm1,llama,8\nm2,gpt,\n")
    >>> load_registry(p).select("model", "params_b").rows()
    [('m1', 8.0), ('m2', None)]
    """
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in (".csv", ".toml"):
        raise InputError(
            format_input_error(
                path,
                f"unsupported registry file type '{suffix or '(none)'}'",
                "Use a .csv or .toml registry",
            )
        )
    text = _read_text(path)
    if suffix == ".csv":
        return _load_csv(path, text)
    return _load_toml(path, text)


def registry_report(records: pl.DataFrame, registry: pl.DataFrame | None) -> dict[str, list[str]]:
    """Compare the models in the records with the registry.

    Parameters
    ----------
    records
        Canonical records (only the ``model`` column is used).
    registry
        A frame from :func:`load_registry`, or ``None`` when no registry was given (then
        every model is "not in registry").

    Returns
    -------
    dict
        ``models_not_in_registry`` (models with records but no registry row),
        ``models_without_size`` (registry rows whose ``params_b`` is null, e.g. closed
        models), ``registry_models_without_records``; each a sorted list of names.

    Examples
    --------
    >>> recs = pl.DataFrame({"model": ["a", "b", "c"]})
    >>> reg = pl.DataFrame({"model": ["a", "b", "z"], "params_b": [1.0, None, 3.0]})
    >>> registry_report(recs, reg)
    {'models_not_in_registry': ['c'], 'models_without_size': ['b'], \
'registry_models_without_records': ['z']}
    """
    used = set(records.get_column("model").drop_nulls().to_list()) if records.height else set()
    if registry is None:
        return {
            "models_not_in_registry": sorted(used),
            "models_without_size": [],
            "registry_models_without_records": [],
        }
    known = set(registry.get_column("model").to_list())
    no_size = set(
        registry.filter(pl.col("params_b").is_null()).get_column("model").to_list()
        if "params_b" in registry.columns
        else known
    )
    return {
        "models_not_in_registry": sorted(used - known),
        "models_without_size": sorted(no_size),
        "registry_models_without_records": sorted(known - used),
    }
