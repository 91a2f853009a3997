"""Did training help? The design file, the paired table, the model and its recovery (issue 19).

Fast: one-line errors for a bad design through the CLI, the paired counts on hand-made
records, derived checkpoints kept off the scale axis, the conditional likelihood of
``models/training.py``. Slow: effects recovered on simulated data (intervals cover the truth), and a null training effect not declared
``improves`` more often than the declared rate.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import json
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from scipy.stats import binom, norm

from selfmodel.analyses.training import (
    NULL_OPERATING_CHARACTERISTICS_DATA,
    decide_training,
    training_table,
    truth_rows,
)
from selfmodel.cli import main
from selfmodel.common.paths import shipped_study
from selfmodel.decisions.hypotheses import DecisionRule
from selfmodel.records.cells import build_cells
from selfmodel.records.registry import load_registry
from selfmodel.records.simulate import (
    DEFAULT_TASKS,
    SimulationConfig,
    TrainedCheckpoint,
    simulate,
    training_implied_truth,
)

pytestmark = pytest.mark.filterwarnings("ignore:PyTensor could not link to a BLAS:UserWarning")

ROOT = Path(__file__).resolve().parents[2]
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
    from selfmodel.records.contract import InputError

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
    # only gain rows: the checkpoint's self-predictions are not rescored (issue 28.1)
    assert tab["comparison"].to_list() == ["gain"]
    gain = tab.row(0, named=True)
    # self: base correct [T, T, F], checkpoint correct [F, T, T] -> discordant i0 (base), i2 (ckpt)
    assert (gain["n"], gain["k"], gain["status"], gain["arm"]) == (2, 1, "trained", "iv|x")
    # descriptive only: checkpoint's predictions vs base outcomes [F, T, F]
    assert gain["acc_tb"] == pytest.approx(1 / 3) and gain["acc_bb"] == pytest.approx(2 / 3)


def test_derived_checkpoints_are_not_on_the_scale_axis(tmp_path):
    from selfmodel.records.ingest import ingest
    from selfmodel.records.simulate import write_dataset

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
    from selfmodel.models import training

    tab = pl.DataFrame({
        "model": ["p1", "p1", "p2", "p2"], "task": ["x", "y"] * 2,
        "arm": ["iv|x", "iv|y"] * 2, "status": ["trained", "held_out"] * 2,
        "comparison": ["gain"] * 4, "n": [20, 10, 30, 12], "k": [15, 4, 18, 9],
    })
    m = training.build(tab)
    assert set(m.coords) == {"arm", "pair", "row", "cell"}
    point = m.initial_point()
    # no pair deviation: each row reads its arm's effect, 0.4 (x) or -0.2 (y)
    point.update({"delta": np.array([0.4, -0.2]), "z_delta_zerosum__": np.array([[0.0], [0.0]])})
    logp_k = m.compile_fn(m.logp(vars=[m["k"]], sum=True), mode="FAST_COMPILE")(point)
    from scipy.special import expit

    expect = sum(binom.logpmf(k, n, expit(e)) for k, n, e in
                 [(15, 20, 0.4), (4, 10, -0.2), (18, 30, 0.4), (9, 12, -0.2)])
    assert logp_k == pytest.approx(expect, rel=1e-9)
    with pytest.raises(ValueError, match="reads only 'gain' rows"):
        training.build(tab.with_columns(pl.lit("privileged").alias("comparison"))
                       .vstack(tab))


def _fit_table(tab, seed, draws=500, chains=2):
    from selfmodel.fitting.sampling import SamplerSettings, fit

    settings = dataclasses.replace(SamplerSettings(), draws=draws, tune=1000, chains=chains)
    return fit("training", tab, seed=seed, settings=settings, cache_dir=None,
               reuse_compiled=True)


@pytest.mark.slow
def test_training_effects_are_recovered(tmp_path):
    """A fresh simulation (seed 11): every arm's effect covered by its HDI."""
    from selfmodel.records.simulate import write_dataset

    paths = write_dataset(tmp_path / "sim", seed=11)
    from selfmodel.records.ingest import ingest

    res = ingest([paths["records"]], registry=paths["registry"])
    reg = load_registry(paths["registry"])
    tasks = sorted(res.records["task"].unique().to_list())
    tab = training_table(res.records, reg, tasks)
    f = _fit_table(tab, seed=1, draws=1000, chains=4)  # ESS >= 400 on the spreads
    assert f.diagnostics["passed"], f.diagnostics
    import json

    truth = json.loads(paths["truth"].read_text())
    out = decide_training(f.idata, tab, DecisionRule(), passed=True)
    rows = truth_rows(out, truth)
    # accuracy, d' and criterion per arm (privileged access is not decided from this fit)
    assert len(rows) == 3 * 3
    assert all(r["covered"] for r in rows), [r for r in rows if not r["covered"]]
    assert out["trained"]["decision"] == "improves"
    assert out["sdt"]["dprime"]["trained"]["decision"] == "improves"
    assert out["sdt"]["criterion"]["trained"]["decision"] not in ("improves", "worsens")
    assert "privileged_access" not in out


