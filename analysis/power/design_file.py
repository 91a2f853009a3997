"""The power design file (TOML): reading it with line-numbered errors, and writing one."""

from __future__ import annotations

import math
import tomllib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Final

from selfmodel.common.toml_errors import did_you_mean, key_line
from selfmodel.common.toml_errors import loads as toml_loads
from selfmodel.decisions.hypotheses import RETIRED_RULE_KEYS, DecisionRule
from selfmodel.power.design import Design, Task, _x_of_size, default_design, sdt_accuracy
from selfmodel.records.contract import InputError
from selfmodel.records.registry import format_input_error

# --------------------------------------------------------------------------- design files

_TOP_KEYS: Final = (
    "repeats",
    "repeat_correlation",
    "units",
    "families",
    "tasks",
    "variance",
    "rule",
)
_TASK_KEYS: Final = ("items", "accuracy", "base_rate", "dprime", "criterion", "unreadable")
_VARIANCE_KEYS: Final = ("sigma_family", "sigma_model", "sigma_cell", "sigma_task_slope")
_RULE_KEYS: Final = ("rope", "hdi_prob", "min_models")

DESIGN_EXAMPLE: Final = """\
# selfmodel power design (TOML). Sizes are billions of parameters.
repeats = 1                 # answers per model and item
repeat_correlation = 0.5    # correlation of two answers of one model to one item

[families]
aurora = [1, 8, 34, 70]
borealis = [2, 9, 27]

[tasks.refusal]
items = 250
base_rate = 0.8             # share of items whose outcome is "yes"
dprime = 1.0                # sensitivity
criterion = -0.5            # negative = yes-bias
# accuracy = 0.77           # or give the expected accuracy directly

[variance]                  # logit scale
sigma_family = 0.11
sigma_model = 0.11
sigma_cell = 0.2
sigma_task_slope = 0.1

[rule]                      # the declared decision rule (selfmodel.decisions.hypotheses)
rope = 0.1
hdi_prob = 0.94             # one level: a sign is credible when this HDI excludes 0
"""


class _DesignReader:
    """Validate a parsed design TOML, raising one-line InputErrors that name file, line, key."""

    def __init__(self, path: Path, text: str) -> None:
        self.path = path
        self.text = text

    def fail(self, key: str, what: str, todo: str, section: str | None = None) -> InputError:
        leaf = key.rsplit(".", 1)[-1]
        line = key_line(self.text, leaf, table=section)
        where = f"key '{key}'"
        msg = format_input_error(self.path, f"{where}: {what}", todo, line=line)
        return InputError(msg)

    def check_keys(
        self, table: Mapping[str, Any], allowed: Sequence[str], section: str | None
    ) -> None:
        for key in table:
            if key in RETIRED_RULE_KEYS and section == "rule":
                raise self.fail(f"rule.{key}", "no longer a key", RETIRED_RULE_KEYS[key], section)
            if key not in allowed:
                full = f"{section}.{key}" if section else key
                hint = did_you_mean(key, allowed).strip()
                raise self.fail(
                    full,
                    "unknown key" + (f". {hint}" if hint else ""),
                    f"Allowed keys here: {', '.join(allowed)}",
                    section,
                )

    def number(
        self,
        table: Mapping[str, Any],
        key: str,
        section: str | None,
        *,
        lo: float,
        hi: float,
        default: float | None = None,
        integer: bool = False,
        lo_open: bool = False,
        hi_open: bool = False,
    ) -> float:
        full = f"{section}.{key}" if section else key
        if key not in table:
            if default is None:
                raise self.fail(full, "missing", f"Add '{key} = ...'", section)
            return default
        v = table[key]
        if (
            isinstance(v, bool)
            or not isinstance(v, int | float)
            or (integer and not isinstance(v, int))
        ):
            kind = "an integer" if integer else "a number"
            raise self.fail(full, f"value {v!r} is not {kind}", f"Write {kind}", section)
        bad_lo = v <= lo if lo_open else v < lo
        bad_hi = v >= hi if hi_open else v > hi
        if not math.isfinite(v) or bad_lo or bad_hi:
            rng = f"{'(' if lo_open else '['}{lo:g}, {hi:g}{')' if hi_open else ']'}"
            raise self.fail(full, f"value {v!r} is outside {rng}", f"Use a value in {rng}", section)
        return float(v)


