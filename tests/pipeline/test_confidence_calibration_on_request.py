"""Calibration per model with intervals on request, beside a scale model (issue 53).

With sized and closed models and no conditions, the scale model is fitted and the contrast
model is not; before issue 53 "which model is over-confident, with an interval" then got
point ECEs only ("not fitted: the scale model was fitted and the records have no
conditions"), and no option asked for it. ``selfmodel run --calibration-contrasts`` computes
the confidence-calibration table (item bootstrap, no fit) beside the scale model, closed models
included. The runs here use fake fits (``tests/fakes.py``): they test the plumbing.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from selfmodel.cli import main

SIZED = {"open-1b": 1.0, "open-8b": 8.0, "open-70b": 70.0, "open-400b": 400.0}
CLOSED = ("closed-a", "closed-b", "closed-c")
QUICK = ["--no-report", "--no-power", "--no-robustness", "--models", "scale", "--jobs", "1",
         "--draws", "50", "--tune", "50", "--chains", "2", "--quiet"]


def study(folder: Path) -> tuple[Path, Path]:
    """Records of 4 sized and 3 closed models, one task, a stated confidence; and the registry.

    Each model states a probability ``s`` of being right; the larger its overconfidence, the
    further ``s`` sits above its true chance.
    """
    rng = np.random.default_rng(53)
    rows = []
    for j, m in enumerate([*SIZED, *CLOSED]):
        for i in range(60):
            chance = rng.uniform(0.3, 0.9)
            s = min(0.99, chance + 0.05 * j)
            right = bool(rng.random() < chance)
            pred = s >= 0.5
            rows.append({"model": m, "task": "qa", "item_id": str(i), "prediction": pred,
                         "outcome": right, "confidence": round(s if pred else 1 - s, 4)})
    folder.mkdir(parents=True, exist_ok=True)
    records = folder / "records.jsonl"
    records.write_text("".join(json.dumps(r) + "\n" for r in rows))
    registry = folder / "registry.csv"
    registry.write_text("model,family,params_b\n" + "".join(f"{m},open,{b}\n" for m, b in SIZED.items())
                        + "".join(f"{m},closed,\n" for m in CLOSED))
    return records, registry


def _run(tmp_path: Path, *extra: str) -> dict:
    records, registry = study(tmp_path / "data")
    out = tmp_path / "out"
    assert main(["run", str(records), "--registry", str(registry), "--out", str(out), *QUICK,
                 *extra]) == 0
    return json.loads((out / "results.json").read_text())


def test_asked_for_it_runs_beside_the_scale_model_with_closed_models(tmp_path, fake_nutpie) -> None:
    res = _run(tmp_path, "--calibration-contrasts")
    assert res["scale_effect"]["fit_model"] == "scale" and res["fit"] is not None
    assert res["contrasts"] is None  # the contrast model is not needed for this
    cal = res["confidence_calibration_contrasts"]
    assert cal["why"] == "requested (--calibration-contrasts)" and cal["by"] == ["model"]
    models = [g["model"] for g in cal["groups"]]
    assert set(models) == set(SIZED) | set(CLOSED)
    for g in cal["groups"]:
        for m in ("ece_stated_probability", "ece_prediction_confidence", "overconfidence"):
            assert g[f"{m}_low"] <= g[m] <= g[f"{m}_high"], (g["model"], m)
    pairs = {c["contrast"] for c in cal["contrasts"] if c["metric"] == "overconfidence"}
    assert len(pairs) == 7 * 6 // 2 and "closed-c - closed-a" in pairs


def test_not_asked_for_it_is_not_computed(tmp_path, fake_nutpie) -> None:
    res = _run(tmp_path)
    assert res["confidence_calibration_contrasts"] is None and res["contrasts"] is None


def test_calibration_by_task_on_one_task_stops_before_fitting(tmp_path, fake_nutpie, capsys) -> None:
    records, registry = study(tmp_path / "data")
    assert main(["run", str(records), "--registry", str(registry), "--out", str(tmp_path / "o"),
                 *QUICK, "--calibration-by", "task"]) == 2
    err = capsys.readouterr().err
    assert "--calibration-by task: the records have one task" in err and "Traceback" not in err
    assert fake_nutpie["sample"] == 0


def test_calibration_by_chooses_the_groups(tmp_path, fake_nutpie) -> None:
    """--calibration-by condition groups per model x condition (auto would too: it is the design's)."""
    by = "condition"
    records, registry = study(tmp_path / "data")
    rows = [json.loads(x) for x in records.read_text().splitlines()]
    for i, r in enumerate(rows):
        r["condition"] = "terse" if i % 2 else "verbose"
    records.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "out"
    assert main(["run", str(records), "--registry", str(registry), "--out", str(out), *QUICK,
                 "--no-contrasts", "--calibration-by", by]) == 0
    cal = json.loads((out / "results.json").read_text())["confidence_calibration_contrasts"]
    assert cal["by"] == ["model", "condition"] and len(cal["groups"]) == 14