def _validation_script():
    spec = importlib.util.spec_from_file_location(
        "training_null", ROOT / "validation" / "training_null.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.slow
def test_null_training_effect_is_not_declared_improves_more_than_the_declared_rate():
    """A smaller run of ``validation/training_null.py`` on fresh seeds (the shipped study has
    the full number): with no training effect, 20 data sets, the trained and held-out means of
    accuracy and d' are declared `improves` at most 3 times each (under the rule's 5% design
    rate more than 3 of 20 has probability 0.016)."""
    script = _validation_script()
    rows = [script.one(seed, DecisionRule()) for seed in range(9000, 9020)]
    summary = script.summarize(rows, DecisionRule(), ROOT / "no-such-file")
    assert summary["n_datasets"] == 20
    for key in ("accuracy:trained", "accuracy:held_out", "dprime:trained", "dprime:held_out"):
        assert summary["rates"][key]["improves"] <= 3, (key, summary["rates"][key])




def test_implied_truth_matches_a_large_simulation():
    """The quadrature truths of d' and criterion against the empirical values of a
    simulation with 20000 items per task (a "self" and an "either" checkpoint)."""
    tasks = {k: (b, g, d, c, 20000) for k, (b, g, d, c, _) in DEFAULT_TASKS.items()}
    cfg = SimulationConfig(
        families={"cirrus": [("3b", 3.0, None), ("14b", 14.0, None), ("72b", 72.0, None)],
                  "aurora": [("8b", 8.0, None)]},
        closed=[], tasks=tasks, unreadable_rate=0.0,
        trained=[TrainedCheckpoint("cirrus-14b", knows="either"), TrainedCheckpoint("aurora-8b")],
    )
    rec, reg, truth = simulate(seed=3, config=cfg)
    rec = rec.with_columns(pl.lit(None, dtype=pl.Utf8).alias("predictor"),
                           (pl.col("prediction") == pl.col("outcome")).alias("correct"))
    tab = training_table(rec, reg, list(tasks))
    implied = training_implied_truth(truth)
    from scipy.stats import norm

    def sdt(r, who):
        h = norm.ppf(r[f"hits_{who}"] / r[f"n_signal_{who}"])
        f = norm.ppf(r[f"false_alarms_{who}"] / r[f"n_noise_{who}"])
        return h - f, -(h + f) / 2

    emp_d: dict[str, list[float]] = {}
    emp_c: dict[str, list[float]] = {}
    for r in tab.filter(pl.col("comparison") == "gain").iter_rows(named=True):
        (dt, ct), (db, cb) = sdt(r, "trained"), sdt(r, "base")
        emp_d.setdefault(r["arm"], []).append(dt - db)
        emp_c.setdefault(r["arm"], []).append(ct - cb)
    for arm in emp_d:
        assert np.mean(emp_d[arm]) == pytest.approx(implied["dprime_per_arm"][arm], abs=0.06)
        assert np.mean(emp_c[arm]) == pytest.approx(implied["criterion_per_arm"][arm], abs=0.04)
    # the "either" checkpoint's d' against its own outcome is below the "self" one's
    assert implied["dprime_per_arm"]["rl-selfmodel-v1|refusal"] < 0.8


def test_sdt_counts_on_hand_made_records():
    """Checkpoint t (base b) and one other model o on three items: only the pair counts."""
    rec = pl.DataFrame({
        "model": ["b"] * 3 + ["t"] * 3 + ["o"] * 3,
        "predictor": [None] * 9,
        "task": ["x"] * 9,
        "item_id": ["i0", "i1", "i2"] * 3,
        "sample": [0] * 9,
        "prediction": ["true", "true", "true", "false", "true", "true", "true", "true", "true"],
        "outcome": ["true", "true", "false", "true", "true", "true", "false", "true", "false"],
        "status": ["ok"] * 9,
    }).with_columns((pl.col("prediction") == pl.col("outcome")).alias("correct"))
    reg = pl.DataFrame({"model": ["b", "t", "o"], "family": ["f", "f", "g"],
                        "base_model": [None, "b", None], "intervention": [None, "iv", None],
                        "trained_tasks": [None, "x", None]})
    tab = training_table(rec, reg, ["x"])
    row = {r["comparison"]: r for r in tab.iter_rows(named=True)}
    # the other model's outcomes are not used to rescore the pair (issue 28.1)
    assert set(row) == {"gain"}
    g = row["gain"]
    # base: signal i0, i1 (both hits), noise i2 (false alarm); t: all signal, hits i1, i2
    assert (g["n_signal_base"], g["n_noise_base"], g["hits_base"], g["false_alarms_base"]) == (2, 1, 2, 1)
    assert (g["n_signal_trained"], g["n_noise_trained"], g["hits_trained"],
            g["false_alarms_trained"]) == (3, 0, 2, 0)


def test_model_sdt_likelihoods():
    """The signal-detection binomials at a chosen point."""
    from selfmodel.models import training

    base = {"model": "p1", "task": "x", "arm": "iv|x", "status": "trained"}
    zero = dict.fromkeys(["n_signal_base", "n_noise_base", "hits_base", "false_alarms_base",
                          "n_signal_trained", "n_noise_trained", "hits_trained",
                          "false_alarms_trained"], 0)
    tab = pl.DataFrame([
        {**base, **zero, "comparison": "gain", "n": 10, "k": 6, "weight": 1.0,
         "n_signal_base": 20, "n_noise_base": 30, "hits_base": 14, "false_alarms_base": 9,
         "n_signal_trained": 25, "n_noise_trained": 25, "hits_trained": 20,
         "false_alarms_trained": 5},
    ])
    m = training.build(tab)
    point = m.initial_point()
    point.update({"dprime_base": np.array([0.8]), "criterion_base": np.array([-0.2]),
                  "dprime_effect": np.array([0.5]), "criterion_effect": np.array([0.1])})
    names = ["hits_base", "false_alarms_base", "hits_trained", "false_alarms_trained"]
    logp = m.compile_fn(m.logp(vars=[m[v] for v in names], sum=True), inputs=m.value_vars,
                        on_unused_input="ignore", mode="FAST_COMPILE")
    d_b, c_b, d_t, c_t = 0.8, -0.2, 1.3, -0.1
    expect = (binom.logpmf(14, 20, norm.cdf(d_b / 2 - c_b))
              + binom.logpmf(9, 30, norm.cdf(-d_b / 2 - c_b))
              + binom.logpmf(20, 25, norm.cdf(d_t / 2 - c_t))
              + binom.logpmf(5, 25, norm.cdf(-d_t / 2 - c_t)))
    assert logp(point) == pytest.approx(expect, rel=1e-9)
    assert not m.potentials  # no rescoring term (issue 28.1)


def test_shipped_null_study_is_the_committed_study_and_within_the_rate():
    """The package data is the summary of the committed per-data-set file (same SHA-256,
    same rates when recomputed), has at least 100 data sets, and no headline quantity is
    declared `improves` under a null effect above the rule's 5%."""
    study = shipped_study(NULL_OPERATING_CHARACTERISTICS_DATA, "null study")
    assert study["available"], study
    source = ROOT / study["source"]
    import hashlib

    assert hashlib.sha256(source.read_bytes()).hexdigest() == study["source_sha256"]
    rows = [json.loads(x) for x in source.read_text().splitlines()]
    script = _validation_script()
    again = script.summarize(rows, DecisionRule(), source)
    assert again["rates"] == study["rates"]
    assert study["n_datasets"] == len(rows) >= 100
    for key in ("accuracy:trained", "accuracy:held_out", "dprime:trained", "dprime:held_out"):
        assert study["rates"][key]["rate"] <= 0.05, (key, study["rates"][key])
    assert NULL_OPERATING_CHARACTERISTICS_DATA.name == "training_null.json"


def test_null_study_without_the_file_says_so(tmp_path):
    out = shipped_study(tmp_path / "training_null.json", "null study")
    assert out == {"available": False, "reason": "no null study shipped (training_null.json)"}
