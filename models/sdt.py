r"""Hierarchical equal-variance signal-detection model of binary self-prediction.

A binary self-prediction ("yes, I will refuse") is a detection judgement: the *signal* is
the behaviour actually happening (outcome true). Accuracy mixes two things that scale can
change separately: **sensitivity** :math:`d'` (does the prediction track the behaviour?)
and the **criterion** :math:`c` (how readily the model says "yes"). A model that always
says "yes" has accuracy equal to the base rate and :math:`d' = 0`; the logistic model of
accuracy (``models/scale.py``) cannot tell it from a model with real self-knowledge.

Data: one row per model :math:`m` x task :math:`t` cell of *binary* predictions, with
:math:`S_{mt}` readable records whose outcome was true (``n_signal``), :math:`N_{mt}` whose
outcome was false (``n_noise``), the hits :math:`H_{mt}` (predicted true, was true) and the
false alarms :math:`F_{mt}` (predicted true, was false); the model's family :math:`f[m]`
and the centred scale predictor :math:`x_m` (as in ``models/scale.py``).

.. math::

    H_{mt} &\sim \mathrm{Binomial}\big(S_{mt},\ \Phi(\tfrac12 d'_{mt} - c_{mt})\big),
    \qquad F_{mt} \sim \mathrm{Binomial}\big(N_{mt},\ \Phi(-\tfrac12 d'_{mt} - c_{mt})\big)
    \\
    d'_{mt} &= a^{d}_t + b^{d}_t\, x_m + u^{d}_{f[m]} + v^{d}_m + w^{d}_{mt} \\
    c_{mt} &= a^{c}_t + b^{c}_t\, x_m + u^{c}_{f[m]} + v^{c}_m + w^{c}_{mt} \\
    b^{\cdot}_t &\sim \mathcal N(0, 0.5^2) \text{ independently per task},\quad
    \beta_{\cdot} = \tfrac1T \textstyle\sum_t b^{\cdot}_t \\
    u^{\cdot} &= \sigma^{\cdot}_u z^{u\cdot},\ v^{\cdot} = \sigma^{\cdot}_v z^{v\cdot},\quad
    z^{u\cdot}, z^{v\cdot} \sim \mathrm{ZeroSumNormal}(1),\quad
    \sigma^{\cdot} \sim \mathrm{HalfNormal}(1) \\
    w^{\cdot}_{mt} &= \sigma^{\cdot}_w z^{w\cdot}_{mt},\quad z^{w\cdot}_{mt} \sim
    \mathcal N(0, 1) \quad\text{(only with ``cell_effects=True``, the default)}

with :math:`\cdot \in \{d, c\}`: sensitivity and criterion each get their own task
intercepts, slopes, and family/model/cell effects, independent a priori. Each task's
slopes have their own prior; only the intercept effects are partially pooled. :math:`\Phi` is the standard normal CDF (probit link); the hit and false-alarm
rates enter the likelihood through their log-odds
:math:`\log\Phi(z) - \log\Phi(-z)`, computed as in PyMC's stable ``normal_lcdf`` so
that extreme rates do not underflow.

Parameters
----------
alpha_dprime, alpha_criterion (task)
    :math:`d'` and :math:`c` of a model of average scale on task :math:`t`.
beta_dprime
    the **scale effect on sensitivity**: change in :math:`d'` per unit of :math:`x`
    (per 10x parameters), the average of the task slopes over the tasks in the data: a
    declared estimand (a deterministic), not a parameter with its own prior. ``EFFECT``.
beta_criterion
    the same average for the criterion (negative: larger models say "yes" more readily).
    The report does not read it: the criterion is reported per task.
dprime_slope_task, criterion_slope_task (task)
    each task's own slopes :math:`b_t`; ``dprime_slope_task`` is ``PER_TASK_EFFECT``.
u_*_family, v_*_model, w (cell)
    family, model and model x task deviations; models, not records, are the unit of
    evidence.
dprime, criterion (cell)
    the cell-level :math:`d'_{mt}` and :math:`c_{mt}` (saved as deterministics).

Cells with ``n_signal == 0`` or ``n_noise == 0`` (a behaviour that never or always
happened) would contribute a Binomial with zero trials for the missing side, whose log
likelihood is exactly 0: such a cell informs only one rate, and its :math:`d'` would come
from the hierarchy, not from the cell. A constant responder (every prediction "true", or
every one "false") has a flat profile likelihood in :math:`d'` too, and with
:math:`S \ne N` the likelihood pushes its :math:`d'` away from 0 by the unequal counts
alone. The pipeline therefore fits this model only to cells whose :math:`d'` the data
inform (``selfmodel.analyses.skill.sdt_cells``) and lists the others with the reason
(``excluded_cells``); a task left with no such cell has its slopes ``not_estimable``.
``build`` itself accepts any cells.

Task slopes and standard-deviation priors
-----------------------------------------
With two or three tasks, a spread shared by the task slopes (``task_slopes="pooled"``:
:math:`\beta + \delta_t`, zero-sum :math:`\delta` with a HalfNormal spread) is not
informed by the data: its posterior is its prior, and that prior sets how far each task's
slope is pulled towards the others. ``validation/task_slopes.py`` measured it on the
Self-Execution Benchmark (word association and refusal; results in
``validation/results/task_slopes.json``): pooling moved word association's d' slope
from what its own data say towards refusal's and turned a credibly negative word-association
criterion slope into an inconclusive one; with independent task slopes both stay close to the
word-association-only fit. So each task has its own slope prior, ``Normal(0, 0.5)`` d' (or
criterion) units per 10x, wide against the slopes these data show, and the average over tasks
is computed, not assumed. The family, model and cell standard deviations have
``HalfNormal(1)`` priors (mean 0.8): the same file lists prior and posterior of each, and the
posteriors sit well below the prior mean, set by the data rather than by the prior (the
former ``HalfNormal(0.3)`` had a mean below the posterior cell SDs).

Parameterisation and sampler
----------------------------
Same lessons as ``models/scale.py``: every group effect is non-centred and the task,
family and model effects are zero-sum (``selfmodel.models.graph.zero_sum_effect``), so their
means do not trade off against the task intercepts along flat ridges.

Measured on the default data, with the former pooled task slopes and ``HalfNormal(0.3)``
SDs (``data_raw/``: binary cells of the 14 sized models x 3 tasks = 42 cells; nutpie 0.16.8,
4 chains x 2000 draws after 1000 tuning; ``python bench/zoo.py sdt
[--target-accept 0.99] [--seed S] [--draws N]``):

=====================  ==============  ==============  ==============
setting                seed 20261130   seed 1          seed 2
=====================  ==============  ==============  ==============
0.95: divergences      0               1               1
0.95: min bulk ESS     591             801             629
0.95: max R-hat        1.009           1.007           1.010
0.99: divergences      0               0               0
0.99: min bulk ESS     574             674             552
0.99: max R-hat        1.006           1.009           1.012
=====================  ==============  ==============  ==============

So the target of no divergences at ``target_accept=0.95`` is met on one seed of three (one
divergence in 8000 draws on the others), and at 0.99 on all three. The slowest
quantities are the criterion slope and the family spread of the criterion
(``beta_criterion``, ``criterion_slope_task``, ``sigma_criterion_family``): the slope
trades off against the family criterion effects, and its R-hat can touch the 1.01 gate
with 4 x 2000 draws; with 4 x 4000 draws at 0.99 (seed 20261130): 0 divergences, min
bulk ESS 1288, max R-hat 1.004. Tried and rejected: centred model effects (1
divergence per seed, no ESS gain); without cell effects (``cell_effects=False``) ESS
rises to ~1800 but a divergence remains on one of two seeds.

**Why the criterion slope mixed slowly, and the slope basis.** Not a funnel: the E-BFMI of
every chain was 0.76-0.82 and there were no divergences. The posterior of
``beta_criterion`` is correlated -0.95 with the component of the criterion's family and
model intercepts along the direction that trades against a common slope (family means of
:math:`x` on ``u``, within-family deviations on ``v``; -0.88 for d'): the data fix the
total, the priors split it (the same ridge as in ``models/scale.py``, "Slope basis").
``slope_basis="decorrelated"`` (the default) samples each side's total slope and draws the
split from its conditional prior (:mod:`selfmodel.models.decorrelation`; the prior and so
the model are unchanged, ``tests/models/test_slope_basis.py``; the new coordinates are
``z_{side}_slope_total``, ``z_{side}_slope_shift``, ``z_{side}_slope_deviation``).
Measured on the default data (``python bench/bench_sampling.py --sdt-seeds 1 2 3``,
``bench/results/sampling_sdt_basis.json``; 4 x 2000 draws, ``target_accept=0.99``; both
bases in one run):

===========================  =====================  =====================
per seed 1 / 2 / 3           plain basis            decorrelated
===========================  =====================  =====================
bulk ESS ``beta_criterion``  502 / 575 / 393        1839 / 1376 / 1578
R-hat ``beta_criterion``     1.014 / 1.011 / 1.012  1.002 / 1.003 / 1.001
bulk ESS ``beta_dprime``     1255 / 1358 / 1268     3653 / 3743 / 4472
max R-hat (all)              1.014 / 1.011 / 1.015  1.008 / 1.006 / 1.008
slowest bulk ESS (all)       502 / 575 / 393        603 / 447 / 429
divergences                  0 / 0 / 0              0 / 0 / 0
leapfrog steps per draw      67 / 75 / 66           76 / 67 / 65
===========================  =====================  =====================

At the same cost per draw, the effective draws of the criterion slope per CPU-second rose
about 2.7-fold (``ess_criterion_per_cpu_s`` in that file), and the R-hat gate (<= 1.01), failed by the plain basis on all three
seeds, passed on all three. The slope is no longer the slowest quantity: the criterion's
family and model intercepts and their sds are (the family means of ``v`` trade against
``u``; 4 families here), with a slowest bulk ESS of 429-603 against the gate's 400, so a
seed can still come close to the gates at 4 x 2000 draws. On the recovery design of
``tests/models/test_recovery.py`` (20 models in 5 families, 4 x 1000 draws at 0.95) both bases
showed divergences in some runs (1-2 per 4000 draws).

**Sampling settings of its own (issue 28.4).** At the run's defaults (4 x 2000 draws after
1000 tuning, ``target_accept=0.99``) the default run's SDT fit failed its gate on 2 of 5 seeds
(``python bench/sdt_gate.py --seeds 20261130,1,2,3,4``, 2026-12-03: max R-hat 1.0149 on seed 3;
1 divergence on seed 4; passing seeds had a slowest bulk ESS of 553-601); 4 x 4000 draws
cured the R-hat and ESS but not the rare divergence (seed 2: 1), and nutpie's low-rank mass
matrix made both worse (seeds 1, 2: 2 and 1 divergences, ESS 393). Its ``SPEC.sampling``
therefore asks for 1.5x the run's draws and tuning and ``target_accept`` 0.995: on seeds
20261130, 1, 2, 3, 4, 5 (``python bench/sdt_gate.py --seeds 20261130,1,2,3,4,5 --spec``) every
fit passed, with 0 divergences, max R-hat 1.0024-1.0062 and slowest bulk ESS 1300-1614. The
price is sampling time (1.5x the draws, smaller steps), not the one-off build of the model.

References
----------
Macmillan & Creelman (2005), *Detection Theory: A User's Guide*, 2nd ed., ch. 1-2
(equal-variance SDT, :math:`H = \Phi(d'/2 - c)`, :math:`F = \Phi(-d'/2 - c)`);
Rouder & Lu (2005), "An introduction to Bayesian hierarchical models with an
application in the theory of signal detection", *Psychonomic Bulletin & Review* 12(4);
DeCarlo (1998), "Signal detection theory and generalized linear models",
*Psychological Methods* 3(2) (SDT as a probit GLM).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

import numpy as np
import pymc as pm
import pytensor.tensor as pt

from selfmodel.models import decorrelation
from selfmodel.models.graph import ZERO_SUM_TEXT, factorize, prior_rv, scale_of, zero_sum_effect
from selfmodel.models.spec import (
    Curves,
    Declaration,
    Effect,
    Headline,
    ModelSpec,
    Prior,
    SamplingNeeds,
    build_options,
    declared_priors,
    merge_priors,
)

NAME = "sdt"
SUMMARY = "hierarchical equal-variance signal detection: d' and criterion on scale, by task"
#: Variables the decision rules read.
EFFECT = "beta_dprime"
PER_TASK_EFFECT = "dprime_slope_task"

DEFAULT_PRIORS: dict[str, Prior] = {
    "alpha_dprime": ("Normal", {"mu": 0.5, "sigma": 1.0}),  # task d' at average scale
    "alpha_criterion": ("Normal", {"mu": 0.0, "sigma": 1.0}),  # task criterion
    # each task's own slope (``task_slopes="independent"``, the default): d' (criterion)
    # units per 10x parameters; no spread shared between tasks
    "dprime_slope_task": ("Normal", {"mu": 0.0, "sigma": 0.5}),
    "criterion_slope_task": ("Normal", {"mu": 0.0, "sigma": 0.5}),
    # standard deviations: HalfNormal(1), mean 0.8, well above the posteriors measured on
    # the default data and SEB (0.1-0.5; ``validation/results/task_slopes.json``), so the data,
    # not the prior, set them
    "sigma_dprime_family": ("HalfNormal", {"sigma": 1.0}),  # family d' intercepts
    "sigma_criterion_family": ("HalfNormal", {"sigma": 1.0}),  # family criterion intercepts
    "sigma_dprime_model": ("HalfNormal", {"sigma": 1.0}),  # model d' intercepts
    "sigma_criterion_model": ("HalfNormal", {"sigma": 1.0}),  # model criterion intercepts
    "sigma_dprime_cell": ("HalfNormal", {"sigma": 1.0}),  # model x task d' deviations
    "sigma_criterion_cell": ("HalfNormal", {"sigma": 1.0}),  # model x task criterion dev.
}

#: Priors of ``task_slopes="pooled"`` instead of the two task-slope priors: a mean slope and
#: zero-sum task deviations with a shared spread (the model before the measurement of
#: ``validation/task_slopes.py``; kept for that comparison).
POOLED_PRIORS: dict[str, Prior] = {
    "beta_dprime": ("Normal", {"mu": 0.0, "sigma": 0.5}),
    "beta_criterion": ("Normal", {"mu": 0.0, "sigma": 0.5}),
    "sigma_dprime_slope": ("HalfNormal", {"sigma": 0.3}),
    "sigma_criterion_slope": ("HalfNormal", {"sigma": 0.3}),
}

REQUIRED_COLUMNS = ("model", "family", "task", "x", "n_signal", "n_noise", "hits", "false_alarms")

#: What the pipeline does with this model (see ``models/spec.py``). It observes hits and
#: false alarms, not the cells' correct counts, so its LOO is not comparable (no ``loo``).
SPEC = ModelSpec(
    table="binary_cells",
    decides=(
        Effect("sensitivity", "beta_dprime", "dprime_slope_task",
               truth=("d' overall", "beta_dprime_per_10x")),
        Effect("bias", "beta_criterion", "criterion_slope_task"),
    ),
    slope_priors={
        "beta_dprime": ("dprime_slope_task", "mean"),
        "dprime_slope_task": ("dprime_slope_task", None),
        "beta_criterion": ("criterion_slope_task", "mean"),
        "criterion_slope_task": ("criterion_slope_task", None),
    },
    loo=None,
    sections=("sec-verdict", "sec-scaling", "sec-hypotheses", "sec-checks"),
    headline=Headline(
        "sdt_effect",
        "d' (criterion) units per unit of the scale variable",
        Curves("alpha_dprime", "dprime_slope_task", "identity"),
    ),
    # the decorrelated basis is another parameterisation of the plain basis' prior
    # (tests/models/test_slope_basis.py), in which every task slope is a free variable
    prior_density_options={"slope_basis": "plain"},
    # measured in the docstring ("Sampling settings of its own"): the run's defaults fail
    # the gate on 2 of 5 seeds of the default data; these passed on 6 of 6
    sampling=SamplingNeeds(draws=1.5, tune=1.5, target_accept=0.995),
)


TaskSlopes = Literal["independent", "pooled"]

_SQRT2 = pt.constant(np.sqrt(2.0), dtype="float64")


def _log_phi(z: Any) -> Any:
    r""":math:`\log\Phi(z)`, stable in both tails.

    The formula of ``pymc.distributions.dist_math.normal_lcdf`` with a float64
    :math:`\sqrt 2`: PyMC's ``pt.sqrt(2.0)`` is autocast to float32, an error of ~1e-8
    in every rate.
    """
    return pt.switch(
        pt.lt(z, -1.0),
        pt.log(pt.erfcx(-z / _SQRT2) / 2.0) - pt.sqr(z) / 2.0,
        pt.log1p(-pt.erfc(z / _SQRT2) / 2.0),
    )


def probit_logit(z: Any) -> Any:
    r"""Log-odds of :math:`\Phi(z)`: :math:`\log\Phi(z) - \log\Phi(-z)`."""
    return _log_phi(z) - _log_phi(-z)


def implied_accuracy(p: Mapping[str, np.ndarray], data: Any) -> np.ndarray:
    """Cell accuracy implied by hit and false-alarm rates.

    Parameters
    ----------
    p
        ``{"hits": hit rate, "false_alarms": false-alarm rate}``, arrays whose last axis
        is the cell.
    data
        The cells the model was built on (``n_signal``, ``n_noise``).

    Returns
    -------
    numpy.ndarray
        :math:`(S H + N (1 - F)) / (S + N)` per cell (0.5 where the cell is empty).
    """
    s = np.asarray(data["n_signal"], dtype=float)
    n = np.asarray(data["n_noise"], dtype=float)
    tot = s + n
    with np.errstate(invalid="ignore", divide="ignore"):
        acc = (s * p["hits"] + n * (1.0 - p["false_alarms"])) / tot
    return np.where(tot > 0, acc, 0.5)


def declaration(options: Mapping[str, Any] | None = None,
                priors: Mapping[str, Any] | None = None) -> Declaration:
    """Equations, prose and priors of the model :func:`build` makes with ``options``.

    Examples
    --------
    >>> sorted(declaration({"cell_effects": False}).priors)[:4]
    ['alpha_criterion', 'alpha_dprime', 'criterion_slope_task', 'dprime_slope_task']
    >>> "sigma_dprime_cell" in declaration({"cell_effects": False}).priors
    False
    """
    o = build_options(build, options)
    independent = o["task_slopes"] == "independent"
    used = ["alpha_dprime", "alpha_criterion"]
    used += (["dprime_slope_task", "criterion_slope_task"] if independent else
             ["beta_dprime", "beta_criterion", "sigma_dprime_slope", "sigma_criterion_slope"])
    for side in ("dprime", "criterion"):
        used += [f"sigma_{side}_family", f"sigma_{side}_model"]
        if o["cell_effects"]:
            used.append(f"sigma_{side}_cell")
    slope = r"b^{\cdot}_t" if independent else r"(\beta_{\cdot} + \delta^{\cdot}_t)"
    cell = r" + w^{\cdot}_{mt}" if o["cell_effects"] else ""
    lines = [r"H_{mt} &\sim \operatorname{Binomial}\left(S_{mt},\ \Phi(\tfrac12 d'_{mt} - c_{mt})\right),"
             r"\quad F_{mt} \sim \operatorname{Binomial}\left(N_{mt},\ \Phi(-\tfrac12 d'_{mt} - c_{mt})\right)",
             rf"d'_{{mt}}, c_{{mt}} &= a^{{\cdot}}_t + {slope}\,x_m + u^{{\cdot}}_{{f[m]}} + v^{{\cdot}}_m{cell}"
             r"\quad (\cdot \in \{d, c\})"]
    if independent:
        lines.append(r"\beta_{\cdot} &= \tfrac{1}{T}\textstyle\sum_t b^{\cdot}_t")
    prose = (r"Hits $H$ among the $S$ outcome-true and false alarms $F$ among the $N$ outcome-false "
             r"readable predictions of each cell whose data inform d' (both outcomes, not a constant "
             r"responder); sensitivity d' and criterion c each with task intercepts, slopes on the "
             r"centred scale variable $x_m$ and zero-sum family and model effects")
    prose += r" and cell effects $w$." if o["cell_effects"] else " (no cell effects)."
    prose += (r" Each task's slopes have their own priors; $\beta_{\cdot}$ is their average over the "
              r"tasks, a declared estimand." if independent else
              r" $\beta_{\cdot}$ is the mean slope and $\delta_t$ zero-sum task deviations with a "
              r"spread prior.")
    prose += f" Slope basis {o['slope_basis']} (same model)."
    prose += " " + ZERO_SUM_TEXT
    return Declaration(o, " \\\\\n".join(lines), prose,
                       declared_priors({**DEFAULT_PRIORS, **POOLED_PRIORS}, used, priors))


def build(
    data: Any,
    priors: Mapping[str, Prior] | None = None,
    *,
    cell_effects: bool = True,
    task_slopes: TaskSlopes = "independent",
    slope_basis: Literal["decorrelated", "plain"] = "decorrelated",
) -> pm.Model:
    """Build the PyMC model.

    Parameters
    ----------
    data
        A table (polars or pandas) of *binary* cells with columns ``model, family, task,
        x, n_signal, n_noise, hits, false_alarms`` (``selfmodel.records.cells.to_cells`` filtered
        on ``binary`` and non-null ``x``).
    priors
        Overrides of :data:`DEFAULT_PRIORS` (same keys).
    cell_effects
        Add the model x task deviations :math:`w^{d}, w^{c}` (default). Without them every
        record counts as independent evidence about the slopes.
    slope_basis
        ``"decorrelated"`` (default) or ``"plain"``: the sampler's coordinates for the
        slopes and intercepts (module docstring); same model.
    task_slopes
        ``"independent"`` (default): each task's d' and criterion slope has its own prior
        (``dprime_slope_task``, ``criterion_slope_task``) and ``beta_*`` is their average
        over tasks, a declared estimand, not a parameter; ``"pooled"``: ``beta_* +
        delta_t`` with zero-sum deviations of spread ``sigma_*_slope``
        (:data:`POOLED_PRIORS`), which with two or three tasks is set by its prior.

    Returns
    -------
    pymc.Model
        With coords ``task``, ``family``, ``model``, ``cell`` and the observed ``hits``
        and ``false_alarms`` (both on ``cell``).
    """
    if task_slopes not in ("independent", "pooled"):
        raise ValueError(f"task_slopes must be 'independent' or 'pooled', not {task_slopes!r}")
    defaults = DEFAULT_PRIORS
    if task_slopes == "pooled":
        defaults = {k: v for k, v in DEFAULT_PRIORS.items() if not k.endswith("_slope_task")}
        defaults.update(POOLED_PRIORS)
    p = merge_priors(defaults, priors)
    task_idx, tasks = factorize(data["task"])
    model_idx, models = factorize(data["model"])
    fam_idx, families = factorize(data["family"])
    x = scale_of(data, "sdt")
    n_signal = np.asarray(data["n_signal"], dtype="int64")
    n_noise = np.asarray(data["n_noise"], dtype="int64")
    hits = np.asarray(data["hits"], dtype="int64")
    fas = np.asarray(data["false_alarms"], dtype="int64")
    if (hits > n_signal).any() or (fas > n_noise).any() or min(hits.min(), fas.min()) < 0:
        raise ValueError("sdt model needs 0 <= hits <= n_signal and 0 <= false_alarms <= n_noise")
    cells = [f"{m}|{t}" for m, t in zip(data["model"], data["task"], strict=True)]
    x_model, fam_of_model = decorrelation.model_level(model_idx, x, fam_idx, len(models))
    coords = {"task": tasks, "family": families, "model": models, "cell": cells}
    with pm.Model(coords=coords) as model:
        parts = {}
        for side in ("dprime", "criterion"):
            alpha = prior_rv(f"alpha_{side}", p[f"alpha_{side}"], dims="task")
            prior = p.get(f"{side}_slope_task")
            decorrelate = (
                slope_basis == "decorrelated"
                and task_slopes == "independent"
                and prior is not None
                and decorrelation.decorrelatable(prior, x_model, fam_of_model)
            )
            if decorrelate:
                slope = None  # with the intercepts, below
            elif task_slopes == "independent":
                slope = prior_rv(f"{side}_slope_task", p[f"{side}_slope_task"], dims="task")
                pm.Deterministic(f"beta_{side}", pt.mean(slope))
            else:
                beta = prior_rv(f"beta_{side}", p[f"beta_{side}"])
                s_slope = prior_rv(f"sigma_{side}_slope", p[f"sigma_{side}_slope"])
                delta = zero_sum_effect(f"delta_{side}", s_slope, "task", len(tasks))
                slope = pm.Deterministic(f"{side}_slope_task", beta + delta, dims="task")
            s_fam = prior_rv(f"sigma_{side}_family", p[f"sigma_{side}_family"])
            if decorrelate and prior is not None:
                s_mod = prior_rv(f"sigma_{side}_model", p[f"sigma_{side}_model"])
                names = decorrelation.SlopeNames(f"{side}_slope_task", f"beta_{side}",
                                                 f"u_{side}_family", f"v_{side}_model",
                                                 prefix=f"{side}_")
                slope, u, v = decorrelation.decorrelated_slopes(
                    names, prior, (s_fam, s_mod), x_model, fam_of_model, len(tasks), centred=False)
            else:  # the plain basis, in the order of the variables before the slope basis
                u = zero_sum_effect(f"u_{side}_family", s_fam, "family", len(families))
                s_mod = prior_rv(f"sigma_{side}_model", p[f"sigma_{side}_model"])
                v = zero_sum_effect(f"v_{side}_model", s_mod, "model", len(models))
            assert slope is not None
            eta = alpha[task_idx] + slope[task_idx] * x + u[fam_idx] + v[model_idx]
            if cell_effects:
                s_cell = prior_rv(f"sigma_{side}_cell", p[f"sigma_{side}_cell"])
                z_cell = pm.Normal(f"z_{side}_cell", 0.0, 1.0, dims="cell")
                eta = eta + s_cell * z_cell
            parts[side] = pm.Deterministic(side, eta, dims="cell")
        d, c = parts["dprime"], parts["criterion"]
        hit_logit = probit_logit(0.5 * d - c)
        fa_logit = probit_logit(-0.5 * d - c)
        pm.Binomial("hits", n=n_signal, logit_p=hit_logit, observed=hits, dims="cell")
        pm.Binomial("false_alarms", n=n_noise, logit_p=fa_logit, observed=fas, dims="cell")
    return model
