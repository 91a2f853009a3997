"""The ArviZ 1 helpers (selfmodel.common.arviz_ops) and the stack in the fit cache key.

Reference values: the 94% HDI of a standard normal is +/-1.8808 (norm.ppf(0.97)); PSIS-LOO
of a log likelihood shifted by a constant per point shifts each pointwise ELPD by exactly
that constant (the importance ratios do not change), so the ELPD difference of two such
models is known in closed form and its standard error is 0.
"""

from __future__ import annotations

import json
from importlib import metadata

import numpy as np
import pytest
import xarray as xr
from scipy.stats import norm

from selfmodel.common import arviz_ops
from selfmodel.fitting import checks
from selfmodel.fitting.sampling import _cache_key, package_versions


def _post_ll(seed: int, n_obs: int = 40) -> tuple[xr.Dataset, xr.Dataset]:
    rng = np.random.default_rng(seed)
    coords = {"chain": [0, 1], "draw": np.arange(500), "obs": np.arange(n_obs)}
    post = xr.Dataset({"a": (("chain", "draw"), rng.normal(size=(2, 500)))}, coords=coords)
    ll = xr.Dataset(
        {"ll": (("chain", "draw", "obs"), rng.normal(-1.0, 0.3, (2, 500, n_obs)))}, coords=coords
    )
    return post, ll


def test_hdi_of_a_normal_sample_is_its_central_interval():
    d = np.random.default_rng(0).normal(size=200_000)
    lo, hi = arviz_ops.hdi(d, 0.94)
    assert lo == pytest.approx(-norm.ppf(0.97), abs=0.02)
    assert hi == pytest.approx(norm.ppf(0.97), abs=0.02)


def test_loo_shift_gives_exact_elpd_difference_through_compare():
    post, ll = _post_ll(1)
    a = arviz_ops.loo(post, ll, "ll")
    b = arviz_ops.loo(post, ll - 0.1, "ll")
    np.testing.assert_allclose(b["loo_i"], a["loo_i"] - 0.1, atol=1e-10)
    assert a["n_data_points"] == 40 and a["n_samples"] == 1000
    assert a["elpd_loo"] == pytest.approx(float(np.sum(a["loo_i"])))

    def saved(r):  # the shape checks.loo saves
        return {"elpd_loo": r["elpd_loo"], "se": r["se"], "p_loo": r["p_loo"],
                "n_samples": r["n_samples"], "n_data_points": r["n_data_points"],
                "good_k": r["good_k"], "warning": r["warning"], "n_high_k": 0,
                "pareto_k": [float(v) for v in r["pareto_k"]],
                "elpd_i": [float(v) for v in r["loo_i"]], "observed_sha256": "same"}

    rows = checks.compare({"worse": saved(b), "better": saved(a)})
    assert [r["model"] for r in rows] == ["better", "worse"]
    assert [r["rank"] for r in rows] == [0, 1]
    assert rows[0]["elpd_diff"] == 0.0
    assert rows[1]["elpd_diff"] == pytest.approx(0.1 * 40, abs=1e-8)  # best minus this, unrounded
    assert rows[1]["dse"] == pytest.approx(0.0, abs=1e-6)
    assert rows[0]["elpd_loo"] == pytest.approx(a["elpd_loo"])
    assert rows[0]["weight"] > rows[1]["weight"]


def test_save_load_keeps_groups_values_and_provenance(tmp_path):
    post, _ = _post_ll(2)
    stats = xr.Dataset({"energy": (("chain", "draw"), np.random.default_rng(3).normal(size=(2, 500))),
                        "diverging": (("chain", "draw"), np.zeros((2, 500), dtype=bool))})
    idata = arviz_ops.from_datasets(posterior=post, sample_stats=stats)
    idata.attrs["selfmodel_provenance"] = json.dumps({"seed": 7})
    arviz_ops.save(idata, tmp_path / "f.nc")
    back = arviz_ops.load(tmp_path / "f.nc")
    assert json.loads(back.attrs["selfmodel_provenance"]) == {"seed": 7}
    np.testing.assert_array_equal(arviz_ops.posterior(back)["a"].values, post["a"].values)
    assert isinstance(arviz_ops.posterior(back), xr.Dataset)
    assert np.isfinite(arviz_ops.min_bfmi(back))


def test_cache_key_names_the_new_stack_so_old_fits_are_not_reused():
    v = package_versions()
    for name in ("pymc", "pytensor", "arviz", "arviz-stats", "nutpie", "numba", "python"):
        assert v[name] not in ("", "absent"), name
    assert int(v["pymc"].split(".")[0]) >= 6
    assert int(metadata.version("arviz").split(".")[0]) >= 1
    prov = {"model": "scale", "options": {}, "priors": {}, "sampler": {}, "seed": 1,
            "data_sha256": "x", "versions": v}
    old = {**prov, "versions": {**v, "pymc": "5.28.5", "arviz": "0.23.4"}}
    assert _cache_key(prov) != _cache_key(old)
