"""Study designs with a mapping file and honest status words (issue 29).

Fixtures are under ``tests/fixtures/studies/`` (built by hand, see its ``SOURCE.md``); the
Inspect folder test uses a real MIT-licensed Inspect log under other names. Every number is
checked against a hand computation written out in the test. Nothing here samples.
"""

from __future__ import annotations

import csv
import inspect
import json
import shutil
from pathlib import Path

import pytest

from selfmodel.cli import main
from selfmodel.records.contract import InputError
from selfmodel.records.importers.mapping.records_apply import load_transform
from selfmodel.records.ingest import ingest
from selfmodel.report.sections import verdict as verdict_section
from selfmodel.report.sections.common import esc

ROOT = Path(__file__).resolve().parents[1]  # tests/
STUDIES = ROOT / "fixtures" / "studies"
CONF = STUDIES / "confidence_0_10"
OPTS = STUDIES / "per_option"
REAL_JSON_LOG = (ROOT / "fixtures" / "importers" / "real" / "inspect"
                 / "2025-05-12T20-28-13-04-00_popularity.json")


def _accuracy(records, model: str, task: str) -> tuple[int, int]:
    cell = records.filter((records["model"] == model) & (records["task"] == task))
    return int(cell["correct"].sum()), cell.height


# --------------------------------------------------------------------------- confidence 0-10


def test_confidence_0_10_study_matches_hand_computation() -> None:
    """0-10 confidence, rescaled as declared; prediction = confidence >= 0.5; outcome = answered right.

    By hand, gpt-4o before solving (question, iteration, confidence, right?): q1 (8, T) yes,
    (9, F) no; q2 (4, T) no, (5, T) yes; q3 (0, F) yes, (1, F) yes; q4 (10, T) yes,
    (5, T) yes; q5 (7, T) yes, (9, T) yes; q6 (3, T) no, (2, T) no: 8 of 12.
    """
    res = ingest([CONF / "records.csv"], transform=load_transform(CONF / "study.toml"))
    s = res.summary
    assert (s["records_read"], s["records_used"], s["records_quarantined"]) == (48, 48, 0)
    assert _accuracy(res.records, "gpt-4o", "before_solving") == (8, 12)
    # every cell against an independent reading of the CSV (the csv module, no polars)
    expected: dict[tuple[str, str], list[int]] = {}
    with (CONF / "records.csv").open() as fh:
        rows = list(csv.DictReader(fh))
    for r in rows:
        said_right = int(r["confidence"]) / 10 >= 0.5
        was_right = r["is_correct"] == "True"
        cell = expected.setdefault((r["model_name"], r["condition"]), [0, 0])
        cell[0] += said_right == was_right
        cell[1] += 1
    for (model, task), (k, n) in expected.items():
        assert _accuracy(res.records, model, task) == (k, n)
    row = res.records.filter((res.records["model"] == "gpt-4o") & (res.records["item_id"] == "q1")
                             & (res.records["task"] == "before_solving")
                             & (res.records["sample"] == 2)).row(0, named=True)
    assert (row["confidence"], row["prediction"], row["outcome"], row["correct"]) == (
        0.9, "true", "false", False)
    assert s["study_mapping"]["counts"]["confidence_rescaled"] == 48
    assert s["hints"] == [] and s["correct_only_records"] == 0


def test_without_the_mapping_the_same_log_is_flagged_not_silently_analysed(tmp_path: Path) -> None:
    """The issue's case: 0-10 values quarantined row by row; the run must not go on quietly."""
    from selfmodel.pipeline.stages import check_yield

    res = ingest([CONF / "records.csv"], mapping={
        "model": "model_name", "task": "condition", "item_id": "question_id",
        "correct": "is_correct"})
    s = res.summary
    # confidence 0 or 1 is in [0, 1]: 7 rows by hand (0 five times, 1 twice), 2 of them
    # conflicting duplicates (same question and condition, iteration ignored) -> 7 kept
    assert s["records_used"] == 7 and s["quarantine_reasons"]["invalid confidence"] == 39
    with pytest.raises(InputError, match=r"Only 7 of 48 records \(14\.6%\) were kept: "
                       r"invalid confidence 39.*\[confidence\] scale = \[0, 10\].*"
                       r"--allow-low-yield"):
        check_yield(s, allow=False)
    check_yield(s, allow=True)  # told to go on: no error; the report says it first
    assert s["correct_only_records"] == 7
    assert "map it to sample (--map sample=iteration" in s["hints"][0]


