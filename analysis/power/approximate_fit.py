"""The approximate fit of the scale model used by the power sweeps (a grid over the variance components with a Laplace step per grid point)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import polars as pl
from scipy.special import expit
from scipy.stats import norm

from selfmodel.decisions.hypotheses import DecisionRule, decide
from selfmodel.models.scale import DEFAULT_PRIORS
from selfmodel.power.design import GRID, N_DRAWS, Design

# --------------------------------------------------------------------------- cell layout


def _halfnormal_grid(sigma: float, points: int) -> np.ndarray:
    """Mid-quantiles of HalfNormal(sigma): equal prior mass per point."""
    u = (np.arange(points) + 0.5) / points
    return sigma * norm.ppf((1.0 + u) / 2.0)


def _prior_sigmas() -> dict[str, float]:
    """Scales of the scale model's priors (so the approximation uses the same priors)."""
    out = {}
    for name in ("alpha", "slope_task", "sigma_family", "sigma_model", "sigma_cell"):
        dist, kw = DEFAULT_PRIORS[name]
        want = "Normal" if name in ("alpha", "slope_task") else "HalfNormal"
        if dist != want or (want == "Normal" and kw.get("mu", 0.0) != 0.0):
            raise NotImplementedError(
                f"selfmodel.power assumes {name} ~ {want}(0, s) as in models/scale.py; "
                f"it is now {dist}{kw}"
            )
        out[name] = float(kw["sigma"])
    return out


@dataclass
class CellLayout:
    """Cells sorted by family, model, task, with the index arrays the fast fit needs."""

    models: list[str]
    families: list[str]
    tasks: list[str]
    cell_model: np.ndarray  # (N,) model index
    cell_task: np.ndarray  # (N,) task index
    model_family: np.ndarray  # (M,) family index
    x: np.ndarray  # (N,) centred predictor of the cell's model
    n: np.ndarray  # (N,) binomial n
    rho: np.ndarray | None = None  # (N,) intra-cell correlation of simulated answers
    model_start: np.ndarray = field(init=False)
    family_start: np.ndarray = field(init=False)
    X: np.ndarray = field(init=False)
    OXX: np.ndarray = field(init=False)

    def __post_init__(self) -> None:
        self.model_start = np.flatnonzero(np.r_[True, np.diff(self.cell_model) != 0])
        self.family_start = np.flatnonzero(np.r_[True, np.diff(self.model_family) != 0])
        if len(self.model_start) != len(self.models) or len(self.family_start) != len(
            self.families
        ):
            raise ValueError("cells must be sorted by family, then model")
        n_tasks = len(self.tasks)
        onehot = np.eye(n_tasks)[self.cell_task]
        self.X = np.hstack([onehot, onehot * self.x[:, None]])
        self.OXX = self.X[:, :, None] * self.X[:, None, :]

    @property
    def n_cells(self) -> int:
        """Number of cells."""
        return len(self.cell_model)

    @classmethod
    def from_design(cls, design: Design) -> CellLayout:
        """The layout of a power design's cells."""
        fam_names = list(dict.fromkeys(f for _, f, _ in design.models))
        ordered = sorted(design.models, key=lambda m: (fam_names.index(m[1]),))
        xs = np.array([x for *_, x in ordered])
        xc = xs - xs.mean()
        n_tasks = len(design.tasks)
        n_models = len(ordered)
        return cls(
            models=[m for m, *_ in ordered],
            families=fam_names,
            tasks=[t.name for t in design.tasks],
            cell_model=np.repeat(np.arange(n_models), n_tasks),
            cell_task=np.tile(np.arange(n_tasks), n_models),
            model_family=np.array([fam_names.index(f) for _, f, _ in ordered]),
            x=np.repeat(xc, n_tasks),
            n=np.tile(np.array([design.n_cell(t) for t in design.tasks], dtype=np.int64), n_models),
            rho=np.tile(np.array([design.cell_correlation(t) for t in design.tasks]), n_models),
        )

    @classmethod
    def from_cells(cls, cells: pl.DataFrame) -> tuple[CellLayout, np.ndarray]:
        """Layout and counts of a cells table (``model, family, task, x, n, k``), as fitted."""
        c = cells.filter(pl.col("n") > 0).sort("family", "model", "task")
        families = list(dict.fromkeys(c["family"].to_list()))
        models = list(dict.fromkeys(c["model"].to_list()))
        tasks = sorted(set(c["task"].to_list()))
        fam_of = dict(zip(c["model"].to_list(), c["family"].to_list(), strict=True))
        layout = cls(
            models=models,
            families=families,
            tasks=tasks,
            cell_model=np.array([models.index(m) for m in c["model"].to_list()]),
            cell_task=np.array([tasks.index(t) for t in c["task"].to_list()]),
            model_family=np.array([families.index(fam_of[m]) for m in models]),
            x=c["x"].to_numpy().astype(float),
            n=c["n"].to_numpy().astype(np.int64),
        )
        return layout, c["k"].to_numpy().astype(np.int64)


