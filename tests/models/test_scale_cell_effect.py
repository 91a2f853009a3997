"""``selfmodel.models.scale.build(cell_effect=...)``: centred, non-centred and per-cell cell effects.

The three parameterisations are one model: at matching points their log densities differ
exactly by the Jacobian of :math:`w = \\sigma_w z` (one :math:`\\log \\sigma_w` per centred
cell). ``"auto"`` leaves data with few records per cell on the default model.
"""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

import selfmodel.models.scale as scale
from selfmodel.fitting.compile_cache import data_as_shared, structure_key
from selfmodel.records.simulate import simulate_scale_cells


def _cells(per_cell: int) -> pl.DataFrame:
    data, _ = simulate_scale_cells(seed=3, n_families=3, sizes_per_family=3, n_tasks=3,
                                   n_per_cell=per_cell)
    return data


def test_centred_cells_rule() -> None:
    n = np.array([10, 400, 400, 5000, 0])
    k = np.array([5, 200, 399, 2500, 0])
    assert not scale.centred_cells(n, k, "non_centred").any()
    assert scale.centred_cells(n, k, "centred").all()
    # information n p (1 - p): 2.5, 100, ~1.5, 1250, 0
    assert scale.centred_cells(n, k, "auto").tolist() == [False, True, False, True, False]
    with pytest.raises(ValueError, match="cell_effect"):
        scale.centred_cells(n, k, "sideways")  # type: ignore[arg-type]


def test_auto_is_the_default_model_with_few_records_per_cell() -> None:
    cells = _cells(250)
    assert not scale.centred_cells(cells["n"].to_numpy(), cells["k"].to_numpy(), "auto").any()
    key = structure_key(data_as_shared(scale.build(cells)))
    assert structure_key(data_as_shared(scale.build(cells, cell_effect="auto"))) == key
    assert structure_key(data_as_shared(scale.build(cells, cell_effect="centred"))) != key


@pytest.mark.parametrize("cell_effect", ["centred", "auto"])
def test_parameterisations_are_the_same_model(cell_effect: str) -> None:
    """logp(centred at w) = logp(non-centred at z = w / sigma) - (centred cells) log sigma."""
    cells = _cells(250).with_columns(  # some cells with many records, so "auto" mixes
        pl.when(pl.col("task") == pl.col("task").min()).then(pl.col("n") * 40)
        .otherwise(pl.col("n")).alias("n"),
        pl.when(pl.col("task") == pl.col("task").min()).then(pl.col("k") * 40)
        .otherwise(pl.col("k")).alias("k"),
    )
    mask = scale.centred_cells(cells["n"].to_numpy(), cells["k"].to_numpy(), cell_effect)
    assert 0 < mask.sum() <= mask.size
    if cell_effect == "auto":
        assert mask.sum() < mask.size
    base = scale.build(cells)
    other = scale.build(cells, cell_effect=cell_effect)
    point = base.initial_point(random_seed=1)
    rng = np.random.default_rng(2)
    z = rng.normal(size=mask.size)
    point["z_cell"] = z
    point["sigma_cell_log__"] = np.log(0.3)
    sigma = 0.3
    mapped = {k: v for k, v in point.items() if k != "z_cell"}
    mapped["w_cell"] = (sigma * z)[mask]
    if not mask.all():
        mapped["z_cell"] = z[~mask]
    mode = "FAST_COMPILE"
    lp_base = base.compile_logp(mode=mode)(point)
    lp_other = other.compile_logp(mode=mode)(mapped)
    np.testing.assert_allclose(lp_other, lp_base - mask.sum() * np.log(sigma), rtol=1e-10)
    # equal log densities with cell-wise mapped effects: eta keeps the cell order
    assert list(other.coords["cell"]) == list(base.coords["cell"])


def test_centred_group_effects_are_the_same_model() -> None:
    """logp(centred u, v) = logp(non-centred at z = u / sigma) - (levels - 1) log sigma each."""
    cells = _cells(250)
    base = scale.build(cells, slope_basis="plain")
    other = scale.build(cells, group_effects="centred", cell_effect="centred",
                        slope_basis="plain")
    point = base.initial_point(random_seed=1)
    rng = np.random.default_rng(4)
    sig = {"family": 0.4, "model": 0.2, "cell": 0.3}
    point["sigma_family_log__"] = np.log(sig["family"])
    point["sigma_model_log__"] = np.log(sig["model"])
    point["sigma_cell_log__"] = np.log(sig["cell"])
    mapped = {k: v for k, v in point.items()
              if k not in ("z_u_family_zerosum__", "z_v_model_zerosum__", "z_cell")}
    jac = 0.0
    for name, group in (("u_family", "family"), ("v_model", "model")):
        z = rng.normal(size=point[f"z_{name}_zerosum__"].shape)
        point[f"z_{name}_zerosum__"] = z
        mapped[f"{name}_zerosum__"] = sig[group] * z
        jac += z.size * np.log(sig[group])
    z = rng.normal(size=point["z_cell"].shape)
    point["z_cell"] = z
    mapped["w_cell"] = sig["cell"] * z
    jac += z.size * np.log(sig["cell"])
    assert set(mapped) == set(other.initial_point())
    mode = "FAST_COMPILE"
    np.testing.assert_allclose(other.compile_logp(mode=mode)(mapped),
                               base.compile_logp(mode=mode)(point) - jac, rtol=1e-10)