def load_design(path: Path | str) -> Design:
    """Read a design from a TOML file (see :data:`DESIGN_EXAMPLE`).

    Parameters
    ----------
    path
        The TOML file: ``repeats``, ``repeat_correlation``, ``[families]`` (family = list of
        sizes in billions of parameters), one ``[tasks.NAME]`` table per task (``items`` and
        either ``accuracy`` or ``base_rate``/``dprime``/``criterion``; optional
        ``unreadable``), ``[variance]`` and ``[rule]``. Omitted variance components and rule
        settings take the defaults of :func:`default_design` and
        :class:`~selfmodel.decisions.hypotheses.DecisionRule`.

    Returns
    -------
    Design

    Raises
    ------
    InputError
        One line naming the file, the line and the key, with "did you mean" for a typo.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "design.toml"
    >>> _ = p.write_text(DESIGN_EXAMPLE)
    >>> d = load_design(p)
    >>> len(d.models), [t.name for t in d.tasks], round(d.tasks[0].accuracy, 3)
    (7, ['refusal'], 0.773)
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(f"{path}: no such design file. Check the path.") from None
    except (OSError, UnicodeDecodeError) as e:
        raise InputError(
            f"{path}: cannot read the design file ({e}). Save it as UTF-8 text."
        ) from None
    try:
        raw = toml_loads(text)
    except tomllib.TOMLDecodeError as e:
        raise InputError(
            f"{path}: not valid TOML ({e}). Fix the syntax; see 'selfmodel power --help'."
        ) from None
    r = _DesignReader(path, text)
    r.check_keys(raw, _TOP_KEYS, None)
    defaults = default_design()

    models = _read_families(r, raw)

    tasks_raw = raw.get("tasks")
    if not isinstance(tasks_raw, dict) or not tasks_raw:
        raise r.fail(
            "tasks",
            "missing or empty",
            "Add at least one [tasks.NAME] table with items and accuracy",
        )
    tasks: list[Task] = []
    for name, spec in tasks_raw.items():
        tasks.append(_read_task(r, str(name), spec))

    repeats = int(r.number(raw, "repeats", None, lo=1, hi=1e6, integer=True, default=1))
    rho = r.number(raw, "repeat_correlation", None, lo=0, hi=1, default=0.5)
    var = raw.get("variance", {})
    if not isinstance(var, dict):
        raise r.fail("variance", "is not a table", "Write [variance] with sigma_family = ... etc.")
    r.check_keys(var, _VARIANCE_KEYS, "variance")
    sig = {
        k: r.number(var, k, "variance", lo=0, hi=10, default=getattr(defaults, k))
        for k in _VARIANCE_KEYS
    }
    rule = _read_rule(r, raw)
    units = raw.get("units", defaults.units)
    if not isinstance(units, str):
        raise r.fail(
            "units",
            f"value {units!r} is not text",
            'Write units = "logits per 10x total parameters"',
        )
    return Design(
        models=tuple(models),
        tasks=tuple(tasks),
        repeats=repeats,
        repeat_correlation=rho,
        rule=rule,
        units=units,
        source=str(path),
        **sig,
    )


def _read_families(r: _DesignReader, raw: dict[str, Any]) -> list[tuple[str, str, float]]:
    """The design's models from ``[families]``: (name, family, x) each."""
    fams = raw.get("families")
    if not isinstance(fams, dict) or not fams:
        raise r.fail(
            "families", "missing or empty", "Add a [families] table: name = [sizes in billions]"
        )
    models: list[tuple[str, str, float]] = []
    for fam, sizes in fams.items():
        if not isinstance(sizes, list) or not sizes:
            raise r.fail(
                f"families.{fam}",
                f"value {sizes!r} is not a list of sizes",
                "Write e.g. [1, 8, 70] (billions of parameters)",
                "families",
            )
        for i, s in enumerate(sizes):
            if (
                isinstance(s, bool)
                or not isinstance(s, int | float)
                or not math.isfinite(s)
                or s <= 0
            ):
                raise r.fail(
                    f"families.{fam}",
                    f"size {s!r} is not a positive number",
                    "Sizes are billions of parameters, e.g. 0.5 or 70",
                    "families",
                )
            models.append((f"{fam}-{i + 1}:{s:g}b", str(fam), _x_of_size(float(s))))
    if len(models) < 3:
        raise r.fail("families", f"only {len(models)} model(s)", "A slope needs at least 3 models")
    if len({x for *_, x in models}) < 2:
        raise r.fail("families", "every model has the same size", "Give models of different sizes")

    return models


