"""Real public data sets in the shapes they come in, through a mapping and a registry only (issue 53).

Four shapes, each a byte-exact slice (or whole file) of a public repository with its licence
(``tests/fixtures/studies/SOURCE.md``), each read by a ``study.toml`` a user would write:

* ``real_parse_flags/``: per-option probabilities with the answer keys in their own files and
  a flag saying whether the reply was parsed (``coerce``), two question sets whose ids overlap
  (LSAT-AR, SciQ), the model and the question set in each file's path;
* ``real_wide_table/``: one row per question, a column pair per model
  (``<model>_confidence``, 0-10 or text such as ``cell_empty``, and ``<model>_correctness``),
  48 models, no id column;
* ``real_monitoring_battery/``: a binary self-prediction (KEEP or WITHDRAW my answer) in
  several tasks, one folder per task, the model in the file name (spelt two ways);
* ``real_verbalized_atlas/``: a verbalised confidence 0-100, the model in a column, two
  uploads of one run overlapping.

Every number is computed twice: by hand here, from the raw text with ``csv``/``json`` and
``decimal`` (nothing of the package), following the authors' own rules where they publish
them, and by the package (the mapping, ingest and the report's functions). Where the authors
publish a table of their numbers, the hand computation is checked against it too.
"""

from __future__ import annotations

import csv
import json
from decimal import Decimal
from pathlib import Path

import polars as pl
import pytest
from test_real_studies import HALF, _auroc, _compare, _hand, _package

from selfmodel.analyses.describe import by_model_task
from selfmodel.analyses.skill import confidence_metrics
from selfmodel.cli import main
from selfmodel.records.cells import build_cells
from selfmodel.records.importers.mapping.records_apply import load_transform, without_join_file
from selfmodel.records.ingest import ingest
from selfmodel.records.registry import load_registry

STUDIES = Path(__file__).resolve().parents[1] / "fixtures" / "studies"
FLAGS = STUDIES / "real_parse_flags"
WIDE = STUDIES / "real_wide_table"
WIDE_CSV = WIDE / "merged_confidence_correctness_new.csv"
BATTERY = STUDIES / "real_monitoring_battery"
ATLAS = STUDIES / "real_verbalized_atlas"


def _ingest(folder: Path, *paths: Path):
    """Ingest a study's record files (not its registry or answer keys) with its mapping."""
    transform = load_transform(folder / "study.toml")
    found = list(paths) or sorted(p for p in folder.rglob("*.csv") if p.name != "registry.csv")
    files, _ = without_join_file(found, transform)
    return ingest(files, transform=transform)


def _stated(cell: pl.DataFrame) -> list[tuple[float, bool]]:
    """(stated chance of being right, answered right) of readable records (threshold 0.5)."""
    ok = cell.filter(pl.col("status") == "ok")
    return [(c if p == "true" else 1 - c, o == "true")
            for c, p, o in ok.select("confidence", "prediction", "outcome").iter_rows()]


# --------------------------------------------------------------------------- parse flags


def _flags_by_hand() -> dict[tuple[str, str], dict]:
    """Per (model, question set), the authors' cleaning (``clean.py``) row by row.

    A row whose ``coerce`` is False is left out ("Unparseable responses"), and so is a row
    whose stated probabilities sum to 0 ("Missing MCQ confidences"); the stated
    probabilities are normalised to sum to 1; the stated chance of being right is the
    chosen option's share, right when the chosen letter is the key's.
    """
    keys: dict[tuple[str, str], str] = {}
    for key_file in (FLAGS / "Formatted Benchmarks").glob("*_formatted.csv"):
        qset = key_file.name.removesuffix("_formatted.csv")
        with key_file.open(newline="") as fh:
            for r in csv.DictReader(fh):
                keys[qset, r["Question ID"]] = r["Correct Answer Letter"]
    out: dict[tuple[str, str], dict] = {}
    for log in sorted((FLAGS / "Parsed Results").glob("*/*/*.csv")):
        model = log.parent.name
        qset = log.name.removesuffix(f"_{model}.csv")
        cell = out.setdefault((model, qset), {"pairs": [], "not_coerced": 0, "rows": 0})
        with log.open(newline="") as fh:
            for r in csv.DictReader(fh):
                cell["rows"] += 1
                if r["coerce"] == "False":
                    cell["not_coerced"] += 1
                    continue
                letters = [x for x in "ABCDE" if x in r]
                total = sum(Decimal(r[x]) for x in letters)
                if total == 0:
                    continue
                q = Decimal(r[r["Answer"]]) / total
                cell["pairs"].append((q, r["Answer"] == keys[qset, r["Question ID"]]))
    return out


