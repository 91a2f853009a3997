"""Tests of the Self-Execution Benchmark importer (``selfmodel.records.importers.seb``).

Two kinds:

* reference values: the importer's records reproduce the authors' summary tables
  ``experiment_1.csv`` and ``experiment_2.csv`` of the shared copy of the repository
  (``../shared/data/self-execution-benchmark``, commit f6189ba, see its SOURCE.md); these are
  marked ``shared_data`` and skipped with a reason when the folder is absent;
* behaviour on small synthetic clones built in ``tmp_path`` (unreadable literals, appended
  runs, empty files, unknown spellings, missing folders, output files).
"""

from __future__ import annotations

import ast
import csv
import json
from pathlib import Path

import polars as pl
import pytest

from selfmodel.records.contract import RECORD_SCHEMA, REGISTRY_SCHEMA, InputError
from selfmodel.records.importers.seb import SebImport, import_seb, write_import

SEB = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "self-execution-benchmark"
NEWEST = "results-04-05-25"


# ----------------------------------------------------------------------------------------------
# reference values from the authors' tables


@pytest.fixture(scope="module")
def seb() -> SebImport:
    if not SEB.is_dir():
        pytest.skip(f"shared Self-Execution Benchmark data not found at {SEB}")
    return import_seb(SEB)


@pytest.fixture(scope="module")
def aliases() -> dict[str, str]:
    """Lower-cased spelling -> canonical id, read from models.csv independently of the importer."""
    if not SEB.is_dir():
        pytest.skip(f"shared Self-Execution Benchmark data not found at {SEB}")
    out: dict[str, str] = {}
    with (SEB / "models.csv").open(newline="", encoding="utf-8") as fh:
        for row in csv.DictReader(fh):
            for s in [row["model"], *row["aliases"].split("|")]:
                out[s.strip().lower()] = row["model"]
    return out


def _authors(name: str, aliases: dict[str, str]) -> dict[str, dict[str, str]]:
    with (SEB / name).open(newline="", encoding="utf-8") as fh:
        return {aliases[r["model"].lower()]: r for r in csv.DictReader(fh)}


def _confusion(records: pl.DataFrame) -> pl.DataFrame:
    p, o = pl.col("prediction"), pl.col("outcome")
    return (
        records.group_by("model")
        .agg(
            TP=((p == "true") & (o == "true")).sum(),
            FP=((p == "true") & (o == "false")).sum(),
            TN=((p == "false") & (o == "false")).sum(),
            FN=((p == "false") & (o == "true")).sum(),
            n=pl.len(),
            n_false=(o == "false").sum(),
        )
        .sort("model")
    )


@pytest.mark.shared_data
def test_word_association_reproduces_experiment_1(seb: SebImport, aliases: dict[str, str]) -> None:
    """Per-model TP/FP/TN/FN and accuracy equal ``experiment_1.csv`` for all 15 models.

    SOURCE.md says a re-computation matches 13 of 15 models exactly and two differ by at most
    4 items. The two are deepseek-chat-v3 and llama-3.2-3b-instruct: one row each (Gambia,
    Réunion) writes its predictions as the *strings* ``'true'``. A reading of Python booleans
    only drops those 3 + 3 predictions (pinned in
    ``test_strict_bool_reading_differs_as_documented``); the importer reads them with
    ``parse_bool`` as true, which is what the authors' table does, so all 15 match.

    Words are compared lower-cased but not whitespace-stripped, as the authors did. Stripping
    would move 3 records from FP to TP in each of llama-3.2-3b-instruct (e.g. option
    ``' trunk '`` vs generated ``'trunk'``) and qwen-2.5-7b-instruct; the importer counts them.
    """
    newest = seb.records.filter(
        (pl.col("task") == "word_association") & (pl.col("run_id") == NEWEST)
    )
    assert newest["status"].unique().to_list() == ["ok"]
    table = _authors("experiment_1.csv", aliases)
    got = {r["model"]: r for r in _confusion(newest).iter_rows(named=True)}
    assert set(got) == set(table)
    assert len(table) == 15
    for model, ref in table.items():
        row = got[model]
        assert (row["TP"], row["FP"], row["TN"], row["FN"]) == (
            int(ref["TP"]),
            int(ref["FP"]),
            int(ref["TN"]),
            int(ref["FN"]),
        ), model
        assert (row["TP"] + row["TN"]) / row["n"] == pytest.approx(
            float(ref["accuracy"]), abs=1e-12
        ), model
    assert seb.counts["word_association_string_bools"] == 6
    assert seb.counts["word_association_whitespace_outcomes"] == 6


