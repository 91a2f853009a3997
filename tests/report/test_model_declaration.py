"""The report's model section is the fitted model's own declaration (issue 28.5).

"Model and diagnostics" printed the pooled-slope equation ("beta is the mean of the task
slopes", zero-sum deviations) above the independent-slope fit, and a prior
(``sigma_family_slope``) of a term the fit does not have. Now the equations, the prose and
the priors come from ``models/<name>.declaration(options, priors)`` applied to the options
and priors saved in the fit's provenance (``selfmodel.pipeline.model_stage.fitted_declaration``,
saved as ``fit.declaration``), and the report prints ``selfmodel.report.methods.model_markdown``
and ``prior_rows``. No sampling here: the models are built (not compiled) to check that a
declaration names exactly the priors of the variables the built model has.
"""

from __future__ import annotations

import inspect
import itertools
from pathlib import Path

import numpy as np
import polars as pl
import pytest
import xarray as xr

from selfmodel.common import arviz_ops
from selfmodel.fitting.sampling import Fit
from selfmodel.models import scale, sdt
from selfmodel.pipeline.model_stage import fitted_declaration
from selfmodel.report.methods import methods_text, model_markdown, prior_rows
from selfmodel.report.sections import model as model_section

ROOT = Path(__file__).resolve().parents[2]


def _cells(binary: bool = False) -> pl.DataFrame:
    rng = np.random.default_rng(0)
    rows = []
    for i in range(6):
        for t in ("a", "b"):
            rows.append({"model": f"m{i}", "family": f"f{i % 3}", "task": t, "x": i / 2 - 1.25,
                         "n": 100, "k": int(rng.integers(40, 90)), "n_signal": 50, "n_noise": 50,
                         "hits": int(rng.integers(20, 45)), "false_alarms": int(rng.integers(5, 30))})
    return pl.DataFrame(rows)


class _Reads(dict):
    """The merged priors of a build, recording which ones the build reads."""

    def __init__(self, *a, **kw) -> None:
        super().__init__(*a, **kw)
        self.read: set[str] = set()

    def __getitem__(self, k):
        self.read.add(k)
        return super().__getitem__(k)

    def get(self, k, default=None):
        if k in self:
            self.read.add(k)
        return super().get(k, default)


def _priors_read(module, monkeypatch, **opts) -> set[str]:
    """The priors ``module.build`` reads with ``opts`` (each one a variable of the model)."""
    seen: list[_Reads] = []
    merge = module.merge_priors

    def recording(defaults, overrides):
        seen.append(_Reads(merge(defaults, overrides)))
        return seen[-1]

    monkeypatch.setattr(module, "merge_priors", recording)
    built = module.build(_cells(), **opts)
    read = seen[-1].read
    assert all(k in built.named_vars for k in read)  # each prior read is a variable of the model
    return read


@pytest.mark.parametrize(("family_slopes", "task_slopes", "slope_basis"),
                         list(itertools.product([False, True], ["independent", "pooled"],
                                                ["decorrelated", "plain"])))
def test_scale_declaration_names_the_priors_of_the_built_model(family_slopes, task_slopes,
                                                               slope_basis, monkeypatch) -> None:
    opts = {"family_slopes": family_slopes, "task_slopes": task_slopes, "slope_basis": slope_basis}
    assert set(scale.declaration(opts).priors) == _priors_read(scale, monkeypatch, **opts)


@pytest.mark.parametrize(("cell_effects", "task_slopes"),
                         list(itertools.product([True, False], ["independent", "pooled"])))
def test_sdt_declaration_names_the_priors_of_the_built_model(cell_effects, task_slopes,
                                                             monkeypatch) -> None:
    opts = {"cell_effects": cell_effects, "task_slopes": task_slopes}
    assert set(sdt.declaration(opts).priors) == _priors_read(sdt, monkeypatch, **opts)


