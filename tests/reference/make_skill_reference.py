"""Generate ``skill_small.json``: reference numbers for ``tests/analyses/test_skill.py``.

Computed *without* ``selfmodel.analyses.skill``:

- Cohen's kappa: ``statsmodels.stats.inter_rater.cohens_kappa`` on the 2x2 table
  (rows = prediction, columns = outcome);
- balanced accuracy, hit and false-alarm rates: from the table by definition;
- d' and c with the log-linear correction (Hautus 1995): ``statistics.NormalDist`` (the
  standard library's inverse normal, independent of scipy); a constant responder (every
  prediction the same: H = F = 1 or 0) has d' = 0 and no criterion (issue 28.2: the
  correction would give it d' of the sign of n_signal - n_noise from the counts alone);
- AUROC: ``scipy.stats.mannwhitneyu`` U statistic divided by n1 * n0 (mid-ranks for ties);
- Brier score and ECE (10 equal-width bins): by definition in plain Python loops.

Run from the repository root: ``.venv/bin/python tests/reference/make_skill_reference.py``.
"""

from __future__ import annotations

import json
from pathlib import Path
from statistics import NormalDist

import numpy as np
from scipy.stats import mannwhitneyu
from statsmodels.stats.inter_rater import cohens_kappa

HERE = Path(__file__).resolve().parent
OUT = HERE / "skill_small.json"

#: (hits, misses, false_alarms, correct_rejections)
TABLES = [(45, 5, 20, 30), (10, 40, 3, 47), (60, 0, 40, 0), (12, 13, 11, 14), (50, 0, 0, 50),
          (0, 950, 0, 50), (950, 0, 50, 0)]

#: predictions, outcomes and confidences (probability the prediction is right)
PRED = [1, 1, 1, 0, 0, 1, 0, 1, 1, 0, 1, 0, 1, 1, 0, 0]
OUTC = [1, 0, 1, 0, 1, 1, 0, 0, 1, 0, 1, 1, 0, 1, 0, 1]
CONF = [0.9, 0.7, 0.8, 0.6, 0.55, 0.95, 0.7, 0.6, 0.85, 0.65, 0.75, 0.5, 0.9, 0.8, 0.7, 0.6]


def table_reference(h: int, m: int, f: int, c: int) -> dict[str, float | None]:
    table = np.array([[h, f], [m, c]], dtype=float)  # rows: predicted yes/no; cols: outcome yes/no
    n = table.sum()
    pe = (table.sum(1) * table.sum(0)).sum() / n**2
    kappa = float(cohens_kappa(table, return_results=False)) if pe < 1 else None
    z = NormalDist().inv_cdf
    zh = z((h + 0.5) / (h + m + 1))
    zf = z((f + 0.5) / (f + c + 1))
    ba = 0.5 * (h / (h + m) + c / (f + c)) if (h + m) and (f + c) else None
    d, crit = zh - zf, -(zh + zf) / 2
    if m == c == 0 or h == f == 0:  # constant responder: H = F
        d, crit = 0.0, None
    return {"kappa": kappa, "balanced_accuracy": ba, "dprime": d, "criterion": crit,
            "accuracy": (h + c) / n, "mode_baseline": max(h + m, f + c) / n}


def main() -> None:
    pred = np.array(PRED, dtype=bool)
    outc = np.array(OUTC, dtype=bool)
    conf = np.array(CONF)
    correct = pred == outc
    s = np.where(pred, conf, 1 - conf)  # implied P(outcome true)
    u_type1 = mannwhitneyu(s[outc], s[~outc]).statistic / (outc.sum() * (~outc).sum())
    n_pairs = correct.sum() * (~correct).sum()
    u_type2 = mannwhitneyu(conf[correct], conf[~correct]).statistic / n_pairs
    brier = sum((q - a) ** 2 for q, a in zip(CONF, correct, strict=True)) / len(CONF)
    ece = 0.0
    for b in range(10):
        members = [i for i, q in enumerate(CONF) if min(int(q * 10 + 1e-9), 9) == b]
        if members:
            mc = sum(CONF[i] for i in members) / len(members)
            acc = sum(correct[i] for i in members) / len(members)
            ece += len(members) / len(CONF) * abs(mc - acc)
    out = {
        "source": "tests/reference/make_skill_reference.py",
        "tables": [{"counts": list(t), **table_reference(*t)} for t in TABLES],
        "inputs": {"prediction": PRED, "outcome": OUTC, "confidence": CONF},
        "confidence": {"auroc": float(u_type1), "auroc_type2": float(u_type2),
                       "brier": float(brier), "ece": float(ece)},
    }
    OUT.write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()
