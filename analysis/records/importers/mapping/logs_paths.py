"""Resolving a log mapping's dotted paths inside a log sample, and converting the values found."""

from __future__ import annotations

import math
from typing import Any

from selfmodel.common.toml_errors import did_you_mean
from selfmodel.records.contract import parse_bool
from selfmodel.records.importers.mapping.logs_spec import (
    REGEX_TIMEOUT,
    FieldSpec,
    normalize_text,
)

# ----------------------------------------------------------------------------------------------
# resolving paths


class PathError(Exception):
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
        return resolve(obj, path)
    except PathError as exc:
        raise KeyError(describe_of(exc)) from None


def resolve(obj: Any, path: str) -> Any:
    """The value at a dotted mapping path in ``obj`` (raises ``PathError`` with the failing step)."""
    cur = obj
    for i, step in enumerate(_steps(path)):
        if isinstance(cur, dict):
            if step in cur:
                cur = cur[step]
                continue
            raise PathError(path, i, f"no key {step!r}", [str(k) for k in cur])
        if isinstance(cur, list | tuple):
            try:
                index = int(step)
            except ValueError:
                raise PathError(
                    path,
                    i,
                    f"{step!r} is not a list index (a list of {len(cur)})",
                    [str(n) for n in range(len(cur))],
                ) from None
            if -len(cur) <= index < len(cur):
                cur = cur[index]
                continue
            raise PathError(
                path,
                i,
                f"index {index} is outside a list of {len(cur)}",
                [str(n) for n in range(len(cur))],
            )
        kind = "null" if cur is None else type(cur).__name__
        raise PathError(path, i, f"{step!r} cannot be looked up in a {kind} value", [])
    return cur


def describe_of(exc: PathError) -> str:
    """The one-line message for a path that does not resolve."""
    steps = _steps(exc.path)
    at = ".".join(steps[: exc.step]) or "the top level"
    step = steps[exc.step] if exc.step < len(steps) else ""
    present = ", ".join(exc.options[:20]) + (" ..." if len(exc.options) > 20 else "")
    text = f"path {exc.path!r} fails at {at!r}: {exc.reason}"
    if exc.options:
        text += f". Keys there: {present}.{did_you_mean(step, exc.options)}"
    return text


# ----------------------------------------------------------------------------------------------
# applying a mapping


def convert(raw: Any, spec: FieldSpec) -> tuple[Any, bool]:
    """Return (value, readable). ``readable`` is False when a present value could not be read.

    Order: ``regex`` extraction, ``normalize`` steps (text values), ``map``, then ``type``.
    """
    if raw is None:
        return None, True
    if spec.regex is not None:
        found = spec.regex.search(raw if isinstance(raw, str) else text_of(raw),
                                  timeout=REGEX_TIMEOUT)
        if found is None:
            return None, False
        raw = found.group(1) if spec.regex.groups else found.group(0)
    if isinstance(raw, str) and spec.normalize:
        raw = normalize_text(raw, spec.normalize)
    if spec.map is not None:
        key = raw if isinstance(raw, str) else text_of(raw)
        key = key.strip()
        if key in spec.map:
            return spec.map[key], True
        return None, False
    if spec.type == "score":
        return _score(raw)
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


#: Inspect AI's score values (``inspect_ai.scorer``: CORRECT, INCORRECT, PARTIAL, NOANSWER).
INSPECT_CORRECT, INSPECT_INCORRECT, INSPECT_PARTIAL, INSPECT_NOANSWER = "C", "I", "P", "N"


def _score(raw: Any) -> tuple[Any, bool]:
    """An Inspect score value as a boolean: ``C``/``I``, or 1/0 and true/false.

    ``P`` (partial credit), ``N`` (no answer) and any other number are not a yes/no
    verdict: null and counted as unreadable.
    """
    if isinstance(raw, str) and raw.strip() in (INSPECT_CORRECT, INSPECT_INCORRECT):
        return ("true" if raw.strip() == INSPECT_CORRECT else "false"), True
    if isinstance(raw, str) and raw.strip() in (INSPECT_PARTIAL, INSPECT_NOANSWER):
        return None, False  # "N" is not the boolean spelling "n" here
    flag = parse_bool(raw)
    if flag is None:
        return None, False
    return ("true" if flag else "false"), True


def text_of(value: Any) -> str:
    """A mapped value as the record's text (booleans as ``true``/``false``)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)
