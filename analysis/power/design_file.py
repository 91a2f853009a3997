"""The power design file (TOML): reading it with line-numbered errors, and writing one."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, ClassVar, Final

from pydantic import Field, model_validator

from selfmodel.decisions.hypotheses import RETIRED_RULE_KEYS, DecisionRule
from selfmodel.power.design import Design, Task, default_design, sdt_accuracy, x_of_size
from selfmodel.records import toml_tables
from selfmodel.records.registry import format_input_error
from selfmodel.records.toml_tables import BadValueError, Problem, Table

# --------------------------------------------------------------------------- design files

_VARIANCE_KEYS: Final = ("sigma_family", "sigma_model", "sigma_cell", "sigma_task_slope")
RULE_KEYS: Final = ("rope", "hdi_prob", "min_models")

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


#: Key -> (low, high, low open, high open) of each bounded number of a design file.
_BOUNDS: Final[dict[str, tuple[float, float, bool, bool]]] = {
    "repeats": (1, 1e6, False, False), "repeat_correlation": (0, 1, False, False),
    "items": (1, 1e9, False, False), "accuracy": (0, 1, True, True),
    "base_rate": (0, 1, False, False), "dprime": (-10, 10, False, False),
    "criterion": (-10, 10, False, False), "unreadable": (0, 1, False, True),
    **dict.fromkeys(_VARIANCE_KEYS, (0, 10, False, False)),
    "rope": (0, 10, False, False), "hdi_prob": (0.5, 1, False, True),
    "min_models": (2, 1e6, False, False),
}
_INTEGERS: Final = ("repeats", "items", "min_models")


def _in(key: str) -> Any:
    """The pydantic bounds of ``key`` (:data:`_BOUNDS`), finite."""
    lo, hi, lo_open, hi_open = _BOUNDS[key]
    return Field(allow_inf_nan=False, gt=lo if lo_open else None, ge=None if lo_open else lo,
                 lt=hi if hi_open else None, le=None if hi_open else hi)


class _TaskTable(Table):
    items: Annotated[int, _in("items")]
    accuracy: Annotated[float, _in("accuracy")] | None = None
    base_rate: Annotated[float, _in("base_rate")] | None = None
    dprime: Annotated[float, _in("dprime")] = 1.0
    criterion: Annotated[float, _in("criterion")] = 0.0
    unreadable: Annotated[float, _in("unreadable")] = 0.0

    @model_validator(mode="after")
    def _accuracy(self) -> _TaskTable:
        if self.accuracy is not None and {"base_rate", "dprime", "criterion"} & self.model_fields_set:
            raise BadValueError("accuracy", "given together with base_rate/dprime/criterion",
                      "Give either accuracy or the signal-detection settings")
        if self.accuracy is None and self.base_rate is None:
            raise BadValueError("accuracy", "missing",
                      "Give accuracy = ... or base_rate (with dprime, criterion)")
        if not 0.001 < self.implied() < 0.999:
            raise BadValueError(None, f"implies accuracy {self.implied():.4f}",
                      "Use less extreme dprime/criterion")
        return self

    def implied(self) -> float:
        """The task's accuracy: given, or of its signal-detection settings."""
        if self.accuracy is not None:
            return self.accuracy
        return sdt_accuracy(self.base_rate or 0.0, self.dprime, self.criterion)


_DEFAULT: Final = default_design()


class _VarianceTable(Table):
    sigma_family: Annotated[float, _in("sigma_family")] = _DEFAULT.sigma_family
    sigma_model: Annotated[float, _in("sigma_model")] = _DEFAULT.sigma_model
    sigma_cell: Annotated[float, _in("sigma_cell")] = _DEFAULT.sigma_cell
    sigma_task_slope: Annotated[float, _in("sigma_task_slope")] = _DEFAULT.sigma_task_slope


class _RuleTable(Table):
    rope: Annotated[float, _in("rope")] = DecisionRule().rope
    hdi_prob: Annotated[float, _in("hdi_prob")] = DecisionRule().hdi_prob
    min_models: Annotated[int, _in("min_models")] = DecisionRule().min_models