@pytest.mark.shared_data
def test_always_false_baseline_matches(seb: SebImport, aliases: dict[str, str]) -> None:
    """Accuracy of always predicting False equals ``baseline_false_accuracy`` per model."""
    newest = seb.records.filter(
        (pl.col("task") == "word_association") & (pl.col("run_id") == NEWEST)
    )
    table = _authors("experiment_1.csv", aliases)
    for row in _confusion(newest).iter_rows(named=True):
        assert row["n_false"] / row["n"] == pytest.approx(
            float(table[row["model"]]["baseline_false_accuracy"]), abs=1e-12
        ), row["model"]
    # and every model is below its baseline, as the paper reports
    for row in _confusion(newest).iter_rows(named=True):
        assert (row["TP"] + row["TN"]) < row["n_false"], row["model"]


@pytest.mark.shared_data
def test_strict_bool_reading_differs_as_documented(aliases: dict[str, str]) -> None:
    """Generator for SOURCE.md's "two differ": count only Python booleans, straight from the CSVs.

    Reading only ``bool`` values (no ``parse_bool``) gives the authors' numbers for 13 models;
    deepseek-chat-v3 loses 1 TP and 2 FP, llama-3.2-3b-instruct loses 3 FP (6 items in all,
    at most 3 per model, within SOURCE.md's "at most 4").
    """
    if not SEB.is_dir():
        pytest.skip(f"shared Self-Execution Benchmark data not found at {SEB}")
    table = _authors("experiment_1.csv", aliases)
    diffs: dict[str, tuple[int, int, int, int]] = {}
    for path in sorted((SEB / "experiment 1" / NEWEST).glob("*.csv")):
        tp = fp = tn = fn = 0
        with path.open(newline="", encoding="utf-8") as fh:
            for row in csv.DictReader(fh):
                preds = ast.literal_eval(row["Predictions"])
                gen = {str(w).lower() for w in ast.literal_eval(row["Generated Words"])}
                for word, value in preds.items():
                    if not isinstance(value, bool):
                        continue
                    hit = word.lower() in gen
                    tp += value and hit
                    fp += value and not hit
                    tn += (not value) and not hit
                    fn += (not value) and hit
        ref = table[aliases[path.stem.lower()]]
        d = (tp - int(ref["TP"]), fp - int(ref["FP"]), tn - int(ref["TN"]), fn - int(ref["FN"]))
        if any(d):
            diffs[aliases[path.stem.lower()]] = d
    assert diffs == {"deepseek-chat-v3": (-1, -2, 0, 0), "llama-3.2-3b-instruct": (0, -3, 0, 0)}


