r"""Decision rules and hypotheses, declared before the data are seen.

Decision rule
-------------
A scale effect (posterior draws of a slope) is turned into one of the DESIGN decisions:

``improves``
    :math:`P(\theta > 0) > p^*` **and** the HDI lies entirely above the ROPE (lower end > +rope);
``worsens``
    :math:`P(\theta < 0) > p^*` **and** the HDI lies entirely below the ROPE;
``practically_null``
    the HDI lies entirely inside the ROPE :math:`[-r, r]` (whatever the sign);
``credibly_positive``
    :math:`P(\theta > 0) > p^*` but the HDI is not entirely above the ROPE: the direction
    is credible, the size is not shown to exceed the ROPE;
``credibly_negative``
    the same with :math:`P(\theta < 0) > p^*`;
``no_credible_effect`` (read "inconclusive")
    neither sign is credible and the HDI is not inside the ROPE;
``not_estimable``
    fewer than ``min_models`` models carry the scale variable (or no draws).

Direction (is :math:`P` of the sign above :math:`p^*`?) and size (does the HDI clear the
ROPE?) are separate questions: ``improves`` answers both, ``credibly_positive`` only the
first. ``analysis.contract.DECISION_MEANING`` holds the phrase of each.

Defaults: :math:`p^* = 0.95`, ROPE :math:`\pm 0.1` logits per 10x parameters, 94% HDI
(Kruschke 2018, "Rejecting or accepting parameter values in Bayesian estimation",
*AMPPS* 1(2), for the HDI+ROPE rule).

Declared hypotheses
-------------------
A hypotheses file (TOML; the defaults are ``hypotheses.toml`` at the repository root,
:data:`DEFAULT_HYPOTHESES_FILE`) names, for each hypothesis, the fitted model, the parameter,
the predicted direction and the rule (ROPE, probability threshold, HDI mass)::

    [defaults]                 # applied to every [[hypothesis]] that does not set its own
    rope = 0.1
    prob_threshold = 0.95
    hdi_prob = 0.94
    min_models = 3

    [[hypothesis]]
    name = "accuracy_overall"
    description = "Larger models predict their own behaviour more accurately."
    model = "scale"            # a models/ registry name
    parameter = "beta"         # or "slope_task[refusal]", or "slope_task[*]" for every task
    direction = "increase"     # or "decrease"

:func:`evaluate` applies :func:`decide` (so ``decision`` is in the DESIGN vocabulary, read
on the sign of the parameter: positive is ``improves``) and adds the probability of the
predicted direction, whether the decision is the predicted one (``supported``) and a
Savage-Dickey Bayes factor (:func:`savage_dickey`).

Savage-Dickey Bayes factor
--------------------------
For a point null :math:`H_0: \theta = 0` nested in :math:`H_1` (the fitted model), with the
other parameters' prior under :math:`H_0` equal to their conditional prior under :math:`H_1`
at :math:`\theta = 0`,

.. math::  \mathrm{BF}_{10} = \frac{p(\theta = 0 \mid H_1)}{p(\theta = 0 \mid y, H_1)}

(Dickey 1971, *Ann. Math. Statist.* 42(1); Wagenmakers, Lodewyckx, Kuriyal & Grasman 2010,
"Bayesian hypothesis testing for psychologists: a tutorial on the Savage-Dickey method",
*Cognitive Psychology* 60(3)). The slopes' priors are independent of the other parameters,
so the condition holds for ``beta`` and ``beta_dprime``; for a task slope
:math:`\beta + \delta_t` the null model is, by construction, the conditional one.

*Prior density at 0* is exact: the slope's own prior (e.g. ``Normal(0, 1)``), or for a
task slope :math:`\beta + \sigma_\delta z_t` with :math:`z \sim \mathrm{ZeroSumNormal}(1)`
over :math:`T` tasks (each :math:`z_t` has variance :math:`(T-1)/T`) the scale mixture
:math:`\int N(0 \mid \mu_\beta, \sigma_\beta^2 + s^2 (T-1)/T)\, p(\sigma_\delta = s)\, ds`,
by quadrature.

*Posterior density at 0* is estimated from the draws by a Gaussian kernel density estimate
(Scott's bandwidth), which assumes nothing about the posterior's shape and has small bias
where draws are dense. Far in the tail there are too few draws near 0 for any density
estimate: when fewer than :data:`MIN_DRAWS_NEAR_ZERO` draws lie within one bandwidth of 0
the estimate falls back to a normal fitted to the draws (an extrapolation, flagged
``reliable = False``), and a Bayes factor above :data:`BF_CAP` is reported as ``">1000"``
(``bounded = True``): beyond that, its size reflects the tail shape assumed, not the data.
(Logspline estimates, as in Wagenmakers et al. 2010, have the same tail problem and no
maintained Python implementation.)
"""

