"""The few ArviZ operations the project needs, spelled once for ArviZ 1.x.

ArviZ 1 (``arviz-base``, ``arviz-stats``, ``arviz-plots``) replaced ``InferenceData`` with
:class:`xarray.DataTree`: a fit's ``idata.posterior`` is a tree node, not a
:class:`xarray.Dataset` (select variables from :func:`posterior`), ``az.hdi`` takes
``prob=`` (not ``hdi_prob=``), ``az.loo`` returns ``ELPDDataLOO`` with ``elpd``/``p``/
``elpd_i`` (not ``elpd_loo``/``p_loo``/``loo_i``) and ``az.compare`` rounds its table
unless told not to and no longer has a ``warning`` column. nutpie and PyMC 6 return a
``DataTree`` from sampling. The rest of the project calls these helpers, so that a
further ArviZ change is one edit here.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import arviz as az
import numpy as np
import xarray as xr

#: What a fit's draws are held in (``nutpie.sample``, ``pm.sample`` and :func:`load` return it).
InferenceData = xr.DataTree


def from_datasets(**groups: xr.Dataset | xr.DataTree) -> xr.DataTree:
    """A fit tree from named groups, e.g. ``from_datasets(posterior=ds)``.

    Replaces ``az.InferenceData(posterior=ds, ...)``.
    """
    return xr.DataTree.from_dict(
        {name: g.to_dataset() if isinstance(g, xr.DataTree) else g for name, g in groups.items()}
    )


def posterior(idata: xr.DataTree) -> xr.Dataset:
    """The posterior group as a :class:`xarray.Dataset` (``ds[[names]]`` selection works)."""
    return idata["posterior"].to_dataset()


def load(path: Path | str) -> xr.DataTree:
    """Read a fit saved by :func:`save` (replaces ``az.from_netcdf``; returns a ``DataTree``)."""
    return az.from_netcdf(path, engine="h5netcdf")


def save(idata: xr.DataTree, path: Path | str) -> None:
    """Write a fit as netCDF (every group, and the root ``attrs``) with h5netcdf."""
    idata.to_netcdf(str(path), engine="h5netcdf")


def hdi(draws: Any, prob: float) -> tuple[float, float]:
    """Highest density interval of a flat sample (replaces ``az.hdi(x, hdi_prob=p)``)."""
    lo, hi = az.hdi(np.asarray(draws, dtype=float).ravel(), prob=prob)
    return float(lo), float(hi)


def min_bfmi(idata: xr.DataTree) -> float:
    """Smallest E-BFMI over chains (``az.bfmi`` now returns a tree of per-chain values)."""
    res = az.bfmi(idata)
    return float(np.min(res["energy"].values))


def loo(posterior_ds: xr.Dataset, log_lik: xr.Dataset, var_name: str) -> dict[str, Any]:
    """PSIS-LOO of ``log_lik[var_name]`` with the fields the project reads, ArviZ-0.x names.

    Returns ``elpd_loo``, ``se``, ``p_loo``, ``n_data_points``, ``n_samples``, ``good_k``,
    ``warning``, ``pareto_k`` and ``loo_i`` (the last two as flat arrays).
    """
    tree = from_datasets(posterior=posterior_ds, log_likelihood=log_lik)
    res = az.loo(tree, pointwise=True, var_name=var_name)
    return {
        "elpd_loo": float(res.elpd),
        "se": float(res.se),
        "p_loo": float(res.p),
        "n_data_points": int(res.n_data_points),
        "n_samples": int(res.n_samples),
        "good_k": float(res.good_k),
        "warning": bool(res.warning),
        "pareto_k": np.asarray(res.pareto_k).ravel(),
        "loo_i": np.asarray(res.elpd_i).ravel(),
    }


def elpd_data(d: Mapping[str, Any]) -> Any:
    """An ``ELPDDataLOO`` rebuilt from a saved LOO result (``elpd_loo``, ``elpd_i``, ...)."""
    loo_i = xr.DataArray(np.asarray(d["elpd_i"], dtype=float), dims=["obs"], name="loo_i")
    k = xr.DataArray(
        np.asarray([np.nan if v is None else v for v in d["pareto_k"]], dtype=float), dims=["obs"]
    )
    return az.ELPDDataLOO(
        elpd=d["elpd_loo"], se=d["se"], p=d["p_loo"], n_samples=d["n_samples"],
        n_data_points=d["n_data_points"], scale="log", warning=d["warning"],
        good_k=d["good_k"], elpd_i=loo_i, pareto_k=k,
    )


def compare(elpds: Mapping[str, Any]) -> Any:
    """``az.compare`` with stacking weights, unrounded, in ArviZ 0.x's columns and signs.

    A DataFrame, best model first, with ``rank``, ``elpd_loo``, ``p_loo``, ``elpd_diff``
    (best minus this model, >= 0, as ArviZ 0.x; ArviZ 1 reports this minus best),
    ``dse``, ``se`` and ``weight``. ArviZ 1 has no ``warning`` column: take it from the
    inputs. ``round_to="none"``: ArviZ 1 rounds the table by default (``None`` means "auto").
    """
    table = az.compare(dict(elpds), method="stacking", round_to="none")
    table = table.rename(columns={"elpd": "elpd_loo", "p": "p_loo"})
    table["elpd_diff"] = -table["elpd_diff"]
    return table[["rank", "elpd_loo", "p_loo", "elpd_diff", "dse", "se", "weight"]]