def _fit(options: dict | None = None, priors: dict | None = None) -> Fit:
    """A fit as ``selfmodel.fitting.sampling.fit`` records it: priors = DEFAULT_PRIORS merged with overrides."""
    merged = {**scale.DEFAULT_PRIORS, **(priors or {})}
    prov = {"model": "scale", "options": dict(options or {}),
            "priors": {k: [v[0], v[1]] for k, v in sorted(merged.items())}}
    post = xr.Dataset({"beta": (("chain", "draw"), np.zeros((1, 10)))},
                      coords={"chain": [0], "draw": np.arange(10)})
    return Fit("scale", arviz_ops.from_datasets(posterior=post), {"passed": True}, prov)


def _section(f: Fit) -> tuple[str, list[list[str]]]:
    entry = {"model": f.model, **f.provenance, "declaration": fitted_declaration(f)}
    return model_markdown(entry), prior_rows(entry)


def test_the_default_fit_shows_its_own_equation_and_only_its_priors() -> None:
    text, rows = _section(_fit())
    names = [r[0] for r in rows]
    assert "`sigma_family_slope`" not in names  # saved in the provenance, not in the model
    assert "`slope_task`" in names and "`sigma_delta`" not in names
    assert r"b_t\,x_m" in text and r"\delta_t" not in text
    assert "average over the $T$ tasks" in text and "mean slope" not in text


def _methods(f: Fit) -> str:
    eff = {"scale_variable": "params", "models_without_scale_variable": [], "n_models": 6,
           "rule": "the rule.", "mean": 0.1, "units": "logits per 10x", "hdi_prob": 0.94,
           "hdi_low": -0.1, "hdi_high": 0.3, "prob_positive": 0.8, "decision": "no_credible_effect"}
    fit = {**f.provenance, "declaration": fitted_declaration(f), "seed": 1, "cells": 12,
           "versions": {"pymc": "6"},
           "sampler": {"sampler": "nutpie", "chains": 4, "draws": 1000, "tune": 1000,
                       "target_accept": 0.99}}
    return methods_text({"scale_effect": eff, "fit": fit, "diagnostics": {"passed": True},
                         "data": {"records_used": 10, "models": ["a"], "tasks": ["t"]}})


def test_changing_a_prior_changes_the_table_and_the_methods_text() -> None:
    narrow = {"slope_task": ("Normal", {"mu": 0.0, "sigma": 0.3})}
    before, after = _section(_fit()), _section(_fit(priors=narrow))
    assert before[1] != after[1]
    assert ["`slope_task`", "Normal(mu=0, sigma=0.3)"] in after[1]
    m_before, m_after = _methods(_fit()), _methods(_fit(priors=narrow))
    assert "normal(mu = 0, sigma = 0.3)" in m_after and m_before != m_after
    assert "family-slope" not in m_before  # no prior of a term the fit does not have
    assert "each with its own prior" in m_before
    assert "partially pooled" in _methods(_fit({"task_slopes": "pooled"}))


def test_changing_an_option_changes_the_equation_and_the_priors() -> None:
    pooled_text, pooled_rows = _section(_fit({"task_slopes": "pooled"}))
    assert r"(\beta + \delta_t)" in pooled_text and "mean slope" in pooled_text
    names = [r[0] for r in pooled_rows]
    assert "`sigma_delta`" in names and "`beta`" in names and "`slope_task`" not in names
    fam_text, fam_rows = _section(_fit({"family_slopes": True}))
    assert r"\lambda_{f[m]}" in fam_text and "`sigma_family_slope`" in [r[0] for r in fam_rows]


def test_the_report_prints_the_declaration_and_types_no_equation() -> None:
    qmd = (ROOT / "reports" / "self_modeling.qmd").read_text()
    section = qmd[qmd.index("# Model and diagnostics"):qmd.index("#| label: tbl-diagnostics")]
    assert "sections.model.description(REP)" in section and "sections.model.priors_table(REP)" in section
    code = inspect.getsource(model_section.description) + inspect.getsource(model_section.priors_table)
    assert "model_markdown(fit)" in code and "prior_rows(fit)" in code
    for text in (section, code):
        assert "\\eta" not in text and "$$" not in text and "sigma_" not in text