from __future__ import annotations

import hashlib
import math
import re
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

import arviz as az
import numpy as np

import models as model_registry
from analysis.contract import (
    DECISION_MEANING,
    NEGATIVE_DECISIONS,
    POSITIVE_DECISIONS,
    Decision,
    InputError,
)
from analysis.paths import DEFAULT_HYPOTHESES_FILE

#: Bayes factors beyond ``BF_CAP`` (or below ``1 / BF_CAP``) are reported as bounds.
BF_CAP = 1000.0
#: Fewer posterior draws than this within one KDE bandwidth of the null point: tail. The
#: density estimate at 0 rests on about these draws (relative error ~ 1/sqrt(count), ~14%).
MIN_DRAWS_NEAR_ZERO = 50

Direction = Literal["increase", "decrease"]
DIRECTIONS: tuple[str, ...] = ("increase", "decrease")

def slope_priors(model: str) -> Mapping[str, tuple[str, str | None]]:
    """Slope parameters of ``model`` whose prior is known in closed form.

    Parameter -> (prior key of the mean slope, prior key of the task-deviation sd or
    ``None``), as the model declares in ``SPEC.slope_priors`` (empty for an unknown model).
    """
    module = model_registry.REGISTRY.get(model)
    return module.SPEC.slope_priors if module is not None else {}


@dataclass(frozen=True)
class DecisionRule:
    """A declared decision rule."""

    rope: float = 0.1
    prob_threshold: float = 0.95
    hdi_prob: float = 0.94
    min_models: int = 3

    def describe(self) -> str:
        """One sentence stating the rule, for reports and methods text."""
        return (
            f"'improves' when P(slope > 0) > {self.prob_threshold:g} and the {self.hdi_prob:.0%} HDI "
            f"lies above the ROPE [-{self.rope:g}, {self.rope:g}]; 'worsens' symmetrically; "
            f"'practically_null' when the HDI lies inside the ROPE; 'credibly_positive' "
            f"('credibly_negative') when P(slope > 0) (P(slope < 0)) > {self.prob_threshold:g} "
            f"but the HDI does not clear the ROPE; 'not_estimable' with fewer than "
            f"{self.min_models} models carrying the scale variable; otherwise "
            f"'no_credible_effect' (inconclusive: the sign is not credible)."
        )

    def as_dict(self) -> dict[str, Any]:
        """JSON form."""
        return asdict(self)


