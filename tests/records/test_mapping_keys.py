"""Every key a records mapping gained for issue 53, given a bad value: one line, never a traceback.

Each case is a mapping (and, for the mistakes only the data show, a small record file); the
command line must exit 2 with one line on stderr that names the file (and the line of the
key, when the mistake is in the mapping). The last test collects every snippet the error
messages suggested (:mod:`selfmodel.records.snippets`) and parses each with the real parser
of its file: a hint is never a key the parser rejects.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any

import pytest

from selfmodel.cli import main
from selfmodel.common.errors import InputError
from selfmodel.records import toml_tables
from selfmodel.records.importers.mapping import records_apply
from selfmodel.records.importers.mapping import records_spec as rs
from selfmodel.records.importers.mapping.logs_spec import parse_mapping
from selfmodel.records.importers.mapping.records_apply import load_transform
from selfmodel.records.ingest import ingest
from selfmodel.records.ingest.column_map import _ConfigFile, check_canonical, parse_map_options
from selfmodel.records.snippets import built

#: A complete, valid records mapping the cases change one thing of.
BASE = """format = "records"
task = "t"
[map]
item_id = "q"
[confidence]
column = "conf"
scale = [0, 10]
[answered]
column = "ok"
[prediction]
threshold = 0.5
"""
ROWS = "q,conf,ok,flag,model\n1,7,true,x,m\n2,cell_empty,false,y,m\n"

#: (case, mapping text, what the one line must say). The mapping is BASE with the text added
#: (``None`` in place of the text: the whole mapping is the second string).
MAPPING_CASES: list[tuple[str, str, str]] = [
    ("item_id not @row", 'item_id = "q"', r"item_id = 'q': at the top level item_id can only "
     r"be '@row'.*\[map\] item_id = \"<column>\""),
    ("item_id a number", "item_id = 3", r"column 'item_id'"),
    ("path pattern group", "[path]\npattern = '(?P<bogus>[^/]+)'",
     r"pattern has the group 'bogus'"),
    ("path pattern syntax", "[path]\npattern = '(?P<task>'", r"is not a valid pattern"),
    ("path pattern type", "[path]\npattern = 5", r"\[path\] pattern must be a pattern text"),
    ("path pattern no group", "[path]\npattern = 'abc'", r"pattern needs a named group"),
    ("path unknown key", "[path]\npatern = 'x'", r"unknown key in \[path\].*pattern"),
    ("melt no column group", "[melt]\ncolumns = '(?P<model>.+)_conf'",
     r"columns needs a named group \(\?P<column>"),
    ("melt no field group", "[melt]\ncolumns = '(?P<column>.+)'",
     r"columns needs a named group"),
    ("melt syntax", "[melt]\ncolumns = '['", r"is not a valid pattern"),
    ("melt type", "[melt]\ncolumns = true", r"\[melt\] columns must be a pattern text"),
    ("rule without column", '[[rule]]\nequals = "x"\nthen = "excluded"', r"needs column"),
    ("rule without then", '[[rule]]\ncolumn = "flag"\nequals = "x"', r"needs then"),
    ("rule then unknown", '[[rule]]\ncolumn = "flag"\nequals = "x"\nthen = "exclude"',
     r"then = 'exclude' is not one of.*Did you mean 'excluded'"),
    ("rule both", '[[rule]]\ncolumn = "flag"\nequals = "x"\nmissing = true\nthen = "error"',
     r"needs one of equals or missing \(not both\)"),
    ("rule neither", '[[rule]]\ncolumn = "flag"\nthen = "error"',
     r"needs one of equals or missing"),
    ("rule missing false", '[[rule]]\ncolumn = "flag"\nmissing = false\nthen = "error"',
     r"missing = false matches nothing"),
    ("rule equals table", '[[rule]]\ncolumn = "flag"\nequals = { a = 1 }\nthen = "error"',
     r"equals must be a value or a list"),
    ("rule column number", '[[rule]]\ncolumn = 3\nequals = "x"\nthen = "error"',
     r"column must be a non-empty column name"),
    ("rule not an array", '[rule]\ncolumn = "flag"\nequals = "x"\nthen = "error"',
     r"'rule' must be an array of tables"),
    ("rule unknown key", '[[rule]]\ncolumn = "flag"\nequal = "x"\nthen = "error"',
     r"unknown key in \[\[rule\]\].*equals"),
    ("recode unknown field", "[recode]\npredicton = { KEEP = true }",
     r"unknown key in \[recode\].*prediction"),
    ("recode not a table", '[recode]\nprediction = "KEEP"', r"\[recode\] must be a table"),
    ("recode empty", "[recode]\nprediction = {}", r"\[recode\] prediction is empty"),
    ("recode value list", "[recode]\nprediction = { KEEP = [1] }",
     r"\[recode\] must be a table"),
    ("join on empty", '[join]\nfile = "k.csv"\non = []', r"\[join\] on must be a column name"),
    ("join on number", '[join]\nfile = "k.csv"\non = 3', r"\[join\] on must be a column name"),
    ("join key lengths", '[join]\nfile = "k.csv"\nleft_on = ["a", "b"]\nright_on = "a"',
     r"left_on has 2 columns and right_on 1"),
    ("join path syntax", '[join]\nfile = "k.csv"\non = "q"\npath = "(?P<task>"',
     r"is not a valid pattern"),
    ("join path group", '[join]\nfile = "k.csv"\non = "q"\npath = "(?P<qset>.+)"',
     r"path has the group 'qset'"),
    ("join glob matches nothing", '[join]\nfile = "nowhere/*_key.csv"\non = "q"',
     r"\[join\] file = 'nowhere/\*_key.csv' matches no file"),
    ("path group not a field", "[path]\npattern = '(?P<item_id>x)'",
     r"has the group 'item_id'"),
    ("given twice: constant and path", "[path]\npattern = '(?P<task>[^/]+)/'",
     r"task is given twice: task = 't' and the group"),
    ("given twice: constant and melt", "[melt]\ncolumns = '(?P<task>.+)_(?P<column>c)'",
     r"task is given twice: task = 't' and the group"),
]

#: Mistakes only the data show (the mapping is valid): (case, mapping text added, message).
DATA_CASES: list[tuple[str, str, str]] = [
    ("path pattern misses the file", "[path]\npattern = '(?P<model>zzz)'",
     r"\[path\] pattern '\(\?P<model>zzz\)' does not match this file's path"),
    ("melt matches no column", "[melt]\ncolumns = '(?P<model>.+)_(?P<column>zz)'",
     r"no column matches the mapping's \[melt\] columns"),
    ("rule column absent", '[[rule]]\ncolumn = "flg"\nequals = "x"\nthen = "excluded"',
     r"column 'flg' named in the mapping .* is not in the file.*'flag'"),
    ("join right_on absent", '[join]\nfile = "key.csv"\non = "q"\nprefix = "k_"',
     r"join key 'q' is not a column"),
    ("constant merges two models", 'model = "one"', None),
]


def _write(folder: Path, text: str, rows: str = ROWS) -> tuple[Path, Path]:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "key.csv").write_text("question,answer\n1,a\n")
    mapping = folder / "m.toml"
    mapping.write_text(text)
    log = folder / "logs" / "r.csv"
    log.parent.mkdir(exist_ok=True)
    log.write_text(rows)
    return mapping, log


def _mapping_text(extra: str) -> str:
    top, tables = [], []
    for line in extra.split("\n"):  # keys before the first table go to the top level
        (tables if tables or line.startswith("[") else top).append(line)
    lines = BASE.split("\n")
    return "\n".join([lines[0], *top, *lines[1:]]) + "\n" + "\n".join(tables) + "\n"


@pytest.mark.parametrize(("case", "extra", "message"), MAPPING_CASES,
                         ids=[c[0] for c in MAPPING_CASES])
def test_a_bad_value_of_a_new_key_is_one_line(case: str, extra: str, message: str,
                                               tmp_path: Path, capsys) -> None:
    mapping, log = _write(tmp_path, _mapping_text(extra))
    code = main(["ingest", str(log), "--mapping", str(mapping), "--preview"])
    err = capsys.readouterr().err
    assert code == 2, err
    assert "Traceback" not in err and err.count("\n") == 1, err
    assert str(mapping) in err
    assert re.search(message, err), err
    if case not in ("join glob matches nothing",):
        assert re.search(r"line \d+", err), err  # the key's line in the mapping


@pytest.mark.parametrize(("case", "extra", "message"), DATA_CASES, ids=[c[0] for c in DATA_CASES])
def test_a_mistake_the_data_show_is_one_line(case: str, extra: str, message: str | None,
                                             tmp_path: Path, capsys) -> None:
    mapping, log = _write(tmp_path, _mapping_text(extra))
    if message is None:  # a second file whose own model column says another model
        (log.parent / "s.csv").write_text(ROWS.replace(",m\n", ",n\n"))
        message = r"gives model 'one' to rows whose own 'model' column says 'm' .* and 'n'"
    code = main(["ingest", str(log.parent), "--mapping", str(mapping), "--preview"])
    err = capsys.readouterr().err
    assert code == 2, err
    assert "Traceback" not in err and err.count("\n") == 1, err
    assert re.search(message, err), err


def test_a_path_pattern_that_backtracks_without_end_stops(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(records_apply, "PATTERN_TIMEOUT", 0.05)
    mapping, _ = _write(tmp_path, _mapping_text("[path]\npattern = '(?P<model>(q|qq)+)Q'"))
    log = tmp_path / ("q" * 40 + "z.csv")
    log.write_text(ROWS)
    with pytest.raises(InputError, match=r"\[path\] pattern .* ran for 0.05 s") as err:
        ingest([log], transform=load_transform(mapping))
    assert "\n" not in str(err.value)


def test_rules_give_statuses_and_leave_rows_out_counted(tmp_path: Path) -> None:
    """Each action of ``[[rule]]`` on a small file: statuses kept, excluded rows counted,
    the first matching rule deciding, a ruled row never quarantined."""
    rows = ("q,conf,ok,flag,cond,model\n1,7,true,ok,a,m\n2,cell_empty,true,ok,a,m\n"
            "3,8,,ok,a,m\n4,9,true,refusal,a,m\n5,9,false,ok,control,m\n6,2,false,skip,a,m\n"
            "7,x,true,ok,a,m\n")
    text = _mapping_text(
        '[[rule]]\ncolumn = "conf"\nequals = "cell_empty"\nthen = "unparsed"\n'
        '[[rule]]\ncolumn = "ok"\nmissing = true\nthen = "unanswered"\n'
        '[[rule]]\ncolumn = "flag"\nequals = "refusal"\nthen = "refused"\n'
        '[[rule]]\ncolumn = "cond"\nequals = "control"\nthen = "not_asked"\n'
        '[[rule]]\ncolumn = "flag"\nequals = ["skip", "refusal"]\nthen = "excluded"\n')
    mapping, log = _write(tmp_path, text, rows)
    res = ingest([log], transform=load_transform(mapping))
    s = res.summary
    assert (s["records_read"], s["records_used"], s["records_quarantined"],
            s["records_excluded"]) == (7, 5, 1, 1)
    status = dict(res.records.select("item_id", "status").iter_rows())
    assert status == {"1": "ok", "2": "unparsed", "3": "unanswered", "4": "refused",
                      "5": "not_asked"}
    assert res.quarantine["reason"].to_list() == [
        "confidence 'x' (column 'conf') is not a finite number"]
    assert [r["rows"] for r in s["study_mapping"]["rules"]] == [1, 1, 1, 1, 1]
    rec = {r["item_id"]: r for r in res.records.iter_rows(named=True)}
    assert rec["3"]["outcome"] is None and rec["3"]["prediction"] == "true"  # no answer
    assert rec["5"]["prediction"] is None and rec["5"]["outcome"] == "false"  # not asked


def test_every_rule_counts_with_booleans_and_numbers(tmp_path: Path) -> None:
    """``equals = false`` matches every spelling of false; a number matches 1 and 1.0."""
    rows = ("q,conf,ok,flag,model\n1,7,true,False,m\n2,7,true,0,m\n3,7,true,no,m\n"
            "4,7,true,1.0,m\n5,7,true,1,m\n")
    text = _mapping_text('[[rule]]\ncolumn = "flag"\nequals = false\nthen = "unparsed"\n'
                         '[[rule]]\ncolumn = "flag"\nequals = 1\nthen = "excluded"\n')
    mapping, log = _write(tmp_path, rows=rows, text=text)
    res = ingest([log], transform=load_transform(mapping))
    assert [r["rows"] for r in res.summary["study_mapping"]["rules"]] == [3, 2]
    assert res.summary["records_excluded"] == 2


def test_item_from_the_row_position_counts_unread_rows(tmp_path: Path) -> None:
    """A row the reader could not read keeps its place: the next row is still the fourth."""
    rows = "conf,ok,model\n7,true,m\n8,true,m\n1,2,3,4\n9,true,m\n"
    text = _mapping_text('item_id = "@row"').replace('[map]\nitem_id = "q"\n', "")
    mapping, log = _write(tmp_path, text, rows=rows)
    res = ingest([log], transform=load_transform(mapping))
    assert sorted(res.records["item_id"].to_list()) == ["1", "2", "4"]
    assert res.quarantine["reason"].to_list() == ["wrong number of fields (expected 3, got 4)"]
    assert res.summary["study_mapping"]["item_id"].startswith("the row's position")


# --------------------------------------------------------------------------- snippets


def _records_ok(doc: dict[str, Any], text: str) -> str | None:
    """Why ``doc`` is not a records mapping the parser accepts as to its keys and types."""
    try:
        rs._File.model_validate(doc, context={"path": "m.toml"})
    except Exception as exc:  # noqa: BLE001 - a validation error of any kind is read below
        problem = toml_tables.problem_of(exc, rs._File, doc, text)  # type: ignore[arg-type]
        if problem.unknown or problem.kind != "bad":
            return f"{problem.what} ({problem.key})"
    return None


def _merge(base: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for k, v in extra.items():
        if isinstance(v, dict) and isinstance(out.get(k), dict):
            out[k] = _merge(out[k], v)
        elif isinstance(v, list) and isinstance(out.get(k), list) and v and isinstance(v[0],
                                                                                      dict):
            out[k] = [_merge(out[k][0], v[0])]
        else:
            out[k] = v
    return out


RECORDS_BASE = tomllib.loads(BASE + '[[rule]]\ncolumn = "flag"\nequals = "x"\n'
                             'then = "excluded"\n')
IMPORT_BASE = {"format": "lmeval", "fields": {"prediction": "p", "outcome": "o"}}


def _import_errors() -> None:
    """The import mappings' errors that suggest snippets."""
    from selfmodel.records.importers.mapping import LogSample, apply_mapping

    for bad in ({"format": "lmeval", "fields": {"outcome": "o"}},
                {"format": "lmeval", "fields": {"prediction": "p"}}, {"format": "evals"}):
        with pytest.raises(InputError):
            parse_mapping(bad)
    m = parse_mapping({**IMPORT_BASE, "task": "arc_easy"})
    logs = [LogSample({"p": "yes", "o": "yes", "doc_id": 1}, {"model": "x", "task": t},
                      f"{t}.jsonl", 1) for t in ("arc_easy", "hellaswag")]
    with pytest.raises(InputError, match=r"sets task = 'arc_easy' for logs of task 'arc_easy' "
                       r"\(arc_easy.jsonl\) and 'hellaswag' \(hellaswag.jsonl\): they would "
                       r"become one task"):
        apply_mapping(m, logs)
    m = parse_mapping({**IMPORT_BASE, "fields": {**IMPORT_BASE["fields"], "item_id": "nope"}})
    with pytest.raises(InputError):
        apply_mapping(m, logs[:1])