def test_parse_flag_study_matches_the_authors_rules() -> None:
    """3 models x 2 question sets; the ``coerce`` flag mapped by a ``[[rule]]``.

    By hand (the authors' per-row criteria): gpt-4o parsed every reply; claude-3-7-sonnet
    did not on LSAT 26 (its answer 'P', not an option) and 49 (empty) and SciQ 705 (every
    probability 0.0 beside the answer A); Llama-3.1-70B not on LSAT 31 (empty), 60 and 116
    (answer A with every probability 0.0). Without the rule those 0.0 rows would be read as
    confident "I will be wrong" predictions; with it they are ``unparsed``, counted as such,
    and the readable rows of every cell are exactly those the authors keep.
    """
    res = _ingest(FLAGS)
    s = res.summary
    assert (s["records_read"], s["records_used"], s["records_quarantined"]) == (48, 48, 0)
    study = s["study_mapping"]
    assert study["rules"] == [{"rule": "coerce = false -> unparsed", "rows": 6}]
    absent = study["options_absent"]  # the SciQ files have four options
    assert sorted(Path(f).name for f in absent) == sorted(
        p.name for p in FLAGS.glob("Parsed Results/*/*/sciq_test_*.csv"))
    assert set(map(tuple, absent.values())) == {("E",)}
    hand = _flags_by_hand()
    assert {k: v["not_coerced"] for k, v in hand.items() if v["not_coerced"]} == {
        ("claude-3-7-sonnet-20250219", "lsat_ar_test"): 2,
        ("claude-3-7-sonnet-20250219", "sciq_test"): 1,
        ("Meta-Llama-3.1-70B-Instruct", "lsat_ar_test"): 3}
    recs = res.records
    for (model, qset), h in hand.items():
        cell = recs.filter((pl.col("model") == model) & (pl.col("task") == qset))
        assert cell.height == h["rows"]
        statuses = dict(cell.group_by("status").len().iter_rows())
        assert statuses.get("unparsed", 0) == h["not_coerced"], (model, qset)
        assert statuses["ok"] == len(h["pairs"]), (model, qset)  # the authors' count
        pairs = _stated(cell)
        for (q, y), (q0, y0) in zip(sorted(pairs), sorted(h["pairs"]), strict=True):
            assert (q, y) == (pytest.approx(float(q0), abs=1e-12), y0)
        _compare(_hand(h["pairs"]), {
            **_calibration(pairs), "self_prediction_right":
            int(cell.filter(pl.col("status") == "ok")["correct"].sum())})
    # the authors normalise: claude's LSAT 102 states 0.95 on its answer B and 0 on the
    # others (1.0 once normalised); gpt-4o's SciQ 664 states 0.95 on A, 0.01 on each other
    c102 = recs.filter((pl.col("model") == "claude-3-7-sonnet-20250219")
                       & (pl.col("item_id") == "102"))
    assert c102["confidence"].item() == 1.0
    g664 = recs.filter((pl.col("model") == "gpt-4o") & (pl.col("item_id") == "664"))
    assert g664["confidence"].item() == pytest.approx(0.95 / 0.98, abs=1e-12)