def decide(draws: np.ndarray, rule: DecisionRule, *, n_models: int) -> dict[str, Any]:
    """Summarise posterior draws of an effect and apply the rule.

    Parameters
    ----------
    draws
        Posterior draws (any shape; flattened).
    rule
        The declared rule.
    n_models
        Number of models carrying the scale variable.

    Returns
    -------
    dict
        ``mean``, ``sd``, ``hdi_low``, ``hdi_high``, ``hdi_prob``, ``prob_positive``,
        ``prob_in_rope``, ``decision`` and ``reason``.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> decide(rng.normal(0.5, 0.1, 4000), DecisionRule(), n_models=10)["decision"]
    'improves'
    >>> decide(rng.normal(0.0, 0.02, 4000), DecisionRule(), n_models=10)["decision"]
    'practically_null'
    >>> decide(rng.normal(0.0, 0.5, 4000), DecisionRule(), n_models=10)["decision"]
    'no_credible_effect'
    >>> decide(rng.normal(0.2, 0.06, 4000), DecisionRule(), n_models=10)["decision"]
    'credibly_positive'
    >>> decide(rng.normal(-0.2, 0.06, 4000), DecisionRule(), n_models=10)["decision"]
    'credibly_negative'
    >>> decide(rng.normal(0.5, 0.1, 4000), DecisionRule(), n_models=2)["decision"]
    'not_estimable'
    """
    flat = np.asarray(draws, dtype=float).ravel()
    if n_models < rule.min_models or flat.size == 0:
        return not_estimable(
            f"only {n_models} model(s) carry the scale variable; at least {rule.min_models} are needed",
            rule,
        )
    lo, hi = (float(v) for v in az.hdi(flat, hdi_prob=rule.hdi_prob))
    p_pos = float(np.mean(flat > 0))
    decision: Decision
    if p_pos > rule.prob_threshold and lo > rule.rope:
        decision, reason = "improves", "P(slope > 0) above threshold and HDI above the ROPE"
    elif (1 - p_pos) > rule.prob_threshold and hi < -rule.rope:
        decision, reason = "worsens", "P(slope < 0) above threshold and HDI below the ROPE"
    elif lo >= -rule.rope and hi <= rule.rope:
        decision, reason = "practically_null", "HDI inside the ROPE"
    elif p_pos > rule.prob_threshold:
        decision, reason = (
            "credibly_positive",
            "P(slope > 0) above threshold but the HDI does not lie above the ROPE",
        )
    elif (1 - p_pos) > rule.prob_threshold:
        decision, reason = (
            "credibly_negative",
            "P(slope < 0) above threshold but the HDI does not lie below the ROPE",
        )
    else:
        decision, reason = "no_credible_effect", "neither sign credible; HDI not inside the ROPE"
    return {
        "mean": float(np.mean(flat)),
        "sd": float(np.std(flat, ddof=1)),
        "hdi_low": lo,
        "hdi_high": hi,
        "hdi_prob": rule.hdi_prob,
        "prob_positive": p_pos,
        "prob_in_rope": float(np.mean(np.abs(flat) <= rule.rope)),
        "decision": decision,
        "meaning": DECISION_MEANING[decision],
        "reason": reason,
    }


