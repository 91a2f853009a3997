"""Typed TOML files: a pydantic model per file, and its errors as one line naming the key's line.

Each TOML file a user writes (ingest ``--config``, ``hypotheses.toml``, a records
``--mapping``, a power ``--design``) is declared as a :class:`Table` subclass: typed fields,
``extra="forbid"`` (an unknown key is an error, never ignored) and strict types (``"3"`` is
not a number, ``true`` is not 1). :func:`load` reads the file and validates it; the first
error becomes an :class:`~selfmodel.records.contract.InputError` whose one line names the file, the
line of the key at fault (pydantic's error location mapped back to the text by
:func:`selfmodel.common.toml_errors.key_line`) and the key, with "Did you mean ...?" for an unknown
key. What a value must be is the field's :data:`Table.HINTS` entry; a validator that needs
its own words raises :class:`BadValueError`.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, get_args

from pydantic import BaseModel, ConfigDict, ValidationError

from selfmodel.common.toml_errors import did_you_mean, key_line
from selfmodel.common.toml_errors import loads as toml_loads
from selfmodel.records.contract import InputError
from selfmodel.records.registry import format_input_error

__all__ = ["BadValueError", "Problem", "Table", "load", "problem_of", "read"]


class Table(BaseModel):
    """A TOML table: unknown keys forbidden, strict types, frozen."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    #: Field -> (what is wrong, what to do) for a value of the wrong type or range;
    #: ``"field.*"``: for an entry inside the field's list or table. ``{key}`` in the
    #: advice is the key at fault.
    HINTS: ClassVar[dict[str, tuple[str, str]]] = {}
    #: The words of the error for a key the table does not have.
    UNKNOWN: ClassVar[str] = "unknown key"


class BadValueError(ValueError):
    """A validator's own message: the key at fault (``None``: the table) and what to do.

    ``key`` is in the table the validator checks, or in its sub-table ``table``.
    """

    def __init__(self, key: str | None, what: str, todo: str, *, table: str | None = None) -> None:
        super().__init__(what)
        self.key, self.what, self.todo, self.table = key, what, todo, table


@dataclass(frozen=True)
class Problem:
    """The first error of a validation, located in the file.

    ``key`` is the key at fault, ``table`` the dotted table it is in (``None``: the top
    level), ``index`` which of an array of tables, ``unknown`` whether the key is not allowed
    there (then ``allowed`` lists the keys that are), ``what``/``todo`` the message.
    """

    key: str | None
    table: str | None
    index: int | None
    line: int | None
    unknown: bool
    what: str
    todo: str
    allowed: tuple[str, ...] = ()
    kind: str = ""  # pydantic's error type (``int_type``, ``less_than_equal`` ...); "bad": a BadValueError
    value: Any = None  # the value at fault


def read(path: Path, what: str) -> tuple[str, dict[str, Any]]:
    """The text and TOML document of ``path``; one line (file, line) when it cannot be read."""
    try:
        data = path.read_bytes()
        text = data.decode("utf-8-sig")
    except OSError as exc:
        reason = f"no such {what} file" if isinstance(exc, FileNotFoundError) else exc.strerror
        raise InputError(format_input_error(
            path, f"cannot read the {what} file ({reason})", "Check the path")) from None
    except UnicodeDecodeError as exc:
        raise InputError(format_input_error(
            path, f"the {what} file is not valid UTF-8", "Save it as UTF-8 text",
            line=data[: exc.start].count(b"\n") + 1)) from None
    try:
        return text, toml_loads(text)
    except tomllib.TOMLDecodeError as exc:
        at = re.search(r"at line (\d+)", str(exc))
        raise InputError(format_input_error(
            path, f"the {what} file is not valid TOML ({exc})", "Fix the invalid TOML syntax",
            line=int(at.group(1)) if at else None)) from None


def _table_model(annotation: Any) -> type[Table] | None:
    """The :class:`Table` inside an annotation (``list[T]``, ``dict[str, T]``, ``T | None``)."""
    if isinstance(annotation, type) and issubclass(annotation, Table):
        return annotation
    for arg in get_args(annotation):
        if (found := _table_model(arg)) is not None:
            return found
    return None


