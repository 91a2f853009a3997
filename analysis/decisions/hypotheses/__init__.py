r"""Decision rules and hypotheses, declared before the data are seen.

A scale effect (posterior draws of a slope) is turned into one word of the decision
vocabulary by :func:`decide`: HDI and ROPE, one rule at one level (``docs/decisions.md``;
``selfmodel.records.contract.DECISION_MEANING`` holds the phrase of each word).
The hypotheses file, :func:`evaluate` and the Savage-Dickey Bayes factor: ``docs/hypotheses.md``.
"""

from __future__ import annotations

from selfmodel.common.paths import DEFAULT_HYPOTHESES_FILE as DEFAULT_HYPOTHESES_FILE
from selfmodel.decisions.hypotheses.bayes_factor import (
    BF_CAP,
    MIN_DRAWS_NEAR_ZERO,
    savage_dickey,
    slope_prior_density,
)
from selfmodel.decisions.hypotheses.declared import (
    Hypothesis,
    file_sha256,
    label_roles,
    load_hypotheses,
    one_rule,
    slope_priors,
)
from selfmodel.decisions.hypotheses.evaluate import (
    Evidence,
    evaluate,
    evaluate_all,
)
from selfmodel.decisions.hypotheses.loo import (
    scale_term_loo,
)
from selfmodel.decisions.hypotheses.rule import (
    DIRECTIONS,
    RETIRED_RULE_KEYS,
    DecisionRule,
    Direction,
    decide,
    not_estimable,
)

__all__ = [
    "BF_CAP",
    "MIN_DRAWS_NEAR_ZERO",
    "Direction",
    "DIRECTIONS",
    "slope_priors",
    "DecisionRule",
    "RETIRED_RULE_KEYS",
    "decide",
    "not_estimable",
    "Hypothesis",
    "load_hypotheses",
    "one_rule",
    "label_roles",
    "file_sha256",
    "savage_dickey",
    "slope_prior_density",
    "evaluate",
    "Evidence",
    "evaluate_all",
    "scale_term_loo",
]
