"""The declared model text says what the built graph does with its group effects.

The text (``selfmodel.models.graph.ZERO_SUM_TEXT``, in the ``scale`` and ``sdt``
declarations) says a group effect of spread sigma over K levels sums to 0 and has marginal sd
sigma * sqrt((K - 1) / K). Checked here on prior draws of the graph ``build`` makes from the
default data, not on the text.
"""

from __future__ import annotations

import numpy as np
import polars as pl
import pymc as pm
import pytest

from selfmodel.models import scale, sdt
from selfmodel.models.graph import ZERO_SUM_TEXT
from selfmodel.records.cells import build_cells
from selfmodel.records.ingest import ingest
from selfmodel.records.registry import load_registry


@pytest.fixture(scope="module")
def cells() -> pl.DataFrame:
    records = ingest(["data_raw/records.csv"], registry="data_raw/registry.csv").records
    built = build_cells(records, load_registry("data_raw/registry.csv"), scale="params")
    return built.filter(pl.col("x").is_not_null() & (pl.col("n") > 0))


def test_the_declarations_state_it() -> None:
    assert ZERO_SUM_TEXT in scale.declaration().prose
    assert ZERO_SUM_TEXT in sdt.declaration().prose


@pytest.mark.parametrize(("effect", "sigma", "dim"),
                         [("u_family", "sigma_family", "family"), ("v_model", "sigma_model", "model")])
def test_the_graph_does_what_the_text_says(cells, effect: str, sigma: str, dim: str) -> None:
    with scale.build(cells) as model:
        draws = pm.sample_prior_predictive(draws=20000, var_names=[effect, sigma], random_seed=1)
    k = len(model.coords[dim])
    assert k >= 3
    u = draws.prior[effect].values.reshape(-1, k)
    s = draws.prior[sigma].values.reshape(-1)
    np.testing.assert_allclose(u.sum(axis=1), 0.0, atol=1e-9)  # the levels sum to 0
    ratio = float(np.mean((u / s[:, None]) ** 2))  # E[(u_k / sigma)^2] = (K - 1) / K
    se = float(np.std((u / s[:, None]) ** 2) / np.sqrt(u.size / k))
    assert abs(ratio - (k - 1) / k) < 4 * se, (ratio, (k - 1) / k, se)
    assert abs(ratio - 1.0) > 4 * se  # and not the sd sigma a reader would otherwise assume
