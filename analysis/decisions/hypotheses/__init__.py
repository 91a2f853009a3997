r"""Decision rules and hypotheses, declared before the data are seen.

Decision rule
-------------
A scale effect (posterior draws of a slope) is turned into one of the DESIGN decisions:

``improves``
    the HDI lies entirely above the ROPE (lower end > +rope, so it excludes 0);
``worsens``
    the HDI lies entirely below the ROPE;
``practically_null``
    the HDI lies entirely inside the ROPE :math:`[-r, r]` (whatever the sign);
``credibly_positive``
    the HDI lies above 0 but not entirely above the ROPE: the direction is credible, the
    size is not shown to exceed the ROPE;
``credibly_negative``
    the same below 0;
``no_credible_effect`` (read "inconclusive")
    the HDI contains 0 and is not inside the ROPE;
``not_estimable``
    fewer than ``min_models`` models carry the scale variable (or no draws).

**One rule, one level.** Direction (does the HDI exclude 0?) and size (does the HDI clear
the ROPE?) are separate questions, both read on the one HDI that is printed beside the
decision: ``improves`` answers both, ``credibly_positive`` only the first. A sentence that
says an effect is credibly positive or negative therefore never stands beside a printed
interval that contains 0. (Until issue 28.3 the direction was a one-sided
:math:`P(\theta > 0) > 0.95`, a second level: it called +0.21 [-0.01, +0.42] credibly
positive.) ``prob_positive`` is still reported, not used to decide.
``selfmodel.records.contract.DECISION_MEANING`` holds the phrase of each decision.

Defaults: ROPE :math:`\pm 0.1` logits per 10x parameters, 94% HDI (Kruschke 2018,
"Rejecting or accepting parameter values in Bayesian estimation", *AMPPS* 1(2), for the
HDI+ROPE rule).

Declared hypotheses
-------------------
A hypotheses file (TOML; the defaults are the package's ``data/hypotheses.toml``,
:data:`DEFAULT_HYPOTHESES_FILE`) names, for each hypothesis, the fitted model, the parameter,
the predicted direction and the rule (ROPE, HDI mass)::

    [defaults]                 # applied to every [[hypothesis]] that does not set its own
    rope = 0.1
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

Modules
-------
``rule``
    The declared decision rule (ROPE, probability threshold, HDI mass, minimum models) and the decision on draws.
``declared``
    The declared hypotheses file (TOML): reading it with line-numbered errors and did-you-mean; each model's closed-form slope priors.
``bayes_factor``
    Savage-Dickey Bayes factors and the closed-form prior density of a slope at 0.
``evaluate``
    Evaluating each declared hypothesis on the fitted models (decision, P(direction), Bayes factor).
``loo``
    The LOO comparison of the verdict model with and without the scale term (reads fits; never fits).
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
    base_default,
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
    "base_default",
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
