"""Bayesian models of self-prediction skill, one per module, and their registry.

Each module defines ``NAME``, ``SUMMARY``, ``DEFAULT_PRIORS`` (one dict), ``REQUIRED_COLUMNS``,
``EFFECT`` (the variable a verdict reads, ``None`` for a baseline), ``PER_TASK_EFFECT``,
``SPEC`` (a :class:`selfmodel.models.spec.ModelSpec`: data table, decided effects, slope priors,
LOO unit, report sections) and ``build(data, priors=None, **options) -> pm.Model``.
Nothing here imports ``analysis``. Adding a model is one new file plus a line here (or
:func:`register` from outside the package); the models, what each is for and how to add one:
``docs/registry.md``.
"""

from __future__ import annotations

from types import ModuleType

from selfmodel.models import (
    contrast,
    items,
    pooled,
    scale,
    sdt,
    self_vs_other,
    training,
    within_between,
)

REGISTRY: dict[str, ModuleType] = {
    m.NAME: m
    for m in (scale, pooled, within_between, sdt, items, self_vs_other, training, contrast)
}

#: The models ``selfmodel run`` fits (in this order) unless ``--models`` says otherwise.
DEFAULT_MODELS: tuple[str, ...] = ("scale", "sdt", "pooled", "within_between")

_ATTRIBUTES = ("NAME", "SUMMARY", "DEFAULT_PRIORS", "REQUIRED_COLUMNS", "SPEC", "build")


def register(module: ModuleType) -> ModuleType:
    """Add a model module (with the attributes every model file has) to :data:`REGISTRY`."""
    missing = [a for a in _ATTRIBUTES if not hasattr(module, a)]
    if missing:
        raise ValueError(f"model module {module.__name__} lacks {', '.join(missing)}")
    if module.SPEC.role == "verdict" and any(
        m.SPEC.role == "verdict" for n, m in REGISTRY.items() if n != module.NAME
    ):
        raise ValueError(f"model '{module.NAME}': there is already a verdict model")
    REGISTRY[module.NAME] = module
    return module


def unregister(name: str) -> None:
    """Remove a model added with :func:`register` (tests)."""
    REGISTRY.pop(name, None)


def verdict() -> ModuleType:
    """The model whose effect is the run's verdict (``SPEC.role == "verdict"``)."""
    (module,) = (m for m in REGISTRY.values() if m.SPEC.role == "verdict")
    return module


def without_effect(name: str) -> ModuleType | None:
    """The module of ``name``'s comparison model without the effect term, if declared."""
    comparison = get(name).SPEC.without_effect
    return get(comparison.model) if comparison else None


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
