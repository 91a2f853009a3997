"""Tests of the mapping-driven importers (lm-evaluation-harness samples, Inspect AI logs).

Fixtures: ``tests/fixtures/importers`` (see its README). Inspect logs are written in
``tmp_path`` with inspect_ai's own writer. inspect_ai (the ``inspect`` extra) is in
requirements.lock, so these tests run everywhere the lock is installed and are never skipped.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import polars as pl
import pytest

from selfmodel.records.contract import RECORD_SCHEMA, REGISTRY_SCHEMA, InputError
from selfmodel.records.importers.inspect_logs import INSTALL_HINT, import_inspect
from selfmodel.records.importers.lmeval import import_lmeval, read_lmeval_samples
from selfmodel.records.importers.mapping import (
    LogSample,
    apply_mapping,
    load_mapping,
    parse_mapping,
    resolve_path,
)
from selfmodel.records.importers.seb import write_import

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "importers"
LLAMA = "meta-llama/Llama-3.1-8B-Instruct"
QWEN = "Qwen/Qwen2.5-7B-Instruct"

BASE = {
    "format": "lmeval",
    "task": "refusal",
    "fields": {"item_id": "doc.id", "prediction": "filtered_resps.0", "outcome": "target"},
}


def _rows(frame: pl.DataFrame, *cols: str) -> dict[str, tuple]:
    return {r[0]: tuple(r[1:]) for r in frame.select("item_id", *cols).iter_rows()}


# ----------------------------------------------------------------------------------------------
# mapping files


def test_parse_mapping_checks_keys_with_suggestions() -> None:
    with pytest.raises(InputError, match=r"unknown key 'feilds'.*Did you mean 'fields'"):
        parse_mapping({**BASE, "feilds": {}})
    with pytest.raises(InputError, match=r"unknown key 'predicton' in \[fields\].*'prediction'"):
        parse_mapping({**BASE, "fields": {**BASE["fields"], "predicton": "x"}})
    with pytest.raises(InputError, match="format"):
        parse_mapping({**BASE, "format": "helm"})
    # no task: the log's own task name (Inspect's eval.task, lm-eval's samples_<task>_ file)
    assert parse_mapping({k: v for k, v in BASE.items() if k != "task"}).fields["task"].path == (
        "@task"
    )
    with pytest.raises(InputError, match="need a \\[join\\]"):
        parse_mapping({**BASE, "fields": {**BASE["fields"], "outcome": "object:target"}})
    with pytest.raises(InputError, match="type is 'boolean'.*'bool'"):
        parse_mapping(
            {**BASE, "fields": {**BASE["fields"], "outcome": {"path": "t", "type": "boolean"}}}
        )
    with pytest.raises(InputError, match="both at the top level and in"):
        parse_mapping({**BASE, "fields": {**BASE["fields"], "task": "doc.task"}})


def test_load_mapping_errors(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="not found"):
        load_mapping(tmp_path / "none.toml")
    bad = tmp_path / "bad.toml"
    bad.write_text("format = lmeval\n", encoding="utf-8")
    with pytest.raises(InputError, match="not valid TOML"):
        load_mapping(bad)
    m = load_mapping(FIX / "join.toml")
    assert m.joins[0].object_key == ("doc.id",)
    assert m.base == FIX


def test_resolve_path() -> None:
    sample = {"doc": {"id": 7, "tags": ["a", "b"]}, "resps": [["A"]], "x": None}
    assert resolve_path(sample, "resps.0.0") == "A"
    assert resolve_path(sample, "doc.tags.-1") == "b"
    assert resolve_path(sample, "") is sample
    with pytest.raises(KeyError, match=r"no key 'idd'.*Keys there: id, tags.*'id'"):
        resolve_path(sample, "doc.idd")
    with pytest.raises(KeyError, match="index 3 is outside a list of 2"):
        resolve_path(sample, "doc.tags.3")
    with pytest.raises(KeyError, match="null value"):
        resolve_path(sample, "x.y")


def test_apply_mapping_values_and_status() -> None:
    m = parse_mapping(
        {
            "format": "inspect",
            "task": "difficulty",
            "fields": {
                "item_id": "id",
                "prediction": {"path": "p", "type": "bool"},
                "outcome": {"path": "o", "map": {"C": "true", "I": "false"}},
                "confidence": "conf",
                "sample": "rep",
            },
        }
    )
    meta = {"model": "m"}
    samples = [
        LogSample({"id": 1, "p": "yes", "o": "C", "conf": 0.8, "rep": "2"}, meta, "f", 1),
        LogSample({"id": 2, "p": "maybe", "o": "I", "conf": 1.5}, meta, "f", 2),
        LogSample({"id": 3, "p": False, "o": "?"}, meta, "f", 3, status="error"),
        LogSample({"id": 4, "p": 0, "o": "I", "conf": "high"}, meta, "f", 4),
    ]
    r = apply_mapping(m, samples)
    assert r.records.schema == pl.Schema(RECORD_SCHEMA)
    rows = _rows(r.records, "prediction", "outcome", "correct", "status", "confidence", "sample")
    assert rows["1"] == ("true", "true", True, "ok", 0.8, 2)
    assert rows["2"] == (None, "false", None, "unparsed", None, 0)
    assert rows["3"] == ("false", None, None, "error", None, 0)
    assert rows["4"] == ("false", "false", True, "ok", None, 0)
    assert r.counts["unreadable_values"] == {"outcome": 1, "prediction": 1}
    assert r.counts["value_problems"] == {"confidence_out_of_range": 1, "confidence_unreadable": 1}
    assert (r.records["predictor"] == "m").all()


def test_value_steps_regex_normalize_map_type_and_scores() -> None:
    from selfmodel.records.importers.mapping.logs_paths import convert
    from selfmodel.records.importers.mapping.logs_spec import _field_spec

    def read(value: object, **table: object) -> tuple[object, bool]:
        return convert(value, _field_spec("prediction", {"path": "p", **table}, "m"))

    score = {"type": "score"}
    got = [read(v, **score) for v in ("C", "I", "P", "N", 1.0, 0, True, 0.5, " C ")]
    assert got == [
        ("true", True),
        ("false", True),
        (None, False),  # partial credit is not a yes/no verdict
        (None, False),  # no answer
        ("true", True),
        ("false", True),
        ("true", True),
        (None, False),
        ("true", True),
    ]
    yes_no = {"normalize": ["punctuation", "casefold"], "map": {"YES": "true", "No": "false"}}
    assert read("Yes.\n", **yes_no) == ("true", True)  # map keys normalised the same way
    assert read("no!", **yes_no) == ("false", True)
    assert read("maybe", **yes_no) == (None, False)
    answer = {"regex": r"ANSWER:\s*([A-D])", "normalize": ["casefold"]}
    assert read("I think... ANSWER: B.", **answer) == ("b", True)
    assert read("no answer given", **answer) == (None, False)
    assert read(42, regex=r"\d") == ("4", True)  # a number is searched as its text
    with pytest.raises(InputError, match="normalize has 'lower'.*casefold"):
        read("x", normalize=["lower"])
    with pytest.raises(InputError, match="type is 'boolean'"):
        read("x", type="boolean")


# ----------------------------------------------------------------------------------------------
# lm-evaluation-harness


def test_lmeval_single_log() -> None:
    r = import_lmeval(FIX / "single", mapping=FIX / "single.toml")
    recs = r.records
    assert recs.schema == pl.Schema(RECORD_SCHEMA)
    assert recs.height == 4
    assert set(recs["model"]) == {LLAMA} and set(recs["task"]) == {"refusal"}
    rows = _rows(recs, "prediction", "outcome", "correct", "status", "cluster", "source_line")
    assert rows == {
        "x1": ("true", "true", True, "ok", "homonyms", 1),
        "x2": ("true", "false", False, "ok", "contrast_homonyms", 3),
        "x3": ("false", "false", True, "ok", "homonyms", 5),
        "x4": (None, "true", None, "unparsed", "privacy_public", 7),
    }
    assert r.counts["skipped_by_where"] == 4
    assert r.counts["unreadable_values"] == {"prediction": 1}
    assert r.counts["files"] == 1
    assert recs["source_file"].unique().to_list() == [
        "meta-llama__Llama-3.1-8B-Instruct/"
        "samples_selfpred_refusal_2025-01-02T10-00-00.000001.jsonl"
    ]
    assert r.registry.columns == list(REGISTRY_SCHEMA)


def test_lmeval_join_cross_prediction() -> None:
    """Qwen predicts Llama's behaviour: predictor != model; unmatched items are accounted for."""
    r = import_lmeval(None, mapping=FIX / "join.toml")
    recs = r.records
    assert set(recs["model"]) == {LLAMA}
    assert set(recs["predictor"]) == {QWEN}  # from the folder name: no results file there
    rows = _rows(recs, "prediction", "outcome", "correct", "status", "cluster")
    assert rows == {
        "x1": ("true", "true", True, "ok", "homonyms"),
        "x2": ("true", "false", False, "ok", "contrast_homonyms"),
        "x3": ("false", "true", False, "ok", "homonyms"),
        "x4": (None, "true", None, "error", "privacy_public"),
    }
    assert r.counts["join_object_only"] == 1
    assert r.counts["join_hypothetical_only"] == 1
    assert r.counts["cross_predictions"] == 4
    assert any("folder name" in n and QWEN in n for n in r.notes)
    assert set(r.registry["model"]) == {LLAMA, QWEN}