@dataclass
class PosteriorGrid:
    """The variance-component grid and the fixed-effect prior at each sigma_delta."""

    sigma_cell: np.ndarray
    sigma_model: np.ndarray
    sigma_family: np.ndarray
    sigma_delta: np.ndarray
    lam0: np.ndarray  # (nd, p, p) prior precision of (alpha, task slopes)
    logdet_lam0: np.ndarray  # (nd,)
    c: np.ndarray  # (p,) beta = c' (alpha, slopes)

    @classmethod
    def make(cls, n_tasks: int, sizes: Mapping[str, int] | None = None,
             prior: Mapping[str, float] | None = None) -> PosteriorGrid:
        """The grid at the prior mid-quantiles (equal prior mass per point).

        ``prior``: the prior scales (keys of :func:`_prior_sigmas`), default the scale model's.
        """
        sizes = {**GRID, **(sizes or {})}
        pr = dict(prior) if prior is not None else _prior_sigmas()
        # the scale model gives every task slope its own prior: no spread to integrate over
        sd = np.array([pr["slope_task"]]) if n_tasks > 1 else np.array([0.0])
        return cls.at(
            n_tasks,
            sigma_cell=_halfnormal_grid(pr["sigma_cell"], sizes["sigma_cell"]),
            sigma_model=_halfnormal_grid(pr["sigma_model"], sizes["sigma_model"]),
            sigma_family=_halfnormal_grid(pr["sigma_family"], sizes["sigma_family"]),
            sigma_delta=sd,
            prior=pr,
        )

    @classmethod
    def at(
        cls,
        n_tasks: int,
        *,
        sigma_cell: Any,
        sigma_model: Any,
        sigma_family: Any,
        sigma_delta: Any,
        prior: Mapping[str, float] | None = None,
    ) -> PosteriorGrid:
        """A grid at given values (a single point gives the plug-in posterior)."""
        pr = dict(prior) if prior is not None else _prior_sigmas()
        sd = np.atleast_1d(np.asarray(sigma_delta, dtype=float)) if n_tasks > 1 else np.array([0.0])
        lam0 = []
        logdet = []
        for _s in sd:
            # task slopes b_t ~ N(0, s0^2) independently (models/scale.py,
            # task_slopes="independent"): the prior precision does not depend on the grid's
            # sigma_delta, which only labels the true spread of the simulated slopes
            prec_b = np.eye(n_tasks) / pr["slope_task"] ** 2
            lam = np.zeros((2 * n_tasks, 2 * n_tasks))
            lam[:n_tasks, :n_tasks] = np.eye(n_tasks) / pr["alpha"] ** 2
            lam[n_tasks:, n_tasks:] = prec_b
            lam0.append(lam)
            logdet.append(np.linalg.slogdet(lam)[1])
        c = np.r_[np.zeros(n_tasks), np.full(n_tasks, 1.0 / n_tasks)]
        return cls(
            sigma_cell=np.atleast_1d(np.asarray(sigma_cell, dtype=float)),
            sigma_model=np.atleast_1d(np.asarray(sigma_model, dtype=float)),
            sigma_family=np.atleast_1d(np.asarray(sigma_family, dtype=float)),
            sigma_delta=sd,
            lam0=np.array(lam0),
            logdet_lam0=np.array(logdet),
            c=c,
        )


