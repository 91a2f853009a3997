r"""Hierarchical logistic regression of self-prediction accuracy on model scale.

Data: one row per model :math:`m` x task :math:`t` cell with :math:`n_{mt}` readable
self-predictions, :math:`k_{mt}` of them correct, the model's family :math:`f[m]` and the
centred scale predictor :math:`x_m` (``log10`` billions of parameters minus its mean over
models, so :math:`\beta` is in logits per 10x parameters; or a capability score).

.. math::

    k_{mt} &\sim \mathrm{Binomial}\big(n_{mt},\ \mathrm{logit}^{-1}(\eta_{mt})\big) \\
    \eta_{mt} &= \alpha_t + (b_t + \lambda_{f[m]})\, x_m + u_{f[m]} + v_m + w_{mt} \\
    b_t &\sim \mathcal N(0, 1) \text{ independently per task},\quad
    \beta = \tfrac1T \textstyle\sum_t b_t \\
    u &= \sigma_u\, z^{u},\quad v = \sigma_v\, z^{v},\quad
    w_{mt} = \sigma_w\, z^{w}_{mt} \\
    z^{u}, z^{v} &\sim \mathrm{ZeroSumNormal}(1),\quad z^{w}_{mt} \sim \mathcal N(0, 1) \\
    \lambda_f &= \sigma_\lambda\, z^{\lambda}_f \quad\text{(only with ``family_slopes=True``; else } 0)

Parameters
----------
alpha (task)
    logit accuracy of a model of average scale on task :math:`t`.
beta
    the **scale effect**: change in logit accuracy per unit of :math:`x` (per 10x
    parameters), the average of the task slopes over the tasks in the data: a declared
    estimand (a deterministic), not a parameter with its own prior. This is what the
    verdict is about; when tasks have credible slopes of opposite signs the report says so
    instead of reading the average as a summary.
slope_task (task)
    each task's own slope :math:`b_t`, with its own prior (``task_slopes="independent"``,
    the default). ``task_slopes="pooled"`` gives the former ``beta + delta[t]`` with
    zero-sum deviations of spread ``sigma_delta``.
u (family), v (model)
    family and model random intercepts: models are the unit of evidence, so two
    siblings share information and no model counts as thousands of independent points.
w (model x task)
    cell-level deviations (a model better at one task than its intercept says). Without
    them the binomial likelihood treats every record as independent evidence about the
    slope and the posterior is far too narrow.
lambda (family), optional
    family-varying slopes.

Why task slopes have their own priors
-------------------------------------
With two or three tasks a spread prior shared by the task slopes is not informed by the
data, and it decides how much each task borrows from the others. ``validation/task_slopes.py``
(``validation/results/task_slopes.json``) fitted both variants to simulated two-task data with
true slopes 0 and +0.3: neither variant declared the zero task to improve, and with the shared
spread each task's mean slope was pulled towards the other's (the zero task up, the positive
task down); with own priors the means stayed at the truth within simulation error. The
signal-detection model on the Self-Execution Benchmark showed the same pull at larger size
(``models/sdt.py``). ``Normal(0, 1)`` logits per 10x per task is wide against any slope
seen here; the average over :math:`T` tasks then has prior sd :math:`1/\sqrt T`.

Parameterisation and sampler
----------------------------
All group-level effects are non-centred: groups are few (3-20 families, 10-50 models) and
weakly informed, the regime where centred hierarchies make funnels. Task, family and model
effects are zero-sum (``pm.ZeroSumNormal``): otherwise their means trade off against the
task intercepts and against ``beta`` along flat ridges. Measured on the default data (three
seeds, nutpie, 4 x 1000 draws, ``target_accept=0.9``): plain non-centred normals gave
8-19 divergences per run and bulk ESS ~970 for ``beta``; zero-sum task slopes (the former pooled variant) gave 0-3
divergences and ESS ~2500. With 4 x 2000 draws on six seeds, ``target_accept=0.95`` still
left a single divergence in three of six runs; ``0.99`` left none in all six at a few times
the sampling time (run times: ``bench/``). The pipeline samples at 0.99.

The cell effects :math:`w` are the exception worth a choice (``cell_effect``). A cell with
thousands of records pins its own :math:`w_{mt}` down far more tightly than the prior scale
:math:`\sigma_w`, the regime where the *centred* form :math:`w_{mt} \sim \mathcal N(0,
\sigma_w)` is the better geometry (Betancourt & Girolami 2015). ``"auto"`` centres exactly
the cells whose likelihood information about their logit, :math:`n \hat p (1 - \hat p)`,
is at least :data:`AUTO_CENTRED_INFORMATION` (likelihood sd of the logit <= 0.1, half a
typical :math:`\sigma_w`); on the default data (~260 records per cell) that is no cell,
so ``"auto"`` is the default model there.

Measured on simulated data with 50 models x 10 tasks (``bench/bench_growth.py
--cell-effect``, 4 x 500 draws, ``bench/results/growth_cell_effect.json``): at 3000 records
per cell, centring the cell effects alone changes little (bulk ESS of ``beta`` 111 -> 143,
slowest parameter 40 -> 48, R-hat 1.09 -> 1.08). The slow directions there are the family
and model intercepts, each informed by tens of thousands of records: with
``group_effects="centred"`` the bulk ESS of ``beta`` rose to 659, the slowest parameter to
534 and R-hat fell to 1.01, for about 1.5x the sampling CPU (about 4x the effective draws
of ``beta`` per CPU second). At 300 records per cell no variant helped (R-hat 1.05-1.09
for all at 4 x 500 draws). Both options keep the non-centred default, which suits the few,
weakly informed groups of typical data (above); see ``docs/performance.md``.

Slope basis (``slope_basis``)
----------------------------
The slope is identified from how the models' overall levels move with :math:`x`, and so are
the family and model intercepts: raising every task slope by :math:`\delta` while moving
the intercepts by :math:`-\delta` times the family means of :math:`x` (on ``u``) and the
within-family deviations of :math:`x` (on ``v``) leaves the linear predictor unchanged (up
to a constant when :math:`x` is not centred over the data's families). The data therefore
pin down the *total* slope :math:`\bar g = \beta + c`, where :math:`c` is the intercepts'
component along that direction, and only the priors split it into :math:`\beta` and
:math:`c`. In the plain coordinates this is a narrow ridge: on the 50-model x 10-task
benchmark the posterior correlation of :math:`\beta` with the intercepts' component along
that direction was -0.98, and the total slope had a posterior sd of 0.009 against 0.040 for
:math:`\beta` (``bench/results/sampling_decorrelated.json``, columns ``corr_effect_shift``
and ``sd_total_slope``), which a diagonal mass matrix can only walk
along in small steps.

``slope_basis="decorrelated"`` (the default; :mod:`selfmodel.models.decorrelation`) makes
:math:`\bar g` a coordinate (``z_slope_total``, drawn from its marginal prior), draws
:math:`c` from its conditional prior given :math:`\bar g` (``z_slope_shift``, standard
normal: the likelihood does not depend on it), the task deviations
:math:`b_t - \beta \sim \mathrm{ZeroSumNormal}(1)` (``z_slope_deviation``) and the rest of
``u`` and ``v`` as before. It is the same model: the prior of ``slope_task``, ``u_family``
and ``v_model`` is exactly the plain one (independent ``Normal(0, 1)`` task slopes, so
:math:`\beta` keeps its ``Normal(0, 1/\sqrt T)`` prior and its meaning, logits per 10x
parameters; ``tests/models/test_slope_basis.py`` checks the prior and that the likelihood is flat
in ``z_slope_shift``). It needs a ``Normal`` task-slope prior and independent task slopes;
otherwise (or when :math:`x` does not vary) the plain basis is used.
``slope_task``, ``beta``, ``u_family`` and ``v_model`` are deterministics in this basis; the
coordinates are named ``z_*`` like the other sampler coordinates, so the diagnostics
(``selfmodel.fitting.sampling.diagnose``) judge the model's own quantities, not them.

Measured on the 50 x 10 benchmark in one run (``bench/bench_sampling.py --cases plain
scale group_centred --name sampling_decorrelated``, ``bench/results/sampling_decorrelated.json``;
4 x 1000 draws, ``target_accept=0.95``; its times and effective draws per second are in
that file): bulk ESS of ``beta`` 184 in the plain basis, 5,760 in the decorrelated basis
with non-centred group effects and 8,180 with ``group_effects="centred"``, at about the
same sampling CPU time (so 25-45 times the effective draws per second); 0 divergences in
all three. What still mixes slowly there is the family level (slowest parameter
``sigma_family``, bulk ESS 112, R-hat 1.03, non-centred; ``u_family``, 272 and 1.02,
centred): the family means of the model intercepts trade against the family intercepts, a
ridge this basis does not touch. It shows in ``beta`` too: its posterior sd was 0.037
with non-centred group effects against 0.039-0.040 in the other two runs, so on data with
thousands of records per model ``group_effects="centred"`` is the better choice. The
default keeps non-centred group effects (few, weakly informed groups in typical data,
above).

On the default data at the pipeline's settings (``python bench/zoo.py scale --target-accept
0.99 --seed S``, 4 x 2000 draws, seeds 20261130 and 1) the decorrelated basis gave 0
divergences, max R-hat 1.004 and 1.004, slowest bulk ESS 1,149 and 1,433, and
:math:`\beta` = 0.197 (sd 0.066) both times; a pipeline run in the plain basis had 0.196
(sd 0.065): equal within Monte Carlo error.

References
----------
Gelman & Hill (2007), *Data Analysis Using Regression and Multilevel/Hierarchical Models*,
ch. 14 (multilevel logistic regression on aggregated binomial data); Betancourt & Girolami
(2015), *Hamiltonian Monte Carlo for Hierarchical Models* (non-centred parameterisation).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

import numpy as np
import pymc as pm

from selfmodel.models import decorrelation
from selfmodel.models.graph import ZERO_SUM_TEXT, factorize, prior_rv, scale_of, zero_sum_effect
from selfmodel.models.spec import (
    Comparison,
    Declaration,
    Effect,
    ModelSpec,
    Prior,
    build_options,
    declared_priors,
    merge_priors,
)

NAME = "scale"
SUMMARY = "hierarchical logistic: task intercepts, global + task slopes on scale, family/model/cell effects"
#: Variables the decision rules read.
EFFECT = "beta"
PER_TASK_EFFECT = "slope_task"

DEFAULT_PRIORS: dict[str, Prior] = {
    "alpha": ("Normal", {"mu": 0.0, "sigma": 1.5}),  # task intercepts, logit accuracy
    # each task's own slope, logits per 10x parameters (``task_slopes="independent"``,
    # the default); ``beta`` is their average over tasks
    "slope_task": ("Normal", {"mu": 0.0, "sigma": 1.0}),
    "sigma_family": ("HalfNormal", {"sigma": 0.5}),  # family intercepts (logit)
    "sigma_model": ("HalfNormal", {"sigma": 0.5}),  # model intercepts (logit)
    "sigma_cell": ("HalfNormal", {"sigma": 0.5}),  # model x task deviations
    "sigma_family_slope": ("HalfNormal", {"sigma": 0.5}),  # only with family_slopes=True
}

#: Priors of ``task_slopes="pooled"`` instead of ``slope_task``: a mean slope and zero-sum
#: task deviations whose spread has its own prior (the model before the measurement of
#: ``validation/task_slopes.py``; kept for that comparison and for many-task data).
POOLED_PRIORS: dict[str, Prior] = {
    "beta": ("Normal", {"mu": 0.0, "sigma": 1.0}),
    "sigma_delta": ("HalfNormal", {"sigma": 0.5}),  # spread of task slopes
}

TaskSlopes = Literal["independent", "pooled"]

REQUIRED_COLUMNS = ("model", "family", "task", "x", "n", "k")

#: What the pipeline does with this model (see ``models/spec.py``): the verdict.
SPEC = ModelSpec(
    table="cells",
    role="verdict",
    decides=(Effect("scale_effect", EFFECT, PER_TASK_EFFECT),),
    slope_priors={"beta": ("slope_task", "mean"), "slope_task": ("slope_task", None)},
    loo="cell",
    sections=("sec-verdict", "sec-scaling", "sec-hypotheses", "sec-robustness", "sec-checks"),
    without_effect=Comparison("pooled", {"random_effects": True}, "pooled(random_effects=True)"),
    # the decorrelated basis is another parameterisation of the plain basis' prior
    # (tests/models/test_slope_basis.py), in which every task slope is a free variable
    prior_density_options={"slope_basis": "plain"},
)

#: ``cell_effect="auto"`` centres a cell's effect when :math:`n \hat p (1 - \hat p)` reaches this.
AUTO_CENTRED_INFORMATION = 100.0

CellEffect = Literal["non_centred", "centred", "auto"]
SlopeBasis = Literal["decorrelated", "plain"]


def centred_cells(n: np.ndarray, k: np.ndarray, cell_effect: CellEffect) -> np.ndarray:
    """Boolean mask of the cells whose effect ``w`` is centred (see the module docstring)."""
    n = np.asarray(n, dtype=float)
    if cell_effect == "non_centred":
        return np.zeros(n.shape, dtype=bool)
    if cell_effect == "centred":
        return np.ones(n.shape, dtype=bool)
    if cell_effect == "auto":
        p_hat = (np.asarray(k, dtype=float) + 0.5) / (n + 1.0)
        return n * p_hat * (1.0 - p_hat) >= AUTO_CENTRED_INFORMATION
    raise ValueError(f"cell_effect must be 'non_centred', 'centred' or 'auto', not {cell_effect!r}")


def build(
    data: Any,
    priors: Mapping[str, Prior] | None = None,
    *,
    family_slopes: bool = False,
    cell_effect: CellEffect = "non_centred",
    group_effects: Literal["non_centred", "centred"] = "non_centred",
    task_slopes: TaskSlopes = "independent",
    slope_basis: SlopeBasis = "decorrelated",
) -> pm.Model:
    r"""Build the PyMC model.

    Parameters
    ----------
    data
        A table (polars or pandas) with columns ``model, family, task, x, n, k``; rows with
        null ``x`` must already be removed.
    priors
        Overrides of :data:`DEFAULT_PRIORS` (same keys).
    family_slopes
        Add family-varying slopes :math:`\\lambda_f`.
    cell_effect
        Parameterisation of the cell effects :math:`w`: ``"non_centred"`` (default,
        :math:`w = \\sigma_w z`, ``z_cell``), ``"centred"`` (``w_cell`` ~ Normal(0,
        :math:`\\sigma_w`)) or ``"auto"`` (per cell, :func:`centred_cells`). The
        posterior is the same; only the sampler's geometry differs. The integrated LOO of
        ``analysis/fitting/checks.py`` needs the standard-normal ``z_cell`` on every cell (else it
        falls back to plain PSIS-LOO).
    group_effects
        ``"centred"`` draws the family and model intercepts directly,
        ``u ~ ZeroSumNormal(sigma_family)``, ``v ~ ZeroSumNormal(sigma_model)``, instead of
        ``sigma * z``: the better geometry when every model has thousands of records (see
        the module docstring); same posterior.
    slope_basis
        ``"decorrelated"`` (default) or ``"plain"``: the coordinates the sampler sees for
        the task slopes and the family and model intercepts (module docstring, "Slope
        basis"); same model.
    task_slopes
        ``"independent"`` (default): every task's slope has its own prior
        (``slope_task``) and ``beta`` is their average over tasks (a declared estimand);
        ``"pooled"``: ``beta + delta_t`` with zero-sum deviations of spread
        ``sigma_delta`` (:data:`POOLED_PRIORS`).

    Returns
    -------
    pymc.Model
        With coords ``task``, ``family``, ``model``, ``cell`` and the observed ``k``.
    """
    if task_slopes not in ("independent", "pooled"):
        raise ValueError(f"task_slopes must be 'independent' or 'pooled', not {task_slopes!r}")
    defaults = dict(DEFAULT_PRIORS)
    if task_slopes == "pooled":
        defaults.pop("slope_task")
        defaults.update(POOLED_PRIORS)
    p = merge_priors(defaults, priors)
    task_idx, tasks = factorize(data["task"])
    model_idx, models = factorize(data["model"])
    fam_of_cell, families = factorize(data["family"])
    x = scale_of(data, "scale")
    n = np.asarray(data["n"], dtype="int64")
    k = np.asarray(data["k"], dtype="int64")
    x_model, fam_of_model = decorrelation.model_level(model_idx, x, fam_of_cell, len(models))
    decorrelate = (
        slope_basis == "decorrelated"
        and task_slopes == "independent"
        and decorrelation.decorrelatable(p["slope_task"], x_model, fam_of_model)
    )
    coords = {
        "task": tasks,
        "family": families,
        "model": models,
        "cell": [
            f"{m}|{t}"
            for m, t in zip(np.asarray(data["model"]), np.asarray(data["task"]), strict=True)
        ],
    }
    with pm.Model(coords=coords) as model:
        alpha = prior_rv("alpha", p["alpha"], dims="task")
        if task_slopes == "independent" and not decorrelate:
            import pytensor.tensor as pt

            slopes = prior_rv("slope_task", p["slope_task"], dims="task")
            pm.Deterministic("beta", pt.mean(slopes))
        elif decorrelate:
            slopes = None  # drawn below, once sigma_model exists
        else:
            beta = prior_rv("beta", p["beta"])
            sigma_delta = prior_rv("sigma_delta", p["sigma_delta"])
            delta = zero_sum_effect("delta", sigma_delta, "task", len(tasks))
            slopes = pm.Deterministic("slope_task", beta + delta, dims="task")
        sigma_family = prior_rv("sigma_family", p["sigma_family"])
        group = _centred_zero_sum if group_effects == "centred" else zero_sum_effect
        if decorrelate:
            sigma_model = prior_rv("sigma_model", p["sigma_model"])
            slopes, u, v = decorrelation.decorrelated_slopes(
                decorrelation.SlopeNames("slope_task", "beta", "u_family", "v_model"),
                p["slope_task"],
                (sigma_family, sigma_model), x_model, fam_of_model, len(tasks),
                centred=group_effects == "centred",
            )
        else:  # the plain basis, in the order of the variables before the slope basis
            u = group("u_family", sigma_family, "family", len(families))
            v = group("v_model", prior_rv("sigma_model", p["sigma_model"]), "model", len(models))
        sigma_cell = prior_rv("sigma_cell", p["sigma_cell"])
        w = _cell_effects(model, sigma_cell, centred_cells(n, k, cell_effect))

        slope = slopes[task_idx]
        if family_slopes:
            sigma_fs = prior_rv("sigma_family_slope", p["sigma_family_slope"])
            lam = zero_sum_effect("lambda_family", sigma_fs, "family", len(families))
            slope = slope + lam[fam_of_cell]
        eta = alpha[task_idx] + slope * x + u[fam_of_cell] + v[model_idx] + w
        pm.Binomial("k", n=n, logit_p=eta, observed=k, dims="cell")
    return model


def declaration(options: Mapping[str, Any] | None = None,
                priors: Mapping[str, Any] | None = None) -> Declaration:
    """Equations, prose and priors of the model :func:`build` makes with ``options``.

    ``priors``: overrides, or a fit's provenance priors (priors of variables these options
    leave out, e.g. ``sigma_family_slope`` without family slopes, are dropped).

    Examples
    --------
    >>> d = declaration()
    >>> sorted(d.priors)
    ['alpha', 'sigma_cell', 'sigma_family', 'sigma_model', 'slope_task']
    >>> "sigma_delta" in declaration({"task_slopes": "pooled"}).priors
    True
    """
    o = build_options(build, options)
    independent = o["task_slopes"] == "independent"
    used = ["alpha", *(["slope_task"] if independent else ["beta", "sigma_delta"]),
            "sigma_family", "sigma_model", "sigma_cell",
            *(["sigma_family_slope"] if o["family_slopes"] else [])]
    slope = "b_t" if independent else r"(\beta + \delta_t)"
    lam = r" + \lambda_{f[m]}\,x_m" if o["family_slopes"] else ""
    lines = [r"k_{mt} &\sim \operatorname{Binomial}\left(n_{mt},\ \operatorname{logit}^{-1}\eta_{mt}\right)",
             rf"\eta_{{mt}} &= \alpha_t + {slope}\,x_m{lam} + u_{{f[m]}} + v_m + w_{{mt}}"]
    if independent:
        lines.append(r"\beta &= \tfrac{1}{T}\textstyle\sum_t b_t")
    prose = (r"with $x_m$ the centred scale variable, $u$ and $v$ zero-sum family and model "
             r"effects and $w_{mt}$ cell effects (models, not records, are the unit of evidence). ")
    if independent:
        prose += (r"Each task's slope $b_t$ has its own prior (`slope_task`); $\beta$, the verdict's "
                  r"slope, is their average over the $T$ tasks, a declared estimand, not a parameter.")
    else:
        prose += (r"$\beta$ is the mean slope and $\delta_t$ zero-sum task deviations whose spread "
                  r"(`sigma_delta`) has its own prior; $\beta$ is the mean of the task slopes.")
    if o["family_slopes"]:
        prose += r" $\lambda_f$ are zero-sum family-varying slopes of spread `sigma_family_slope`."
    prose += (f" Parameterisation (same model): cell effects {o['cell_effect']}, group effects "
              f"{o['group_effects']}, slope basis {o['slope_basis']}.")
    prose += " " + ZERO_SUM_TEXT
    return Declaration(o, " \\\\\n".join(lines), prose,
                       declared_priors({**DEFAULT_PRIORS, **POOLED_PRIORS}, used, priors))


def _cell_effects(model: pm.Model, sigma_cell: Any, centred: np.ndarray) -> Any:
    """Cell effects ``w`` in cell order: ``sigma_cell * z_cell`` and/or centred ``w_cell``."""
    import pytensor.tensor as pt

    if not centred.any():
        return sigma_cell * pm.Normal("z_cell", 0.0, 1.0, dims="cell")
    cells = np.asarray(model.coords["cell"])
    if centred.all():
        return pm.Normal("w_cell", 0.0, sigma_cell, dims="cell")
    model.add_coord("cell_centred", cells[centred])
    model.add_coord("cell_non_centred", cells[~centred])
    w_c = pm.Normal("w_cell", 0.0, sigma_cell, dims="cell_centred")
    z_nc = pm.Normal("z_cell", 0.0, 1.0, dims="cell_non_centred")
    order = np.argsort(np.concatenate([np.flatnonzero(centred), np.flatnonzero(~centred)]))
    return pt.concatenate([w_c, sigma_cell * z_nc])[order]


def _centred_zero_sum(name: str, sigma: Any, dim: str, size: int) -> Any:
    """Centred counterpart of ``selfmodel.models.graph.zero_sum_effect``: ``ZeroSumNormal(sigma)``."""
    if size < 2:
        return zero_sum_effect(name, sigma, dim, size)
    return pm.ZeroSumNormal(name, sigma=sigma, dims=dim)