def test_ingest_preview_shows_mapped_rows_and_writes_nothing(tmp_path: Path, capsys) -> None:
    out = tmp_path / "out"
    code = main(["ingest", str(CONF / "records.csv"), "--mapping", str(CONF / "study.toml"),
                 "--out", str(out), "--preview"])
    text = capsys.readouterr().out
    assert code == 0 and not out.exists()
    assert "records read 48, used 48, quarantined 0, duplicate 0" in text
    assert "confidence rescaled 48" in text and "nothing written, nothing fitted" in text


def test_ingest_needs_out_unless_preview(capsys) -> None:
    assert main(["ingest", str(CONF / "records.csv"), "--mapping", str(CONF / "study.toml")]) == 2
    assert "ingest needs --out DIR (or --preview" in capsys.readouterr().err


def test_out_of_scale_and_unreadable_confidence_are_quarantined_with_the_value(tmp_path: Path) -> None:
    log = tmp_path / "c.csv"
    log.write_text("model_name,condition,question_id,iteration,confidence,is_correct\n"
                   "m,c,q1,1,11,True\nm,c,q2,1,high,False\nm,c,q3,1,,True\nm,c,q4,1,10,maybe\n"
                   "m,c,q5,1,6,False\n")
    res = ingest([log], transform=load_transform(CONF / "study.toml"))
    reasons = dict(res.quarantine.select("source_line", "reason").rows())
    assert reasons == {
        2: "confidence 11 is outside the declared scale [0, 10]",
        3: "confidence 'high' (column 'confidence') is not a finite number",
        5: "'maybe' (column 'is_correct', whether the task was answered right) is not a boolean",
    }
    rows = {r["item_id"]: r for r in res.records.iter_rows(named=True)}
    assert rows["q3"]["status"] == "unparsed" and rows["q3"]["prediction"] is None  # no confidence
    assert (rows["q5"]["confidence"], rows["q5"]["prediction"], rows["q5"]["correct"]) == (
        0.6, "true", False)


# --------------------------------------------------------------------------- per-option


def test_per_option_probabilities_with_an_answer_key_match_hand_computation() -> None:
    """Line 1: llama-3-8b chose C with p_C = 81 (of 0-100); the key says A.

    confidence 81/100 = 0.81 >= 0.5, so it said it would be right; it was not: correct False.
    Line 18 chose 'E' (no such option) and line 17 asks m9 (not in the key): quarantined.
    """
    res = ingest([OPTS / "answers.jsonl"], transform=load_transform(OPTS / "study.toml"))
    s = res.summary
    assert (s["records_read"], s["records_used"], s["records_quarantined"]) == (19, 17, 2)
    assert dict(res.quarantine.select("source_line", "reason").rows()) == {
        17: "no row in answer_key.csv with qid = 'm9'",
        18: "chosen option 'E' (column 'answer') is not one of A, B, C, D",
    }
    r = res.records.filter((res.records["model"] == "llama-3-8b")
                           & (res.records["item_id"] == "m1")).row(0, named=True)
    assert (r["confidence"], r["prediction"], r["outcome"], r["correct"]) == (
        0.81, "true", "false", False)
    # llama-3-1b m2 chose B (60 of 100) and the key says B: said right, was right
    r = res.records.filter(res.records["model"] == "llama-3-1b").row(0, named=True)
    assert (r["confidence"], r["outcome"], r["correct"]) == (0.6, "true", True)
    assert s["study_mapping"]["counts"]["joined"] == 17


def test_normalised_option_probabilities(tmp_path: Path) -> None:
    """normalize: 81 / (25 + 26 + 81 + 68) = 0.405 < 0.5: it said it would be wrong, and was.

    The record's confidence is that of its prediction ("I will be wrong"): 1 - 0.405.
    """
    shutil.copy(OPTS / "answer_key.csv", tmp_path)
    mapping = tmp_path / "m.toml"
    mapping.write_text((OPTS / "study.toml").read_text().replace(
        'chosen = "answer"', 'chosen = "answer"\nnormalize = true'))
    res = ingest([OPTS / "answers.jsonl"], transform=load_transform(mapping))
    r = res.records.filter((res.records["model"] == "llama-3-8b")
                           & (res.records["item_id"] == "m1")).row(0, named=True)
    assert r["confidence"] == pytest.approx(1 - 0.405)
    assert (r["prediction"], r["outcome"], r["correct"]) == ("false", "false", True)