def plugin_sd_of(design: Design, *, unlimited_items: bool = False) -> float:
    """Posterior sd of beta at the design's variance components (plug-in, normal theory).

    With ``unlimited_items`` every cell's binomial variance is 0: what is left comes from
    family, model and cell variation, which only more models (and tasks) reduce.
    """
    layout = CellLayout.from_design(design)
    g = PosteriorGrid.at(
        len(layout.tasks),
        sigma_cell=max(design.sigma_cell, 1e-6),
        sigma_model=design.sigma_model,
        sigma_family=design.sigma_family,
        sigma_delta=max(design.sigma_task_slope, 1e-6),
    )
    acc = np.array([t.accuracy for t in design.tasks])[layout.cell_task]
    n_eff = np.array([design.n_eff(t) for t in design.tasks])[layout.cell_task]
    s2 = np.zeros(layout.n_cells) if unlimited_items else 1.0 / (n_eff * acc * (1 - acc))
    _, _, var = grid_posterior(layout, g, np.zeros(layout.n_cells), s2)
    return float(np.sqrt(var[0]))


def _restrict(grid: PosteriorGrid, wts: np.ndarray, mass: float = 1e-5) -> PosteriorGrid:
    """The sub-grid (a box) outside which every variance component has posterior mass < mass."""
    shape = (
        len(grid.sigma_cell),
        len(grid.sigma_model),
        len(grid.sigma_family),
        len(grid.sigma_delta),
    )
    w4 = wts.reshape(shape)
    keep = []
    for axis in range(4):
        marginal = w4.sum(axis=tuple(a for a in range(4) if a != axis))
        idx = np.flatnonzero(marginal >= mass)
        keep.append(slice(idx.min(), idx.max() + 1))
    return replace(
        grid,
        sigma_cell=grid.sigma_cell[keep[0]],
        sigma_model=grid.sigma_model[keep[1]],
        sigma_family=grid.sigma_family[keep[2]],
        sigma_delta=grid.sigma_delta[keep[3]],
        lam0=grid.lam0[keep[3]],
        logdet_lam0=grid.logdet_lam0[keep[3]],
    )


def vinv(
    layout: CellLayout, theta: tuple[float, float, float], s2: np.ndarray, R: np.ndarray  # noqa: N803 (matrix notation of the docstring: V^-1 R)
) -> np.ndarray:
    """``V^-1 R`` for the nested covariance at ``theta = (sigma_c, sigma_m, sigma_f)``, R (N, q)."""
    sc, sm, sf = theta
    ms, fs = layout.model_start, layout.family_start
    inv_d = 1.0 / (sc**2 + s2)
    A1 = R * inv_d[:, None]  # noqa: N806 (matrix notation: D^-1 R)
    g = 1.0 + sm**2 * np.add.reduceat(inv_d, ms)  # (M,)
    sR = np.add.reduceat(A1, ms, axis=0) / g[:, None]  # 1' W_m r per model  # noqa: N806 (matrix notation: per-model sums of R)
    WR = A1 - sm**2 * inv_d[:, None] * sR[layout.cell_model]  # noqa: N806 (matrix notation: W_m R)
    a1 = inv_d / g[layout.cell_model]  # W_m 1
    fR = np.add.reduceat(sR, fs, axis=0)  # noqa: N806 (matrix notation: per-family sums of R)
    h = 1.0 + sf**2 * np.add.reduceat(np.add.reduceat(inv_d, ms) / g, fs)  # (F,)
    fam = layout.model_family[layout.cell_model]
    return WR - sf**2 * a1[:, None] * (fR / h[:, None])[fam]