def not_estimable(reason: str, rule: DecisionRule) -> dict[str, Any]:
    """A decision record for an effect that cannot be estimated, with the reason."""
    return {
        "mean": None,
        "sd": None,
        "hdi_low": None,
        "hdi_high": None,
        "hdi_prob": rule.hdi_prob,
        "prob_positive": None,
        "prob_in_rope": None,
        "decision": "not_estimable",
        "meaning": DECISION_MEANING["not_estimable"],
        "reason": reason,
    }


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
    rope, prob_threshold, hdi_prob, min_models
        The decision rule (:class:`DecisionRule`).
    description
        One sentence for the report.
    """

    name: str
    model: str = "scale"
    parameter: str = "beta"
    direction: Direction = "increase"
    rope: float = 0.1
    prob_threshold: float = 0.95
    hdi_prob: float = 0.94
    min_models: int = 3
    description: str = ""

    @property
    def rule(self) -> DecisionRule:
        """The decision rule of this hypothesis."""
        return DecisionRule(self.rope, self.prob_threshold, self.hdi_prob, self.min_models)

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
            f"('{self.predicted}' when P {sign} 0 exceeds {self.prob_threshold:g} and the "
            f"{self.hdi_prob:.0%} HDI lies outside the ROPE +-{self.rope:g})."
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
_RULE_KEYS = ("rope", "prob_threshold", "hdi_prob", "min_models")
_HYP_KEYS = ("name", "description", "model", "parameter", "direction", *_RULE_KEYS)


class _Reader:
    """Validate a parsed hypotheses file; errors are one line naming file, line and key."""

    def __init__(self, path: Path, text: str) -> None:
        self.path = path
        self.lines = text.splitlines()

    def line_of(self, key: str, block: int | None) -> int | None:
        """1-based line of ``key =`` in the ``block``-th [[hypothesis]] (``None``: [defaults])."""
        if block is None:
            header = re.compile(r"^\s*\[\s*defaults\s*\]")
        else:
            header = re.compile(r"^\s*\[\[\s*hypothesis\s*\]\]")
        any_header = re.compile(r"^\s*\[")
        key_re = re.compile(rf"^\s*[\"']?{re.escape(key)}[\"']?\s*=")
        seen, inside = -1, False
        for i, line in enumerate(self.lines, start=1):
            if header.match(line):
                seen += 1
                inside = block is None or seen == block
                continue
            if any_header.match(line):
                inside = False
                continue
            if inside and key_re.match(line):
                return i
        return None

    def fail(self, where: str, what: str, todo: str, *, key: str | None = None,
             block: int | None = None) -> InputError:
        from analysis.registry import format_input_error

        line = self.line_of(key, block) if key is not None else None
        return InputError(format_input_error(self.path, f"{where}: {what}", todo, line=line))

    def check_keys(self, table: Mapping[str, Any], allowed: Sequence[str], where: str,
                   block: int | None) -> None:
        from analysis.registry import did_you_mean

        for key in table:
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
        "prob_threshold": (0.5, 1.0, "a probability between 0.5 and 1 (e.g. 0.95)"),
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
    import models as model_registry
    from analysis.registry import did_you_mean

    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(f"{path}: no such hypotheses file. Check the path.") from None
    except (OSError, UnicodeDecodeError) as e:
        raise InputError(f"{path}: cannot read the hypotheses file ({e}). Save it as UTF-8 text.") from None
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise InputError(f"{path}: not valid TOML ({e}). Fix the syntax.") from None
    r = _Reader(path, text)
    for key in raw:
        if key not in _TOP_KEYS:
            hint = did_you_mean(str(key), _TOP_KEYS).strip()
            raise r.fail(f"top-level key '{key}'", "unknown key" + (f". {hint}" if hint else ""),
                         "Use a [defaults] table and [[hypothesis]] entries")
    defaults_raw = raw.get("defaults", {})
    if not isinstance(defaults_raw, dict):
        raise r.fail("'defaults'", "is not a table", "Write [defaults] with rope = ..., prob_threshold = ...")
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
        rule = _rule_values(r, entry, where, i, defaults)
        out.append(Hypothesis(name=name, model=model, parameter=parameter, direction=direction,
                              description=description.strip(), **rule))
    return out


def _known_parameters(model: str, module: Any) -> list[str]:
    known = set(module.DEFAULT_PRIORS) | set(slope_priors(model))
    known |= {v for v in (module.EFFECT, module.PER_TASK_EFFECT) if v}
    return sorted(known)


def file_sha256(path: Path | str) -> str:
    """SHA-256 of a hypotheses file (recorded with the results as provenance)."""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


# --------------------------------------------------------------------------- Savage-Dickey


def savage_dickey(
    draws: np.ndarray,
    prior_sd: float | None = None,
    prior_mu: float = 0.0,
    *,
    prior_density0: float | None = None,
    point: float = 0.0,
) -> dict[str, Any]:
    r"""Savage-Dickey Bayes factor :math:`\mathrm{BF}_{10}` of a point null :math:`\theta = 0`.

    Parameters
    ----------
    draws
        Posterior draws of :math:`\theta` (any shape; flattened).
    prior_sd, prior_mu
        A normal prior :math:`N(\mu, \sigma^2)` of :math:`\theta`; its density at ``point``
        is the numerator.
    prior_density0
        The prior density at ``point`` when the prior is not a plain normal (overrides
        ``prior_sd``/``prior_mu``).
    point
        The null value (0).

    Returns
    -------
    dict
        ``bf_10`` (capped to ``[1/BF_CAP, BF_CAP]``), ``bf_01``, ``bf_10_estimate``
        (uncapped), ``display`` (``">1000"`` when bounded), ``bounded``, ``reliable``,
        ``method`` (``kde`` or ``normal_tail``), ``prior_density_0``,
        ``posterior_density_0`` (the one used), ``posterior_density_0_kde``,
        ``posterior_density_0_normal``, ``draws_near_0`` (within one bandwidth of 0),
        ``relative_error_approx`` (:math:`1/\sqrt{\text{draws near 0}}`, a rough guide to
        the Monte Carlo error of the KDE estimate), ``bandwidth``.

    Examples
    --------
    Conjugate normal case: prior :math:`N(0, 1)`, posterior :math:`N(0.3, 0.2^2)`:

    >>> from scipy.stats import norm
    >>> rng = np.random.default_rng(1)
    >>> sd = savage_dickey(rng.normal(0.3, 0.2, 20000), prior_sd=1.0)
    >>> exact = norm.pdf(0, 0, 1) / norm.pdf(0, 0.3, 0.2)
    >>> bool(abs(sd["bf_10"] / exact - 1) < 0.05), sd["method"]
    (True, 'kde')
    """
    from scipy.stats import gaussian_kde, norm

    flat = np.asarray(draws, dtype=float).ravel()
    flat = flat[np.isfinite(flat)]
    if prior_density0 is None:
        if prior_sd is None or not prior_sd > 0:
            raise ValueError("give prior_sd > 0 or prior_density0")
        prior_density0 = float(norm.pdf(point, prior_mu, prior_sd))
    if flat.size < 2 or np.std(flat) == 0:
        raise ValueError("savage_dickey needs at least two distinct posterior draws")
    mean, sd = float(np.mean(flat)), float(np.std(flat, ddof=1))
    kde = gaussian_kde(flat)
    bandwidth = float(kde.factor * sd)
    near = int(np.sum(np.abs(flat - point) <= bandwidth))
    dens_kde = float(kde(point)[0])
    dens_norm = float(norm.pdf(point, mean, sd))
    tail = near < MIN_DRAWS_NEAR_ZERO
    post0 = dens_norm if tail else dens_kde
    with np.errstate(divide="ignore", over="ignore"):
        est = float(prior_density0 / post0) if post0 > 0 else math.inf
    bounded = est > BF_CAP or est < 1 / BF_CAP
    bf = min(max(est, 1 / BF_CAP), BF_CAP)
    if est > BF_CAP:
        display = f">{BF_CAP:g}"
    elif est < 1 / BF_CAP:
        display = f"<{1 / BF_CAP:g}"
    else:
        display = f"{est:.3g}" if not tail else f"~{est:.2g}"
    return {
        "bf_10": bf,
        "bf_01": 1.0 / bf,
        "bf_10_estimate": est,
        "display": display,
        "bounded": bool(bounded),
        "reliable": not tail,
        "method": "normal_tail" if tail else "kde",
        "prior_density_0": float(prior_density0),
        "posterior_density_0": float(post0),
        "posterior_density_0_kde": dens_kde,
        "posterior_density_0_normal": dens_norm,
        "draws_near_0": near,
        "relative_error_approx": (1.0 / math.sqrt(near)) if near else None,
        "bandwidth": bandwidth,
        "point": float(point),
    }


def _prior_pdf(prior: Sequence[Any]) -> Any:
    """Vectorised density of a ``(dist, params)`` prior (scipy for common ones, else PyMC)."""
    from scipy import stats

    dist, params = prior[0], dict(prior[1])
    if dist == "Normal":
        return stats.norm(params.get("mu", 0.0), params["sigma"]).pdf
    if dist == "HalfNormal":
        return stats.halfnorm(scale=params["sigma"]).pdf
    if dist == "Exponential":
        return stats.expon(scale=1.0 / params["lam"]).pdf
    if dist == "HalfCauchy":
        return stats.halfcauchy(scale=params["beta"]).pdf
    if dist == "StudentT":
        return stats.t(params["nu"], params.get("mu", 0.0), params["sigma"]).pdf

    import pymc as pm
    import pytensor.tensor as pt

    v = pt.dvector("v")
    fn = pm.compile([v], pm.logp(getattr(pm, dist).dist(**params), v))
    return lambda x: np.exp(fn(np.atleast_1d(np.asarray(x, dtype=float))))


def slope_prior_density(
    model: str, base: str, priors: Mapping[str, Sequence[Any]], *, n_tasks: int, point: float = 0.0
) -> tuple[float | None, str]:
    r"""Prior density at ``point`` of a slope parameter, and how it was obtained.

    Parameters
    ----------
    model, base
        Model name and variable (a key of :func:`slope_priors`).
    priors
        The fit's priors (``{name: (dist, params)}``).
    n_tasks
        Number of tasks :math:`T` (a task slope's deviation has variance
        :math:`\sigma_\delta^2 (T-1)/T` under ``ZeroSumNormal``; none when :math:`T = 1`).

    Returns
    -------
    density, note
        ``None`` and the reason when the density is not available in closed form.

    Examples
    --------
    >>> from models.scale import DEFAULT_PRIORS
    >>> round(slope_prior_density("scale", "beta", DEFAULT_PRIORS, n_tasks=3)[0], 4)
    0.3989
    """
    from scipy import integrate, stats

    spec = slope_priors(model).get(base)
    if spec is None:
        if base in priors:
            return float(_prior_pdf(priors[base])(point)), f"prior {priors[base][0]} of '{base}'"
        return None, f"no closed-form prior for '{base}' of model '{model}'"
    mean_key, dev_key = spec
    mean_prior = priors[mean_key]
    if dev_key == "mean":  # the average over tasks of independent Normal task slopes
        if mean_prior[0] != "Normal":
            return None, f"average of task slopes needs a Normal prior on '{mean_key}'"
        mu, s0 = float(mean_prior[1].get("mu", 0.0)), float(mean_prior[1]["sigma"])
        sd = s0 / math.sqrt(max(n_tasks, 1))
        return float(stats.norm.pdf(point, mu, sd)), (
            f"average over {n_tasks} task(s) of independent {mean_prior[0]} priors '{mean_key}'"
        )
    if dev_key is None or n_tasks < 2:
        return float(_prior_pdf(mean_prior)(point)), f"prior {mean_prior[0]} of '{mean_key}'"
    if mean_prior[0] != "Normal":
        return None, f"task-slope prior needs a Normal prior on '{mean_key}' (has {mean_prior[0]})"
    mu, sb = float(mean_prior[1].get("mu", 0.0)), float(mean_prior[1]["sigma"])
    sigma_pdf = _prior_pdf(priors[dev_key])
    frac = (n_tasks - 1) / n_tasks

    def integrand(s: float) -> float:
        return float(stats.norm.pdf(point, mu, math.sqrt(sb**2 + frac * s**2)) * sigma_pdf(s))

    val, _err = integrate.quad(integrand, 0.0, math.inf, limit=200)
    return float(val), (
        f"scale mixture: Normal '{mean_key}' + ZeroSumNormal deviation ({n_tasks} tasks) "
        f"with sd '{dev_key}', integrated by quadrature"
    )


# --------------------------------------------------------------------------- evaluation


def _fit_priors(idata: Any, model: str) -> dict[str, Any]:
    import json

    import models as model_registry

    prov = getattr(idata, "attrs", {}).get("selfmodel_provenance")
    if prov:
        saved = json.loads(prov).get("priors")
        if saved:
            return {k: (v[0], dict(v[1])) for k, v in saved.items()}
    return dict(model_registry.get(model).DEFAULT_PRIORS)


def _labels_of(da: Any) -> tuple[str | None, list[str]]:
    dims = [d for d in da.dims if d not in ("chain", "draw")]
    if not dims:
        return None, []
    if len(dims) > 1:
        raise ValueError(f"'{da.name}' has several dimensions {dims}; name one label per hypothesis")
    return dims[0], [str(v) for v in da[dims[0]].values]


def evaluate(
    hypothesis: Hypothesis,
    idata: Any,
    *,
    n_models: int,
    models_per_label: Mapping[str, int] | None = None,
) -> dict[str, Any]:
    """Evaluate one hypothesis on a fitted model's posterior.

    Parameters
    ----------
    hypothesis
        The declared hypothesis.
    idata
        The fit's ``InferenceData`` (``analysis.fit.Fit.idata``), of ``hypothesis.model``.
        Its priors are read from the provenance in ``idata.attrs`` (the model's
        ``DEFAULT_PRIORS`` when absent).
    n_models
        Models carrying the scale variable (for ``min_models``).
    models_per_label
        Models per label (e.g. per task) when a label has fewer than ``n_models``.

    Returns
    -------
    dict
        For a single parameter: the hypothesis (``name``, ``model``, ``parameter``,
        ``label``, ``direction``, ``rule``), everything :func:`decide` returns, and
        ``prob_direction`` (posterior probability of the predicted sign), ``predicted``
        (``improves`` or ``worsens``), ``supported`` (the decision is the predicted one;
        ``None`` when not estimable), ``bayes_factor_10`` and ``bf_display`` (Savage-Dickey,
        ``None`` when the prior density is not available) and ``bayes_factor`` (the
        :func:`savage_dickey` details). For ``NAME[*]``: the hypothesis fields and
        ``per_label`` (label -> single-parameter result).

    Examples
    --------
    >>> import xarray as xr
    >>> rng = np.random.default_rng(0)
    >>> post = xr.Dataset({"beta": (("chain", "draw"), rng.normal(0.6, 0.1, (2, 2000)))})
    >>> res = evaluate(Hypothesis("h", parameter="beta"), az.InferenceData(posterior=post), n_models=10)
    >>> res["decision"], res["supported"], res["bf_display"]
    ('improves', True, '>1000')
    """
    base, label = hypothesis.base, hypothesis.label
    head = {
        "name": hypothesis.name,
        "description": hypothesis.description,
        "model": hypothesis.model,
        "parameter": hypothesis.parameter,
        "label": label,
        "direction": hypothesis.direction,
        "predicted": hypothesis.predicted,
        "rule": hypothesis.rule.as_dict(),
    }
    post = idata.posterior
    if base not in post:
        return {**head, **_absent(hypothesis, f"variable '{base}' is not in the fit of '{hypothesis.model}'")}
    da = post[base]
    dim, labels = _labels_of(da)
    counts = dict(models_per_label or {})
    if label == "*":
        if dim is None:
            return {**head, **_absent(hypothesis, f"'{base}' has no labels to expand")}
        per = {
            lab: evaluate(replace(hypothesis, parameter=f"{base}[{lab}]"), idata,
                          n_models=n_models, models_per_label=counts)
            for lab in labels
        }
        return {**head, "per_label": per}
    if label is not None:
        if dim is None:
            return {**head, **_absent(hypothesis, f"'{base}' has no dimension to select '{label}' from")}
        if label not in labels:
            return {**head, **_absent(hypothesis, f"'{label}' is not among the {dim}s in the data ({', '.join(labels)})")}
        draws = da.sel({dim: label}).values
        n_eff_models = counts.get(label, n_models)
    else:
        if dim is not None:
            return {**head, **_absent(hypothesis, f"'{base}' has dimension '{dim}'; name a label or [*]")}
        draws = da.values
        n_eff_models = n_models
    rule = hypothesis.rule
    res = decide(draws, rule, n_models=n_eff_models)
    out = {**head, **res}
    if res["decision"] == "not_estimable":
        return {**out, "prob_direction": None, "supported": None, "direction_supported": None,
                "bayes_factor_10": None, "bf_display": None, "bayes_factor": None}
    flat = np.asarray(draws, dtype=float).ravel()
    p_pos = res["prob_positive"]
    out["prob_direction"] = p_pos if hypothesis.direction == "increase" else float(np.mean(flat < 0))
    out["supported"] = res["decision"] == hypothesis.predicted
    # direction alone: the predicted sign is credible, whether or not the size clears the ROPE
    signed = POSITIVE_DECISIONS if hypothesis.direction == "increase" else NEGATIVE_DECISIONS
    out["direction_supported"] = res["decision"] in signed
    n_tasks = len(post["task"]) if "task" in post.coords else 1
    dens, note = slope_prior_density(hypothesis.model, base, _fit_priors(idata, hypothesis.model),
                                     n_tasks=n_tasks)
    if dens is None or not dens > 0:
        out.update({"bayes_factor_10": None, "bf_display": None,
                    "bayes_factor": {"reason": note}})
        return out
    sd = savage_dickey(flat, prior_density0=dens)
    sd["prior"] = note
    out.update({"bayes_factor_10": sd["bf_10"], "bf_display": sd["display"], "bayes_factor": sd})
    return out


def _absent(hypothesis: Hypothesis, reason: str) -> dict[str, Any]:
    return {**not_estimable(reason, hypothesis.rule), "prob_direction": None, "supported": None,
            "direction_supported": None, "bayes_factor_10": None, "bf_display": None, "bayes_factor": None}


@dataclass(frozen=True)
class Evidence:
    """A fitted model as the hypotheses see it.

    Parameters
    ----------
    idata
        The fit's ``InferenceData``.
    n_models
        Models in the fit (carrying the scale variable).
    models_per_label
        Models per task (labels of the per-task effect).
    diagnostics_passed
        The fit passed the diagnostic checks (``analysis.fit.diagnose``); a row's
        ``finding`` is false otherwise (DESIGN: verdicts are gated on diagnostics).
    """

    idata: Any
    n_models: int
    models_per_label: Mapping[str, int] = field(default_factory=dict)
    diagnostics_passed: bool = True


def evaluate_all(
    hypotheses: Sequence[Hypothesis], evidence: Mapping[str, Evidence | str]
) -> list[dict[str, Any]]:
    """Evaluate every hypothesis; one flat row per parameter (``NAME[*]`` expanded).

    Parameters
    ----------
    hypotheses
        From :func:`load_hypotheses`.
    evidence
        Model name -> :class:`Evidence`, or a string saying why that model was not fitted.
        A hypothesis on a model absent from the mapping is ``not_estimable``.

    Returns
    -------
    list of dict
        Rows as :func:`evaluate` returns them for a single parameter, plus ``hypothesis``
        (the declared name; ``name`` gets the label, e.g. ``accuracy_by_task[refusal]``)
        and ``finding`` (estimable and the fit passed its diagnostics).
    """
    rows: list[dict[str, Any]] = []
    for h in hypotheses:
        ev = evidence.get(h.model, f"model '{h.model}' was not fitted")
        if isinstance(ev, str):
            head = {"name": h.name, "description": h.description, "model": h.model,
                    "parameter": h.parameter, "label": h.label, "direction": h.direction,
                    "predicted": h.predicted, "rule": h.rule.as_dict()}
            rows.append({**head, **_absent(h, ev), "hypothesis": h.name, "finding": False})
            continue
        res = evaluate(h, ev.idata, n_models=ev.n_models, models_per_label=ev.models_per_label)
        singles = (
            [{**r, "name": f"{h.name}[{lab}]"} for lab, r in res["per_label"].items()]
            if "per_label" in res else [res]
        )
        for r in singles:
            r["hypothesis"] = h.name
            r["finding"] = bool(ev.diagnostics_passed and r["decision"] != "not_estimable")
            rows.append(r)
    return rows


def scale_term_loo(
    scale_fit: Any,
    without_fit: Any,
    cells: Any,
    *,
    without_label: str,
    cache_dir: Path | str | None = None,
    max_draws: int | None = 2000,
) -> dict[str, Any]:
    r"""LOO comparison of the verdict model with and without the scale term (no fitting).

    The model without the scale term is the verdict model's declared
    ``SPEC.without_effect`` (for ``scale``: ``pooled(random_effects=True)``, the same task
    intercepts and family, model and cell effects, no :math:`(\beta + \delta_t) x_m`),
    fitted by :func:`analysis.robustness.robustness_refits` to the same cells with the same
    sampler settings and seed. PSIS-LOO integrates each cell's own effect out
    (``analysis.checks.loo``).

    Parameters
    ----------
    scale_fit, without_fit
        The ``analysis.fit.Fit`` of the verdict model and of the model without its effect.
    cells
        The cells both were fitted to.
    without_label
        How ``results.json`` names the model without the effect.
    cache_dir
        The fits folder the LOO results are saved in (``analysis.checks.loo``).
    max_draws
        Posterior draws used for the pointwise log likelihood.

    Returns
    -------
    dict
        ``with_scale`` and ``without_scale`` (``elpd_loo``, ``se``, ``p_loo``,
        ``n_high_k``), ``elpd_diff`` (with minus without; positive favours the scale term),
        ``dse``, ``weights`` (stacking), ``table`` (``analysis.checks.compare`` rows) and
        ``without_scale_diagnostics_passed``.
    """
    from analysis import checks

    l_with = checks.loo(
        scale_fit, model_registry.get(scale_fit.model), cells, max_draws=max_draws,
        cache_dir=cache_dir,
    )
    l_without = checks.loo(
        without_fit, model_registry.get(without_fit.model), cells, max_draws=max_draws,
        cache_dir=cache_dir,
    )
    table = checks.compare({"with_scale": l_with, "without_scale": l_without})
    by = {r["model"]: r for r in table}
    diff = l_with["elpd_loo"] - l_without["elpd_loo"]
    keep = ("elpd_loo", "se", "p_loo", "n_high_k", "max_k", "integrated")
    return {
        "with_scale": {k: l_with[k] for k in keep},
        "without_scale": {k: l_without[k] for k in keep},
        "without_scale_model": without_label,
        "elpd_diff": diff,
        "dse": max(r["dse"] or 0.0 for r in table),
        "weights": {m: by[m]["weight"] for m in by},
        "table": table,
        "without_scale_diagnostics_passed": bool(without_fit.diagnostics["passed"]),
        "without_scale_cache_key": without_fit.provenance.get("cache_key"),
    }