@pytest.mark.shared_data
def test_refusal_reproduces_experiment_2(seb: SebImport, aliases: dict[str, str]) -> None:
    """Consistent answers out of 450 equal ``experiment_2.csv`` for all 15 models.

    Consistency = records with ``correct`` true; prompts whose letter could not be read, or that
    have no row in the run, count as wrong (the authors' ``consistency_rate`` divides by 450).
    The authors' failure columns are not compared: for several models they do not equal the
    number of prompts missing from the largest run (e.g. mistral-7b-instruct reports 0 failures
    but its run has 333 of 450 rows), so they cannot be reproduced from the raw files.
    """
    refusal = seb.records.filter(pl.col("task") == "refusal")
    per_model = refusal.group_by("model").agg(
        n=pl.len(), consistent=pl.col("correct").fill_null(False).sum()
    )
    got = {m: (n, c) for m, n, c in per_model.iter_rows()}
    table = _authors("experiment_2.csv", aliases)
    assert len(table) == 15
    for model, ref in table.items():
        n, consistent = got[model]
        assert n == 450, model
        assert consistent == int(ref["consistent_answers"]), model
        assert consistent / 450 == pytest.approx(float(ref["consistency_rate"]), abs=1e-12)


@pytest.mark.shared_data
def test_refusal_block_and_file_choices(seb: SebImport) -> None:
    """Largest run per file (later on a tie), larger file per model, empty files noted."""
    refusal = seb.records.filter(pl.col("task") == "refusal")
    runs = dict(refusal.select("model", "run_id").unique().iter_rows())
    # gpt-4.1-mini holds two 450-row blocks; the later, complete one reproduces 395
    assert runs["gpt-4.1-mini"] == "results#run3"
    files = dict(refusal.select("model", "source_file").unique().iter_rows())
    assert files["mistral-7b-instruct"].endswith("output_data_mistral-7b-instruct.csv")
    assert files["llama-3.2-3b-instruct"].endswith("output_data_llama-3.2-3b-instruct.csv")
    assert seb.counts["refusal_empty_files"] == 2
    assert seb.counts["refusal_unparsed_provision"] == 1  # '"B"' in llama-3.2-3b-instruct
    assert refusal.filter(pl.col("status") == "unparsed").select(
        "model", "item_id", "prediction", "outcome", "correct"
    ).rows() == [("llama-3.2-3b-instruct", "428", None, "false", None)]
    assert refusal["cluster"].null_count() == 0
    joined = "\n".join(seb.notes)
    assert "output_data_gemini-pro.csv" in joined
    assert "output_data_mistral-7b.csv" in joined


@pytest.mark.shared_data
def test_older_run_policy(seb: SebImport) -> None:
    """Models only in results-27-4-25 are imported under that run_id; the others are not mixed."""
    wa = seb.records.filter(pl.col("task") == "word_association")
    older = set(wa.filter(pl.col("run_id") == "results-27-4-25")["model"].unique().to_list())
    newer = set(wa.filter(pl.col("run_id") == NEWEST)["model"].unique().to_list())
    assert len(newer) == 15
    assert older == {
        "deepseek-chat",
        "gemini-2.0-flash",
        "gemini-pro",
        "gpt-4o",
        "gpt-4o-mini",
        "mixtral-8x22b-instruct",
        "qwen2.5-32b-instruct",
    }
    assert not older & newer
    assert seb.counts["word_association_older_run_models_superseded"] == [
        "claude-3.5-haiku",
        "deepseek-r1",
        "llama-3.2-3b-instruct",
        "mistral-7b-instruct",
    ]


@pytest.mark.shared_data
def test_schema_keys_and_registry(seb: SebImport) -> None:
    assert seb.records.schema == pl.Schema(RECORD_SCHEMA)
    assert seb.records.select(["model", "predictor", "task", "item_id", "sample"]).is_unique().all()
    assert (seb.records["predictor"] == seb.records["model"]).all()
    assert seb.counts["unknown_model_spellings"] == []
    reg = seb.registry
    assert reg.columns[: len(REGISTRY_SCHEMA)] == list(REGISTRY_SCHEMA)
    assert {"developer", "aliases"} <= set(reg.columns)
    assert set(reg["model"]) == set(seb.records["model"])
    # capability: Rasch ability for the 15 models of the newer run, null for the rest
    assert reg["capability"].is_not_null().sum() == 15
    cap = dict(reg.select("model", "capability").iter_rows())
    assert cap["gemini-2.5-pro"] == pytest.approx(1.664194)
    assert cap["mistral-7b-instruct"] == pytest.approx(-1.467503)
    assert cap["gpt-4o"] is None