def cell_logits(
    layout: CellLayout, grid: PosteriorGrid, wts: np.ndarray, y: np.ndarray, s2: np.ndarray
) -> np.ndarray:
    """Posterior mean of every cell's logit at the most probable grid point."""
    shape = (
        len(grid.sigma_cell),
        len(grid.sigma_model),
        len(grid.sigma_family),
        len(grid.sigma_delta),
    )
    ic, im, jf, jd = np.unravel_index(int(np.argmax(wts)), shape)
    theta = (grid.sigma_cell[ic], grid.sigma_model[im], grid.sigma_family[jf])
    X = layout.X  # noqa: N806 (the design matrix X)
    VX = vinv(layout, theta, s2, np.column_stack([X, y]))  # noqa: N806 (matrix notation: V^-1 [X, y])
    b = np.linalg.solve(X.T @ VX[:, :-1] + grid.lam0[jd], X.T @ VX[:, -1])
    return y - s2 * vinv(layout, theta, s2, (y - X @ b)[:, None])[:, 0]


def posterior_of(
    layout: CellLayout, grid: PosteriorGrid, k: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, PosteriorGrid]:
    r"""Grid posterior of beta from binomial counts: empirical logits, then one Laplace step.

    The first pass approximates each cell's binomial likelihood by a normal around its
    empirical logit. Weighting cells by a variance computed from their own counts
    correlates weights with outcomes and biases the slope toward 0 when cells are small
    (with 30-40 answers per cell, by ~10% of the slope). The second pass re-centres each
    cell's normal approximation at its posterior mean logit :math:`\hat\eta`, with working
    response :math:`\hat\eta + (k - n\hat p)/(n\hat p(1-\hat p))` and variance
    :math:`1/(n\hat p(1-\hat p))` (a Laplace / penalised-quasi-likelihood step; Breslow &
    Clayton 1993, *JASA* 88, 9-25), on the part of the grid that carries posterior mass.
    """
    n = layout.n.astype(float)
    y, s2 = empirical_logit(k, layout.n)
    wts, _, _ = grid_posterior(layout, grid, y, s2)
    eta = cell_logits(layout, grid, wts, y, s2)
    p = np.clip(expit(eta), 1e-6, 1 - 1e-6)
    w = n * p * (1.0 - p)
    sub = _restrict(grid, wts)
    wts, mu, var = grid_posterior(layout, sub, eta + (k - n * p) / w, 1.0 / w)
    return wts, mu, var, sub


