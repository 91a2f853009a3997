r"""Frequentist cross-checks of the scale effect (statsmodels), with models as the unit.

Every function takes the cells of :func:`selfmodel.records.cells.build_cells` (columns ``model``,
``family``, ``task``, ``n``, ``k``, ``x``) and uses the cells whose model has the scale
variable (``x`` not null) and at least one readable prediction, exactly as the Bayesian fit
does. All results are JSON-serialisable dicts (floats, ints, bools, strings, ``None``).

Estimands
---------
``slope`` is in logits of accuracy per unit of ``x`` (per 10x parameters for sizes), like
the Bayesian ``beta``. Two logistic designs, both with task intercepts
:math:`\alpha_t`:

*common slope*: :math:`\mathrm{logit}\,p_{mt} = \alpha_t + \beta x_m` — one pooled slope,
  weighted by the information in each cell;
*task slopes*: :math:`\mathrm{logit}\,p_{mt} = \alpha_t + (\beta + \delta_t) x_m` with
  :math:`\sum_t \delta_t = 0` (sum-to-zero coding), so :math:`\beta` is the **unweighted
  mean of the task slopes**: the same estimand as the Bayesian ``beta`` of
  ``models/scale.py`` and the per-task slopes are its ``slope_task``.

Methods
-------
GLM with cluster-robust SEs (:func:`glm_slope`)
    Binomial GLM on the cell counts (:math:`k` of :math:`n`), fitted by IRLS
    (``statsmodels.api.GLM``). Standard errors are CR1 sandwich estimates clustered by
    model (``cov_type="cluster"``, small-sample factor
    :math:`\frac{G}{G-1}\frac{N-1}{N-K}`); intervals and p-values use :math:`t_{G-1}`
    (Cameron & Miller 2015, *J. Human Resources* 50:317). The model-based ("naive") SE,
    which treats every record as independent, is reported beside it to show how much
    the clustering matters.
Wild cluster bootstrap (:func:`wild_bootstrap`)
    The restricted (null-imposed) wild cluster bootstrap of Cameron, Gelbach & Miller
    (2008, *REStat* 90:414) in its form for non-linear models, the *wild score
    bootstrap* (Kline & Santos 2012, *J. Econometric Methods* 1:23; Roodman et al. 2019,
    *Stata J.* 19:4, §3.4): fit the GLM with the slope fixed at :math:`\beta_0` (as an
    offset), form each cluster's contribution to the one-step slope update
    :math:`a_g = [H^{-1} \sum_{i\in g} s_i]_\beta` (scores :math:`s_i` and information
    :math:`H` of the full model at the restricted fit), and compare
    :math:`t = \sum_g a_g / \sqrt{\sum_g a_g^2}` with
    :math:`t^*_b = \sum_g v_{bg} a_g / \sqrt{\sum_g v_{bg}^2 a_g^2}` for weights
    :math:`v`. Symmetric p-value :math:`P(|t^*| \ge |t|)`. Weights: Rademacher
    (:math:`\pm 1`), all :math:`2^G` sign vectors enumerated when that is at most
    ``max(reps, 2**16)`` (an exact randomisation p-value), else ``reps`` random draws; or Webb's
    six-point weights, recommended with fewer than about 12 clusters, where Rademacher
    p-values are too coarse (MacKinnon & Webb 2017, *J. Applied Econometrics* 32:233).
    ``weights="auto"`` takes Webb below 12 clusters, Rademacher otherwise. Confidence
    intervals invert the test (the set of :math:`\beta_0` with :math:`p > 1 -` level;
    bisection to :math:`10^{-4}` SE), with the same weight draws at every
    :math:`\beta_0`.
Two-stage (:func:`two_stage`)
    Stage 1: each cell's empirical logit :math:`y_{mt} = \log\frac{k + 1/2}{n - k + 1/2}`
    with sampling variance :math:`v_{mt} = \frac{1}{k + 1/2} + \frac{1}{n - k + 1/2}`
    (Haldane-Anscombe). *Pooled*: a model's score is the unweighted mean over the tasks,
    :math:`\bar y_m`, variance :math:`\sum_t v_{mt} / T^2` (so its slope, like ``beta``,
    is the mean of the task slopes); with unbalanced data only models that have every
    task with an estimable slope enter (``models_dropped``). Stage 2: WLS of
    :math:`\bar y_m` on :math:`(1, x_m)` with weights :math:`1/(v_m + \hat\tau^2)`,
    :math:`\hat\tau^2` the DerSimonian-Laird method-of-moments between-model variance for
    meta-regression (Raudenbush 2009, in *Handbook of Research Synthesis*, ch. 16).
    Standard errors use the WLS residual scale (Knapp & Hartung 2003, *Stat. Med.*
    22:2693; not truncated at 1) with :math:`t_{G-2}`. *Per task*: the same on each
    task's cells.
Correlations (:func:`correlations`)
    Pearson :math:`r` and Spearman :math:`\rho` across models of accuracy (readable
    predictions pooled over tasks, and per task) with the scale variable (log10 size),
    as scaling papers report them; scipy p-values assume independent models.
Permutation test (:func:`permutation_test`)
    Statistic: the OLS slope of the model's mean empirical logit on :math:`x` (per task:
    the cell's). Sizes are permuted across models; exact enumeration of all
    :math:`G!` permutations when :math:`G \le` ``exact_max_models``, else ``permutations``
    seeded random ones with :math:`p = (1 + \#\{|b^*| \ge |b|\}) / (B + 1)`. Assumes models
    are exchangeable when size has no effect (family structure breaks this mildly).
Holm (:func:`holm`)
    Step-down family-wise correction across the per-task tests (Holm 1979,
    *Scand. J. Statist.* 6:65).

Smallest designs
----------------
Every method needs at least ``MIN_MODELS`` (3) models with the scale variable and two
distinct values of it (the Bayesian rule's minimum); a task's own slope needs as many on
that task. The wild cluster bootstrap needs ``MIN_CLUSTERS_WILD`` (6) models: with
:math:`G` clusters the :math:`2^G` Rademacher sign vectors give a smallest two-sided
p-value of :math:`2/2^G`, and 6 is the first :math:`G` for which that is below 0.05 (with
fewer, no interval can exclude anything and the test cannot reject). The two-stage WLS
needs 3 models (:math:`t_{G-2}` with at least one degree of freedom); the permutation
test with 3 models has :math:`3! = 6` permutations (p >= 1/3) and is reported as such.
Below these sizes, or when a fit fails numerically (a singular information matrix from
fitted probabilities of 0 or 1, a GLM that does not converge), the method is
``{"estimable": False, "reason": ...}`` and the other methods still run.

What none of these model
------------------------
Family effects (siblings share training data), partial pooling of task slopes, and
cell-level over-dispersion beyond what clustering by model absorbs. With 10-20 models,
cluster-robust SEs are biased downwards; the wild bootstrap is the check that is valid
with few clusters. See :func:`crosscheck_table` for the comparison with the Bayesian fit.

Modules
-------
``glm``
    The cluster-robust binomial GLM of cell accuracy on scale (shared helpers: usable cells, design matrix).
``wild_bootstrap``
    The wild cluster bootstrap of the GLM slope (Webb weights, test inversion for the interval).
``two_stage``
    Two-stage estimation: per-model empirical logits, then a DerSimonian-Laird meta-regression on scale.
``permutation``
    Model-level permutation tests of the slope and rank/linear correlations of accuracy with scale.
``run``
    All cross-checks of a run with Holm's adjustment (``run_frequentist``).
``crosscheck``
    The table of frequentist estimates beside the Bayesian ones, with a verdict per row.
"""