def test_the_answer_key_in_the_folder_is_not_read_as_records(tmp_path: Path, capsys) -> None:
    code = main(["ingest", str(OPTS), "--mapping", str(OPTS / "study.toml"),
                 "--out", str(tmp_path / "o")])
    assert code == 0, capsys.readouterr().err
    summary = json.loads((tmp_path / "o" / "ingest.json").read_text())
    assert summary["records_read"] == 19
    assert {"path": (OPTS / "answer_key.csv").as_posix(),
            "reason": "the file the mapping joins ([join] file)"} in [
        {**f, "path": Path(f["path"]).resolve().as_posix()} for f in summary["files_not_read"]]


def test_a_key_twice_in_the_answer_key_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "answer_key.csv").write_text("qid,answer\nm1,A\nm1,B\n")
    shutil.copy(OPTS / "study.toml", tmp_path)
    with pytest.raises(InputError, match=r"answer_key.csv: column 'qid': key qid = 'm1' "
                                         r"appears 2 times"):
        ingest([OPTS / "answers.jsonl"], transform=load_transform(tmp_path / "study.toml"))


# --------------------------------------------------------------------------- mapping errors


@pytest.mark.parametrize(
    ("toml", "message"),
    [
        ('[map]\ncorrect = "is_correct"\n', r"line 2, column 'correct': \[map\] correct is "
         r"ambiguous.*correct_means = \"task\""),
        ('[answered]\ncolumn = "is_correct"\n', r"task accuracy .* is not self-prediction"),
        ('correct_means = "task"\n[map]\ncorrect = "is_correct"\n',
         r"task accuracy .* is not self-prediction"),
        ('format = "inspect"\n', r"line 1, column 'format'.*selfmodel import inspect"),
        ('[confidence]\ncolumn = "confidence"\nscale = [10, 0]\n', r"line 3.*low < high"),
        ('[confidense]\ncolumn = "c"\n', r"Did you mean 'confidence'\?"),
        ('[prediction]\nthreshold = 0.5\n', r"threshold needs a confidence"),
        ('[confidence]\noptions = { A = "p_A" }\n', r"options and chosen go together"),
    ],
)
def test_mapping_mistakes_are_one_line_errors(tmp_path: Path, toml: str, message: str) -> None:
    path = tmp_path / "m.toml"
    path.write_text(toml)
    with pytest.raises(InputError, match=message) as err:
        load_transform(path)
    assert "\n" not in str(err.value) and str(err.value).startswith(str(path))


def test_correct_means_task_is_the_same_as_answered(tmp_path: Path) -> None:
    alt = tmp_path / "m.toml"
    alt.write_text((CONF / "study.toml").read_text().replace(
        '[answered]\ncolumn = "is_correct"', 'correct_means = "task"').replace(
        '[map]\n', '[map]\ncorrect = "is_correct"\n'))
    # correct_means must be top-level: move it above the first table
    text = alt.read_text().replace('correct_means = "task"', "")
    alt.write_text('correct_means = "task"\n' + text)
    a = ingest([CONF / "records.csv"], transform=load_transform(CONF / "study.toml")).records
    b = ingest([CONF / "records.csv"], transform=load_transform(alt)).records
    assert a.drop("source_file").equals(b.drop("source_file"))


def test_a_mapped_column_missing_from_the_file_is_named(tmp_path: Path) -> None:
    path = tmp_path / "m.toml"
    path.write_text((CONF / "study.toml").read_text().replace(
        'column = "confidence"', 'column = "confidnce"'))
    with pytest.raises(InputError, match=r"records.csv: line 1, column 'confidnce': column "
                       r"'confidnce' named in the mapping .* e\.g\. 'confidence'"):
        ingest([CONF / "records.csv"], transform=load_transform(path))


# --------------------------------------------------------------------------- Inspect folder


