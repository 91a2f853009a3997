"""One run's way of fitting: the seed, sampler settings, fit cache and progress line of every fit.

The pipeline makes one :class:`Fitter` from its configuration (``RunConfig.fitter``) and hands
it to the code that fits, instead of passing ``seed, settings, cache_dir, progress`` by hand to
each function that calls :func:`selfmodel.fitting.sampling.fit`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from selfmodel.fitting.sampling import Fit, SamplerSettings, fit

__all__ = ["Fitter", "Progress"]

#: A progress line: shows one message.
Progress = Callable[[str], None]


def _silent(_message: str) -> None:
    """The progress line of a fitter made without one."""


@dataclass(frozen=True)
class Fitter:
    """Fits models with one run's seed, sampler settings and fit cache, saying what it does.

    Parameters
    ----------
    seed
        Sampler seed of every fit.
    settings
        Sampler settings (``None``: the defaults of :class:`SamplerSettings`).
    cache_dir
        Folder of saved fits (``None``: no cache).
    progress
        Progress line (default: silent).
    reuse_compiled
        Compile once and reuse the compiled model for each later fit of the same structure
        (:func:`selfmodel.fitting.sampling.fit`; for studies that refit one design many times).
    """

    seed: int
    settings: SamplerSettings | None = None
    cache_dir: Path | None = None
    progress: Progress = field(default=_silent)
    reuse_compiled: bool = False

    @property
    def sampler(self) -> SamplerSettings:
        """The sampler settings in force (the defaults when none were given)."""
        return self.settings if self.settings is not None else SamplerSettings()

    def fit(
        self,
        model: str,
        data: pl.DataFrame,
        *,
        why: str | None = None,
        priors: Mapping[str, Any] | None = None,
        options: Mapping[str, Any] | None = None,
        then: Callable[[Fit], object] | None = None,
    ) -> Fit:
        """Fit ``model`` to ``data`` (cells) with the run's settings; ``why`` goes to the progress line first."""
        if why:
            self.progress(why)
        return fit(model, data, seed=self.seed, settings=self.settings, priors=priors,
                   options=options, cache_dir=self.cache_dir, reuse_compiled=self.reuse_compiled,
                   then=then)
