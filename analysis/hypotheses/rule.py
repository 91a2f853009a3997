"""The declared decision rule (ROPE, probability threshold, HDI mass, minimum models) and the decision on draws."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Literal

import numpy as np

from selfmodel import _arviz
from selfmodel.contract import DECISION_MEANING, Decision

Direction = Literal["increase", "decrease"]
DIRECTIONS: tuple[str, ...] = ("increase", "decrease")


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
            f"'no_credible_effect' (inconclusive; the sign is not credible)."
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
    lo, hi = _arviz.hdi(flat, rule.hdi_prob)
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
