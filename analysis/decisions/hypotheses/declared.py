"""The declared hypotheses file (TOML): reading it with line-numbered errors and did-you-mean; each model's closed-form slope priors."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal

from pydantic import Field, StringConstraints, field_validator, model_validator

from selfmodel import models as model_registry
from selfmodel.common.paths import DEFAULT_HYPOTHESES_FILE
from selfmodel.common.toml_errors import did_you_mean, key_line
from selfmodel.decisions.hypotheses.rule import (
    DIRECTIONS,
    RETIRED_RULE_KEYS,
    DecisionRule,
    Direction,
)
from selfmodel.records import toml_tables
from selfmodel.records.contract import Decision, InputError
from selfmodel.records.registry import format_input_error
from selfmodel.records.toml_tables import BadValueError, Problem, Table

Role = Literal["confirmatory", "exploratory"]


def slope_priors(model: str) -> Mapping[str, tuple[str, str | None]]:
    """Slope parameters of ``model`` whose prior is known in closed form.

    Parameter -> (prior key of the mean slope, prior key of the task-deviation sd or
    ``None``), as the model declares in ``SPEC.slope_priors`` (empty for an unknown model).
    """
    module = model_registry.REGISTRY.get(model)
    return module.SPEC.slope_priors if module is not None else {}


# --------------------------------------------------------------------------- hypotheses


@dataclass(frozen=True)
class Hypothesis:
    """One declared hypothesis about a parameter of a fitted model.

    Parameters
    ----------
    name
        Short identifier (unique within a file).
    model
        Name of the model in ``models.REGISTRY`` whose fit is read (``scale``, ``sdt``, ...).
    parameter
        Posterior variable, optionally with one label of its (single) dimension:
        ``beta``, ``slope_task[refusal]``, or ``slope_task[*]`` for every label.
    direction
        The predicted sign: ``increase`` (the decision ``improves`` supports it) or
        ``decrease`` (``worsens`` supports it).
    rope, hdi_prob, min_models
        The decision rule (:class:`DecisionRule`).
    role
        ``confirmatory`` (declared before the data, one of the family whose decisions are
        controlled together, ``selfmodel.decisions.multiplicity.confirmatory_family``) or
        ``exploratory`` (the default: reported, not a confirmatory claim).
    description
        One sentence for the report.
    """

    name: str
    model: str = "scale"
    parameter: str = "beta"
    direction: Direction = "increase"
    rope: float = 0.1
    hdi_prob: float = 0.94
    min_models: int = 3
    description: str = ""
    role: Role = "exploratory"

    @property
    def rule(self) -> DecisionRule:
        """The decision rule of this hypothesis."""
        return DecisionRule(rope=self.rope, hdi_prob=self.hdi_prob, min_models=self.min_models)

    @property
    def base(self) -> str:
        """Variable name without the label: ``slope_task[refusal]`` -> ``slope_task``."""
        return _split_parameter(self.parameter)[0]

    @property
    def label(self) -> str | None:
        """The label in brackets (``"*"`` for every label), or ``None``."""
        return _split_parameter(self.parameter)[1]

    @property
    def predicted(self) -> Decision:
        """The decision that supports the hypothesis."""
        return "improves" if self.direction == "increase" else "worsens"

    def describe(self) -> str:
        """One sentence stating the hypothesis and its rule."""
        sign = ">" if self.direction == "increase" else "<"
        return (
            f"{self.name}: {self.parameter} of model '{self.model}' {sign} 0 "
            f"('{self.predicted}' when the {self.hdi_prob:.0%} HDI lies {'above' if sign == '>' else 'below'} "
            f"the ROPE +-{self.rope:g})."
        )

    def as_dict(self) -> dict[str, Any]:
        """JSON form."""
        return asdict(self)


_PARAM_RE = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)(?:\[([^\[\]]+)\])?$")


def _split_parameter(parameter: str) -> tuple[str, str | None]:
    m = _PARAM_RE.match(parameter.strip())
    if not m:
        raise ValueError(f"parameter '{parameter}' is not NAME or NAME[label]")
    label = m.group(2).strip() if m.group(2) is not None else None
    return m.group(1), label


ROLES: tuple[str, ...] = ("confirmatory", "exploratory")
_Text = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1)]
#: What a rule key must be (the message of a bad value).
_RULE_HINTS: dict[str, tuple[str, str]] = {
    "rope": ("value {value} is not a number >= 0 (the ROPE half-width, in the parameter's "
             "units)", f"Write rope = {DecisionRule().rope}"),
    "hdi_prob": ("value {value} is not a probability between 0 and 1 (e.g. 0.94)",
                 f"Write hdi_prob = {DecisionRule().hdi_prob}"),
    "min_models": ("value {value} is not a whole number of models >= 1",
                   f"Write min_models = {DecisionRule().min_models}"),
}


class _Rule(Table):
    """``[defaults]``: the decision rule every hypothesis takes unless it sets its own."""

    rope: Annotated[float, Field(ge=0, allow_inf_nan=False)] = DecisionRule().rope
    hdi_prob: Annotated[float, Field(gt=0, lt=1)] = DecisionRule().hdi_prob
    min_models: Annotated[int, Field(ge=1, le=10**6)] = DecisionRule().min_models
    HINTS: ClassVar[dict[str, tuple[str, str]]] = _RULE_HINTS


def _one_of(key: str, value: str, choices: Sequence[str], what: str) -> str:
    if value not in choices:
        raise BadValueError(key, f"'{value}' is not {what}.{did_you_mean(value, choices)}",
                  f"Use {' or '.join(choices)}")
    return value


class _Entry(Table):
    """One ``[[hypothesis]]``; a rule key it does not set comes from ``[defaults]``."""

    name: _Text
    model: _Text
    parameter: _Text
    direction: str = "increase"
    role: str = "exploratory"
    description: str = ""
    rope: Annotated[float, Field(ge=0, allow_inf_nan=False)] | None = None
    hdi_prob: Annotated[float, Field(gt=0, lt=1)] | None = None
    min_models: Annotated[int, Field(ge=1, le=10**6)] | None = None
    HINTS: ClassVar[dict[str, tuple[str, str]]] = {
        **_RULE_HINTS, **{k: ("missing or not text", f'Add {k} = "..."')
                          for k in ("name", "model", "parameter")},
        "description": ("is not text", 'Write description = "..."')}

    @field_validator("direction")
    @classmethod
    def _direction(cls, value: str) -> str:
        return _one_of("direction", value, DIRECTIONS, "a direction")

    @field_validator("role")
    @classmethod
    def _role(cls, value: str) -> str:
        return _one_of("role", value, ROLES, "a role")

    @field_validator("model")
    @classmethod
    def _model(cls, value: str) -> str:
        if value not in model_registry.REGISTRY:
            raise BadValueError("model", f"unknown model '{value}'."
                      f"{did_you_mean(value, model_registry.REGISTRY)}",
                      f"Use one of: {', '.join(sorted(model_registry.REGISTRY))}")
        return value

    @model_validator(mode="after")
    def _parameter(self) -> _Entry:
        try:
            base, _label = _split_parameter(self.parameter)
        except ValueError:
            raise BadValueError("parameter", f"'{self.parameter}' is not NAME or NAME[label]",
                      "Write e.g. beta, slope_task[refusal] or slope_task[*]") from None
        known = _known_parameters(self.model, model_registry.get(self.model))
        if base not in known:
            raise BadValueError("parameter", f"model '{self.model}' has no parameter '{base}'."
                      f"{did_you_mean(base, known)}", f"Use one of: {', '.join(known)}")
        return self


class _File(Table):
    """A hypotheses file: ``[defaults]`` and one ``[[hypothesis]]`` table per hypothesis."""

    defaults: _Rule = _Rule()
    hypothesis: Annotated[list[_Entry], Field(min_length=1, validate_default=True)] = []
    HINTS: ClassVar[dict[str, tuple[str, str]]] = {
        "defaults": ("is not a table", "Write [defaults] with rope = 0.1 and hdi_prob = 0.94"),
        "hypothesis": ("none declared", "Add at least one [[hypothesis]] with name, model, "
                       "parameter and direction"),
        "hypothesis.*": ("is not a table", "Write [[hypothesis]] followed by key = value lines"),
    }


def _message(path: Path, p: Problem, doc: dict[str, Any]) -> str:
    """The one line of an error: file, line, the entry and key, what, what to do."""
    if p.table == "defaults":
        where = "[defaults]"
    elif p.table == "hypothesis" or p.key == "hypothesis" and p.index is not None:
        entries = doc.get("hypothesis")
        name = entries[p.index].get("name") if p.index is not None and isinstance(
            entries, list) and isinstance(entries[p.index], dict) else None
        where = f"[[hypothesis]] {(p.index or 0) + 1}" + (
            f" ('{name}')" if isinstance(name, str) else "")
    else:
        where = "[[hypothesis]]" if p.key == "hypothesis" else f"top-level key '{p.key}'"
    what, todo = p.what.rstrip("."), p.todo or (
        f"Allowed keys: {', '.join(p.allowed)}" if p.table else
        "Use a [defaults] table and [[hypothesis]] entries")
    if p.unknown and p.key in RETIRED_RULE_KEYS:
        what, todo = "no longer a key", RETIRED_RULE_KEYS[p.key]
    if p.table is not None and p.key is not None:
        where += f", key '{p.key}'"
    return format_input_error(path, f"{where}: {what}", todo, line=p.line)


def load_hypotheses(path: Path | str = DEFAULT_HYPOTHESES_FILE) -> list[Hypothesis]:
    """Read and validate a hypotheses file (TOML).

    Parameters
    ----------
    path
        The file; :data:`DEFAULT_HYPOTHESES_FILE` by default.

    Returns
    -------
    list of Hypothesis
        In file order.

    Raises
    ------
    InputError
        One line naming the file, the line and the key, with "did you mean" for a typo in a
        key, a model name, a parameter name or a direction.

    Examples
    --------
    >>> [h.name for h in load_hypotheses()][:2]
    ['accuracy_overall', 'accuracy_by_task']
    """
    path = Path(path)
    raw, text = toml_tables.load(path, _File, "hypotheses", _message)
    out: list[Hypothesis] = []
    for i, e in enumerate(raw.hypothesis):
        if e.name in (h.name for h in out):
            raise InputError(format_input_error(
                path, f"[[hypothesis]] {i + 1} ('{e.name}'), key 'name': '{e.name}' is "
                "declared twice", "Give every hypothesis its own name",
                line=key_line(text, "name", table="hypothesis", index=i)))
        rule = {k: v if (v := getattr(e, k)) is not None else getattr(raw.defaults, k)
                for k in _RULE_HINTS}
        out.append(Hypothesis(name=e.name, model=e.model, parameter=e.parameter,
                              direction=e.direction,  # type: ignore[arg-type]
                              description=e.description.strip(),
                              role=e.role, **rule))  # type: ignore[arg-type]
    return out


def _known_parameters(model: str, module: Any) -> list[str]:
    known = set(module.DEFAULT_PRIORS) | set(slope_priors(model))
    known |= {v for v in (module.EFFECT, module.PER_TASK_EFFECT) if v}
    return sorted(known)


def file_sha256(path: Path | str) -> str:
    """SHA-256 of a hypotheses file (recorded with the results as provenance)."""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def decided_parameters() -> set[tuple[str, str]]:
    """(model, variable) of every effect a model's ``SPEC`` decides with the run's rule."""
    out: set[tuple[str, str]] = set()
    for name, module in model_registry.REGISTRY.items():
        for e in module.SPEC.decides:
            out |= {(name, v) for v in (e.variable, e.per_task) if v}
    return out


def one_rule(hypotheses: Sequence[Hypothesis], rule: DecisionRule, *, rope_given: bool,
             path: Path | str = "hypotheses file") -> tuple[DecisionRule, list[Hypothesis], str]:
    """One rule for each decided slope: the run's rule and the hypotheses' agree.

    The run decides its effects (the verdict's slope, d' and criterion ...) with one rule,
    and a hypotheses file can declare a rule for the same slopes. Precedence:

    - ``--rope`` given: it is the ROPE of the run's decisions and of every hypothesis on a
      decided slope (the file's ROPE for those is overridden; the source says so);
    - otherwise the file decides: the hypotheses on decided slopes must declare one rule
      (ROPE, HDI mass, minimum models), which the run's decisions take; two different
      rules for decided slopes stop the run with one line naming them;
    - no hypothesis on a decided slope: the run's rule (``--rope`` default).

    Returns the run's rule, the hypotheses (with the rule applied) and where the rule came
    from.

    Examples
    --------
    >>> hs = [Hypothesis("a", rope=0.2), Hypothesis("b", parameter="slope_task[*]", rope=0.2)]
    >>> rule, _, source = one_rule(hs, DecisionRule(), rope_given=False)
    >>> rule.rope, source
    (0.2, 'hypotheses file (a, b)')
    >>> rule, hs2, source = one_rule(hs, DecisionRule(rope=0.05), rope_given=True)
    >>> rule.rope, [h.rope for h in hs2], source
    (0.05, [0.05, 0.05], '--rope (overrides the ROPE the hypotheses file declares for a, b)')
    """
    decided = decided_parameters()
    on = [h for h in hypotheses if (h.model, h.base) in decided]
    if rope_given:
        out = [replace(h, rope=rule.rope) if (h.model, h.base) in decided else h for h in hypotheses]
        names = ", ".join(h.name for h in on)
        return rule, out, ("--rope" + (f" (overrides the ROPE the hypotheses file declares for {names})"
                                       if names else ""))
    if not on:
        return rule, list(hypotheses), "default (--rope not given; no hypothesis on a decided slope)"
    rules: dict[tuple[float, float, int], list[str]] = {}
    for h in on:
        rules.setdefault((h.rope, h.hdi_prob, h.min_models), [])
    for h in on:
        rules[(h.rope, h.hdi_prob, h.min_models)].append(h.name)
    if len(rules) > 1:
        which = "; ".join(f"{', '.join(n)}: rope {k[0]:g}, hdi_prob {k[1]:g}, min_models {k[2]}"
                          for k, n in rules.items())
        raise InputError(format_input_error(
            Path(path), f"two rules for the slopes the run decides ({which})",
            "Give these hypotheses one rule (one slope, one rule), or pass --rope"))
    (rope, hdi_prob, min_models), = rules
    chosen = replace(rule, rope=rope, hdi_prob=hdi_prob, min_models=min_models)
    return chosen, list(hypotheses), f"hypotheses file ({', '.join(h.name for h in on)})"


def label_roles(section: dict[str, Any], model: str, variable: str, per_task: str | None,
                hypotheses: Sequence[Hypothesis]) -> None:
    """Mark a decided effect and each per-task decision ``role`` confirmatory or exploratory.

    A decision is confirmatory when a hypothesis declared ``role = "confirmatory"`` names its
    parameter (``beta``; ``slope_task[refusal]`` or ``slope_task[*]`` for a task); every
    other decision is exploratory. In place.

    Examples
    --------
    >>> sec = {"decision": "improves", "per_task": {"a": {}, "b": {}}}
    >>> label_roles(sec, "scale", "beta", "slope_task",
    ...             [Hypothesis("h", role="confirmatory"),
    ...              Hypothesis("t", parameter="slope_task[a]", role="confirmatory")])
    >>> sec["role"], sec["per_task"]["a"]["role"], sec["per_task"]["b"]["role"]
    ('confirmatory', 'confirmatory', 'exploratory')
    """
    conf = {(h.model, h.base, h.label) for h in hypotheses if h.role == "confirmatory"}
    section["role"] = "confirmatory" if (model, variable, None) in conf else "exploratory"
    for task, d in (section.get("per_task") or {}).items():
        hit = {(model, per_task, task), (model, per_task, "*")} & conf
        d["role"] = "confirmatory" if hit else "exploratory"
