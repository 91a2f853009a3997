"""Helpers that build the model files' PyMC graphs.

Priors as random variables, index arrays and zero-sum group effects; the decorrelated slope
basis is :mod:`selfmodel.models.decorrelation`. What a model declares (``SPEC``, priors as
dicts) is in :mod:`selfmodel.models.spec`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd
import pymc as pm

from selfmodel.models.spec import Prior


def prior_rv(name: str, prior: Prior, **kwargs: Any) -> Any:
    """Create the PyMC random variable ``name`` from a ``(dist, params)`` prior."""
    dist, params = prior
    return getattr(pm, dist)(name, **params, **kwargs)


def factorize(values: Any) -> tuple[np.ndarray, list[str]]:
    """Integer codes and sorted labels for a column of strings."""
    codes, uniques = pd.factorize(pd.Series(list(values), dtype="string"), sort=True)
    return codes.astype("int64"), [str(u) for u in uniques]


#: What a zero-sum group effect of spread ``sigma`` is, for a model's declared text: its
#: ``K`` levels sum to 0, so each level's marginal sd is ``sigma * sqrt((K - 1) / K)``
#: (the ``ZeroSumNormal`` of PyMC), not ``sigma``.
ZERO_SUM_TEXT = (r"Zero-sum: the $K$ levels of a group effect of spread $\sigma$ sum to 0, so each "
                 r"level's marginal sd is $\sigma\sqrt{(K-1)/K}$, not $\sigma$.")


def zero_sum_effect(name: str, sigma: Any, dim: str, size: int) -> Any:
    """Non-centred zero-sum group effect ``sigma * z`` with ``z ~ ZeroSumNormal(1)``.

    A dimension with a single level has no deviation to estimate: the effect is 0.
    """
    import pytensor.tensor as pt

    if size < 2:
        return pm.Deterministic(name, pt.zeros(size), dims=dim)
    z = pm.ZeroSumNormal(f"z_{name}", sigma=1.0, dims=dim)
    return pm.Deterministic(name, sigma * z, dims=dim)


def family_model_cell_effects(
    p: Mapping[str, Prior], n_families: int, n_models: int
) -> tuple[Any, Any, Any, Any]:
    """Zero-sum family and model effects and a non-centred cell effect.

    Returns ``(u, v, sigma_cell, z_cell)``: ``u_family`` with spread ``sigma_family``,
    ``v_model`` with spread ``sigma_model``, and ``z_cell ~ Normal(0, 1)`` on dim ``cell``
    (the cell effect is ``sigma_cell * z_cell``), created in that order.
    """
    s_fam = prior_rv("sigma_family", p["sigma_family"])
    u = zero_sum_effect("u_family", s_fam, "family", n_families)
    s_mod = prior_rv("sigma_model", p["sigma_model"])
    v = zero_sum_effect("v_model", s_mod, "model", n_models)
    s_cell = prior_rv("sigma_cell", p["sigma_cell"])
    return u, v, s_cell, pm.Normal("z_cell", 0.0, 1.0, dims="cell")


def scale_of(data: Any, model: str, rows: str = "cell") -> np.ndarray:
    """The scale variable ``x`` of every row as floats; a missing value is an error."""
    x = np.asarray(data["x"], dtype=float)
    if np.isnan(x).any():
        raise ValueError(
            f"{model} model needs x for every {rows}; drop models without the scale variable")
    return x
