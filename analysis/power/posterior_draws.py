"""Variance components drawn from a fit's posterior, one draw per simulated data set.

Power computed at the posterior means of the variance components treats them as known. Here
every simulated data set gets its own draw from the saved fit's posterior instead (chains
and draws pooled, drawn without replacement while there are enough, seeded), so the power
curve averages over what the fit does not know about the components (the "assurance" or
expected power of O'Hagan, Stevens & Campbell 2005, *Pharmaceutical Statistics* 4(3)).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from selfmodel.common import arviz_ops


def _flat(post: Any, name: str) -> np.ndarray:
    da = post[name]
    if "task" in da.dims:
        return np.asarray(da.stack(sample=("chain", "draw")).transpose("task", "sample").values,
                          dtype=float)
    return np.asarray(da.values, dtype=float).ravel()


def _indices(total: int, n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng([seed, 16])
    return rng.choice(total, size=n, replace=n > total)


def _task_spread(slopes: np.ndarray) -> np.ndarray:
    """Standard deviation of the task slopes across tasks in every draw (0 with one task)."""
    if slopes.shape[0] < 2:
        return np.zeros(slopes.shape[1])
    return slopes.std(axis=0, ddof=1)


def scale_component_draws(idata: Any, n: int, *, seed: int) -> list[dict[str, float]]:
    """``n`` draws of the scale model's variance components, as ``Design`` fields.

    ``sigma_task_slope`` is ``sigma_delta`` when the fit has it, else the spread of the task
    slopes across tasks in the same draw (task slopes with their own priors).
    """
    post = arviz_ops.posterior(idata)
    cols = {k: _flat(post, k) for k in ("sigma_family", "sigma_model", "sigma_cell")}
    if "sigma_delta" in post:
        cols["sigma_task_slope"] = _flat(post, "sigma_delta")
    else:
        cols["sigma_task_slope"] = _task_spread(_flat(post, "slope_task"))
    idx = _indices(len(cols["sigma_cell"]), n, seed)
    return [{k: float(v[i]) for k, v in cols.items()} for i in idx]


#: The signal-detection model's components (``models/sdt.py``) and the ``DprimeDesign`` fields.
SDT_COMPONENTS = {
    f"sigma_{side}_{level}": f"sigma_{side}_{level}"
    for side in ("dprime", "criterion") for level in ("family", "model", "cell")
}


def sdt_component_draws(idata: Any, n: int, *, seed: int) -> list[dict[str, float]]:
    """``n`` draws of the signal-detection model's variance components.

    The family, model and cell standard deviations of d' and of the criterion, and
    ``sigma_task_slope``: the spread of the d' task slopes across tasks in the same draw.
    A fit without cell effects has no ``sigma_*_cell``; they are 0 then.
    """
    post = arviz_ops.posterior(idata)
    cols: dict[str, np.ndarray] = {}
    size = None
    for ours, theirs in SDT_COMPONENTS.items():
        if theirs in post:
            cols[ours] = _flat(post, theirs)
            size = len(cols[ours])
    if size is None:
        raise KeyError("the fit has no sigma_dprime_* / sigma_criterion_* variables")
    for ours in SDT_COMPONENTS:
        cols.setdefault(ours, np.zeros(size))
    cols["sigma_task_slope"] = _task_spread(_flat(post, "dprime_slope_task"))
    idx = _indices(size, n, seed)
    return [{k: float(v[i]) for k, v in cols.items()} for i in idx]


def summarise_draws(components: Sequence[Mapping[str, float]]) -> dict[str, Any]:
    """Per component: the 5%, 50% and 95% quantiles and mean over the draws used, and their number."""
    out: dict[str, Any] = {"n": len(components)}
    for k in sorted(components[0]) if components else []:
        v = np.array([c[k] for c in components], dtype=float)
        out[k] = {"mean": float(v.mean()), "q05": float(np.quantile(v, 0.05)),
                  "q50": float(np.median(v)), "q95": float(np.quantile(v, 0.95))}
    return out
