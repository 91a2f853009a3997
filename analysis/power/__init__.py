r"""Study design and power: what a design can detect, and what a null verdict rules out.

A scaling study is only as good as the slope it can detect. This module answers two
questions with the scale model of ``models/scale.py`` and the decision rule of
:mod:`selfmodel.decisions.hypotheses`:

* **before** the compute is spent (``selfmodel power``): for a design (families and their
  sizes, tasks with items and expected accuracy, repeats, variance components), the
  probability of each decision at a range of true slopes, the minimum detectable slope at
  80% power, and how power changes with more models versus more items;
* **after** a fit (:func:`mde_from_fit`, the report's "what this study could detect"
  section): the slope the fitted design would have detected with 80% power, computed from
  the fitted variance components, so that ``no_credible_effect`` is read correctly.

Generative model of a simulated data set
----------------------------------------
Cells are model :math:`m` x task :math:`t`, as in the scale model; :math:`x_m` is
:math:`\log_{10}` billions of parameters centred on the mean over the design's models, and
:math:`\alpha_t = \mathrm{logit}(a_t)` with :math:`a_t` the task's expected accuracy of an
average-size model:

.. math::

    \eta_{mt} &= \alpha_t + (\beta + \delta_t)\,x_m + u_{f[m]} + v_m + w_{mt},\\
    u_f \sim N(0, \sigma_f^2),\ v_m &\sim N(0, \sigma_m^2),\ w_{mt} \sim N(0, \sigma_c^2),\
    \delta = \text{zero-sum } N(0, \sigma_\delta^2),\\
    k_{mt} &\sim \mathrm{Binomial}\big(n^{\mathrm{eff}}_{t},\ \mathrm{logit}^{-1}\eta_{mt}\big).

:math:`\beta` (the true slope of the sweep) is the mean of the task slopes, the estimand of
``beta`` in the scale model. A task's expected accuracy may be given directly or through
signal detection (outcome base rate :math:`\pi`, sensitivity :math:`d'`, criterion :math:`c`,
negative = yes-bias): :math:`a = \pi\,\Phi(d'/2 - c) + (1-\pi)\,\Phi(d'/2 + c)`. A strong
yes-bias lowers accuracy toward the base rate of "yes", which changes the binomial
information :math:`n\,a(1-a)` a cell carries.

Items and repeats: the effective n
----------------------------------
Items are taken to be shared by all models (every model answers the same items), so the
average item difficulty is part of :math:`\alpha_t`. What is left is the model x item
interaction. With :math:`I` items, :math:`R` repeats per item and :math:`\rho` the
correlation between two repeated answers of one model to one item (on the correct/incorrect
scale), the variance of a cell's accuracy is :math:`a(1-a)\,(1 + (R-1)\rho)/(IR)`: Kish's
design effect for cluster samples (Kish 1965, *Survey Sampling*, sec. 5.4). A cell carries
the information of

.. math::  n^{\mathrm{eff}} = \frac{I R\,(1 - u)}{1 + (R - 1)\rho}

independent answers (:math:`u` = share of unreadable predictions): :math:`R` repeats of a
model that answers an item consistently (:math:`\rho \to 1`) are worth one answer, and no
number of repeats carries a cell beyond :math:`I/\rho` answers. The simulation draws each
cell as the pipeline would see it, :math:`n = IR(1-u)` answers, with a beta-binomial count of
that variance (intra-cell correlation :math:`\rho' = (R-1)\rho/(n-1)`); with one answer per
item it is a plain binomial. The fit absorbs the extra-binomial variance in
:math:`\sigma_c`, as a fit of the scale model to real repeated answers does.
``tests/power/test_power.py`` checks this against a brute-force simulation of every answer
(beta-distributed model-item propensities, :math:`R` answers each) at two design points.

Fast approximate fit
--------------------
A full NUTS fit per simulated data set is too slow for a sweep (~30 s of compilation per
data shape here, then seconds per fit). Each simulated data set is instead fitted by a
deterministic approximation of the same Bayesian model:

1. each cell's count becomes an empirical logit :math:`y = \log\frac{k + 1/2}{n - k + 1/2}`
   with variance :math:`s^2 = \frac{1}{k + 1/2} + \frac{1}{n - k + 1/2}` (Cox & Snell 1989,
   *Analysis of Binary Data*, sec. 2.1.6): the binomial likelihood in normal form;
2. given the variance components :math:`\theta = (\sigma_f, \sigma_m, \sigma_c, \sigma_\delta)`
   the model is linear-Gaussian: task intercepts and task slopes (with the scale model's
   priors: :math:`\alpha_t \sim N(0, 1.5^2)`, task slopes :math:`\beta + \delta_t` with
   :math:`\beta \sim N(0, 1)` and zero-sum :math:`\delta`) integrate out exactly, which gives
   :math:`p(y \mid \theta)` and the normal conditional posterior of :math:`\beta`; the nested
   family/model/cell covariance is inverted in closed form (two rank-one updates per
   model and per family), so a likelihood evaluation costs :math:`O(\text{cells})`;
3. :math:`\theta` is integrated on a product grid at the mid-quantiles of its
   ``HalfNormal`` priors (the priors of ``models/scale.py``, read from
   :data:`selfmodel.models.scale.DEFAULT_PRIORS`), so every grid point has equal prior mass and the
   weights are the likelihoods: the posterior of :math:`\beta` is a mixture of normals
   (the grid-integration idea of INLA; Rue, Martino & Chopin 2009, *JRSS B* 71(2));
4. a Laplace step: each cell's normal approximation is re-centred at its posterior mean
   logit :math:`\hat\eta` (working response :math:`\hat\eta + (k - n\hat p)/(n\hat p(1-\hat p))`,
   variance :math:`1/(n\hat p(1-\hat p))`; Breslow & Clayton 1993, *JASA* 88) and steps 2-3
   are repeated on the part of the grid that carries posterior mass. Without it, weights
   computed from each cell's own counts pull the slope toward 0 when cells are small (by
   ~10% of the slope with ~33 answers per cell; ``tests/power/test_power.py``);
5. 4,000 draws from that mixture go through :func:`selfmodel.decisions.hypotheses.decide`, the very rule
   the pipeline applies to NUTS draws.

The differences from the NUTS fit are the normal approximation of each cell's binomial
likelihood (good when every cell has a few dozen correct and incorrect answers), the grid
quadrature, and independent rather than zero-sum family/model intercepts (their sum is
absorbed by the task intercepts). ``validation/power_validation.py`` compares the two fits on the
same simulated data sets at several design points; its numbers are in
``validation/results/power_validation.json``.

Random numbers
--------------
One seed fixes everything. The random effects, binomial uniforms and posterior draws of
simulation :math:`s` are shared by every true slope (common random numbers), so power
curves are smooth in the slope and differences between slopes are not Monte Carlo noise.

Modules
-------
``design``
    The design of a power study: tasks, models per family, variance components, rule; the default design.
``design_file``
    The power design file (TOML): reading it with line-numbered errors, and writing one.
``design_from_data``
    Designs read from data: shaped like a data set (``--template``) or like a finished run's results.
``approximate_fit``
    The approximate fit of the scale model used by the power sweeps (a grid over the variance components with a Laplace step per grid point).
``simulator``
    Simulated model x task cells of a design under a true slope (the scale model's generative process).
``sweep``
    The power sweep: decisions per true slope, the minimum detectable slope, models against items.
``after_fit``
    What the fitted design could detect: the minimum detectable slope from a finished run's variance components.
``output``
    Power output: the table, the summary lines, the plot and ``power.json``.
``posterior_draws``
    Variance components drawn from a fit's posterior, one draw per simulated data set.
``dprime``
    Power for the sensitivity (d') slope of the signal-detection model, simulated from its fit.

After a fit the pipeline (:func:`selfmodel.power.after_fit.power_after_fit`) simulates with the
variance components drawn from the fit's posterior rather than fixed at its mean, for the
accuracy slope and for the d' slope, and keeps the posterior-means answer beside it.
"""