def _read_task(r: _DesignReader, name: str, spec: Any) -> Task:
    """One ``[tasks.NAME]`` table."""
    sec = f"tasks.{name}"
    if not isinstance(spec, dict):
        raise r.fail(
            sec, "is not a table", f"Write [tasks.{name}] with items = ... and accuracy = ..."
        )
    r.check_keys(spec, _TASK_KEYS, sec)
    items = int(r.number(spec, "items", sec, lo=1, hi=1e9, integer=True))
    if "accuracy" in spec:
        if any(k in spec for k in ("base_rate", "dprime", "criterion")):
            raise r.fail(
                f"{sec}.accuracy",
                "given together with base_rate/dprime/criterion",
                "Give either accuracy or the signal-detection settings",
                sec,
            )
        acc = r.number(spec, "accuracy", sec, lo=0, hi=1, lo_open=True, hi_open=True)
    elif "base_rate" in spec:
        base = r.number(spec, "base_rate", sec, lo=0, hi=1)
        dprime = r.number(spec, "dprime", sec, lo=-10, hi=10, default=1.0)
        crit = r.number(spec, "criterion", sec, lo=-10, hi=10, default=0.0)
        acc = sdt_accuracy(base, dprime, crit)
        if not 0.001 < acc < 0.999:
            raise r.fail(
                sec, f"implies accuracy {acc:.4f}", "Use less extreme dprime/criterion"
            )
    else:
        raise r.fail(
            f"{sec}.accuracy",
            "missing",
            "Give accuracy = ... or base_rate (with dprime, criterion)",
            sec,
        )
    unread = r.number(spec, "unreadable", sec, lo=0, hi=1, hi_open=True, default=0.0)
    return Task(name, items, round(acc, 6), unread)


def _read_rule(r: _DesignReader, raw: dict[str, Any]) -> DecisionRule:
    """The ``[rule]`` table (defaults: the declared rule of ``selfmodel run``)."""
    rule_raw = raw.get("rule", {})
    if not isinstance(rule_raw, dict):
        raise r.fail("rule", "is not a table", "Write [rule] with rope = ... etc.")
    r.check_keys(rule_raw, _RULE_KEYS, "rule")
    base_rule = DecisionRule()
    rule = DecisionRule(
        rope=r.number(rule_raw, "rope", "rule", lo=0, hi=10, default=base_rule.rope),
        hdi_prob=r.number(
            rule_raw, "hdi_prob", "rule", lo=0.5, hi=1, hi_open=True, default=base_rule.hdi_prob
        ),
        min_models=int(
            r.number(
                rule_raw,
                "min_models",
                "rule",
                lo=2,
                hi=1e6,
                integer=True,
                default=base_rule.min_models,
            )
        ),
    )
    return rule


def design_to_toml(design: Design) -> str:
    """Write a design as TOML that :func:`load_design` reads back.

    Sizes are written as ``10 ** x_raw`` billions, so a design whose predictor is not a size
    (capability) is written on that scale with a comment saying so.

    Examples
    --------
    >>> d = default_design()
    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "d.toml"
    >>> _ = p.write_text(design_to_toml(d))
    >>> d2 = load_design(p)
    >>> [t.accuracy for t in d2.tasks] == [t.accuracy for t in d.tasks], len(d2.models)
    (True, 14)
    """
    lines = [
        "# selfmodel power design (written by selfmodel power; load with --design)",
        f"# source: {design.source}",
        f"repeats = {design.repeats}",
        f"repeat_correlation = {design.repeat_correlation:g}",
        f'units = "{design.units}"',
        "",
        "[families]  # sizes in billions of parameters",
    ]
    if "capability" in design.units:
        lines.insert(
            -1, "# this design's predictor is a capability score x; the 'sizes' below are 10**x"
        )
    for fam, members in design.families.items():
        xs = [x for m, f, x in design.models if f == fam]
        del members
        lines.append(f'"{fam}" = [{", ".join(f"{10**x:.6g}" for x in xs)}]')
    for t in design.tasks:
        lines += [
            "",
            f'[tasks."{t.name}"]',
            f"items = {t.items}",
            f"accuracy = {t.accuracy:.6g}",
            f"unreadable = {t.unreadable:.6g}",
        ]
    lines += ["", "[variance]"] + [f"{k} = {getattr(design, k):.6g}" for k in _VARIANCE_KEYS]
    rule = design.rule
    lines += [
        "",
        "[rule]",
        f"rope = {rule.rope:g}",
        f"hdi_prob = {rule.hdi_prob:g}",
        f"min_models = {rule.min_models}",
        "",
    ]
    return "\n".join(lines)
