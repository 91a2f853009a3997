"""Helpers shared by the model files: priors from dicts, and cell data to index arrays."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd
import pymc as pm

#: A prior: (PyMC distribution name, keyword arguments).
Prior = tuple[str, dict[str, float]]


def merge_priors(
    defaults: Mapping[str, Prior], overrides: Mapping[str, Prior] | None
) -> dict[str, Prior]:
    """Return ``defaults`` updated with ``overrides``; unknown names are an error."""
    merged = dict(defaults)
    for name, prior in (overrides or {}).items():
        if name not in defaults:
            raise KeyError(f"unknown prior '{name}'; this model has {sorted(defaults)}")
        merged[name] = prior
    return merged


def scale_priors(priors: Mapping[str, Prior], factor: float) -> dict[str, Prior]:
    """Multiply every prior's scale (``sigma``) by ``factor``; used for prior sensitivity."""
    out: dict[str, Prior] = {}
    for name, (dist, kw) in priors.items():
        kw2 = dict(kw)
        if "sigma" in kw2:
            kw2["sigma"] = kw2["sigma"] * factor
        out[name] = (dist, kw2)
    return out


def prior_rv(name: str, prior: Prior, **kwargs: Any) -> Any:
    """Create the PyMC random variable ``name`` from a ``(dist, params)`` prior."""
    dist, params = prior
    return getattr(pm, dist)(name, **params, **kwargs)


def factorize(values: Any) -> tuple[np.ndarray, list[str]]:
    """Integer codes and sorted labels for a column of strings."""
    codes, uniques = pd.factorize(pd.Series(list(values), dtype="string"), sort=True)
    return codes.astype("int64"), [str(u) for u in uniques]


def zero_sum_effect(name: str, sigma: Any, dim: str, size: int) -> Any:
    """Non-centred zero-sum group effect ``sigma * z`` with ``z ~ ZeroSumNormal(1)``.

    A dimension with a single level has no deviation to estimate: the effect is 0.
    """
    import pytensor.tensor as pt

    if size < 2:
        return pm.Deterministic(name, pt.zeros(size), dims=dim)
    z = pm.ZeroSumNormal(f"z_{name}", sigma=1.0, dims=dim)
    return pm.Deterministic(name, sigma * z, dims=dim)