def problem_of(error: ValidationError, model: type[Table], doc: Mapping[str, Any],
               text: str) -> Problem:
    """Locate the first error of ``error`` (validating ``doc`` as ``model``) in ``text``."""
    errors = error.errors(include_url=False)
    err = next((e for e in errors if e["type"] == "extra_forbidden"), errors[0])  # keys first
    tables: list[str] = []
    index: int | None = None
    key: str | None = None
    node: Any = doc
    cls: type[Table] | None = model
    field: tuple[type[Table], str, bool] | None = None  # (its table, name, an entry inside it)
    for part in err["loc"]:
        if isinstance(part, int) and isinstance(node, list) and 0 <= part < len(node):
            node = node[part]
            index = part if isinstance(node, dict) else index  # one of an array of tables
        elif isinstance(part, str) and isinstance(node, dict) and (
                part in node or cls is not None and part in cls.model_fields):
            tables += [key] if key is not None else []
            key, node = part, node.get(part)  # None: a key the file lacks
        else:
            continue
        if cls is not None and isinstance(part, str) and part in cls.model_fields:
            field = (cls, part, False)
            cls = _table_model(cls.model_fields[part].annotation)
        elif field is not None:
            field = (field[0], field[1], True)
    hint = None if field is None else (
        field[0].HINTS.get(f"{field[1]}.*") if field[2] else None) or field[0].HINTS.get(field[1])
    bad = err.get("ctx", {}).get("error")
    if isinstance(bad, BadValueError) and bad.key is not None and isinstance(node, dict):
        tables += [key] if key is not None else []  # a key of the table the walk ended in
        tables += bad.table.split(".") if bad.table else []
        key = bad.key
    table = ".".join(tables) or None
    line = key_line(text, key, table=table, index=index) if key is not None else None
    if line is None and table is not None and index is None:  # the table's header
        line = key_line(text, table.rsplit(".", 1)[-1], table=table.rpartition(".")[0] or None)
    if isinstance(bad, BadValueError):
        return Problem(key, table, index, line, False, bad.what, bad.todo, (), "bad", None)
    if err["type"] == "extra_forbidden":  # the walk ended in the table lacking the key
        allowed = tuple(cls.model_fields) if cls is not None else ()
        return Problem(key, table, index, line, True, f"{(cls or Table).UNKNOWN}."
                       f"{did_you_mean(str(key), allowed)}", "", allowed)
    what, todo = hint if hint is not None else (str(err["msg"]), "Fix the value")
    what = what.replace("{value}", repr(err["input"])).replace("{key}", str(key))
    todo = todo.replace("{key}", str(key))
    if err["type"] == "value_error" and bad is not None:
        what = str(bad)
    return Problem(key, table, index, line, False, what, todo, (), err["type"], err["input"])


Message = Callable[[Path, Problem, dict[str, Any]], str]


def load[T: Table](path: Path | str, model: type[T], what: str,
                   message: Message | None = None) -> tuple[T, str]:
    """Read ``path`` and validate it as ``model``; returns the model and the file's text.

    ``message`` turns a :class:`Problem` (and the parsed document) into the error's line
    (default: the file, line and key, the problem, what to do); every error is an
    :class:`InputError` of one line.
    """
    path = Path(path)
    text, doc = read(path, what)
    try:
        return model.model_validate(doc, context={"path": path}), text
    except ValidationError as exc:
        problem = problem_of(exc, model, doc, text)
        raise InputError((message or default_message)(path, problem, doc)) from None


def default_message(path: Path, p: Problem, doc: dict[str, Any]) -> str:
    """``file: line N, column 'key': what. todo.`` (the allowed keys for an unknown key)."""
    todo = p.todo or f"Allowed keys are {', '.join(p.allowed)}"
    return format_input_error(path, p.what, todo, line=p.line, column=p.key)
