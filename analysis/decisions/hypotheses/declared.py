"""The declared hypotheses file (TOML): reading it with line-numbered errors and did-you-mean; each model's closed-form slope priors."""

from __future__ import annotations

import hashlib
import math
import re
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, Literal

from selfmodel import models as model_registry
from selfmodel.common.paths import DEFAULT_HYPOTHESES_FILE
from selfmodel.common.toml_errors import did_you_mean, key_line
from selfmodel.common.toml_errors import loads as toml_loads
from selfmodel.decisions.hypotheses.rule import (
    DIRECTIONS,
    RETIRED_RULE_KEYS,
    DecisionRule,
    Direction,
)
from selfmodel.records.contract import Decision, InputError
from selfmodel.records.registry import format_input_error

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


_TOP_KEYS = ("defaults", "hypothesis")
_RULE_KEYS = ("rope", "hdi_prob", "min_models")
_HYP_KEYS = ("name", "description", "model", "parameter", "direction", "role", *_RULE_KEYS)
ROLES: tuple[str, ...] = ("confirmatory", "exploratory")


class _Reader:
    """Validate a parsed hypotheses file; errors are one line naming file, line and key."""

    def __init__(self, path: Path, text: str) -> None:
        self.path = path
        self.text = text
        self.lines = text.splitlines()

    def line_of(self, key: str, block: int | None) -> int | None:
        """1-based line of ``key =`` in the ``block``-th [[hypothesis]] (``None``: [defaults])."""
        if block is None:
            return key_line(self.text, key, table="defaults")
        return key_line(self.text, key, table="hypothesis", index=block)

    def fail(self, where: str, what: str, todo: str, *, key: str | None = None,
             block: int | None = None) -> InputError:
        line = self.line_of(key, block) if key is not None else None
        return InputError(format_input_error(self.path, f"{where}: {what}", todo, line=line))

    def check_keys(self, table: Mapping[str, Any], allowed: Sequence[str], where: str,
                   block: int | None) -> None:
        for key in table:
            if key in RETIRED_RULE_KEYS:
                raise self.fail(f"{where}, key '{key}'", "no longer a key", RETIRED_RULE_KEYS[key],
                                key=str(key), block=block)
            if key not in allowed:
                hint = did_you_mean(str(key), allowed).strip()
                raise self.fail(
                    f"{where}, key '{key}'",
                    "unknown key" + (f". {hint}" if hint else ""),
                    f"Allowed keys: {', '.join(allowed)}",
                    key=str(key),
                    block=block,
                )


def _where(block: int | None, name: Any = None) -> str:
    if block is None:
        return "[defaults]"
    return f"[[hypothesis]] {block + 1}" + (f" ('{name}')" if isinstance(name, str) else "")


def _rule_values(r: _Reader, table: Mapping[str, Any], where: str, block: int | None,
                 base: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(base)
    limits = {
        "rope": (0.0, math.inf, "a number >= 0 (the ROPE half-width, in the parameter's units)"),
        "hdi_prob": (0.0, 1.0, "a probability between 0 and 1 (e.g. 0.94)"),
        "min_models": (1, 10**6, "a whole number of models >= 1"),
    }
    for key in _RULE_KEYS:
        if key not in table:
            continue
        v = table[key]
        lo, hi, what = limits[key]
        ok = isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)
        if key == "min_models":
            ok = ok and isinstance(v, int) and lo <= v <= hi
        elif key == "rope":
            ok = ok and v >= 0
        else:
            ok = ok and lo < v < hi
        if not ok:
            raise r.fail(f"{where}, key '{key}'", f"value {v!r} is not {what}",
                         f"Write {key} = {base_default(key)}", key=key, block=block)
        out[key] = int(v) if key == "min_models" else float(v)
    return out


def base_default(key: str) -> Any:
    """The :class:`DecisionRule` default of a rule key (used in error messages)."""
    return getattr(DecisionRule(), key)