def test_inspect_folder_reads_logs_by_content_and_lists_the_rest(tmp_path: Path) -> None:
    """Logs kept under users' own names are read; every other file is listed with why."""
    pytest.importorskip("inspect_ai", reason="the inspect extra is part of the dev install")
    from selfmodel.records.importers.inspect_logs import import_inspect
    from selfmodel.records.importers.mapping import parse_mapping

    shutil.copy(REAL_JSON_LOG, tmp_path / "gpt-4o-mini run 3.json")
    (tmp_path / "sub").mkdir()
    shutil.copy(REAL_JSON_LOG, tmp_path / "sub" / "popularity.json")
    (tmp_path / "notes.json").write_text('{"comment": "not a log"}')
    (tmp_path / "cut.json").write_text('{"version": 2, "status": "success", "eval": {"task": ')
    (tmp_path / "README.txt").write_text("logs of March")
    (tmp_path / ".hidden.json").write_text("{}")
    m = parse_mapping({"format": "inspect", "fields": {"prediction": {
        "path": "output.completion", "normalize": ["punctuation"], "type": "bool"},
        "outcome": {"path": "target", "type": "bool"}}})
    res = import_inspect(tmp_path, mapping=m)
    assert res.counts["files"] == 2
    # the log has 3 samples (fixtures/importers/real/README.md); two copies, two runs
    assert res.records.height == 6 and res.records["run_id"].n_unique() == 2
    reasons = {f["path"]: f["reason"] for f in res.counts["files_not_read"]}
    assert set(reasons) == {".hidden.json", "README.txt", "cut.json", "notes.json"}
    assert reasons[".hidden.json"] == "hidden"
    assert reasons["README.txt"] == "not a .eval or .json file"
    assert reasons["notes.json"].startswith("JSON, but not an Inspect log")
    assert reasons["cut.json"].startswith("looks like an Inspect log but inspect_ai cannot read")
    assert any(n.startswith("not read: notes.json (") for n in res.notes)


def test_import_inspect_folder_command_lists_every_file_not_read(tmp_path: Path, capsys) -> None:
    """`selfmodel import inspect FOLDER`: the renamed log is read; the command says which
    files were not and why, and import.json keeps the list."""
    pytest.importorskip("inspect_ai", reason="the inspect extra is part of the dev install")
    logs = tmp_path / "logs"
    logs.mkdir()
    shutil.copy(REAL_JSON_LOG, logs / "my run.json")
    (logs / "notes.json").write_text('{"comment": "not a log"}')
    (logs / "README.txt").write_text("logs of March")
    mapping = tmp_path / "m.toml"
    mapping.write_text('format = "inspect"\n[fields]\nprediction = { path = "output.completion", '
                       'normalize = ["punctuation"], type = "bool" }\n'
                       'outcome = { path = "target", type = "bool" }\n')
    out = tmp_path / "out"
    assert main(["import", "inspect", str(logs), "--mapping", str(mapping),
                 "--out", str(out)]) == 0
    said = capsys.readouterr()
    printed = " ".join((said.err + said.out).split())  # the console wraps long lines
    assert "not read: README.txt (not a .eval or .json file)." in printed
    assert "not read: notes.json (JSON, but not an Inspect log" in printed
    assert "3 records" in said.out  # the log's 3 samples
    counts = json.loads((out / "import.json").read_text())["counts"]
    assert counts["files"] == 1
    assert sorted(f["path"] for f in counts["files_not_read"]) == ["README.txt", "notes.json"]


# --------------------------------------------------------------------------- status words


def _diag(rhat, ess, div, passed):
    return {"max_rhat": rhat, "min_ess_bulk": ess, "divergences": div, "passed": passed}


def test_nothing_fitted_says_so_and_why_not_r_hat_n_a() -> None:
    """Two closed models: no size, no slope fit; the first sentence says that, not 'R-hat n/a'."""
    from selfmodel.decisions.status import status_lines
    from selfmodel.fitting.summaries import diagnostics_section

    results = {"diagnostics": diagnostics_section(None),
         "scale_effect": {"reason": "fewer than 3 models with usable data",
                          "registry_column": "params_b",
                          "models_without_scale_variable": ["gpt-4o", "gpt-5"]}}
    lines = status_lines(results)
    assert lines[0]["key"] == "not_fitted"
    assert lines[0]["text"].startswith("No model was fitted: fewer than 3 models with usable "
                                       "data. 2 model(s) have no params_b (gpt-4o, gpt-5).")
    assert not any("R-hat" in x["text"] or "Diagnostics failed" in x["text"] for x in lines)


def test_a_real_diagnostics_failure_gives_its_numbers() -> None:
    from selfmodel.decisions.status import status_lines

    (line,) = status_lines({"diagnostics": _diag(1.05, 120.0, 3, False)})
    assert line == {"key": "diagnostics", "text": "Diagnostics failed (R-hat 1.050, bulk ESS "
                    "120, divergences 3): the verdict is reported as computed and is not a "
                    "finding."}
    assert status_lines({"diagnostics": _diag(1.001, 900.0, 0, True)}) == []