def _calibration(pairs: list[tuple[float, bool]]) -> dict[str, float]:
    """The package's calibration of (stated chance, right) pairs (the report's function)."""
    m = confidence_metrics([True] * len(pairs), [y for _, y in pairs], [q for q, _ in pairs])
    return {"n": m["n_confidence"], "accuracy": sum(y for _, y in pairs) / len(pairs),
            "mean_confidence": m["mean_confidence"], "overconfidence": m["overconfidence"],
            "brier": m["brier"], "ece": m["ece"]}


def test_two_question_sets_each_join_their_own_key() -> None:
    """LSAT-AR and SciQ ids overlap (0-3 in both): keyed by task too, each row meets its own
    key. Keyed by the id only, the two key files hold every id twice: an error that says
    how to key the join, never a silent join of SciQ rows to the LSAT key."""
    res = _ingest(FLAGS)
    recs = res.records
    with (FLAGS / "Formatted Benchmarks" / "sciq_test_formatted.csv").open(newline="") as fh:
        sciq_key = {r["Question ID"]: r["Correct Answer Letter"] for r in csv.DictReader(fh)}
    gpt = recs.filter((pl.col("model") == "gpt-4o") & (pl.col("task") == "sciq_test"))
    with next((FLAGS / "Parsed Results").glob("GPT/gpt-4o/sciq_test_gpt-4o.csv")).open(
            newline="") as fh:
        answers = {r["Question ID"]: r["Answer"] for r in csv.DictReader(fh)}
    for item, outcome in gpt.select("item_id", "outcome").iter_rows():
        assert outcome == ("true" if answers[item] == sciq_key[item] else "false"), item
    assert res.summary["study_mapping"].get("warnings") is None


def test_a_join_keyed_by_the_id_alone_over_two_question_sets_is_an_error(tmp_path: Path) -> None:
    text = (FLAGS / "study.toml").read_text().replace('on = ["task", "Question ID"]',
                                                       'on = "Question ID"')
    mapping = tmp_path / "study.toml"
    mapping.write_text(text.replace('file = "Formatted Benchmarks/*_formatted.csv"',
                                    f'file = "{(FLAGS / "Formatted Benchmarks").as_posix()}'
                                    '/*_formatted.csv"'))
    from selfmodel.records.contract import InputError

    with pytest.raises(InputError, match=r"key Question ID = '0' appears 2 times \(in "
                       r"lsat_ar_test_formatted\.csv, sciq_test_formatted\.csv\).*"
                       r'\[join\] on = \["task", "<id column>"\]') as err:
        ingest([FLAGS / "Parsed Results"], transform=load_transform(mapping))
    assert "\n" not in str(err.value)


def test_one_key_for_rows_of_two_tasks_is_said(tmp_path: Path) -> None:
    """One key file joined to the rows of two question sets on the id only: every row finds
    a key row (ids 0-3 are in both), so nothing fails -- and the summary says so."""
    text = (FLAGS / "study.toml").read_text()
    text = text.replace('file = "Formatted Benchmarks/*_formatted.csv"',
                        f'file = "{(FLAGS / "Formatted Benchmarks").as_posix()}'
                        '/lsat_ar_test_formatted.csv"')
    text = text.replace("path = '(?P<task>[a-z_]+)_formatted\\.csv$'\n", "")
    text = text.replace('on = ["task", "Question ID"]', 'on = "Question ID"')
    mapping = tmp_path / "study.toml"
    mapping.write_text(text)
    res = ingest([FLAGS / "Parsed Results"], transform=load_transform(mapping))
    (warning,) = res.summary["study_mapping"]["warnings"]
    assert warning.startswith("rows of 2 tasks (lsat_ar_test, sciq_test) were joined to the "
                              "same key on Question ID only")
    from selfmodel.decisions.status import status_lines

    lines = status_lines({"data": res.summary})
    assert any(x["key"] == "mapping" and "joined to the same key" in x["text"] for x in lines)


# --------------------------------------------------------------------------- wide table