@pytest.mark.shared_data
def test_write_import_round_trip(seb: SebImport, tmp_path: Path) -> None:
    write_import(seb, tmp_path / "out")
    back = pl.read_parquet(tmp_path / "out" / "records.parquet")
    assert back.equals(seb.records)
    reg = pl.read_csv(tmp_path / "out" / "registry.csv")
    assert reg.height == seb.registry.height
    meta = json.loads((tmp_path / "out" / "import.json").read_text())
    assert meta["counts"]["records"] == seb.records.height
    assert meta["notes"] == seb.notes
    assert not [p for p in (tmp_path / "out").iterdir() if p.name.endswith(".tmp")]


# ----------------------------------------------------------------------------------------------
# synthetic clones

MODELS_CSV = """model,aliases,family,developer,params_b,active_params_b,open_weights,reasoning
m-small,org/m-small|org-m-small|small,fam,Org,3,3,true,false
m-big,org/m-big|org-m-big|big,fam,Org,70,,true,false
"""
XSTEST = "id,prompt,type,label,focus,note\n1,p one,homonyms,safe,x,y\n2,p two,contrast,unsafe,x,y\n"
E1_HEADER = "Word,Predictions,Generated Words,Count Words\n"


def _clone(tmp_path: Path, *, models: bool = True) -> Path:
    root = tmp_path / "seb"
    (root / "experiment 1" / NEWEST).mkdir(parents=True)
    (root / "experiment 2" / "results").mkdir(parents=True)
    (root / "experiment 2" / "xstest_prompts.csv").write_text(XSTEST, encoding="utf-8")
    (root / "experiment 1" / "3-5_taboo_words.json").write_text(
        json.dumps({"Lion": ["Mane", "Africa"], "Cat": ["purr", "milk"]}), encoding="utf-8"
    )
    if models:
        (root / "models.csv").write_text(MODELS_CSV, encoding="utf-8")
    return root


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def test_word_association_rows(tmp_path: Path) -> None:
    root = _clone(tmp_path)
    _write(
        root / "experiment 1" / NEWEST / "org-m-small.csv",
        E1_HEADER
        + "Lion,\"{'Mane': True, 'africa': False}\",\"['MANE', 'savanna']\",2\n"
        + "Cat,\"{'purr': __import__('os')}\",\"['purr']\",2\n"  # not a literal: never evaluated
        + "Dog,not a dict,\"['bark']\",2\n"  # unreadable and not in the item set: skipped
        + "Lion2,\"{'x': 'maybe'}\",\"oops\",1\n",
    )
    r = import_seb(root)
    wa = r.records.filter(pl.col("task") == "word_association")
    rows = {
        k: v
        for k, *v in wa.select(
            "item_id", "prediction", "outcome", "correct", "status", "cluster", "source_line"
        ).iter_rows()
    }
    assert rows["Lion::mane"] == ["true", "true", True, "ok", "Lion", 1]
    assert rows["Lion::africa"] == ["false", "false", True, "ok", "Lion", 1]
    # unreadable Predictions for a known target: one unparsed record per option of its item set
    assert rows["Cat::milk"] == [None, "false", None, "unparsed", "Cat", 2]
    assert rows["Cat::purr"] == [None, "true", None, "unparsed", "Cat", 2]
    assert "Dog::bark" not in rows
    assert rows["Lion2::x"] == [None, None, None, "unparsed", "Lion2", 4]
    assert r.counts["word_association_unreadable_prediction_rows"] == 2
    assert r.counts["word_association_unreadable_generated_rows"] == 1
    assert r.counts["word_association_skipped_rows"] == 1
    assert set(wa["model"]) == {"m-small"}
    assert wa["source_file"].unique().to_list() == [f"experiment 1/{NEWEST}/org-m-small.csv"]