def test_exploratory_preset_leads_and_is_not_called_a_failure() -> None:
    from selfmodel.cli import build_parser, run_config
    from selfmodel.decisions.status import EXPLORATORY_WORDS, status_lines

    cfg = run_config(build_parser().parse_args(
        ["run", "--preset", "exploratory", "--draws", "5000"]), report=False)
    assert (cfg.sampler.draws, cfg.sampler.tune, cfg.sampler.chains) == (300, 300, 2)
    assert cfg.preset == "exploratory"
    results = {"settings": {"preset": "exploratory", "sampler": {"draws": 300, "tune": 300,
                                                          "chains": 2}},
         "diagnostics": _diag(1.04, 150.0, 0, False)}
    lines = status_lines(results)
    assert lines[0]["key"] == "exploratory"
    assert lines[0]["text"].startswith(f"{EXPLORATORY_WORDS} (300 draws, 300 tuning, 2 chains")
    assert EXPLORATORY_WORDS == "Exploratory settings: not for findings"
    assert lines[1]["key"] == "diagnostics" and "Diagnostics failed" not in lines[1]["text"]
    assert "exploratory settings (R-hat 1.040" in lines[1]["text"]


def test_low_yield_leads_with_the_top_reasons() -> None:
    """38 of 1,440 kept = 2.6%: said first, with the reasons, largest first."""
    from selfmodel.decisions.status import low_yield_sentence, status_lines

    data = {"records_read": 1440, "records_used": 38, "records_duplicate": 2,
            "quarantine_reasons": {"invalid confidence": 1390, "no outcome": 10}}
    results = {"data": data, "diagnostics": _diag(1.05, 120.0, 3, False)}
    lines = status_lines(results)
    assert [x["key"] for x in lines] == ["low_yield", "diagnostics"]
    assert lines[0]["text"].startswith("Only 38 of 1,440 records (2.6%) were kept: invalid "
                                       "confidence 1,390, no outcome 10, exact duplicates of a "
                                       "record key 2.")
    assert low_yield_sentence({**data, "records_used": 720}) is None  # half kept: nothing said


def test_status_doctests() -> None:
    import doctest

    from selfmodel.decisions import status
    from selfmodel.records.ingest import hints

    for module in (status, hints):
        assert doctest.testmod(module).failed == 0


def test_report_leads_with_the_status_lines() -> None:
    qmd = (ROOT.parent / "reports" / "self_modeling.qmd").read_text()
    verdict = qmd.split("# Verdict {#sec-verdict}", 1)[1]
    assert verdict.index("sections.verdict.summary(REP)") < verdict.index("{#sec-hypotheses}")
    code = inspect.getsource(verdict_section.summary)
    assert code.index("status_lines(results)") < code.index("**Question:**")
    sources = [qmd, *(p.read_text() for p in (ROOT.parent / "analysis" / "sections").glob("*.py"))]
    assert not any("**Diagnostics failed.**" in s for s in sources)  # the old fixed sentence


def _first_report_line(results: dict) -> tuple[str, str]:
    """The report's first line of text (``sections.verdict.summary``) and the whole block."""
    from selfmodel.decisions.status import status_lines
    from selfmodel.report.sections.common import Report

    results = {**results, "status": status_lines(results)}  # as results.json's writer sets it
    text = verdict_section.summary(Report(results, {}, None, ROOT, 6.3, 8.5))
    return next(line for line in text.splitlines() if line and not line.startswith(":::")), text


def test_report_first_line_says_exploratory_or_not_fitted_not_a_failure() -> None:
    """The report's first line, from the default run's results changed to each case.

    (g) exploratory settings whose checks fail: their words, never "Diagnostics failed";
    (a) nothing fitted: "No model was fitted" and why, never "R-hat n/a"; with the contrast
    model fitted instead, that the scale question is not estimable.
    """
    full = json.loads((ROOT / "fixtures" / "regression" / "results_default.json").read_text())
    short = {**full, "settings": {**full["settings"], "preset": "exploratory",
                                  "sampler": {"draws": 300, "tune": 300, "chains": 2}},
             "diagnostics": _diag(1.04, 150.0, 0, False)}
    first, text = _first_report_line(short)
    assert first.startswith("**" + esc("Exploratory settings: not for findings (300 draws"))
    assert esc("Diagnostics failed") not in text
    real = {**full, "diagnostics": _diag(1.04, 150.0, 0, False)}
    assert _first_report_line(real)[0].startswith("**" + esc("Diagnostics failed (R-hat 1.040"))
    unfit = {**full, "diagnostics": {**_diag(None, None, None, False), "note": "not fitted"},
             "scale_effect": {**full["scale_effect"], "reason": "only 0 model(s) have params_b",
                              "models_without_scale_variable": ["gpt-4o", "gpt-5"]}}
    first, text = _first_report_line(unfit)
    assert first.startswith("**" + esc("No model was fitted: only 0 model(s) have params_b."))
    assert esc("R-hat n/a") not in text and esc("Diagnostics failed") not in text
    d = {"decision": "improves", "mean": 0.6, "hdi_low": 0.2, "hdi_high": 1.0, "hdi_prob": 0.94}
    unfit["contrasts"] = {"reason": None, "finding": True, "rope": 0.1,
                          "contrasts": {"model": {"gpt-5 - gpt-4o": d}}}
    first, text = _first_report_line(unfit)
    assert first.startswith("**" + esc("The scale question is not estimable: only 0 model(s)"))
    assert esc("What these data can decide") in text


