"""The sentence that reads an ELPD difference, chosen from the numbers.

Sivula, Magnusson & Vehtari (2020, "Uncertainty in Bayesian leave-one-out cross-validation
based model comparison") show that the normal approximation with the estimated standard
error is unreliable when the difference is small (|ELPD difference| < 4), when the models
make similar predictions, or with few observations; only beyond that is the difference read
against its SE. The unit here is the cell of the data the comparison left out, so the
sentence says what was held out.
"""

from __future__ import annotations

from typing import Final

#: Below this |ELPD difference| the comparison is not read as a preference (Sivula et al.).
SMALL: Final = 4.0
#: Beyond this many SEs (and SMALL) one model is said to predict the held-out units better.
N_SE: Final = 2.0


def elpd_sentence(diff: float, se: float, *, better: str, worse: str, unit: str) -> str:
    """One sentence for ``diff = elpd(better) - elpd(worse)`` (either sign) and its SE."""
    size = f"ELPD difference {diff:+.1f} (SE {se:.1f}) over held-out {unit}"
    if abs(diff) < SMALL:
        return (f"{size}: too small to prefer either model (|difference| < {SMALL:g}, where the "
                "normal approximation of its uncertainty is unreliable; Sivula et al. 2020).")
    if abs(diff) < N_SE * se:
        return f"{size}: within {N_SE:g} standard errors, so neither model predicts clearly better."
    winner, loser = (better, worse) if diff > 0 else (worse, better)
    return f"{size}: the {winner} predicts held-out {unit} better than the {loser}."