from __future__ import annotations

from selfmodel.analyses.frequentist.crosscheck import (
    WIDTH_RATIO_OK,
    crosscheck_table,
)
from selfmodel.analyses.frequentist.glm import (
    DEFAULT_LEVEL,
    MIN_MODELS,
    NUMERICAL_ERRORS,
    glm_slope,
    usable_cells,
)
from selfmodel.analyses.frequentist.permutation import (
    correlations,
    permutation_slope_test,
    permutation_test,
)
from selfmodel.analyses.frequentist.run import (
    holm,
    run_frequentist,
)
from selfmodel.analyses.frequentist.two_stage import (
    meta_regression,
    two_stage,
)
from selfmodel.analyses.frequentist.wild_bootstrap import (
    ENUMERATE_MAX,
    MIN_CLUSTERS_WILD,
    WEBB_POINTS,
    Weights,
    wild_bootstrap,
)

__all__ = [
    "DEFAULT_LEVEL",
    "MIN_MODELS",
    "MIN_CLUSTERS_WILD",
    "NUMERICAL_ERRORS",
    "WEBB_POINTS",
    "ENUMERATE_MAX",
    "Weights",
    "usable_cells",
    "glm_slope",
    "wild_bootstrap",
    "meta_regression",
    "two_stage",
    "correlations",
    "permutation_slope_test",
    "permutation_test",
    "holm",
    "run_frequentist",
    "WIDTH_RATIO_OK",
    "crosscheck_table",
]