def _wide_by_hand() -> dict[str, dict]:
    """Per model, the authors' rule (``roc_auc_2.ipynb``): a row counts when its confidence
    is a number (not empty, ``cell_empty``, ``not_mentioned`` or other text) and its
    correctness is given; the stated chance is confidence / 10."""
    with WIDE_CSV.open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    models = [c.removesuffix("_confidence") for c in rows[0] if c.endswith("_confidence")]
    out = {}
    for m in models:
        cell: dict = {"pairs": [], "no_confidence": 0, "no_correctness": 0}
        for r in rows:
            c, y = r[f"{m}_confidence"].strip(), r[f"{m}_correctness"].strip()
            if y == "":
                cell["no_correctness"] += 1
                continue
            try:
                q = Decimal(c) / 10
            except ArithmeticError:
                cell["no_confidence"] += 1
                continue
            cell["pairs"].append((q, y in ("1", "1.0")))
        out[m] = cell
    return out


def _authors_wide() -> dict[str, dict[str, str]]:
    with (WIDE / "authors" / "model_performance_results_new.csv").open(newline="") as fh:
        return {r["Model"]: r for r in csv.DictReader(fh)}


def test_wide_table_melts_into_model_by_question_records() -> None:
    """300 rows x 48 column pairs = 14,400 records, item ids from the row position.

    Text in the confidence column (``cell_empty`` 252 times, ``no_confidence`` 22) is
    ``unparsed`` by a declared rule, never a traceback nor a quarantined row; the one row
    without a correctness is ``unanswered``.
    """
    res = _ingest(WIDE, WIDE_CSV)
    s = res.summary
    assert (s["records_read"], s["records_used"], s["records_quarantined"]) == (14400, 14400, 0)
    assert s["files"] == [{"path": WIDE_CSV.as_posix(), "format": "csv", "rows": 300,
                           "sha256": s["files"][0]["sha256"]}]
    study = s["study_mapping"]
    assert len(study["melt"]["groups"]) == 48
    assert study["melt"]["groups"]["gpt-4-0613"] == ["gpt-4-0613_confidence",
                                                    "gpt-4-0613_correctness"]
    assert study["counts"]["records_from_melt"] == 14400
    assert study["item_id"].startswith("the row's position in its file")
    assert study["rules"] == [
        {"rule": "confidence in [cell_empty, no_confidence] -> unparsed", "rows": 274},
        {"rule": "correctness missing -> unanswered", "rows": 1}]
    hand = _wide_by_hand()
    assert len(hand) == 48
    recs = res.records
    assert recs["item_id"].n_unique() == 300
    assert s["statuses"] == {"ok": sum(len(h["pairs"]) for h in hand.values()),
                             "unanswered": 1,
                             "unparsed": sum(h["no_confidence"] for h in hand.values())}
    # the first question as each model answered it: row 1 of the file
    with WIDE_CSV.open(newline="") as fh:
        first = next(csv.DictReader(fh))
    one = recs.filter((pl.col("item_id") == "1") & (pl.col("model") == "gpt-4o-2024-05-13"))
    assert one["confidence"].item() == pytest.approx(
        float(Decimal(first["gpt-4o-2024-05-13_confidence"]) / 10))


