"""Exact binomial intervals for the rates the operating-characteristics studies and the validation map report."""

from __future__ import annotations

from typing import Any

from scipy.stats import beta


def clopper_pearson(k: int, n: int, level: float = 0.95) -> tuple[float, float]:
    """The Clopper-Pearson interval of ``k`` successes in ``n`` trials (``n`` > 0).

    >>> clopper_pearson(0, 200)[1] < 0.019 < clopper_pearson(1, 200)[1]
    True
    >>> clopper_pearson(5, 5)
    (0.47817624989501856, 1.0)
    """
    a = (1 - level) / 2
    lo = 0.0 if k == 0 else float(beta.ppf(a, k, n - k + 1))
    hi = 1.0 if k == n else float(beta.ppf(1 - a, k + 1, n - k))
    return lo, hi


def rate(k: int, n: int) -> dict[str, Any]:
    """``{k, n, rate, ci95}``: the rate with its exact 95% interval (None without trials)."""
    return {"k": k, "n": n, "rate": k / n if n else None, "ci95": list(clopper_pearson(k, n)) if n else None}
