"""Simulated model x task cells of a design under a true slope (the scale model's generative process)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl
from scipy.special import betaincinv, expit, logit
from scipy.stats import binom

from selfmodel.power.approximate_fit import CellLayout
from selfmodel.power.design import Design

# --------------------------------------------------------------------------- simulation


@dataclass
class _Base:
    """The random numbers of one simulation, shared by every true slope."""

    z_family: np.ndarray
    z_model: np.ndarray
    z_cell: np.ndarray
    z_task_slope: np.ndarray
    u_count: np.ndarray
    u_draw: np.ndarray
    z_draw: np.ndarray
    u_cluster: np.ndarray


def base_draws(seed: int, sim: int, layout: CellLayout, draws: int) -> _Base:
    """The draws of one simulated data set that do not depend on the slope."""
    rng = np.random.default_rng([seed, sim])
    return _Base(
        z_family=rng.standard_normal(len(layout.families)),
        z_model=rng.standard_normal(len(layout.models)),
        z_cell=rng.standard_normal(layout.n_cells),
        z_task_slope=rng.standard_normal(len(layout.tasks)),
        u_count=rng.random(layout.n_cells),
        u_draw=rng.random(draws),
        z_draw=rng.standard_normal(draws),
        u_cluster=rng.random(layout.n_cells),  # drawn last: earlier streams do not depend on it
    )


def simulate_k(layout: CellLayout, design: Design, slope: float, base: _Base) -> np.ndarray:
    """Successes per cell of one simulated data set with this slope."""
    alpha = logit(np.array([t.accuracy for t in design.tasks]))
    delta = design.sigma_task_slope * (base.z_task_slope - base.z_task_slope.mean())
    u = design.sigma_family * base.z_family
    v = design.sigma_model * base.z_model
    m, t = layout.cell_model, layout.cell_task
    eta = (
        alpha[t]
        + (slope + delta[t]) * layout.x
        + u[layout.model_family[m]]
        + v[m]
        + design.sigma_cell * base.z_cell
    )
    p = expit(eta)
    if layout.rho is not None and np.any(layout.rho > 0):
        # beta-binomial cell: answers share a propensity pi ~ Beta(p, intra-class corr. rho)
        rho = np.clip(layout.rho, 1e-9, 1 - 1e-9)
        conc = 1.0 / rho - 1.0
        pi = betaincinv(p * conc, (1.0 - p) * conc, base.u_cluster)
        p = np.where(layout.rho > 0, pi, p)
    k = binom.ppf(base.u_count, layout.n, p)
    return np.clip(np.nan_to_num(k, nan=0.0), 0, layout.n).astype(np.int64)


def simulate_cells(design: Design, slope: float, *, seed: int, sim: int = 0) -> pl.DataFrame:
    """One simulated data set of ``design`` at true slope ``slope``, as scale-model cells.

    The same ``(seed, sim)`` gives the same random effects at every slope (common random
    numbers); :func:`run_power` fits exactly these data sets.

    Returns
    -------
    polars.DataFrame
        ``model, family, task, x, n, k``: the input of ``selfmodel.fitting.sampling.fit("scale", ...)``
        and of :func:`fast_fit`.

    Examples
    --------
    >>> cells = simulate_cells(default_design(), 0.3, seed=1)
    >>> cells.columns, cells.height
    (['model', 'family', 'task', 'x', 'n', 'k'], 42)
    """
    layout = CellLayout.from_design(design)
    k = simulate_k(layout, design, slope, base_draws(seed, sim, layout, 0))
    return pl.DataFrame(
        {
            "model": [layout.models[i] for i in layout.cell_model],
            "family": [layout.families[layout.model_family[i]] for i in layout.cell_model],
            "task": [layout.tasks[i] for i in layout.cell_task],
            "x": layout.x,
            "n": layout.n,
            "k": k,
        }
    )
