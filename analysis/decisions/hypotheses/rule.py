"""The declared decision rule (ROPE, probability threshold, HDI mass, minimum models) and the decision on draws."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Literal

import numpy as np

from selfmodel.common import arviz_ops
from selfmodel.records.contract import DECISION_MEANING, rule_word

Direction = Literal["increase", "decrease"]
DIRECTIONS: tuple[str, ...] = ("increase", "decrease")


@dataclass(frozen=True)
class DecisionRule:
    """A declared decision rule: one HDI (mass ``hdi_prob``) decides direction and size."""

    rope: float = 0.1
    hdi_prob: float = 0.94
    min_models: int = 3

    def describe(self) -> str:
        """One sentence stating the rule, for reports and methods text."""
        return (
            f"'improves' when the {self.hdi_prob:.0%} HDI lies above the ROPE "
            f"[-{self.rope:g}, {self.rope:g}]; 'worsens' symmetrically; 'practically_null' when "
            f"the HDI lies inside the ROPE; 'credibly_positive' ('credibly_negative') when the "
            f"HDI lies above (below) 0 but does not clear the ROPE; 'not_estimable' with fewer "
            f"than {self.min_models} models carrying the scale variable; otherwise "
            f"'no_credible_effect' (inconclusive; the HDI contains 0). One level: the sign is "
            f"credible exactly when the printed {self.hdi_prob:.0%} HDI excludes 0."
        )

    def as_dict(self) -> dict[str, Any]:
        """JSON form."""
        return asdict(self)


#: Rule keys of earlier versions, refused in files with what to do (docs/decisions.md).
RETIRED_RULE_KEYS: dict[str, str] = {
    "prob_threshold": (
        "the sign rule has one level since issue 28.3: a direction is credible when the "
        "hdi_prob HDI excludes 0 (docs/decisions.md). Remove prob_threshold; set hdi_prob "
        "to change the level"
    ),
}


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

    P(slope > 0) above 0.95 with a printed interval through 0 is not a credible sign:

    >>> r = decide(rng.normal(0.21, 0.115, 4000), DecisionRule(), n_models=10)
    >>> r["prob_positive"] > 0.95, r["hdi_low"] < 0, r["decision"]
    (True, True, 'no_credible_effect')
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
    lo, hi = arviz_ops.hdi(flat, rule.hdi_prob)
    p_pos = float(np.mean(flat > 0))
    word = rule_word(lo, hi, rule.rope)  # the first word whose condition holds
    return {
        "mean": float(np.mean(flat)),
        "sd": float(np.std(flat, ddof=1)),
        "hdi_low": lo,
        "hdi_high": hi,
        "hdi_prob": rule.hdi_prob,
        "prob_positive": p_pos,
        "prob_in_rope": float(np.mean(np.abs(flat) <= rule.rope)),
        "decision": word.name,
        "meaning": word.meaning,
        "reason": word.reason,
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