def test_lmeval_join_paths_relative_to_src(tmp_path: Path) -> None:
    shutil.copytree(FIX / "join", tmp_path / "logs" / "join")
    mapping = tmp_path / "m.toml"
    mapping.write_text((FIX / "join.toml").read_text(encoding="utf-8"), encoding="utf-8")
    r = import_lmeval(tmp_path / "logs", mapping=mapping)
    assert r.records.height == 4
    with pytest.raises(InputError, match=r"\[join\] object = .* not found"):
        import_lmeval(tmp_path, mapping=mapping)


def test_lmeval_wrong_path_names_keys_and_suggests() -> None:
    m = parse_mapping({**BASE, "fields": {**BASE["fields"], "item_id": "doc.idd"}})
    with pytest.raises(InputError) as err:
        import_lmeval(FIX / "single", mapping=m)
    msg = str(err.value)
    assert "fields.item_id = 'doc.idd'" in msg
    assert "Keys there: id, prompt, type, answered" in msg
    assert "Did you mean 'id'?" in msg
    assert "(line 1)" in msg and "\n" not in msg
    m = parse_mapping({**BASE, "fields": {**BASE["fields"], "model": "@results.modelname"}})
    with pytest.raises(InputError, match=r"metadata.*Did you mean 'model_name'"):
        import_lmeval(FIX / "single", mapping=m)


