"""The run's Fitter hands its seed, settings and cache to every fit, and says why first."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import polars as pl
import pytest

from selfmodel.fitting import fitter as fitter_module
from selfmodel.fitting.fitter import Fitter
from selfmodel.fitting.sampling import SamplerSettings, for_model
from selfmodel.models.spec import SamplingNeeds
from selfmodel.pipeline.state import RunConfig


def test_fitter_passes_the_runs_settings_and_says_why(monkeypatch: pytest.MonkeyPatch,
                                                      tmp_path: Path) -> None:
    calls: list[tuple[str, dict[str, Any]]] = []
    monkeypatch.setattr(fitter_module, "fit", lambda model, data, **kw: calls.append((model, kw)) or "fit")
    said: list[str] = []
    settings = SamplerSettings(draws=10, tune=5, chains=1)
    f = Fitter(7, settings, tmp_path, said.append)
    out = f.fit("scale", pl.DataFrame({"n": [1]}), why="fitting because", priors={"a": 1})
    assert out == "fit"
    assert said == ["fitting because"]
    (model, kw), = calls
    assert model == "scale"
    assert kw["seed"] == 7 and kw["settings"] is settings and kw["cache_dir"] == tmp_path
    assert kw["priors"] == {"a": 1} and kw["options"] is None and kw["reuse_compiled"] is False
    Fitter(7, settings, reuse_compiled=True).fit("scale", pl.DataFrame({"n": [1]}))
    assert calls[-1][1]["reuse_compiled"] is True  # a study refitting one design
    assert f.sampler is settings
    assert Fitter(1).sampler == SamplerSettings()


def test_run_config_makes_its_fitter(tmp_path: Path) -> None:
    cfg = RunConfig(out=tmp_path, seed=11, sampler=SamplerSettings(draws=50))
    f = cfg.fitter(print)
    assert (f.seed, f.settings, f.cache_dir) == (11, cfg.sampler, tmp_path / "fits")
    assert RunConfig(out=tmp_path, use_cache=False).fitter(print).cache_dir is None


def test_a_model_samples_with_what_its_spec_says_it_needs() -> None:
    run = SamplerSettings()
    assert for_model(run, SamplingNeeds()) is run
    own = for_model(run, SamplingNeeds(draws=1.5, tune=1.5, target_accept=0.995))
    assert (own.draws, own.tune, own.target_accept, own.chains) == (3000, 1500, 0.995, run.chains)
    quick = for_model(SamplerSettings(draws=300, tune=300, target_accept=0.999), SamplingNeeds(1.5, 1.5, 0.995))
    assert (quick.draws, quick.tune, quick.target_accept) == (450, 450, 0.999)  # a floor, not a value


def test_a_worker_gets_the_run_settings_so_it_saves_the_fit_under_the_same_key(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """fit() adapts the run's settings to the model once: a worker re-running fit() must not
    adapt them again (else it samples other settings and saves under another key)."""
    from selfmodel.fitting import fitpool
    from selfmodel.fitting import sampling as sampling_module

    sent: list[Any] = []

    class SentError(Exception):
        pass

    def capture(job: Any) -> None:
        sent.append(job)
        raise SentError

    monkeypatch.setattr(fitpool, "active", lambda: True)
    monkeypatch.setattr(fitpool, "run_in_worker", capture)
    run = SamplerSettings(draws=100, tune=100)
    cells = pl.DataFrame({"model": ["a"], "family": ["f"], "task": ["t"], "x": [0.0], "n_signal": [5],
                          "n_noise": [5], "hits": [3], "false_alarms": [2]})
    with pytest.raises(SentError):
        sampling_module.fit("sdt", cells, seed=1, settings=run, cache_dir=tmp_path)
    (job,) = sent
    assert job.keywords["settings"] == run  # not the SDT's own (1.5x draws): the worker adapts them
