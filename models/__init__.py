"""Bayesian models of self-prediction skill, one per module, and their registry.

Each module defines ``NAME``, ``SUMMARY``, ``DEFAULT_PRIORS`` (one dict), ``REQUIRED_COLUMNS``,
``EFFECT`` (the variable a verdict reads), ``PER_TASK_EFFECT`` and
``build(data, priors=None, **options) -> pm.Model``. Nothing here imports ``analysis``.
"""

from __future__ import annotations

from types import ModuleType

from models import scale

REGISTRY: dict[str, ModuleType] = {scale.NAME: scale}


def get(name: str) -> ModuleType:
    """Return the model module called ``name``."""
    try:
        return REGISTRY[name]
    except KeyError:
        import difflib

        close = difflib.get_close_matches(name, REGISTRY, n=1)
        hint = f" Did you mean '{close[0]}'?" if close else ""
        raise KeyError(f"unknown model '{name}'. Available: {', '.join(sorted(REGISTRY))}.{hint}") from None