def test_wide_table_numbers_equal_the_hand_computation_and_the_authors_table() -> None:
    """Per model: n, accuracy, mean confidence, Brier, ECE and AUROC by hand from the raw
    text; for the 45 models in the authors' table (``model_performance_results_new.csv``;
    the other three have fewer than 150 readable rows) their N, accuracy, mean confidence
    (0-10), Brier and ROC AUC too. For example gpt-4o-2024-05-13: N 277, accuracy .7401,
    confidence 8.859, Brier .2058, AUROC .6041; o1-preview: N 293, accuracy .8157."""
    res = _ingest(WIDE, WIDE_CSV)
    hand = _wide_by_hand()
    authors = _authors_wide()
    assert set(authors) <= set(hand) and len(authors) == 45
    for model, h in hand.items():
        cell = res.records.filter(pl.col("model") == model)
        pairs = _stated(cell)
        mine = _hand(h["pairs"])
        got = _calibration(pairs)
        for k in ("n", "accuracy", "mean_confidence", "overconfidence", "brier", "ece"):
            assert got[k] == pytest.approx(mine[k], abs=1e-12), (model, k)
        y = [b for _, b in pairs]
        auc = confidence_metrics([True] * len(y), y, [q for q, _ in pairs])["auroc_type2"]
        assert auc == pytest.approx(_auroc(h["pairs"]), abs=1e-12), model
        a = authors.get(model)
        if a is None:
            assert mine["n"] < 150, model
            continue
        assert mine["brier"] == pytest.approx(float(a["Brier Score"]), abs=1e-12), model
        if a["Accuracy"]:  # Qwen-Qwq-32b: the authors give its Brier only (98 rows)
            assert mine["n"] == int(float(a["N Samples"])), model
            assert mine["accuracy"] == pytest.approx(float(a["Accuracy"]), abs=1e-12), model
            assert mine["mean_confidence"] * 10 == pytest.approx(float(a["Avg Confidence"]),
                                                                 abs=1e-9), model
            assert _auroc(h["pairs"]) == pytest.approx(float(a["ROC_AUC"]), abs=1e-12), model
    g = _hand(hand["gpt-4o-2024-05-13"]["pairs"])
    assert (g["n"], round(g["accuracy"], 4), round(g["brier"], 4)) == (277, 0.7401, 0.2058)


# --------------------------------------------------------------------------- battery

#: The authors' per-(model, track) numbers, ``outputs/per_track_data.json`` of
#: github.com/synthiumjp/metacognitive-monitoring-battery at 2f83d0fa (made by their
#: ``analysis/probe_analysis.py``): accuracy, KEEP rate (%) when right and when wrong, counts.
#: T4 is the Attention task, T5 the Executive task.
BATTERY_AUTHORS = {
    ("Claude Haiku 4.5", "Attention"): (0.9833333333333333, 93.22033898305085, 100.0, 59, 1),
    ("Claude Haiku 4.5", "Executive"): (0.8863636363636364, 85.8974358974359, 60.0, 78, 10),
    ("Gemma 3 1B", "Attention"): (0.8, 100.0, 100.0, 48, 12),
    ("Gemma 3 1B", "Executive"): (0.6136363636363636, 9.25925925925926, 14.705882352941176,
                                  54, 34),
    ("Gemma 3 12B", "Attention"): (0.9166666666666666, 92.72727272727273, 60.0, 55, 5),
    ("Gemma 3 12B", "Executive"): (0.8295454545454546, 53.42465753424658, 40.0, 73, 15),
    ("Gemma 3 27B", "Attention"): (0.95, 100.0, 66.66666666666667, 57, 3),
    ("Gemma 3 27B", "Executive"): (0.8409090909090909, 98.64864864864865, 92.85714285714286,
                                   74, 14),
}
#: The authors' names of the models in the file names (``probe_analysis._ALIASES``).
_ALIASES = {"haiku": "Claude Haiku 4.5"}


def _battery_by_hand() -> dict[tuple[str, str], tuple[float, float, float, int, int]]:
    out = {}
    for log in sorted(BATTERY.glob("*/*.csv")):
        model = log.stem.removesuffix(" attention").removesuffix(" exec")
        model = _ALIASES.get(model, model)
        with log.open(newline="") as fh:
            rows = [(r["correct"] == "True", r["keep_withdraw"] == "KEEP")
                    for r in csv.DictReader(fh)]
        right = [k for c, k in rows if c]
        wrong = [k for c, k in rows if not c]
        out[model, log.parent.name] = (len(right) / len(rows), 100 * sum(right) / len(right),
                                       100 * sum(wrong) / len(wrong), len(right), len(wrong))
    return out