def test_closest_column_hint_is_of_the_same_kind(tmp_path: Path) -> None:
    """A boolean 'coerce' column is not suggested for a missing model; 'target_model' is."""
    log = tmp_path / "r.csv"
    log.write_text("coerce,task,item_id,prediction,outcome\ntrue,t,1,y,y\nfalse,t,2,n,y\n")
    with pytest.raises(InputError) as err:
        ingest([log])
    assert "--map model=coerce" not in str(err.value)
    assert "Add a 'model' column, map one with --map model=COLUMN" in str(err.value)
    log.write_text("target_model,coerce,task,item_id,prediction,outcome\nm,true,t,1,y,y\n")
    with pytest.raises(InputError, match="Map it with --map model=target_model"):
        ingest([log])
    log.write_text("model,iteration,item_id,prediction,outcome\nm,1,1,y,y\n")
    with pytest.raises(InputError) as err:
        ingest([log])
    assert "--map task=iteration" not in str(err.value)


def test_closest_column_hint_for_a_mistyped_mapping_is_of_the_same_kind(tmp_path: Path) -> None:
    """`--map model=modl` (or ``[map] model = "modl"``) never suggests the boolean 'model_ok'."""
    log = tmp_path / "r.csv"
    log.write_text("model_ok,engine,task,item_id,prediction,outcome\ntrue,gpt,t,1,y,y\n"
                   "false,gpt,t,2,n,y\n")
    mapping = tmp_path / "m.toml"
    mapping.write_text('[map]\nmodel = "modl"\n')
    with pytest.raises(InputError, match=r"mapped column 'modl' \(--map model=modl\)") as err:
        ingest([log], mapping={"model": "modl"})
    assert "--map model=model_ok" not in str(err.value)
    with pytest.raises(InputError, match=r"column 'modl' named in the mapping") as err:
        ingest([log], transform=load_transform(mapping))
    assert "e.g. 'model_ok'" not in str(err.value)
    # a column of names spelled alike is still suggested, in both
    log.write_text("model_ok,modle,task,item_id,prediction,outcome\ntrue,gpt,t,1,y,y\n")
    with pytest.raises(InputError, match=r"Fix the mapping, e\.g\. --map model=modle\."):
        ingest([log], mapping={"model": "modl"})
    with pytest.raises(InputError, match=r"Fix the mapping, e\.g\. 'modle'"):
        ingest([log], transform=load_transform(mapping))


def test_missingness_flag_shows_its_effect_size() -> None:
    """3 unusable of 4,000 (0.075%) beside p: a significant slope on 3 records says so."""
    from selfmodel.decisions.verdict import missingness_finding

    rows = [{"model": "a", "task": "t", "n_records": 2000, "n_missing": 0, "n_unreadable": 0},
            {"model": "b", "task": "t", "n_records": 1999, "n_missing": 1, "n_unreadable": 2}]
    sec = {"depends_on_scale": {"t": True}, "per_model_task": rows,
           "slope_of_missingness": {"per_task": {"t": {"estimate": 2.5, "p_value": 0.004}}}}
    text = missingness_finding({"missingness": sec})
    assert ("in t it rises with scale (3 of 4,000 predictions unusable, 0.075%; slope +2.50 "
            "log-odds per unit of scale, p = 0.004)") in text


def test_correct_only_records_are_said_to_be_read_as_self_prediction() -> None:
    from selfmodel.decisions.status import status_lines

    (line,) = status_lines({"data": {"correct_only_records": 7}})
    assert line["key"] == "correct_only" and "task accuracy, not self-prediction" in line["text"]