def test_lmeval_format_and_missing_inputs(tmp_path: Path) -> None:
    with pytest.raises(InputError, match='set format = "lmeval"'):
        import_lmeval(FIX / "single", mapping=parse_mapping({**BASE, "format": "inspect"}))
    with pytest.raises(InputError, match="no such file or folder"):
        import_lmeval(tmp_path / "nothing", mapping=FIX / "single.toml")
    with pytest.raises(InputError, match="no lm-evaluation-harness samples"):
        import_lmeval(tmp_path, mapping=FIX / "single.toml")


def test_lmeval_bad_lines_and_model_fallbacks(tmp_path: Path) -> None:
    folder = tmp_path / "org__model-x"
    folder.mkdir()
    good = {"doc_id": 0, "doc": {"id": "q"}, "target": "A", "filtered_resps": ["A"]}
    path = folder / "samples_t_2025-02-02T01-02-03.5.jsonl"
    path.write_text(json.dumps(good) + "\n{not json\n\n", encoding="utf-8")
    samples, notes = read_lmeval_samples(path)
    assert len(samples) == 1 and samples[0].meta["model"] == "org/model-x"
    assert samples[0].meta["task"] == "t"
    assert any("not valid JSON" in n and "[2]" in n for n in notes)
    (folder / "results_2025-02-02T01-02-03.5.json").write_text(
        json.dumps({"config": {"model_args": "pretrained=org/real-name,dtype=auto"}}),
        encoding="utf-8",
    )
    samples, _ = read_lmeval_samples(path)
    assert samples[0].meta["model"] == "org/real-name"
    r = import_lmeval(path, mapping=parse_mapping(BASE))
    assert r.records["correct"].to_list() == [True]
    (folder / "samples_u_2025-02-02T01-02-03.5.jsonl").write_text("{bad\n", encoding="utf-8")
    with pytest.raises(InputError, match="no line is valid JSON"):
        import_lmeval(folder, mapping=parse_mapping(BASE))