def test_refusal_blocks_letters_and_missing(tmp_path: Path) -> None:
    root = _clone(tmp_path)
    res = root / "experiment 2" / "results"
    # two appended runs; the second (largest) is used; a junk letter and a missing prompt
    _write(
        res / "output_data_small.csv",
        '\n0,1,2,3\n1,p one,A,A\n0,1,2,3\n1,"p, one",B,A\n2,p two,"""B""",B\n',
    )
    _write(res / "output_data_big.csv", "0,1,2,3\n2,p two,B,B\n")
    _write(res / "output_data_org-m-small.csv", "0,1,2,3\n1,p one,A,A\n")  # smaller duplicate
    _write(res / "output_data_empty.csv", "\n")
    _write(res / "output_data_stranger.csv", "0,1,2,3\n1,p one,A,B\n2,p two,B,?\n")
    r = import_seb(root)
    ref = r.records.filter(pl.col("task") == "refusal").sort("model", "item_id")
    got = ref.select(
        "model", "item_id", "prediction", "outcome", "correct", "status", "cluster", "run_id"
    ).rows()
    assert len(got) == 6  # three models x two prompts; the empty file gives none
    by = {(m, i): rest for m, i, *rest in got}
    assert by[("m-small", "1")] == ["false", "true", False, "ok", "homonyms", "results#run2"]
    assert by[("m-small", "2")] == [None, "false", None, "unparsed", "contrast", "results#run2"]
    assert by[("m-big", "1")] == [None, None, None, "error", "homonyms", "results#run1"]
    assert by[("m-big", "2")] == ["false", "false", True, "ok", "contrast", "results#run1"]
    # unknown spelling kept under its own name, noted
    assert by[("stranger", "1")] == ["true", "false", False, "ok", "homonyms", "results#run1"]
    assert by[("stranger", "2")] == ["false", None, None, "unparsed", "contrast", "results#run1"]
    assert "empty" not in set(ref["model"])
    assert r.counts["unknown_model_spellings"] == ["empty", "stranger"]
    notes = "\n".join(r.notes)
    assert "'stranger'" in notes and "output_data_empty.csv" in notes
    assert "output_data_org-m-small.csv" in notes  # smaller duplicate of m-small, not used
    # registry: known models with covariates, the stranger with nulls
    reg = {row["model"]: row for row in r.registry.iter_rows(named=True)}
    assert reg["m-big"]["params_b"] == 70.0 and reg["m-big"]["active_params_b"] is None
    assert reg["stranger"]["family"] is None
    assert reg["m-small"]["capability"] is None


def test_missing_folders_are_input_errors(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no such folder"):
        import_seb(tmp_path / "nope")
    root = _clone(tmp_path)
    (root / "experiment 2" / "results").rmdir()
    with pytest.raises(InputError) as err:
        import_seb(root)
    message = str(err.value)
    assert "experiment 2/results" in message and "\n" not in message


def test_without_models_csv(tmp_path: Path) -> None:
    root = _clone(tmp_path, models=False)
    _write(root / "experiment 2" / "results" / "output_data_small.csv", "0,1,2,3\n1,p,A,A\n")
    r = import_seb(root)
    assert set(r.records["model"]) == {"small"}
    assert any("no models.csv" in n for n in r.notes)
    assert r.registry["model"].to_list() == ["small"]
    with pytest.raises(InputError, match="no such file"):
        import_seb(root, models=tmp_path / "missing.csv")


def test_bad_models_csv(tmp_path: Path) -> None:
    root = _clone(tmp_path)
    (root / "models.csv").write_text(MODELS_CSV.replace(",70,", ",seventy,"), encoding="utf-8")
    with pytest.raises(InputError, match=r"data line 2.*params_b"):
        import_seb(root)
