"""selfmodel.fitting.compile_cache: data as shared variables, structure keys, the in-process memo.

Reference values: the log density and gradient of the original ``pymc.Model`` (PyMC's own
``compile_logp``/``compile_dlogp``) at the model's initial point; and draws of the first
compiled model for the memo test.
"""

from __future__ import annotations

import ctypes

import numpy as np
import pytest

import selfmodel.models.scale as scale
from selfmodel.fitting import compile_cache as cc
from selfmodel.records.simulate import simulate_scale_cells


def cells(seed: int, tasks: int = 3):
    data, _ = simulate_scale_cells(seed=seed, n_families=3, sizes_per_family=3, n_tasks=tasks,
                                   n_per_cell=50)
    return data


def test_data_as_shared_keeps_the_model():
    """Same variables, order, coords; no data constants left; same logp and gradient."""
    from pymc.model.fgraph import fgraph_from_model

    m = scale.build(cells(1))
    s = cc.data_as_shared(m)
    assert [v.name for v in s.free_RVs] == [v.name for v in m.free_RVs]
    assert [v.name for v in s.deterministics] == [v.name for v in m.deterministics]
    assert {k: list(v) for k, v in s.coords.items()} == {k: list(v) for k, v in m.coords.items()}
    fgraph, _ = fgraph_from_model(s, inlined_views=True)
    assert cc._array_constants(fgraph) == []
    values = cc._shared_values(s)
    assert list(values) == [f"__data_{i}" for i in range(len(values))]
    observed = np.asarray(cells(1)["k"])
    assert any(np.array_equal(v, observed) for v in values.values())
    point = m.initial_point(random_seed=3)
    assert s.initial_point(random_seed=3).keys() == point.keys()
    mode = "FAST_COMPILE"
    np.testing.assert_allclose(s.compile_logp(mode=mode)(point), m.compile_logp(mode=mode)(point),
                               rtol=1e-12)
    np.testing.assert_allclose(s.compile_dlogp(mode=mode)(point),
                               m.compile_dlogp(mode=mode)(point), rtol=1e-10)


def test_structure_key_ignores_data_values_only():
    """New data of the same shape keeps the key; another shape or prior changes it."""
    key = cc.structure_key(cc.data_as_shared(scale.build(cells(1))))
    assert cc.structure_key(cc.data_as_shared(scale.build(cells(2)))) == key
    assert cc.structure_key(cc.data_as_shared(scale.build(cells(1, tasks=4)))) != key
    wider = {"slope_task": ("Normal", {"mu": 0.0, "sigma": 2.0})}
    assert cc.structure_key(cc.data_as_shared(scale.build(cells(1), priors=wider))) != key
    assert cc.structure_key(
        cc.data_as_shared(scale.build(cells(1), family_slopes=True))) != key


def test_default_cache_dir_from_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("SELFMODEL_CACHE_DIR", str(tmp_path / "c"))
    assert cc.default_cache_dir() == tmp_path / "c"
    monkeypatch.delenv("SELFMODEL_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "x"))
    assert cc.default_cache_dir() == tmp_path / "x" / "selfmodel"


def c_logp(compiled, x: np.ndarray) -> float:
    """Call the compiled C log density of a nutpie model (what the sampler calls)."""
    x = np.ascontiguousarray(x, dtype=np.float64)
    grad = np.empty_like(x)
    logp = np.empty((), dtype=np.float64)
    dbl = ctypes.POINTER(ctypes.c_double)
    code = compiled.compiled_logp_func.ctypes(
        x.size, x.ctypes.data_as(dbl), grad.ctypes.data_as(dbl), logp.ctypes.data_as(dbl),
        compiled.user_data.ctypes.data_as(ctypes.c_void_p),
    )
    assert code == 0
    return float(logp)


@pytest.mark.slow
def test_memo_swaps_data_without_recompiling(tmp_path):
    """A second model of the same structure reuses the compiled code with its own data.

    References: PyMC's logp of each model at the same unconstrained point; and the draws of
    the first compiled model (memo hit with the same data must reproduce them exactly).
    """
    import nutpie

    cc.memo_info(clear=True)
    m1, m2 = scale.build(cells(1)), scale.build(cells(2))
    first = cc.compiled_model(m1, tmp_path)
    second = cc.compiled_model(m2, tmp_path)
    again = cc.compiled_model(m1, tmp_path)
    assert cc.memo_info() == {"hits": 2, "misses": 1, "size": 1}
    assert (tmp_path / "numba").is_dir()

    x = first.initial_point_func(7)
    names, slices, shapes = first.shape_info
    for compiled, model in ((first, m1), (second, m2), (again, m1)):
        point = {
            name: x[sl].reshape(shape)
            for name, sl, shape in zip(names, slices, shapes, strict=False)
            if name in model.initial_point()
        }
        expected = model.compile_logp(mode="FAST_COMPILE")(point)
        assert c_logp(compiled, x) == pytest.approx(float(expected), rel=1e-9)
    assert c_logp(first, x) != pytest.approx(c_logp(second, x), rel=1e-6)

    kw = {"draws": 30, "tune": 30, "chains": 2, "cores": 1, "seed": 5, "progress_bar": False}
    a = nutpie.sample(first, **kw).posterior
    b = nutpie.sample(again, **kw).posterior
    for var in ("beta", "alpha", "sigma_cell"):
        np.testing.assert_array_equal(a[var].values, b[var].values)


@pytest.mark.slow
def test_fit_reuse_compiled_is_opt_in_keyed_and_deterministic():
    """``fit(reuse_compiled=True)``: memo hit on the second fit, its own cache key, same draws."""
    from selfmodel.fitting.sampling import SamplerSettings, fit

    tiny = SamplerSettings(draws=30, tune=30, chains=1, cores=1)
    cc.memo_info(clear=True)
    a = fit("scale", cells(1), seed=4, settings=tiny, reuse_compiled=True)
    b = fit("scale", cells(2), seed=4, settings=tiny, reuse_compiled=True)
    again = fit("scale", cells(1), seed=4, settings=tiny, reuse_compiled=True)
    assert cc.memo_info() == {"hits": 2, "misses": 1, "size": 1}
    np.testing.assert_array_equal(a.idata.posterior["beta"].values,
                                  again.idata.posterior["beta"].values)
    assert a.provenance["compile"] == "shared_data"
    assert a.provenance["cache_key"] == again.provenance["cache_key"]
    assert b.provenance["cache_key"] != a.provenance["cache_key"]
    plain = fit("scale", cells(1), seed=4, settings=tiny)
    assert "compile" not in plain.provenance
    assert plain.provenance["cache_key"] != a.provenance["cache_key"]
    assert cc.memo_info()["hits"] == 2  # the default path does not touch the memo