def empirical_logit(k: np.ndarray, n: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Empirical logits of ``k`` of ``n`` (0.5 added to each count) and their sampling variances."""
    k = np.asarray(k, dtype=float)
    n = np.asarray(n, dtype=float)
    y = np.log((k + 0.5) / (n - k + 0.5))
    return y, 1.0 / (k + 0.5) + 1.0 / (n - k + 0.5)


def grid_posterior(
    layout: CellLayout, grid: PosteriorGrid, y: np.ndarray, s2: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Posterior weights of the grid points and the conditional mean/variance of beta.

    The covariance of the empirical logits given theta is nested: family (sigma_f), model
    (sigma_m) and a diagonal (sigma_c^2 + s_i^2). Its inverse and log determinant follow
    from two rank-one (Sherman-Morrison) updates per model and per family, so only
    per-model and per-family sums of the cells are needed.
    """
    X, ms, fs = layout.X, layout.model_start, layout.family_start  # noqa: N806 (the design matrix X)
    d = grid.sigma_cell[:, None] ** 2 + s2[None, :]  # (nc, N)
    w = 1.0 / d
    red = np.add.reduceat
    ld_cells = red(np.log(d), ms, axis=1)  # (nc, M)
    s1 = red(w, ms, axis=1)
    wX = w[:, :, None] * X[None]  # noqa: N806 (matrix notation: W X)
    r1X = red(wX, ms, axis=1)  # (nc, M, p)  # noqa: N806 (matrix notation: 1'W X per model)
    r1y = red(w * y, ms, axis=1)
    p1XX = red(w[:, :, None, None] * layout.OXX[None], ms, axis=1)  # (nc, M, p, p)  # noqa: N806 (matrix notation: X'W X per model)
    p1Xy = red(wX * y[None, :, None], ms, axis=1)  # noqa: N806 (matrix notation: X'W y per model)
    p1yy = red(w * y * y, ms, axis=1)

    sm2 = grid.sigma_model[None, :, None] ** 2
    g = 1.0 + sm2 * s1[:, None, :]  # (nc, nm, M)
    a = sm2 / g
    qXX = p1XX[:, None] - a[..., None, None] * r1X[:, None, :, :, None] * r1X[:, None, :, None, :]  # noqa: N806 (matrix notation: X'Q X)
    qXy = p1Xy[:, None] - a[..., None] * r1X[:, None] * r1y[:, None, :, None]  # noqa: N806 (matrix notation: X'Q y)
    qyy = p1yy[:, None] - a * r1y[:, None] ** 2
    rX = r1X[:, None] / g[..., None]  # noqa: N806 (matrix notation: r'X)
    ry = r1y[:, None] / g
    sm = s1[:, None] / g
    ld = (ld_cells[:, None] + np.log(g)).sum(axis=2)  # (nc, nm)

    fXX = red(qXX, fs, axis=2)  # (nc, nm, F, p, p)  # noqa: N806 (matrix notation: X'Q X per family)
    fXy = red(qXy, fs, axis=2)  # noqa: N806 (matrix notation: X'Q y per family)
    fyy = red(qyy, fs, axis=2)
    frX = red(rX, fs, axis=2)  # noqa: N806 (matrix notation: r'X per family)
    fry = red(ry, fs, axis=2)
    fsm = red(sm, fs, axis=2)
    sf2 = grid.sigma_family[None, None, :, None] ** 2
    h = 1.0 + sf2 * fsm[:, :, None, :]  # (nc, nm, nf, F)
    b = sf2 / h
    QXX = fXX.sum(axis=2)[:, :, None] - np.einsum("ijlf,ijfa,ijfb->ijlab", b, frX, frX)  # noqa: N806 (matrix notation: Q_XX)
    QXy = fXy.sum(axis=2)[:, :, None] - np.einsum("ijlf,ijfa,ijf->ijla", b, frX, fry)  # noqa: N806 (matrix notation: Q_Xy)
    Qyy = fyy.sum(axis=2)[:, :, None] - np.einsum("ijlf,ijf->ijl", b, fry**2)  # noqa: N806 (matrix notation: Q_yy)
    logdetV = ld[:, :, None] + np.log(h).sum(axis=3)  # (nc, nm, nf)  # noqa: N806 (log |V|)

    nd, p = grid.lam0.shape[:2]
    # H = Q_XX + prior precision, laid out (p, p, G) so each entry is a contiguous vector
    Hc = (  # noqa: N806 (H = Q_XX + prior precision, stacked)
        np.moveaxis(QXX, (3, 4), (0, 1))[..., None]
        + np.moveaxis(grid.lam0, 0, 2)[:, :, None, None, None, :]
    )
    Hc = Hc.reshape(p, p, -1)  # noqa: N806 (H = Q_XX + prior precision, stacked)
    G = Hc.shape[-1]  # noqa: N806 (G matrices, as in (p, p, G))
    L = batched_cholesky(Hc)  # noqa: N806 (the Cholesky factor L)
    vy = forward_solve(
        L, np.broadcast_to(QXy[:, :, :, None], (*QXy.shape[:3], nd, p)).reshape(G, p)
    )
    vc = forward_solve(L, np.broadcast_to(grid.c, (G, p)))
    logdetH = 2.0 * sum(np.log(L[j][j]) for j in range(p))  # noqa: N806 (log |H|)
    quad = sum(v * v for v in vy)
    logml = -0.5 * (
        (logdetV[..., None] - grid.logdet_lam0 + Qyy[..., None]).ravel() + logdetH - quad
    )
    mu = sum(a * b for a, b in zip(vc, vy, strict=True))
    var = sum(a * a for a in vc)
    wts = np.exp(logml - logml.max())
    return wts / wts.sum(), mu, var


def batched_cholesky(Hc: np.ndarray) -> list[list[np.ndarray]]:  # noqa: N803 (H = Q_XX + prior precision, stacked)
    """Cholesky factors of a stack of small SPD matrices ``Hc`` (p, p, G), vectorised over G.

    Returns the lower triangle as nested lists ``L[i][j]`` (i >= j) of length-G vectors: for
    p of 2-20, column loops over contiguous vectors are far faster than LAPACK called once
    per matrix.
    """
    p = Hc.shape[0]
    L: list[list[np.ndarray]] = [[np.empty(0)] * (i + 1) for i in range(p)]  # noqa: N806 (the Cholesky factor L)
    for j in range(p):
        acc = Hc[j, j].copy()
        for k in range(j):
            acc -= L[j][k] * L[j][k]
        L[j][j] = np.sqrt(np.maximum(acc, 1e-300))
        for i in range(j + 1, p):
            acc = Hc[i, j].copy()
            for k in range(j):
                acc -= L[i][k] * L[j][k]
            L[i][j] = acc / L[j][j]
    return L


def forward_solve(L: list[list[np.ndarray]], b: np.ndarray) -> list[np.ndarray]:  # noqa: N803 (the Cholesky factor L)
    """Solve ``L v = b`` for the factors of :func:`batched_cholesky` and ``b`` (G, p)."""
    v: list[np.ndarray] = []
    for i in range(len(L)):
        acc = np.array(b[:, i], dtype=float)
        for k in range(i):
            acc -= L[i][k] * v[k]
        v.append(acc / L[i][i])
    return v


def mixture_draws(
    wts: np.ndarray, mu: np.ndarray, var: np.ndarray, u: np.ndarray, z: np.ndarray
) -> np.ndarray:
    """Draws from a normal mixture (weights, means, variances) with the given uniforms and normals."""
    idx = np.searchsorted(np.cumsum(wts), u * (1.0 - 1e-12))
    idx = np.minimum(idx, len(wts) - 1)
    return mu[idx] + np.sqrt(var[idx]) * z


def fast_fit(
    cells: pl.DataFrame,
    *,
    rule: DecisionRule | None = None,
    seed: int = 0,
    draws: int = N_DRAWS,
    grid: Mapping[str, int] | None = None,
) -> dict[str, Any]:
    """Approximate posterior of the scale slope ``beta`` and its decision (``docs/power.md``).

    Parameters
    ----------
    cells
        Cells as the scale model takes them: ``model, family, task, x, n, k`` (rows with
        ``n == 0`` are ignored).
    rule
        Decision rule (default :class:`~selfmodel.decisions.hypotheses.DecisionRule`).
    seed
        Seed of the posterior draws handed to the rule.
    draws
        Number of posterior draws.
    grid
        Grid points per variance component (keys of :data:`GRID`).

    Returns
    -------
    dict
        What :func:`selfmodel.decisions.hypotheses.decide` returns (``mean``, ``sd``, ``hdi_low``,
        ``hdi_high``, ``prob_positive``, ``decision``, ...) plus ``sigma_posterior_mean``
        (posterior means of the variance components).

    Examples
    --------
    >>> from selfmodel.records.simulate import simulate_scale_cells
    >>> cells, truth = simulate_scale_cells(seed=3, beta=0.6)
    >>> fast_fit(cells)["decision"]
    'improves'
    """
    layout, k = CellLayout.from_cells(cells)
    wts, mu, var, g = posterior_of(layout, PosteriorGrid.make(len(layout.tasks), grid), k)
    rng = np.random.default_rng(seed)
    d = mixture_draws(wts, mu, var, rng.random(draws), rng.standard_normal(draws))
    out = decide(d, rule or DecisionRule(), n_models=len(layout.models))
    shape = (len(g.sigma_cell), len(g.sigma_model), len(g.sigma_family), len(g.sigma_delta))
    w4 = wts.reshape(shape)
    out["sigma_posterior_mean"] = {
        "sigma_cell": float(w4.sum(axis=(1, 2, 3)) @ g.sigma_cell),
        "sigma_model": float(w4.sum(axis=(0, 2, 3)) @ g.sigma_model),
        "sigma_family": float(w4.sum(axis=(0, 1, 3)) @ g.sigma_family),
        "sigma_delta": float(w4.sum(axis=(0, 1, 2)) @ g.sigma_delta),
    }
    return out