def test_battery_tasks_and_models_from_the_paths_match_the_authors() -> None:
    """Two tasks x 4 models, the model and task from each file's path, KEEP/WITHDRAW recoded
    to the self-prediction "I am right" and Claude's two spellings recoded to one model: the
    task accuracy, hit rate (KEEP when right) and false-alarm rate (KEEP when wrong) of every
    cell equal the hand numbers and the authors' ``per_track_data.json``."""
    res = _ingest(BATTERY)
    s = res.summary
    assert (s["records_read"], s["records_used"], s["records_quarantined"]) == (592, 592, 0)
    assert s["tasks"] == ["Attention", "Executive"]
    hand = _battery_by_hand()
    assert set(hand) == set(BATTERY_AUTHORS)
    for key, numbers in BATTERY_AUTHORS.items():
        assert hand[key] == pytest.approx(numbers, abs=1e-12), key
    cells = build_cells(res.records, load_registry(BATTERY / "registry.csv"))
    rows = {(r["model"], r["task"]): r for r in by_model_task(cells)}
    assert set(rows) == set(hand)
    for key, (acc, keep_right, keep_wrong, n_right, n_wrong) in hand.items():
        r = rows[key]
        assert r["n"] == n_right + n_wrong
        # by_model_task gives 6 decimals
        assert r["outcome_rate"] == pytest.approx(acc, abs=1e-6)
        assert 100 * r["hit_rate"] == pytest.approx(keep_right, abs=1e-4)
        assert 100 * r["false_alarm_rate"] == pytest.approx(keep_wrong, abs=1e-4)


# --------------------------------------------------------------------------- atlas


def _atlas_by_hand() -> dict[str, list[tuple[Decimal, bool]]]:
    """Per model, the authors' de-duplication (``drop_duplicates(['model', 'item_id',
    'domain'], keep='first')``), then (confidence / 100, is_correct)."""
    seen: set[tuple[str, str, str]] = set()
    out: dict[str, list[tuple[Decimal, bool]]] = {}
    for log in sorted(ATLAS.glob("metacognitive_profile_results*.csv")):
        with log.open(newline="") as fh:
            for r in csv.DictReader(fh):
                key = (r["model"], r["item_id"], r["domain"])
                if key in seen:
                    continue
                seen.add(key)
                out.setdefault(r["model"], []).append((Decimal(r["confidence"]) / 100,
                                                       r["is_correct"] == "True"))
    return out


def test_verbalized_atlas_overlapping_uploads_are_duplicates() -> None:
    """Uploads 18 and 19 are the same run of glm-5: its 40 rows are duplicates, counted once,
    as the authors de-duplicate; per model the numbers equal the hand computation."""
    res = _ingest(ATLAS)
    s = res.summary
    assert (s["records_read"], s["records_used"], s["records_duplicate"]) == (120, 80, 40)
    hand = _atlas_by_hand()
    assert sorted(len(v) for v in hand.values()) == [40, 40]
    for model, pairs in hand.items():
        _compare(_hand(pairs), _package(res.records.filter(pl.col("model") == model)))
    assert all(q >= HALF for q, _ in hand["zai/glm-5"])


def test_a_constant_that_renames_a_model_is_counted_and_one_that_merges_two_is_an_error(
        tmp_path: Path) -> None:
    """The files name their model (``model`` column). A constant that gives one of them
    another name is a relabel, counted and said; one that would make two models one is an
    error naming both."""
    mapping = tmp_path / "study.toml"
    base = (ATLAS / "study.toml").read_text().replace('model = "model"\n', "")
    mapping.write_text(base.replace('task = "mmlu"', 'task = "mmlu"\nmodel = "glm-5"'))
    res = ingest(sorted(ATLAS.glob("*(1[89]).csv")), transform=load_transform(mapping))
    assert res.summary["study_mapping"]["relabelled"] == {"model": {"zai/glm-5 -> glm-5": 80}}
    assert res.summary["models"] == ["glm-5"]
    (warning,) = res.summary["study_mapping"]["warnings"]
    assert "relabelled the model of 80 rows" in warning
    from selfmodel.records.contract import InputError

    with pytest.raises(InputError, match=r"gives model 'glm-5' to rows whose own 'model' column "
                       r"says 'zai/glm-5' .* and 'openai/gpt-oss-20b' .*: they would become one "
                       r"model.*\[\[rule\]\] column = \"model\"") as err:
        ingest(sorted(ATLAS.glob("metacognitive_*.csv")), transform=load_transform(mapping))
    assert "\n" not in str(err.value)