def _read_toml(path: Path) -> tuple[str, dict[str, Any]]:
    """The hypotheses file's text and its TOML table; one line when either cannot be read."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(f"{path}: no such hypotheses file. Check the path.") from None
    except (OSError, UnicodeDecodeError) as e:
        raise InputError(f"{path}: cannot read the hypotheses file ({e}). Save it as UTF-8 text.") from None
    try:
        return text, toml_loads(text)
    except tomllib.TOMLDecodeError as e:
        raise InputError(f"{path}: not valid TOML ({e}). Fix the syntax.") from None


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
    text, raw = _read_toml(path)
    r = _Reader(path, text)
    for key in raw:
        if key not in _TOP_KEYS:
            hint = did_you_mean(str(key), _TOP_KEYS).strip()
            raise r.fail(f"top-level key '{key}'", "unknown key" + (f". {hint}" if hint else ""),
                         "Use a [defaults] table and [[hypothesis]] entries")
    defaults_raw = raw.get("defaults", {})
    if not isinstance(defaults_raw, dict):
        raise r.fail("'defaults'", "is not a table", "Write [defaults] with rope = ..., hdi_prob = ...")
    r.check_keys(defaults_raw, _RULE_KEYS, "[defaults]", None)
    defaults = _rule_values(r, defaults_raw, "[defaults]", None, asdict(DecisionRule()))

    entries = raw.get("hypothesis")
    if not isinstance(entries, list) or not entries:
        raise r.fail("[[hypothesis]]", "none declared",
                     "Add at least one [[hypothesis]] with name, model, parameter and direction")
    out: list[Hypothesis] = []
    names: set[str] = set()
    for i, entry in enumerate(entries):
        if not isinstance(entry, dict):
            raise r.fail(_where(i), "is not a table", "Write [[hypothesis]] followed by key = value lines")
        where = _where(i, entry.get("name"))
        r.check_keys(entry, _HYP_KEYS, where, i)
        for key in ("name", "model", "parameter"):
            if not isinstance(entry.get(key), str) or not entry[key].strip():
                raise r.fail(f"{where}, key '{key}'", "missing or not text",
                             f"Add {key} = \"...\"", key=key if key in entry else None, block=i)
        name = entry["name"].strip()
        if name in names:
            raise r.fail(f"{where}, key 'name'", f"'{name}' is declared twice",
                         "Give every hypothesis its own name", key="name", block=i)
        names.add(name)
        model = entry["model"].strip()
        if model not in model_registry.REGISTRY:
            hint = did_you_mean(model, model_registry.REGISTRY).strip()
            raise r.fail(f"{where}, key 'model'", f"unknown model '{model}'" + (f". {hint}" if hint else ""),
                         f"Use one of: {', '.join(sorted(model_registry.REGISTRY))}", key="model", block=i)
        module = model_registry.get(model)
        parameter = entry["parameter"].strip()
        try:
            base, _label = _split_parameter(parameter)
        except ValueError:
            raise r.fail(f"{where}, key 'parameter'", f"'{parameter}' is not NAME or NAME[label]",
                         "Write e.g. beta, slope_task[refusal] or slope_task[*]",
                         key="parameter", block=i) from None
        known = _known_parameters(model, module)
        if base not in known:
            hint = did_you_mean(base, known).strip()
            raise r.fail(f"{where}, key 'parameter'",
                         f"model '{model}' has no parameter '{base}'" + (f". {hint}" if hint else ""),
                         f"Use one of: {', '.join(sorted(known))}", key="parameter", block=i)
        direction = entry.get("direction", "increase")
        if direction not in DIRECTIONS:
            hint = did_you_mean(str(direction), DIRECTIONS).strip()
            raise r.fail(f"{where}, key 'direction'",
                         f"'{direction}' is not a direction" + (f". {hint}" if hint else ""),
                         "Use increase or decrease", key="direction", block=i)
        description = entry.get("description", "")
        if not isinstance(description, str):
            raise r.fail(f"{where}, key 'description'", "is not text", "Write description = \"...\"",
                         key="description", block=i)
        role = entry.get("role", "exploratory")
        if role not in ROLES:
            hint = did_you_mean(str(role), ROLES).strip()
            raise r.fail(f"{where}, key 'role'", f"'{role}' is not a role" + (f". {hint}" if hint else ""),
                         "Use confirmatory or exploratory", key="role", block=i)
        rule = _rule_values(r, entry, where, i, defaults)
        out.append(Hypothesis(name=name, model=model, parameter=parameter, direction=direction,
                              description=description.strip(), role=role, **rule))
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
    """One rule for each decided slope: the run's rule and the hypotheses' agree (issue 28.7).

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