class _DesignTable(Table):
    """The TOML layout of a design file (:data:`DESIGN_EXAMPLE`)."""

    repeats: Annotated[int, _in("repeats")] = 1
    repeat_correlation: Annotated[float, _in("repeat_correlation")] = 0.5
    units: str = _DEFAULT.units
    families: Annotated[dict[str, Annotated[list[Annotated[float, Field(
        gt=0, allow_inf_nan=False)]], Field(min_length=1)]], Field(min_length=1)]
    tasks: Annotated[dict[str, _TaskTable], Field(min_length=1)]
    variance: _VarianceTable = _VarianceTable()
    rule: _RuleTable = _RuleTable()
    HINTS: ClassVar[dict[str, tuple[str, str]]] = {
        "units": ("value {value} is not text", 'Write units = "logits per 10x total parameters"'),
        "families": ("missing or empty", "Add a [families] table: name = [sizes in billions]"),
        "families.*": ("size {value} is not a positive number",
                       "Sizes are billions of parameters, e.g. 0.5 or 70"),
        "tasks": ("missing or empty", "Add at least one [tasks.NAME] table with items and accuracy"),
        "tasks.*": ("is not a table", "Write [tasks.{key}] with items = ... and accuracy = ..."),
        "variance": ("is not a table", "Write [variance] with sigma_family = ... etc."),
        "rule": ("is not a table", "Write [rule] with rope = ... etc."),
    }

    @model_validator(mode="after")
    def _sizes(self) -> _DesignTable:
        sizes = [s for family in self.families.values() for s in family]
        if len(sizes) < 3:
            raise BadValueError("families", f"only {len(sizes)} model(s)", "A slope needs at least 3 models")
        if len({x_of_size(s) for s in sizes}) < 2:
            raise BadValueError("families", "every model has the same size", "Give models of different sizes")
        return self


def _message(path: Path, p: Problem, doc: dict[str, Any]) -> str:
    """The one line of an error: ``file: line N: key 'tasks.refusal.items': what. todo.``."""
    what, todo = p.what, p.todo
    if p.unknown and p.table == "rule" and p.key in RETIRED_RULE_KEYS:
        what, todo = "no longer a key", RETIRED_RULE_KEYS[p.key]
    elif p.unknown:
        todo = f"Allowed keys here: {', '.join(p.allowed)}"
    elif p.table == "families" and p.kind in ("too_short", "list_type"):
        what, todo = (f"value {p.value!r} is not a list of sizes",
                      "Write e.g. [1, 8, 70] (billions of parameters)")
    elif p.key in _BOUNDS and p.kind == "missing":
        what, todo = "missing", f"Add '{p.key} = ...'"
    elif p.key in _BOUNDS and p.kind in ("int_type", "float_type"):
        kind = "an integer" if p.key in _INTEGERS else "a number"
        what, todo = f"value {p.value!r} is not {kind}", f"Write {kind}"
    elif p.key in _BOUNDS and p.kind != "bad":
        lo, hi, lo_open, hi_open = _BOUNDS[p.key]
        rng = f"{'(' if lo_open else '['}{lo:g}, {hi:g}{')' if hi_open else ']'}"
        what, todo = f"value {p.value!r} is outside {rng}", f"Use a value in {rng}"
    full = ".".join(k for k in (p.table, p.key) if k)
    return format_input_error(path, f"key '{full}': {what}", todo, line=p.line)


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
    d, _ = toml_tables.load(path, _DesignTable, "design", _message)
    models = [(f"{fam}-{i + 1}:{s:g}b", fam, x_of_size(s))
              for fam, sizes in d.families.items() for i, s in enumerate(sizes)]
    tasks = [Task(name, t.items, round(t.implied(), 6), t.unreadable)
             for name, t in d.tasks.items()]
    return Design(models=tuple(models), tasks=tuple(tasks), repeats=d.repeats,
                  repeat_correlation=d.repeat_correlation,
                  rule=DecisionRule(**d.rule.model_dump()), units=d.units, source=str(path),
                  **d.variance.model_dump())


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