# --------------------------------------------------------------------------- preview


@pytest.mark.parametrize(("folder", "paths", "shown"), [
    (FLAGS, [FLAGS], ["rule coerce = false -> unparsed: 6 rows",
                      "statuses of the records used: ok 42, unparsed 6",
                      "option columns absent (rows choosing them are quarantined)",
                      "fields from each file's path"]),
    (WIDE, [WIDE_CSV], ["melted: columns '^(?P<model>.+)_(?P<column>confidence|correctness)$'"
                        " give 48 groups", "item_id: the row's position in its file",
                        "rule correctness missing -> unanswered: 1 rows",
                        "records read 14400, used 14400"]),
    (BATTERY, [BATTERY], ["models: Claude Haiku 4.5, Gemma 3 12B, Gemma 3 1B, Gemma 3 27B; "
                          "tasks: Attention, Executive"]),
    (ATLAS, [ATLAS], ["records read 120, used 80, quarantined 0, duplicate 40"]),
])
def test_preview_shows_the_mapped_rows_and_their_accounting(folder: Path, paths: list[Path],
                                                            shown: list[str], capsys) -> None:
    """``selfmodel ingest ... --preview``: the mapped records and the accounting, nothing written."""
    code = main(["ingest", *map(str, paths), "--mapping", str(folder / "study.toml"),
                 "--preview"])
    out = capsys.readouterr().out
    assert code == 0
    for line in shown:
        assert line in out, line
    assert "first 10 of" in out and out.rstrip().endswith("nothing written, nothing fitted.")


@pytest.mark.e2e
def test_battery_reaches_a_report_with_the_mapping_and_registry(tmp_path: Path, capsys) -> None:
    """``selfmodel run FOLDER --mapping --registry`` at quick settings, report rendered: the
    scale model is fitted on the three Gemma 3 sizes, and results.json, ingest.json and the
    report give the same row accounting and the hand numbers of every cell."""
    out = tmp_path / "out"
    code = main(["run", str(BATTERY), "--mapping", str(BATTERY / "study.toml"), "--registry",
                 str(BATTERY / "registry.csv"), "--out", str(out), "--no-power",
                 "--no-robustness", "--preset", "exploratory", "--quiet", "--jobs", "1"])
    assert code == 0, capsys.readouterr().err
    results = json.loads((out / "results.json").read_text())
    ingested = json.loads((out / "ingest.json").read_text())
    for k in ("records_read", "records_used", "records_quarantined", "records_duplicate"):
        assert results["data"][k] == ingested[k]
    assert (results["data"]["records_read"], results["data"]["records_used"]) == (592, 592)
    hand = _battery_by_hand()
    got = {(r["model"], r["task"]): r for r in results["by_model_task"]}
    assert set(got) == set(hand)
    for key, (acc, keep_right, keep_wrong, n_right, n_wrong) in hand.items():
        assert got[key]["n"] == n_right + n_wrong
        assert got[key]["outcome_rate"] == pytest.approx(acc, abs=1e-6)
        assert 100 * got[key]["hit_rate"] == pytest.approx(keep_right, abs=1e-4)
        assert 100 * got[key]["false_alarm_rate"] == pytest.approx(keep_wrong, abs=1e-4)
    assert results["scale_effect"]["decision"] in {"improves", "credibly_positive", "practically_null",
                                             "credibly_negative", "worsens",
                                             "no_credible_effect", "not_estimable"}
    report = (out / "report.html").read_text()
    assert "Records read <strong>592</strong>" in report