def test_every_suggested_snippet_parses(tmp_path: Path, capsys) -> None:
    """Trigger every error above, then parse each snippet the messages suggested: TOML that
    ``tomllib`` reads, whose keys and value types the parser of its file accepts."""
    for i, (_, extra, _) in enumerate(MAPPING_CASES + DATA_CASES):
        mapping, log = _write(tmp_path / str(i), _mapping_text(extra))
        main(["ingest", str(log.parent), "--mapping", str(mapping), "--preview"])
    for i, rows in enumerate(["conf,ok\n1,true\n", "q,ok,conf\n1,true,3\n"]):
        (tmp_path / f"bare{i}.csv").write_text(rows)
        main(["ingest", str(tmp_path / f"bare{i}.csv"), "--preview"])
    _import_errors()
    capsys.readouterr()
    snippets = built()
    kinds = {s.kind for s in snippets}
    assert {"records", "cli", "config", "import"} <= kinds, kinds
    assert any(s.body == 'item_id = "@row"' for s in snippets)
    problems = []
    for s in snippets:
        if s.kind == "cli":
            canonical, _, source = s.body.removeprefix("--map ").partition("=")
            try:
                check_canonical(canonical, s.body)
                parse_map_options([f"{canonical}={source}"])
            except InputError as exc:
                problems.append((s, str(exc)))
            continue
        text = s.toml()
        try:
            doc = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            problems.append((s, f"not TOML: {exc}"))
            continue
        if s.kind == "records":
            why = _records_ok(_merge(RECORDS_BASE, doc), text)
        elif s.kind == "config":
            try:
                _ConfigFile.model_validate(doc)
                why = None
            except Exception as exc:  # noqa: BLE001
                why = str(exc)
        else:
            try:
                parse_mapping(_merge(IMPORT_BASE, doc))
                why = None
            except InputError as exc:
                why = str(exc)
        if why is not None:
            problems.append((s, why))
    assert not problems, problems


def test_an_import_constant_that_renames_the_logs_task_is_counted() -> None:
    """``import lmeval`` with ``task = "refusal"`` over a log of task ``selfpred_refusal``:
    relabelled, counted in the counts and said in a note (never silently)."""
    from selfmodel.records.importers.lmeval import import_lmeval

    fix = Path(__file__).resolve().parents[1] / "fixtures" / "importers"
    res = import_lmeval(fix / "single", mapping=fix / "single.toml")
    assert res.counts["relabelled"] == {"task": {"selfpred_refusal -> refusal": 4}}
    assert ("the mapping's task = 'refusal' relabelled records of logs that name another task: "
            "selfpred_refusal -> refusal (4).") in res.notes