def test_write_mapped_import(tmp_path: Path) -> None:
    r = import_lmeval(FIX / "single", mapping=FIX / "single.toml")
    write_import(r, tmp_path / "out")
    assert pl.read_parquet(tmp_path / "out" / "records.parquet").equals(r.records)
    assert pl.read_csv(tmp_path / "out" / "registry.csv")["model"].to_list() == [LLAMA]
    assert json.loads((tmp_path / "out" / "import.json").read_text())["counts"]["records"] == 4


# ----------------------------------------------------------------------------------------------
# Inspect AI

INSPECT_MAPPING = {
    "format": "inspect",
    "task": "correctness",
    "fields": {
        "item_id": "id",
        "prediction": {"path": "output.completion", "map": {"yes": "true", "no": "false"}},
        "outcome": {"path": "scores.match.value", "map": {"C": "true", "I": "false"}},
        "cluster": "metadata.subject",
    },
}


def test_inspect_missing_dependency(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setitem(sys.modules, "inspect_ai.log", None)  # makes the import fail
    with pytest.raises(InputError) as err:
        import_inspect(tmp_path, mapping=parse_mapping(INSPECT_MAPPING))
    assert str(err.value) == INSTALL_HINT
    assert "pip install 'selfmodel[inspect]'" in INSTALL_HINT


def _inspect_log(path: Path, *, model: str, samples: list[dict], status: str = "success") -> Path:
    import inspect_ai.log as log_mod
    from inspect_ai.model import ModelOutput
    from inspect_ai.scorer import Score

    spec = log_mod.EvalSpec(
        created="2025-03-01T00:00:00+00:00",
        task="self_pred",
        dataset=log_mod.EvalDataset(name="toy"),
        model=model,
        config=log_mod.EvalConfig(),
    )
    built = []
    for s in samples:
        built.append(
            log_mod.EvalSample(
                id=s["id"],
                epoch=s.get("epoch", 1),
                input=f"question {s['id']}",
                target="42",
                output=ModelOutput.from_content(model=model, content=s["completion"]),
                scores={"match": Score(value=s["score"])} if "score" in s else None,
                metadata={"subject": s.get("subject", "math")},
                error=log_mod.EvalError(message="boom", traceback="", traceback_ansi="")
                if s.get("error")
                else None,
            )
        )
    log_mod.write_eval_log(log_mod.EvalLog(eval=spec, samples=built, status=status), path)
    return path


@pytest.mark.parametrize("suffix", [".eval", ".json"])
def test_inspect_single_log(tmp_path: Path, suffix: str) -> None:
    path = _inspect_log(
        tmp_path / f"log{suffix}",
        model="openai/gpt-4o",
        samples=[
            {"id": "q1", "completion": "yes", "score": "C"},
            {"id": "q1", "epoch": 2, "completion": "yes", "score": "I"},
            {"id": "q2", "completion": "no", "score": "I", "subject": "law"},
            {"id": "q3", "completion": "perhaps", "score": "C"},
            {"id": "q4", "completion": "", "error": True},
        ],
    )
    r = import_inspect(path, mapping=parse_mapping(INSPECT_MAPPING))
    recs = r.records.sort("item_id", "sample")
    assert recs.schema == pl.Schema(RECORD_SCHEMA)
    got = recs.select(
        "item_id", "sample", "prediction", "outcome", "correct", "status", "cluster", "model"
    ).rows()
    assert got == [
        ("q1", 0, "true", "true", True, "ok", "math", "openai/gpt-4o"),
        ("q1", 1, "true", "false", False, "ok", "math", "openai/gpt-4o"),
        ("q2", 0, "false", "false", True, "ok", "law", "openai/gpt-4o"),
        ("q3", 0, None, "true", None, "unparsed", "math", "openai/gpt-4o"),
        ("q4", 0, None, None, None, "error", "math", "openai/gpt-4o"),
    ]
    assert recs["source_file"].unique().to_list() == [f"log{suffix}"]
    assert any("ended in an error" in n for n in r.notes)


def test_inspect_join_and_folder(tmp_path: Path) -> None:
    _inspect_log(
        tmp_path / "object.eval",
        model="openai/gpt-4o",
        samples=[
            {"id": "q1", "completion": "42", "score": "C"},
            {"id": "q2", "completion": "41", "score": "I"},
        ],
    )
    _inspect_log(
        tmp_path / "hyp.json",
        model="anthropic/claude-3-5-haiku",
        samples=[{"id": "q1", "completion": "no"}, {"id": "q2", "completion": "no"}],
    )
    mapping = parse_mapping(
        {
            "format": "inspect",
            "task": "correctness",
            "fields": {
                "outcome": {"path": "scores.match.value", "map": {"C": "true", "I": "false"}},
                "prediction": {
                    "path": "output.completion",
                    "map": {"yes": "true", "no": "false"},
                },
                "run_id": "@run_id",
            },
            "join": {"object": "object.eval", "hypothetical": "hyp.json", "key": ["id", "epoch"]},
        }
    )
    r = import_inspect(tmp_path, mapping=mapping)
    rows = _rows(r.records, "model", "predictor", "prediction", "outcome", "correct")
    assert rows == {
        "q1::1": ("openai/gpt-4o", "anthropic/claude-3-5-haiku", "false", "true", False),
        "q2::1": ("openai/gpt-4o", "anthropic/claude-3-5-haiku", "false", "false", True),
    }
    assert r.counts["cross_predictions"] == 2
    # a folder is read by content (issue 29): hyp.json is an Inspect log whatever its name,
    # so both logs are read; a renamed log is read the same; other files are listed
    folder_mapping = parse_mapping(
        {**INSPECT_MAPPING, "fields": {**INSPECT_MAPPING["fields"], "outcome": "target"}}
    )
    both = import_inspect(tmp_path, mapping=folder_mapping)
    assert set(both.records["model"]) == {"openai/gpt-4o", "anthropic/claude-3-5-haiku"}
    assert both.counts["files"] == 2 and both.counts["files_not_read"] == []
    (tmp_path / "hyp.json").rename(tmp_path / "2025-03-01T00-00-00+00-00_self-pred_x.json")
    renamed = import_inspect(tmp_path, mapping=folder_mapping)
    assert renamed.records.height == both.records.height


def test_inspect_unreadable_file(tmp_path: Path) -> None:
    bad = tmp_path / "x.json"
    bad.write_text('{"not": "a log"}', encoding="utf-8")
    with pytest.raises(InputError, match="not a readable Inspect log"):
        import_inspect(bad, mapping=parse_mapping(INSPECT_MAPPING))