from __future__ import annotations

from selfmodel.power.after_fit import (
    mde_from_fit,
)
from selfmodel.power.approximate_fit import (
    CellLayout as CellLayout,
)
from selfmodel.power.approximate_fit import (
    PosteriorGrid as PosteriorGrid,
)
from selfmodel.power.approximate_fit import (
    batched_cholesky as batched_cholesky,
)
from selfmodel.power.approximate_fit import (
    cell_logits as cell_logits,
)
from selfmodel.power.approximate_fit import (
    empirical_logit as empirical_logit,
)
from selfmodel.power.approximate_fit import (
    fast_fit,
)
from selfmodel.power.approximate_fit import (
    forward_solve as forward_solve,
)
from selfmodel.power.approximate_fit import (
    grid_posterior as grid_posterior,
)
from selfmodel.power.approximate_fit import (
    posterior_of as posterior_of,
)
from selfmodel.power.approximate_fit import (
    vinv as vinv,
)
from selfmodel.power.design import (
    DEFAULT_SLOPES,
    Design,
    Task,
    default_design,
)
from selfmodel.power.design import (
    GRID as GRID,
)
from selfmodel.power.design import (
    N_DRAWS as N_DRAWS,
)
from selfmodel.power.design import (
    OUTCOMES as OUTCOMES,
)
from selfmodel.power.design import (
    TARGET_POWER as TARGET_POWER,
)
from selfmodel.power.design import (
    Progress as Progress,
)
from selfmodel.power.design import (
    sdt_accuracy as sdt_accuracy,
)
from selfmodel.power.design_file import (
    DESIGN_EXAMPLE as DESIGN_EXAMPLE,
)
from selfmodel.power.design_file import (
    design_to_toml,
    load_design,
)
from selfmodel.power.design_from_data import (
    design_from_results,
    design_from_template,
)
from selfmodel.power.output import (
    plot_power,
    power_table,
    summary_lines,
    write_power,
)
from selfmodel.power.simulator import (
    base_draws as base_draws,
)
from selfmodel.power.simulator import (
    simulate_cells,
)
from selfmodel.power.simulator import (
    simulate_k as simulate_k,
)
from selfmodel.power.sweep import (
    mde_of as mde_of,
)
from selfmodel.power.sweep import (
    models_vs_items,
    normal_theory_mde,
    run_power,
    sweep_slope,
)
from selfmodel.power.sweep import (
    sweep_of as sweep_of,
)

__all__ = [
    "DEFAULT_SLOPES",
    "Design",
    "Task",
    "default_design",
    "design_from_results",
    "design_from_template",
    "design_to_toml",
    "fast_fit",
    "load_design",
    "mde_from_fit",
    "models_vs_items",
    "plot_power",
    "power_table",
    "normal_theory_mde",
    "run_power",
    "simulate_cells",
    "summary_lines",
    "sweep_slope",
    "write_power",
]
