r"""Within-family vs between-family scale effects (Mundlak / "within-between" model).

The scale effect of ``models/scale.py`` mixes two comparisons. *Within* a family
(aurora-1b vs aurora-70b: same data, recipe and lab) a bigger model is the closest thing
to a scale intervention the logs offer. *Between* families (one lab's models are on
average bigger than another's) size is confounded with everything else the labs do
differently. Splitting the predictor separates the two:

.. math::

    x_m = \underbrace{(x_m - \bar x_{f[m]})}_{x^{W}_m} + \underbrace{\bar x_{f[m]}}_{x^{B}_m},
    \qquad \bar x_f = \text{mean of } x_m \text{ over the models of family } f \text{ in the data}

.. math::

    k_{mt} &\sim \mathrm{Binomial}\big(n_{mt},\ \mathrm{logit}^{-1}(\eta_{mt})\big) \\
    \eta_{mt} &= \alpha_t + (\beta_W + \delta_t)\, x^{W}_m + \beta_B\, x^{B}_m
        + u_{f[m]} + v_m + w_{mt} \\
    \delta &= \sigma_\delta z^{\delta},\ u = \sigma_u z^{u},\ v = \sigma_v z^{v},\quad
    z^{\delta}, z^{u}, z^{v} \sim \mathrm{ZeroSumNormal}(1) \\
    w_{mt} &= \sigma_w z^{w}_{mt},\quad z^{w}_{mt} \sim \mathcal N(0, 1)

Because :math:`x^W` is orthogonal to the family means, :math:`\beta_W` is identified by
within-family contrasts only, whatever the family intercepts :math:`u_f` absorb (Mundlak
1978); :math:`\beta_B` is the slope of family-average accuracy on family-average size,
estimated from as many points as there are families, so expect a wide posterior with
3-6 families. :math:`\beta_W = \beta_B` is the assumption the ``scale`` model makes;
``contextual = beta_between - beta_within`` (saved) is its posterior check.

Parameters
----------
alpha (task)
    logit accuracy of a model of average within-family position, in a family of average
    size, on task :math:`t`.
beta_within
    **within-family scale effect**: logits per unit of :math:`x` (per 10x parameters)
    comparing models of the same family; mean of the task slopes. This is ``EFFECT``.
within_slope_task (task)
    task-specific within-family slopes :math:`\beta_W + \delta_t` (``PER_TASK_EFFECT``).
beta_between
    between-family slope on the family mean of :math:`x` (common to tasks: per-task
    between slopes would rest on the same handful of family means).
contextual
    :math:`\beta_B - \beta_W`.
u (family), v (model), w (model x task)
    as in ``models/scale.py``.

A family with one model in the data has :math:`x^W = 0` and informs only
:math:`\beta_B`; at least one family with two or more differently sized models is needed
for :math:`\beta_W` (``build`` raises otherwise).

Parameterisation and sampler
----------------------------
:math:`\beta_B` and the family effects trade off along a ridge: only
:math:`c = \beta_B L + \sigma_u z^u_\parallel` is informed by the data, where
:math:`L = \lVert\tilde x\rVert` is the norm of the family means :math:`\tilde x_f`
(centred over families) and :math:`z^u_\parallel` the component of :math:`z^u` along
:math:`\hat x = \tilde x / L`. Plain non-centred zero-sum effects gave 18 divergences in
4 x 2000 draws (``target_accept=0.95``, seed 20261130, default data), at large
:math:`\sigma_u`; centred family effects gave 26 (at small :math:`\sigma_u`). The model
therefore samples :math:`c` and the part of :math:`\beta_B` the data do not see, an
exact change of variables (both are Normal given :math:`\sigma_u`):

.. math::

    c &= \mu_B L + \sqrt{V}\, z_c,\quad V = L^2 s_B^2 + \sigma_u^2 \\
    \beta_B &= \mu_B + \frac{L s_B^2}{V}(c - \mu_B L) + \sqrt{\frac{s_B^2 \sigma_u^2}{V}}\, z_r
    \\
    u &= (c - \beta_B L)\,\hat x + \sigma_u B \omega,\qquad z_c, z_r, \omega_j \sim
    \mathcal N(0, 1)

with :math:`\beta_B \sim \mathcal N(\mu_B, s_B^2)` its declared prior and :math:`B` an
orthonormal basis of the family contrasts orthogonal to :math:`\hat x` and to the constant
(saved as ``z_between_total`` = :math:`z_c`, ``z_between_free`` = :math:`z_r`,
``z_family_resid`` = :math:`\omega`; ``beta_between`` and ``u_family`` are deterministics).
Prior draws reproduce :math:`\beta_B \sim \mathcal N(\mu_B, s_B^2)` and
:math:`u \sim \sigma_u\,\mathrm{ZeroSumNormal}(1)` independently (tested). The family
means are centred over families, so :math:`\alpha_t` is the task intercept of a family of
average (unweighted) mean size.

Measured on the default data (``data_raw/``: 14 sized models in 4 families x 3 tasks =
42 cells; nutpie 0.16.8, 4 chains x 2000 draws after 1000 tuning;
``python bench/zoo.py within_between``):
``target_accept=0.95``, seeds 20261130 / 1 / 2: 0 / 0 / 1 divergences, min bulk ESS 1484 / 1258 / 1209, max R-hat
1.002 / 1.002 / 1.002;
``target_accept=0.99`` (seed 20261130): 0 divergences, ESS 1180, R-hat 1.002.
:math:`\beta_W` = 0.20 (sd 0.08, 94% HDI 0.05 to 0.35), :math:`\beta_B` = 0.19 (94% HDI
-0.12 to 0.49): no sign that the between-family slope differs (the simulation has one
slope). Posterior predictive coverage 1.0, :math:`\chi^2` p-value 0.49; LOO ELPD -177.0
(se 5.1), 1 of 42 Pareto k > 0.7, 1.6 (se 1.3) below ``scale``.

References
----------
Mundlak (1978), "On the pooling of time series and cross section data", *Econometrica*
46(1); Bell & Jones (2015), "Explaining fixed effects: random effects modeling of
time-series cross-sectional and panel data", *Political Science Research and Methods*
3(1) (the within-between formulation); Gelman & Hill (2007), sec. 12.6 and 21.7 (group
means as group-level predictors).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pymc as pm
import pytensor.tensor as pt

from selfmodel.models.graph import factorize, prior_rv, scale_of, zero_sum_effect
from selfmodel.models.spec import Effect, ModelSpec, Prior, merge_priors

NAME = "within_between"
SUMMARY = "hierarchical logistic with the scale effect split within / between families (Mundlak)"
#: Variables the decision rules read.
EFFECT = "beta_within"
PER_TASK_EFFECT = "within_slope_task"

DEFAULT_PRIORS: dict[str, Prior] = {
    "alpha": ("Normal", {"mu": 0.0, "sigma": 1.5}),  # task intercepts, logit accuracy
    "beta_within": ("Normal", {"mu": 0.0, "sigma": 1.0}),  # logits per 10x, within family
    "beta_between": ("Normal", {"mu": 0.0, "sigma": 1.0}),  # logits per 10x of family mean
    "sigma_delta": ("HalfNormal", {"sigma": 0.5}),  # spread of task within-slopes
    "sigma_family": ("HalfNormal", {"sigma": 0.5}),  # family intercepts (logit)
    "sigma_model": ("HalfNormal", {"sigma": 0.5}),  # model intercepts (logit)
    "sigma_cell": ("HalfNormal", {"sigma": 0.5}),  # model x task deviations
}

REQUIRED_COLUMNS = ("model", "family", "task", "x", "n", "k")


def unfit_reason(data: Any) -> str | None:
    """Why ``data`` cannot identify the within-family slope, or ``None``.

    The model needs ``x`` for every cell and at least one family with two or more differently
    sized models (``build`` raises on the same conditions; this lets the pipeline skip the model
    with the reason instead).

    Examples
    --------
    >>> unfit_reason({"model": ["a1", "b1"], "family": ["a", "b"], "x": [0.0, 1.0]})
    'every family has a single size, so the within-family slope is not identified'
    >>> unfit_reason({"model": ["a1", "a2"], "family": ["a", "a"], "x": [0.0, 1.0]}) is None
    True
    """
    x = np.asarray(data["x"], dtype=float)
    if np.isnan(x).any():
        return "some models have no value of the scale variable"
    x_w, _ = split_scale(data["model"], data["family"], x)
    if np.allclose(x_w, 0.0):
        return "every family has a single size, so the within-family slope is not identified"
    return None

#: What the pipeline does with this model (see ``models/spec.py``).
SPEC = ModelSpec(
    table="cells",
    decides=(
        Effect("within", "beta_within", "within_slope_task", beside_verdict="within-family slope"),
        Effect("between", "beta_between", None),
    ),
    slope_priors={
        "beta_within": ("beta_within", None),
        "within_slope_task": ("beta_within", "sigma_delta"),
    },
    loo="cell",
    sections=("sec-within", "sec-checks", "sec-richer"),
    unfit_reason=unfit_reason,
    # the same prior with beta_between a free variable of its own (build's docstring)
    prior_density_options={"between_form": "plain"},
)


def split_scale(models: Any, families: Any, x: Any) -> tuple[np.ndarray, np.ndarray]:
    """Within-family and between-family parts of ``x`` (per row).

    The family mean is taken over distinct *models* (not rows), so a model seen on more
    tasks does not weigh more.

    Examples
    --------
    >>> w, b = split_scale(["a1", "a2", "b1"], ["a", "a", "b"], [0.0, 1.0, 3.0])
    >>> w.tolist(), b.tolist()
    ([-0.5, 0.5, 0.0], [0.5, 0.5, 3.0])
    """
    m = np.asarray(models).astype(str)
    f = np.asarray(families).astype(str)
    xv = np.asarray(x, dtype=float)
    per_model: dict[str, tuple[str, float]] = {}
    for mi, fi, xi in zip(m, f, xv, strict=True):
        per_model.setdefault(mi, (fi, xi))
    fam_mean = {
        fam: float(np.mean([xx for ff, xx in per_model.values() if ff == fam]))
        for fam in set(f.tolist())
    }
    between = np.array([fam_mean[fi] for fi in f])
    return xv - between, between


def _between_basis(x_fam: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
    """Norm and unit vector of the centred family means, and a basis of the rest.

    Returns ``(L, xhat, B)``: ``x_fam = L * xhat`` (``x_fam`` sums to zero), and the
    columns of ``B`` are orthonormal, orthogonal to ``xhat`` and to the constant vector
    (``B`` has ``F - 2`` columns; ``F - 1`` when ``L == 0``).
    """
    n_fam = len(x_fam)
    length = float(np.linalg.norm(x_fam))
    xhat = x_fam / length if length > 1e-9 else np.zeros(n_fam)
    fixed = [np.ones(n_fam) / np.sqrt(n_fam)] + ([xhat] if length > 1e-9 else [])
    # complete [1, xhat] to an orthonormal basis of R^F; keep the remaining columns
    q, _ = np.linalg.qr(np.column_stack([*fixed, np.eye(n_fam)]))
    return length, xhat, q[:, len(fixed):n_fam]


def build(data: Any, priors: Mapping[str, Prior] | None = None, *,
          between_form: str = "exact") -> pm.Model:
    """Build the PyMC model.

    Parameters
    ----------
    data
        The cells :func:`selfmodel.models.scale.build` takes (``model, family, task, x, n,
        k``, no null ``x``).
    priors
        Overrides of :data:`DEFAULT_PRIORS` (same keys); ``beta_between`` must stay a
        ``Normal`` (it enters the exact reparameterisation described in the module
        docstring).
    between_form
        ``"exact"`` (the default, what is sampled): the reparameterisation of the module
        docstring. ``"plain"``: the same prior with ``beta_between`` a free variable of its
        own and the family effects ``sigma_family`` times standard normals in the zero-sum
        subspace -- the form in which prior-sensitivity reweighting evaluates the priors
        (``SPEC.prior_density_options``; ``selfmodel.fitting.reweight``).

    Returns
    -------
    pymc.Model
        With coords ``task``, ``family``, ``family_resid`` (the ``F - 2`` family
        contrasts orthogonal to size), ``model``, ``cell``, the observed ``k`` and the
        data ``x_within``, ``x_between`` (on ``cell``).
    """
    if between_form not in ("exact", "plain"):
        raise ValueError(f"between_form must be 'exact' or 'plain', got '{between_form}'")
    p = merge_priors(DEFAULT_PRIORS, priors)
    dist, bb = p["beta_between"]
    if dist != "Normal":
        raise ValueError(f"prior 'beta_between' must be ('Normal', {{mu, sigma}}), got '{dist}'")
    task_idx, tasks = factorize(data["task"])
    model_idx, models = factorize(data["model"])
    fam_idx, families = factorize(data["family"])
    x = scale_of(data, "within_between")
    n = np.asarray(data["n"], dtype="int64")
    k = np.asarray(data["k"], dtype="int64")
    x_w, x_b = split_scale(data["model"], data["family"], x)
    if np.allclose(x_w, 0.0):
        raise ValueError(
            "within_between model needs a family with two or more differently sized models; "
            "every family here has one size, so the within-family slope is not identified"
        )
    # family means centred over families: beta_between does not shift the task intercepts
    x_fam = np.array([x_b[fam_idx == f][0] for f in range(len(families))])
    x_fam = x_fam - x_fam.mean()
    x_b = x_fam[fam_idx]
    length, xhat, basis = _between_basis(x_fam)
    cells = [f"{m}|{t}" for m, t in zip(data["model"], data["task"], strict=True)]
    coords = {
        "task": tasks, "family": families, "model": models, "cell": cells,
        "family_resid": [f"c{i}" for i in range(basis.shape[1])],
    }
    mu_b, sd_b = float(bb["mu"]), float(bb["sigma"])
    with pm.Model(coords=coords) as model:
        xw = pm.Data("x_within", x_w, dims="cell")
        pm.Data("x_between", x_b, dims="cell")
        alpha = prior_rv("alpha", p["alpha"], dims="task")
        beta_w = prior_rv("beta_within", p["beta_within"])
        sigma_delta = prior_rv("sigma_delta", p["sigma_delta"])
        delta = zero_sum_effect("delta", sigma_delta, "task", len(tasks))
        slope_w = pm.Deterministic("within_slope_task", beta_w + delta, dims="task")
        s_fam = prior_rv("sigma_family", p["sigma_family"])
        if basis.shape[1]:
            w = pm.Normal("z_family_resid", 0.0, 1.0, dims="family_resid")
            resid = pt.dot(basis, w)
        else:
            resid = pt.zeros(len(families))
        if length > 1e-9 and between_form == "plain":
            beta_b = prior_rv("beta_between", p["beta_between"])
            z_a = pm.Normal("z_family_along", 0.0, 1.0)
            family_total = beta_b * x_fam + s_fam * (z_a * xhat + resid)
        elif length > 1e-9:
            var = length**2 * sd_b**2 + s_fam**2
            z_c = pm.Normal("z_between_total", 0.0, 1.0)
            c = mu_b * length + pt.sqrt(var) * z_c
            z_r = pm.Normal("z_between_free", 0.0, 1.0)
            beta_b = pm.Deterministic(
                "beta_between",
                mu_b + length * sd_b**2 * (c - mu_b * length) / var
                + pt.sqrt(sd_b**2 * s_fam**2 / var) * z_r,
            )
            family_total = c * xhat + s_fam * resid
        else:  # all families of equal mean size: beta_between is not informed by the data
            beta_b = prior_rv("beta_between", p["beta_between"])
            family_total = s_fam * resid
        pm.Deterministic("u_family", family_total - beta_b * x_fam, dims="family")
        pm.Deterministic("contextual", beta_b - beta_w)
        s_mod = prior_rv("sigma_model", p["sigma_model"])
        v = zero_sum_effect("v_model", s_mod, "model", len(models))
        s_cell = prior_rv("sigma_cell", p["sigma_cell"])
        z_cell = pm.Normal("z_cell", 0.0, 1.0, dims="cell")
        eta = (
            alpha[task_idx] + slope_w[task_idx] * xw + family_total[fam_idx]
            + v[model_idx] + s_cell * z_cell
        )
        pm.Binomial("k", n=n, logit_p=eta, observed=k, dims="cell")
    return model
