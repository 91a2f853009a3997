"""The importers on real Inspect AI and lm-evaluation-harness logs (``fixtures/importers/real``).

Also the mapping features of issue 13 on them: the log's own task, epochs as samples, each
log its own run, normalisation and regex extraction, Inspect score values, ``[where]`` on
``@`` keys, globbed joins, sizes into the registry, ``--preview``, and one boolean rule
shared with ingest.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

from selfmodel.records.contract import InputError
from selfmodel.records.importers.inspect_logs import import_inspect
from selfmodel.records.importers.lmeval import import_lmeval
from selfmodel.records.importers.mapping import parse_mapping
from selfmodel.records.importers.seb import write_import
from selfmodel.records.ingest import ingest

REAL = Path(__file__).resolve().parents[1] / "fixtures" / "importers" / "real"
INSPECT, LMEVAL = REAL / "inspect", REAL / "lmeval"
GPT4OMINI, LLAMA405 = "openai/gpt-4o-mini", "azureai/Meta-Llama-3-1-405B-Instruct-jqf"
POPULARITY = {
    "format": "inspect",
    "fields": {
        "prediction": {"path": "output.completion", "normalize": ["punctuation"], "type": "bool"},
        "outcome": {"path": "target", "type": "bool"},
    },
    "where": {"@task": "popularity"},
}


def test_inspect_real_folder_task_epochs_runs() -> None:
    r = import_inspect(INSPECT, mapping=REAL / "inspect.toml")
    recs = r.records
    assert set(recs["task"]) == {"popularity"}  # eval.task, not the literal "@task"
    assert r.counts["skipped_by_where"] == 1  # the mmlu log's one sample
    assert r.counts["files"] == 7
    # gpt-4o-mini: three logs are three runs of the same items (10 + 10 + 3 samples)
    gpt = recs.filter(pl.col("model") == GPT4OMINI)
    assert gpt.group_by("run_id").len().sort("run_id")["len"].to_list() == [10, 10, 3]
    assert gpt.select("item_id", "run_id", "sample").is_unique().all()
    # epochs 1 and 2 of the 405B log are samples 0 and 1 of each item
    llama = recs.filter(pl.col("model") == LLAMA405).sort("item_id", "sample")
    assert llama.select("item_id", "sample", "prediction", "outcome", "correct").rows() == [
        ("1", 0, "false", "true", False),  # "No" against " Yes"
        ("1", 1, "true", "true", True),  # "Yes."
        ("2", 0, "false", "false", True),  # "No."
        ("2", 1, "false", "false", True),
    ]
    gemma = recs.filter(pl.col("model") == "ollama/gemma3")
    assert gemma["prediction"].to_list() == ["true"]  # "Yes\n"
    assert any("cancelled" in n for n in r.notes)
    # the mapped outcome agrees with Inspect's own match() scorer on every scored sample
    scored = import_inspect(
        INSPECT / "2025-02-11T15-18-04-05-00_popularity_mj7khqpMM4GBCfVQozKgzB.eval",
        mapping=parse_mapping(
            {
                **POPULARITY,
                "fields": {
                    **POPULARITY["fields"],
                    "correct": {"path": "scores.match.value", "type": "score"},
                },
            }
        ),
    )
    assert (
        scored.records["correct"].to_list()
        == gpt.filter(pl.col("run_id").str.starts_with("2025-02-11T15-18"))["correct"].to_list()
    )
    from inspect_ai.log import read_eval_log

    log = read_eval_log(
        str(INSPECT / "2025-02-11T15-18-04-05-00_popularity_mj7khqpMM4GBCfVQozKgzB.eval")
    )
    values = [s.scores["match"].value for s in log.samples]
    assert scored.records["correct"].to_list() == [v == "C" for v in values]


def test_inspect_scorer_names_in_messages() -> None:
    m = parse_mapping(
        {
            "format": "inspect",
            "fields": {"prediction": "output.completion", "outcome": "scores.match.value"},
        }
    )
    with pytest.raises(InputError) as err:
        import_inspect(INSPECT / "mmlu-no-summary-choices.eval", mapping=m)
    msg = str(err.value)
    assert "fields.outcome = 'scores.match.value'" in msg and "Keys there: choice" in msg
    assert "mmlu-no-summary-choices.eval (line 1)" in msg and "\n" not in msg


def test_inspect_regex_and_scores_and_top_level_task() -> None:
    mmlu = INSPECT / "mmlu-no-summary-choices.eval"
    m = parse_mapping(
        {
            "format": "inspect",
            "task": "@task",
            "fields": {
                "prediction": {"path": "output.completion", "regex": r"ANSWER:\s*([A-D])"},
                "outcome": "target",
                "cluster": "metadata.subject",
            },
        }
    )
    r = import_inspect(mmlu, mapping=m)
    assert r.records.select("task", "prediction", "outcome", "correct", "cluster").rows() == [
        ("inspect_evals/mmlu_0_shot", "C", "A", False, "college_physics")
    ]
    no_match = parse_mapping(
        {
            "format": "inspect",
            "fields": {
                "prediction": {"path": "output.completion", "regex": r"FINAL:\s*(\w)"},
                "outcome": "target",
            },
        }
    )
    r = import_inspect(mmlu, mapping=no_match)
    assert r.records["status"].to_list() == ["unparsed"]
    assert r.counts["unreadable_values"] == {"prediction": 1}
    with pytest.raises(InputError, match=r"regex .* not a valid pattern \(column 9\)") as err:
        parse_mapping(
            {
                "format": "inspect",
                "fields": {"prediction": {"path": "x", "regex": "ANSWER:(["}, "outcome": "target"},
            }
        )
    assert "\n" not in str(err.value)


def test_where_on_metadata_lists_and_nothing_matched() -> None:
    both = parse_mapping(
        {
            **POPULARITY,
            "fields": {
                **POPULARITY["fields"],
                "prediction": "output.completion",
                "outcome": "target",
            },
            "where": {"@model": ["ollama/gemma3", "ollama/llama3.1"]},
        }
    )
    r = import_inspect(INSPECT, mapping=both)
    assert set(r.records["model"]) == {"ollama/gemma3", "ollama/llama3.1"}
    with pytest.raises(InputError) as err:
        import_inspect(
            INSPECT, mapping=parse_mapping({**POPULARITY, "where": {"@task": "popular"}})
        )
    msg = str(err.value)
    assert "[where] matches none of the 30 samples" in msg
    assert "'inspect_evals/mmlu_0_shot', 'popularity'" in msg and "\n" not in msg


def test_lmeval_real_tree_models_tasks_sizes() -> None:
    r = import_lmeval(LMEVAL, mapping=REAL / "lmeval.toml")
    per = dict(((m, t), n) for m, t, n in r.records.group_by("model", "task").len().iter_rows())
    assert per == {
        ("Qwen/Qwen3-8B", "negotiationtom_belief"): 20,
        ("Qwen/Qwen3-8B", "negotiationtom_desire"): 20,
        ("meta-llama/Meta-Llama-3-8B-Instruct", "asdiv"): 50,
    }
    sizes = dict(r.registry.select("model", "params_b").iter_rows())
    assert sizes == {
        "Qwen/Qwen3-8B": pytest.approx(8.19073536),
        "meta-llama/Meta-Llama-3-8B-Instruct": pytest.approx(8.030261248),
    }
    # the per-sample acc, summed, is the results file's accuracy
    results = json.loads(
        next((LMEVAL / "Qwen__Qwen3-8B").glob("results_*.json")).read_text(encoding="utf-8")
    )
    belief = r.records.filter(pl.col("task") == "negotiationtom_belief")
    assert belief["correct"].mean() == pytest.approx(
        results["results"]["negotiationtom_belief"]["acc,none"]
    )


def test_yes_no_against_true_false_reads_as_ingest_does(tmp_path: Path) -> None:
    """A yes/no prediction mapped against true/false outcomes: no 'correct disagrees'."""
    m = parse_mapping(
        {
            "format": "inspect",
            "fields": {
                "prediction": {"path": "output.completion", "normalize": ["punctuation"]},
                "outcome": "target",
            },
        }
    )
    r = import_inspect(INSPECT / "log_streaming.eval", mapping=m)
    # "No."/"Yes" text against " Yes"/" No" targets: both read as booleans, then compared
    assert r.records.sort("item_id", "sample").select(
        "prediction", "outcome", "correct"
    ).rows() == [
        ("false", "true", False),
        ("true", "true", True),
        ("false", "false", True),
        ("false", "false", True),
    ]
    # a yes/no self-prediction against Inspect's verdict (C/I read as true/false)
    verdict = parse_mapping(
        {
            "format": "inspect",
            "fields": {
                "prediction": {"path": "output.completion", "normalize": ["punctuation"]},
                "outcome": {"path": "scores.match.value", "type": "score"},
            },
        }
    )
    v = import_inspect(INSPECT / "log_streaming.eval", mapping=verdict)
    assert v.records.sort("item_id", "sample").select(
        "prediction", "outcome", "correct"
    ).rows() == [
        ("false", "false", True),  # "No", scored I
        ("true", "true", True),  # "Yes.", scored C
        ("false", "true", False),  # "No.", scored C
        ("false", "true", False),  # "No", scored C
    ]
    write_import(v, tmp_path / "verdict")
    ing_v = ingest([tmp_path / "verdict" / "records.parquet"])
    assert ing_v.quarantine.height == 0 and ing_v.records.height == 4
    write_import(r, tmp_path / "imp")
    ing = ingest([tmp_path / "imp" / "records.parquet"])
    assert ing.quarantine.height == 0
    assert (
        ing.records.sort("item_id", "sample")["correct"].to_list()
        == r.records.sort("item_id", "sample")["correct"].to_list()
    )


def test_glob_joins_pair_logs(tmp_path: Path) -> None:
    """One object log, several hypothetical logs matched by a glob: one pair each."""
    obj = tmp_path / "object"
    hyp = tmp_path / "hyp"
    obj.mkdir()
    hyp.mkdir()
    (obj / "log_streaming.eval").write_bytes((INSPECT / "log_streaming.eval").read_bytes())
    for name in ("log_formats.eval", "log_read_sample.eval"):
        (hyp / name).write_bytes((INSPECT / name).read_bytes())
    m = parse_mapping(
        {
            "format": "inspect",
            "fields": {
                "outcome": {"path": "target", "type": "bool"},
                "prediction": {"path": "output.completion", "normalize": ["punctuation"]},
            },
            "join": {"object": "object/*.eval", "hypothetical": "hyp/*.eval", "key": "id"},
        }
    )
    r = import_inspect(tmp_path, mapping=m)
    assert r.counts["joined_log_pairs"] == 2
    got = r.records.select("model", "predictor", "item_id", "prediction", "status")
    assert got.sort("predictor", "item_id").rows() == [
        (LLAMA405, "ollama/gemma3", "1", "true", "ok"),
        (LLAMA405, "ollama/gemma3", "2", None, "error"),
        (LLAMA405, "ollama/llama3.1", "1", "false", "ok"),
        (LLAMA405, "ollama/llama3.1", "2", None, "error"),
    ]
    assert r.counts["join_object_only"] == 2  # item 2 has no prediction in either log
    assert r.counts["join_duplicate_keys"] == 4  # the second epoch of each item, twice
    m_missing = parse_mapping(
        {
            "format": "inspect",
            "fields": {"outcome": "target", "prediction": "output.completion"},
            "join": {"object": "nope/*.eval", "hypothetical": "hyp/*.eval", "key": "id"},
        }
    )
    with pytest.raises(InputError, match="matches no file"):
        import_inspect(tmp_path, mapping=m_missing)


def test_preview_prints_and_writes_nothing(tmp_path: Path) -> None:
    cmd = [
        sys.executable,
        "-c",
        "import sys; from selfmodel.cli import main; sys.exit(main())",
        "import",
        "lmeval",
        str(LMEVAL),
        "--mapping",
        str(REAL / "lmeval.toml"),
        "--preview",
    ]
    done = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "first 10 of 90 mapped records" in out
    assert "Qwen/Qwen3-8B,,8.19073536," in out  # registry template, size from the log
    assert "meta-llama/Meta-Llama-3-8B-Instruct" in out and "asdiv" in out
    assert list(tmp_path.iterdir()) == []
    bad = subprocess.run([*cmd[:-1]], cwd=tmp_path, capture_output=True, text=True)
    assert bad.returncode == 2 and "--out DIR (or --preview" in bad.stderr
    assert "Traceback" not in bad.stderr


def test_join_list_and_globs_paired_by_model(tmp_path: Path) -> None:
    """[[join]] tables, and globs with several logs on both sides paired by model."""
    for side in ("object", "hyp"):
        (tmp_path / side).mkdir()
        for name in ("log_formats.eval", "log_read_sample.eval"):
            (tmp_path / side / name).write_bytes((INSPECT / name).read_bytes())
    fields = {
        "outcome": {"path": "target", "type": "bool"},
        "prediction": {"path": "output.completion", "normalize": ["punctuation"]},
    }
    by_model = parse_mapping(
        {
            "format": "inspect",
            "fields": fields,
            "join": {"object": "object/*.eval", "hypothetical": "hyp/*.eval", "key": "id"},
        }
    )
    r = import_inspect(tmp_path, mapping=by_model)
    assert r.counts["joined_log_pairs"] == 2
    assert r.records.select("model", "predictor", "prediction", "correct").sort("model").rows() == [
        ("ollama/gemma3", "ollama/gemma3", "true", True),  # "Yes\n" against " Yes"
        ("ollama/llama3.1", "ollama/llama3.1", "false", False),  # "No" against " Yes"
    ]
    listed = parse_mapping(
        {
            "format": "inspect",
            "fields": fields,
            "join": [
                {
                    "object": "object/log_formats.eval",
                    "hypothetical": "hyp/log_read_sample.eval",
                    "key": "id",
                },
                {
                    "object": "object/log_read_sample.eval",
                    "hypothetical": "hyp/log_formats.eval",
                    "key": "id",
                },
            ],
        }
    )
    cross = import_inspect(tmp_path, mapping=listed)
    assert cross.counts["cross_predictions"] == 2
    assert set(cross.records.select("model", "predictor").rows()) == {
        ("ollama/llama3.1", "ollama/gemma3"),
        ("ollama/gemma3", "ollama/llama3.1"),
    }
    (tmp_path / "hyp" / "log_streaming.eval").write_bytes(
        (INSPECT / "log_streaming.eval").read_bytes()
    )
    with pytest.raises(
        InputError, match=r"hyp/log_streaming.eval \(model 'azureai/.*no object log"
    ):
        import_inspect(tmp_path, mapping=by_model)
