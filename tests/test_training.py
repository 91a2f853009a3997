"""Did training help? The design file, the paired table, the model and its recovery (issue 19).

Fast: one-line errors for a bad design through the CLI, the paired counts on hand-made
records, derived checkpoints kept off the scale axis, the conditional likelihood of
``models/training.py``. Slow: effects and the privileged-access contrast recovered on
simulated data (intervals cover the truth), and a null training effect not declared
``improves`` more often than the declared rate.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from scipy.stats import binom

from analysis.cells import build_cells
from analysis.cli import main
from analysis.hypotheses import DecisionRule
from analysis.registry import load_registry
from analysis.simulate import SimulationConfig, simulate
from analysis.training import decide_training, training_table, truth_rows

pytestmark = pytest.mark.filterwarnings("ignore:PyTensor could not link to a BLAS:UserWarning")

REG_HEAD = "model,family,params_b,base_model,intervention,trained_tasks\n"


def _records(path: Path) -> Path:
    rows = ["model,task,item_id,prediction,outcome"]
    for m in ("a", "a-rl", "b"):
        for t in ("refusal", "difficulty"):
            for i in range(3):
                rows.append(f"{m},{t},i{i},true,{'true' if i else 'false'}")
    path.write_text("\n".join(rows) + "\n")
    return path


def _one_error(capsys) -> str:
    err = capsys.readouterr().err
    assert "Traceback" not in err
    lines = [ln for ln in err.splitlines() if "error" in ln]
    assert len(lines) == 1 and lines[0].startswith("selfmodel: error: "), err
    return lines[0]


def test_base_model_not_in_registry_is_a_one_line_error(tmp_path, capsys):
    reg = tmp_path / "reg.csv"
    reg.write_text(REG_HEAD + "a,f,8,,,\na-rl,f,8,aa,rl-v1,refusal\n")
    code = main(["ingest", str(_records(tmp_path / "r.csv")), "--registry", str(reg),
                 "--out", str(tmp_path / "o")])
    line = _one_error(capsys)
    assert code == 2
    assert f"{reg}: line 3, column 'base_model'" in line
    assert "'aa'" in line and "Did you mean 'a'?" in line


def test_cycle_of_derivations_is_a_one_line_error_toml(tmp_path, capsys):
    reg = tmp_path / "reg.toml"
    reg.write_text(
        '[[model]]\nmodel = "a"\nbase_model = "a-rl"\n\n'
        '[[model]]\nmodel = "a-rl"\nbase_model = "a"\nintervention = "rl"\n'
    )
    code = main(["ingest", str(_records(tmp_path / "r.csv")), "--registry", str(reg),
                 "--out", str(tmp_path / "o")])
    line = _one_error(capsys)
    assert code == 2
    assert f"{reg}: line 3, column 'base_model'" in line and "cycle (a -> a-rl -> a)" in line


def test_self_derivation_and_intervention_without_base(tmp_path):
    from analysis.contract import InputError

    reg = tmp_path / "reg.csv"
    reg.write_text(REG_HEAD + "a,f,8,a,rl,\n")
    with pytest.raises(InputError, match=r"line 2, column 'base_model'.*cycle \(a -> a\)"):
        load_registry(reg)
    reg.write_text(REG_HEAD + "a,f,8,,rl,\n")
    with pytest.raises(InputError, match=r"line 2, column 'intervention'.*no base_model"):
        load_registry(reg)


def test_trained_task_not_in_data_stops_the_run_before_sampling(tmp_path, capsys):
    reg = tmp_path / "reg.csv"
    reg.write_text(REG_HEAD + "a,f,8,,,\nb,g,20,,,\na-rl,f,8,a,rl-v1,refusal;difficulty;refusl\n")
    out = tmp_path / "o"
    code = main(["run", str(_records(tmp_path / "r.csv")), "--registry", str(reg),
                 "--out", str(out), "--no-report"])
    line = _one_error(capsys)
    assert code == 2
    assert f"{reg}: line 4, column 'trained_tasks'" in line
    assert "'refusl'" in line and "Did you mean 'refusal'?" in line
    assert not (out / "fits").exists() or not any((out / "fits").glob("*.nc"))


def test_two_splits_for_one_intervention_is_an_error(tmp_path, capsys):
    reg = tmp_path / "reg.csv"
    reg.write_text(REG_HEAD + "a,f,8,,,\nb,g,20,,,\na-rl,f,8,a,rl,refusal\nb-rl,g,20,b,rl,difficulty\n")
    rec = _records(tmp_path / "r.csv")
    rec.write_text(rec.read_text() + "".join(
        f"b-rl,{t},i{i},true,true\n" for t in ("refusal", "difficulty") for i in range(3)))
    code = main(["run", str(rec), "--registry", str(reg), "--out", str(tmp_path / "o"),
                 "--no-report"])
    line = _one_error(capsys)
    assert code == 2 and "line 5, column 'trained_tasks'" in line and "intervention 'rl'" in line


def test_paired_table_counts_discordant_items_exactly():
    """Hand-made items: base right on i0,i1; checkpoint right on i1,i2 (self) ..."""
    rec = pl.DataFrame({
        "model": ["b"] * 3 + ["t"] * 3,
        "predictor": [None] * 6,
        "task": ["x"] * 6,
        "item_id": ["i0", "i1", "i2"] * 2,
        "sample": [0] * 6,
        "prediction": ["true", "true", "true", "false", "true", "true"],
        "outcome": ["true", "true", "false", "true", "true", "true"],
        "status": ["ok"] * 6,
    }).with_columns((pl.col("prediction") == pl.col("outcome")).alias("correct"))
    reg = pl.DataFrame({"model": ["b", "t"], "family": ["f", "f"],
                        "base_model": [None, "b"], "intervention": [None, "iv"],
                        "trained_tasks": [None, "x"]})
    tab = training_table(rec, reg, ["x"])
    gain = tab.filter(pl.col("comparison") == "gain").row(0, named=True)
    priv = tab.filter(pl.col("comparison") == "privileged").row(0, named=True)
    # self: base correct [T, T, F], checkpoint correct [F, T, T] -> discordant i0 (base), i2 (ckpt)
    assert (gain["n"], gain["k"], gain["status"], gain["arm"]) == (2, 1, "trained", "iv|x")
    # checkpoint's predictions vs base outcomes: [F, T, F]; vs own [F, T, T] -> only i2 differs
    assert (priv["n"], priv["k"]) == (1, 1)
    assert priv["acc_tb"] == pytest.approx(1 / 3) and priv["acc_bb"] == pytest.approx(2 / 3)


def test_derived_checkpoints_are_not_on_the_scale_axis(tmp_path):
    from analysis.ingest import ingest
    from analysis.simulate import write_dataset

    paths = write_dataset(tmp_path / "sim", seed=3)
    records = ingest([paths["records"]], registry=paths["registry"]).records
    registry = load_registry(paths["registry"])
    with_derived = build_cells(records, registry)
    derived = registry.filter(pl.col("base_model").is_not_null())["model"].to_list()
    assert len(derived) == 4
    assert with_derived.filter(pl.col("model").is_in(derived))["x"].null_count() == 4 * 3
    base_only = build_cells(records.filter(~pl.col("model").is_in(derived)),
                            registry.filter(pl.col("base_model").is_null()))
    keep = with_derived.filter(~pl.col("model").is_in(derived)).sort(["model", "task"])
    assert keep["x"].to_list() == base_only.sort(["model", "task"])["x"].to_list()


def test_simulation_appends_trained_checkpoints_without_moving_base_records():
    plain, _, _ = simulate(seed=5, config=SimulationConfig(trained=[]))
    full, _, truth = simulate(seed=5)
    assert full.head(plain.height).equals(plain)
    t = truth["training"]
    assert t["privileged_per_checkpoint"]["cirrus-14b-rl"] == pytest.approx(0.0, abs=1e-12)
    arms = t["effect_per_arm"]
    assert arms["rl-selfmodel-v1|refusal"] > arms["rl-selfmodel-v1|difficulty"] > 0.05
    assert abs(arms["rl-selfmodel-v1|word_association"]) < 0.05


def test_model_likelihood_is_the_conditional_binomial():
    from models import training

    tab = pl.DataFrame({
        "model": ["p1", "p1", "p2", "p2"], "task": ["x"] * 4, "arm": ["iv|x"] * 4,
        "status": ["trained"] * 4, "comparison": ["gain", "privileged"] * 2,
        "n": [20, 10, 30, 12], "k": [15, 4, 18, 9],
    })
    m = training.build(tab)
    assert set(m.coords) == {"arm", "pair", "row", "cell"}
    point = m.initial_point()
    point.update({"delta": np.array([0.4]), "z_delta_zerosum__": np.array([[0.0]]),
                  "pi_mean": np.array(-0.2), "z_pi_zerosum__": np.array([0.0])})
    logp_k = m.compile_fn(m.logp(vars=[m["k"]], sum=True), mode="FAST_COMPILE")(point)
    from scipy.special import expit

    expect = sum(binom.logpmf(k, n, expit(e)) for k, n, e in
                 [(15, 20, 0.4), (4, 10, -0.2), (18, 30, 0.4), (9, 12, -0.2)])
    assert logp_k == pytest.approx(expect, rel=1e-9)


def _fit_table(tab, seed, draws=500):
    from analysis.fit import SamplerSettings, fit

    settings = dataclasses.replace(SamplerSettings(), draws=draws, tune=500, chains=2)
    return fit("training", tab, seed=seed, settings=settings, cache_dir=None,
               reuse_compiled=True)


@pytest.mark.slow
def test_training_effects_and_privileged_contrast_are_recovered(tmp_path):
    """A fresh simulation (seed 11): every arm's effect and every contrast covered by its HDI."""
    from analysis.simulate import write_dataset

    paths = write_dataset(tmp_path / "sim", seed=11)
    from analysis.ingest import ingest

    res = ingest([paths["records"]], registry=paths["registry"])
    reg = load_registry(paths["registry"])
    tasks = sorted(res.records["task"].unique().to_list())
    tab = training_table(res.records, reg, tasks)
    f = _fit_table(tab, seed=1, draws=1000)
    assert f.diagnostics["passed"], f.diagnostics
    import json

    truth = json.loads(paths["truth"].read_text())
    out = decide_training(f.idata, tab, DecisionRule(), passed=True)
    rows = truth_rows(out, truth)
    assert len(rows) == 3 + 4
    assert all(r["covered"] for r in rows), rows
    assert out["trained"]["decision"] == "improves"
    priv = {e["model"]: e for e in out["privileged_access"]["per_checkpoint"]}
    assert priv["cirrus-14b-rl"]["decision"] not in ("improves", "credibly_positive")
    assert priv["cirrus-14b-rl"]["hdi_low"] < 0 < priv["cirrus-14b-rl"]["hdi_high"]
    assert sum(e["decision"] == "improves" for e in priv.values()) >= 2


@pytest.mark.slow
def test_null_training_effect_is_not_declared_improves_more_than_the_declared_rate(tmp_path):
    """No effect on any task (d' unchanged): over 10 data sets, `improves` on the trained mean
    at most once (the rule's P > 0.95 and HDI beyond the ROPE: at most 5% by design; with 10
    sets more than 1 would have probability 0.09 under a 5% rate)."""
    from analysis.ingest import ingest
    from analysis.simulate import write_dataset

    decisions = []
    for seed in range(100, 110):
        paths = write_dataset(tmp_path / f"s{seed}", seed=seed, config=SimulationConfig(
            training_dprime={"refusal": 0.0, "difficulty": 0.0, "word_association": 0.0}))
        res = ingest([paths["records"]], registry=paths["registry"])
        reg = load_registry(paths["registry"])
        tab = training_table(res.records, reg, sorted(res.records["task"].unique().to_list()))
        f = _fit_table(tab, seed=seed, draws=500)
        out = decide_training(f.idata, tab, DecisionRule(), passed=f.diagnostics["passed"])
        decisions.append(out["trained"]["decision"])
    assert sum(d == "improves" for d in decisions) <= 1, decisions
    assert sum(d in ("improves", "credibly_positive") for d in decisions) <= 2, decisions