# --------------------------------------------------------------------------- end to end


def test_two_closed_models_run_says_nothing_was_fitted_and_why(tmp_path: Path, capsys) -> None:
    """The 0-10 study through `selfmodel run --no-contrasts` (no sizes: nothing sampled, no compile).

    results.json leads with the not-fitted sentence; the accuracy of gpt-4o before solving
    is the hand-computed 8 of 12 (test_confidence_0_10_study_matches_hand_computation).
    """
    out = tmp_path / "out"
    code = main(["run", str(CONF), "--mapping", str(CONF / "study.toml"), "--out", str(out),
                 "--no-power", "--no-robustness", "--no-report", "--no-contrasts", "--quiet"])
    printed = capsys.readouterr().out
    assert code == 0
    results = json.loads((out / "results.json").read_text())
    assert results["status"][0]["key"] == "not_fitted"
    assert results["status"][0]["text"].startswith("No model was fitted: ")
    assert "2 model(s) have no params_b (gpt-4o, gpt-5)" in results["status"][0]["text"]
    assert printed.splitlines()[0] == results["status"][0]["text"]  # said first on the terminal too
    assert "R-hat n/a" not in printed
    cell = {(r["model"], r["task"]): r for r in results["by_model_task"]}
    assert (cell["gpt-4o", "before_solving"]["n"],
            cell["gpt-4o", "before_solving"]["accuracy"]) == (12, pytest.approx(8 / 12))
    assert results["data"]["study_mapping"]["counts"]["predictions_derived"] == 48
    assert results["settings"]["study_mapping"] == str(CONF / "study.toml")
    # the contrast model would have been fitted (nothing else was): the results say why not
    assert results["contrasts"]["reason"] == ("not requested (--no-contrasts), although the scale "
                                        "model was not fitted")
    assert results["confidence_calibration_contrasts"] is None


@pytest.mark.slow
def test_exploratory_preset_run_leads_with_its_words(tmp_path: Path, capsys) -> None:
    """Three sized models (per-option study): a real fit at the exploratory preset."""
    registry = tmp_path / "registry.csv"
    registry.write_text("model,family,params_b\nllama-3-1b,llama,1\nllama-3-8b,llama,8\n"
                        "llama-3-70b,llama,70\n")
    out = tmp_path / "out"
    code = main(["run", str(OPTS / "answers.jsonl"), "--mapping", str(OPTS / "study.toml"),
                 "--registry", str(registry), "--out", str(out), "--preset", "exploratory",
                 "--models", "scale", "--no-power", "--no-robustness", "--no-report", "--quiet"])
    printed = capsys.readouterr().out
    assert code == 0
    results = json.loads((out / "results.json").read_text())
    assert results["settings"]["preset"] == "exploratory"
    assert results["settings"]["sampler"]["draws"] == 300 and results["settings"]["sampler"]["chains"] == 2
    assert results["status"][0]["text"].startswith("Exploratory settings: not for findings")
    assert printed.startswith("Exploratory settings: not for findings")
    assert not any(s["text"].startswith("Diagnostics failed") for s in results["status"])


def test_predictive_check_flag_shows_its_size() -> None:
    """A model flagged on 3 cells: its cells and accuracy against the replicates beside p."""
    from selfmodel.decisions.verdict import mixed_check_finding

    sec = {"status": "estimated", "passed": False, "overall": {"p_value": 0.2},
           "flagged": [{"kind": "model", "group": "m7", "p_value": 0.0004}],
           "by_model": [{"model": "m7", "cells": 3, "observed_accuracy": 0.4,
                         "replicated_accuracy_94": [0.55, 0.71], "p_value": 0.0004}]}
    text = mixed_check_finding({"mixed_predictive": sec})
    assert "flagged model m7 (3 cells; accuracy 0.40 against 0.55-0.71 replicated, p = 0.0004)" in text


def test_repeat_hint_only_for_an_integer_column(tmp_path: Path) -> None:
    """Two rows of one item told apart by 'iteration' (1, 2) and 'latency' (0.5, 0.7)."""
    log = tmp_path / "r.csv"
    log.write_text("model,task,item_id,prediction,outcome,iteration,latency\n"
                   "m,t,q1,yes,yes,1,0.5\nm,t,q1,yes,yes,2,0.7\n")
    s = ingest([log]).summary
    assert s["records_duplicate"] == 1 and s["repeat_columns"] == {"iteration": 2}
    assert s["hints"] == ["2 rows share model, task and item_id and are told apart only by the "
                          "ignored column 'iteration': if they are repeats of an item, map it "
                          "to sample (--map sample=iteration, or [map] sample = \"iteration\" "
                          "in a mapping file)."]
    assert ingest([log], mapping={"sample": "iteration"}).summary["hints"] == []


