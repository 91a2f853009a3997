"""Bayesian models of self-prediction skill, one per module, and their registry.

Each module defines ``NAME``, ``SUMMARY``, ``DEFAULT_PRIORS`` (one dict), ``REQUIRED_COLUMNS``,
``EFFECT`` (the variable a verdict reads, ``None`` for a baseline), ``PER_TASK_EFFECT`` and
``build(data, priors=None, **options) -> pm.Model``. Nothing here imports ``analysis``.

=================  ==================================================================
``scale``          logistic accuracy on scale (the pipeline's verdict model)
``pooled``         task intercepts only: the LOO baseline
``within_between`` scale split into within-family and between-family slopes (Mundlak)
``sdt``            signal detection: sensitivity d' and criterion on scale
``items``          ``scale`` plus crossed item effects, on per-item counts
``self_vs_other``  cross-prediction: the privileged-access effect of predicting oneself
=================  ==================================================================
"""

from __future__ import annotations

from types import ModuleType

from models import items, pooled, scale, sdt, self_vs_other, within_between

REGISTRY: dict[str, ModuleType] = {
    m.NAME: m for m in (scale, pooled, within_between, sdt, items, self_vs_other)
}


def get(name: str) -> ModuleType:
    """Return the model module called ``name``."""
    try:
        return REGISTRY[name]
    except KeyError:
        import difflib

        close = difflib.get_close_matches(name, REGISTRY, n=1)
        hint = f" Did you mean '{close[0]}'?" if close else ""
        available = ", ".join(sorted(REGISTRY))
        raise KeyError(f"unknown model '{name}'. Available: {available}.{hint}") from None
