"""Small fakes of a fit for the fast layer: draws with the right names, dims and coords, no compile.

pymc-marketing's ``mock_sample`` idea: a model's *prior* draws stand in for its posterior.
They have every variable, dim and coord a real fit has, so the plumbing downstream of
sampling (the fit cache and its provenance, diagnostics, checks, results, sentences) can be
tested in the fast layer. Nothing here says anything about the statistics: a test of a
decision's correctness on real data belongs to the ``ci``/``slow`` layers.

The prior is drawn with PyTensor's ``FAST_COMPILE`` mode (the Python linker): no numba or C
code is generated.

- :func:`prior_as_posterior` -- a fit tree (``posterior`` and ``sample_stats``) for a model;
- :func:`posterior_tree` -- a fit tree from numpy draws you choose;
- :func:`install_fake_nutpie` -- make ``selfmodel.fitting.sampling.fit`` sample through the above (the
  ``fake_nutpie`` fixture in ``conftest.py``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pytest
import xarray as xr

from selfmodel.common import arviz_ops

#: PyTensor mode of every fake: the Python linker, nothing compiled to machine code.
FAST: str = "FAST_COMPILE"


def _sample_stats(chains: int, draws: int, seed: int, divergences: int = 0) -> xr.Dataset:
    rng = np.random.default_rng(seed)
    diverging = np.zeros((chains, draws), dtype=bool)
    diverging.flat[:divergences] = True
    return xr.Dataset(
        {
            "diverging": (("chain", "draw"), diverging),
            "energy": (("chain", "draw"), rng.normal(size=(chains, draws))),
        },
        coords={"chain": np.arange(chains), "draw": np.arange(draws)},
    )


def posterior_tree(
    draws: Mapping[str, tuple[Sequence[str], np.ndarray]],
    coords: Mapping[str, Sequence[Any]] | None = None,
    *,
    divergences: int = 0,
    seed: int = 0,
) -> arviz_ops.InferenceData:
    """A fit tree from ``{name: (dims, array of shape (chain, draw, ...))}``.

    ``dims`` name the dimensions after ``chain`` and ``draw``; ``coords`` label them.
    """
    first = next(iter(draws.values()))[1]
    chains, n = first.shape[:2]
    post = xr.Dataset(
        {name: (("chain", "draw", *dims), np.asarray(arr)) for name, (dims, arr) in draws.items()},
        coords={"chain": np.arange(chains), "draw": np.arange(n), **(coords or {})},
    )
    return arviz_ops.from_datasets(
        posterior=post, sample_stats=_sample_stats(chains, n, seed, divergences)
    )


def prior_as_posterior(
    pm_model: Any, *, draws: int = 100, chains: int = 2, seed: int = 0
) -> arviz_ops.InferenceData:
    """``chains x draws`` prior draws of ``pm_model``'s free and deterministic variables,
    shaped and labelled as a posterior (same ``seed``, same draws)."""
    import pymc as pm

    names = [v.name for v in (*pm_model.free_RVs, *pm_model.deterministics)]
    with pm_model:
        prior = pm.sample_prior_predictive(
            draws=chains * draws, var_names=names, random_seed=seed,
            compile_kwargs={"mode": FAST},
        )["prior"].to_dataset()
    reshaped = {
        name: (
            ("chain", "draw", *prior[name].dims[2:]),
            prior[name].values.reshape(chains, draws, *prior[name].shape[2:]),
        )
        for name in names
    }
    coords = {k: v for k, v in prior.coords.items() if k not in ("chain", "draw")}
    post = xr.Dataset(
        reshaped, coords={"chain": np.arange(chains), "draw": np.arange(draws), **coords}
    )
    return arviz_ops.from_datasets(posterior=post, sample_stats=_sample_stats(chains, draws, seed))


class FakeCompiled:
    """What the fake ``nutpie.compile_pymc_model`` returns: the PyMC model, uncompiled."""

    def __init__(self, pm_model: Any) -> None:
        self.pm_model = pm_model


def install_fake_nutpie(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """Replace nutpie's compile and sample by :func:`prior_as_posterior` for one test.

    Returns counters of the calls (``compile``, ``sample``), so that a test can tell a
    reused fit from a new one.
    """
    import nutpie

    calls = {"compile": 0, "sample": 0}

    def compile_pymc_model(pm_model: Any, **kwargs: Any) -> FakeCompiled:
        calls["compile"] += 1
        return FakeCompiled(pm_model)

    def sample(compiled: FakeCompiled, *, draws: int = 100, chains: int = 2, seed: int = 0,
               **kwargs: Any) -> arviz_ops.InferenceData:
        calls["sample"] += 1
        return prior_as_posterior(compiled.pm_model, draws=draws, chains=chains, seed=seed)

    monkeypatch.setattr(nutpie, "compile_pymc_model", compile_pymc_model)
    monkeypatch.setattr(nutpie, "sample", sample)
    # fit(..., reuse_compiled=True) compiles through selfmodel.fitting.compile_cache.compiled_model
    import selfmodel.fitting.compile_cache
    import selfmodel.fitting.sampling

    monkeypatch.setattr(selfmodel.fitting.compile_cache, "compiled_model", compile_pymc_model)
    monkeypatch.setattr(selfmodel.fitting.sampling, "compiled_model", compile_pymc_model, raising=False)
    return calls