def test_a_records_mapping_given_to_import_says_where_it_belongs(capsys) -> None:
    code = main(["import", "mapped", str(CONF), "--mapping", str(CONF / "study.toml"),
                 "--preview"])
    err = capsys.readouterr().err
    assert code == 2
    assert "study.toml: line 3, column 'format': a records mapping" in err
    assert "Use 'selfmodel ingest FILES --mapping" in err


def test_low_yield_run_stops_unless_allowed_and_then_says_so_first(tmp_path: Path, capsys) -> None:
    """The issue's case through `selfmodel run`: 7 of 48 rows kept (see the ingest test above)."""
    args = ["run", str(CONF), "--map", "model=model_name", "--map", "task=condition",
            "--map", "item_id=question_id", "--map", "correct=is_correct",
            "--no-power", "--no-robustness", "--no-report", "--no-contrasts", "--quiet"]
    out = tmp_path / "out"
    assert main([*args, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "Only 7 of 48 records (14.6%) were kept" in err and "--allow-low-yield" in err
    assert not out.exists()  # stopped before anything was written
    assert main([*args, "--out", str(out), "--allow-low-yield"]) == 0
    results = json.loads((out / "results.json").read_text())
    keys = [s["key"] for s in results["status"]]
    assert keys[:2] == ["low_yield", "not_fitted"] and {"correct_only", "repeats"} <= set(keys)
    assert capsys.readouterr().out.startswith("Only 7 of 48 records (14.6%) were kept")


def test_a_file_column_named_correct_read_as_task_accuracy_is_not_the_self_predictions(
        tmp_path: Path) -> None:
    """A log whose 'correct' says the answer was right: [answered] reads it as the outcome.

    By hand: confidence 0.9 and right -> said right, was right: correct True; 0.8 and wrong
    -> correct False; 0.2 and wrong -> correct True. Without dropping the file's own
    'correct', ingest would compare it with prediction == outcome and quarantine row 3.
    """
    log = tmp_path / "c.csv"
    log.write_text("model,task,item_id,confidence,correct\nm,t,1,0.9,1\nm,t,2,0.8,0\n"
                   "m,t,3,0.2,0\n")
    mapping = tmp_path / "m.toml"
    mapping.write_text('[confidence]\ncolumn = "confidence"\n[answered]\ncolumn = "correct"\n'
                       "[prediction]\nthreshold = 0.5\n")
    res = ingest([log], transform=load_transform(mapping))
    assert res.summary["records_quarantined"] == 0
    assert res.records.sort("item_id")["correct"].to_list() == [True, False, True]


def test_findings_word_a_short_run_apart_from_a_failure() -> None:
    """The checks finding: 'Failed diagnostics' for a real run, other words when exploratory."""
    from selfmodel.decisions.verdict import checks_finding

    results: dict = {"diagnostics": {"passed": False, "max_rhat": 1.05, "min_ess_bulk": 80}}
    assert checks_finding(results).startswith("Failed diagnostics (reported, not findings): the "
                                        "accuracy model.")
    results["settings"] = {"preset": "exploratory"}
    assert checks_finding(results).startswith("Checks not passed at the exploratory settings (not "
                                        "findings): the accuracy model.")


def test_a_model_not_fitted_is_not_called_failed() -> None:
    """Two closed models: the accuracy model is not fitted (its diagnostics have no R-hat), so
    it has not failed; the contrast model fitted instead is the one whose checks count."""
    from selfmodel.decisions.verdict import checks_finding

    not_fitted = {"passed": False, "max_rhat": None, "min_ess_bulk": None, "divergences": None}
    results: dict = {"diagnostics": not_fitted}
    assert checks_finding(results).startswith("No model was fitted (the first lines say why).")
    results["contrasts"] = {"diagnostics": {"passed": True, "max_rhat": 1.004, "min_ess_bulk": 1042}}
    assert checks_finding(results).startswith("Every fit passed its diagnostics.")
    results["contrasts"]["diagnostics"]["passed"] = False
    assert checks_finding(results).startswith("Failed diagnostics (reported, not findings): the "
                                        "contrast model.")
