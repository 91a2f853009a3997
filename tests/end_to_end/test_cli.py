"""The command line as a user meets it: exit codes, one-line errors, no tracebacks."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import polars as pl
import pytest

from selfmodel.cli import main

BAD = Path(__file__).parents[1] / "bad_inputs"
CASES = tomllib.loads((BAD / "cases.toml").read_text())["case"]
ROOT = Path(__file__).resolve().parents[2]
# These cases name a path that the CLI resolves itself (folders, missing paths, file types)
# before ingest sees it; its wording differs from ingest's, the exit code does not.
RESOLVED_BY_CLI = {"folder_without_data_files", "unsupported_file_type", "missing_path"}


def _argv(case: dict, out: Path) -> list[str]:
    argv = ["ingest", *[str(BAD / f) for f in case["files"]], "--out", str(out)]
    if "registry" in case:
        argv += ["--registry", str(BAD / case["registry"])]
    if "config" in case:
        argv += ["--config", str(BAD / case["config"])]
    for m in case.get("map", []):
        argv += ["--map", m]
    return argv


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_bad_input_corpus_through_the_cli(case, tmp_path, capsys):
    """Every corpus case: exit 2 with one line naming the problem, or exit 0 with exact accounting."""
    code = main(_argv(case, tmp_path / "out"))
    err = capsys.readouterr().err
    assert "Traceback" not in err
    if case["expect"] == "exit2":
        assert code == 2
        lines = [ln for ln in err.splitlines() if ln.strip()]
        assert len(lines) == 1, err
        assert lines[0].startswith("selfmodel: error: ")
        if case["name"] not in RESOLVED_BY_CLI:
            assert case["message"] in lines[0]
        assert not (tmp_path / "out" / "records.parquet").exists()
    else:
        assert code == 0
        summary = json.loads((tmp_path / "out" / "ingest.json").read_text())
        assert summary["records_read"] == (
            summary["records_used"] + summary["records_quarantined"] + summary["records_duplicate"]
        )
        assert summary["records_read"] == case["read"]
        q = pl.read_parquet(tmp_path / "out" / "quarantine.parquet")
        assert q.height == summary["records_quarantined"]


def test_run_on_log_missing_required_column_exits_2(tmp_path, capsys):
    log = tmp_path / "logs.jsonl"
    log.write_text('{"model": "a", "task": "t", "prediction": "yes", "outcome": "no"}\n')
    code = main(["run", str(log), "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err
    errors = [ln for ln in err.splitlines() if ln.startswith("selfmodel: error:")]
    assert len(errors) == 1  # progress lines may precede it; the error is one line
    assert "logs.jsonl" in errors[0] and "item_id" in errors[0]


@pytest.mark.parametrize(
    "argv",
    [
        ["run", "--scale", "weights"],
        ["fit", "--model", "scael", "--out", "x"],
        ["frobnicate"],
        ["run", "does/not/exist.jsonl"],
        ["report", "--out", "does/not/exist"],
    ],
)
def test_bad_arguments_are_one_line_exit_2(argv, capsys):
    with pytest.raises(SystemExit) as exc:
        code = main(argv)
        raise SystemExit(code)
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "Traceback" not in err
    if argv[:2] == ["fit", "--model"]:
        assert "Did you mean 'scale'" in err


def test_readme_commands_are_what_ci_runs():
    """README starts with the two set-up commands; .ci/run calls the README's test command."""
    readme = (ROOT / "README.md").read_text()
    first_block = re.search(r"```sh\n(.*?)```", readme, re.S)
    assert first_block is not None
    cmds = [ln.split("#")[0].strip() for ln in first_block.group(1).splitlines()]
    assert cmds[:2] == ["make report", "make test"]
    ci = (ROOT / ".ci" / "run").read_text()
    assert re.search(r"^make test\b", ci, re.M)
    makefile = (ROOT / "Makefile").read_text()
    for target in ("help", "install", "report", "test", "lint"):
        assert re.search(rf"^{target}:", makefile, re.M), target


def test_bad_hypotheses_file_stops_before_any_work(tmp_path, capsys):
    """A mistake in the hypotheses file: one line naming file and line, exit 2, nothing written."""
    bad = tmp_path / "h.toml"
    bad.write_text('[[hypothesis]]\nname = "x"\nmodel = "scale"\nparameter = "beta"\ndirection = "up"\n')
    out = tmp_path / "out"
    assert main(["run", "--hypotheses", str(bad), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "h.toml" in err[0] and "line 5" in err[0]
    assert not out.exists()


@pytest.mark.parametrize("command", [["ingest", "{data}", "--out", "{out}"],
                                     ["run", "{data}", "--preview"],
                                     ["reduce", "{data}", "--out", "{out}"]])
def test_light_commands_do_not_load_the_modelling_stack(tmp_path, command):
    """``ingest``, ``run --preview`` and ``reduce`` never import PyMC, ArviZ or SciPy.

    They run in well under a second without them; importing them (through the pipeline's
    stages) cost about 4 CPU-s a call, paid by every user's ingest and by each of the tests
    that run the command line in a fresh process.
    """
    argv = [a.format(data=ROOT / "data_raw" / "records.csv", out=tmp_path / "out")
            for a in command]
    code = ("import sys\nfrom selfmodel.cli import main\n"
            f"status = main({argv!r})\n"
            "heavy = sorted(m for m in ('pymc', 'pytensor', 'arviz', 'scipy') if m in sys.modules)\n"
            "print('HEAVY', heavy)\nsys.exit(status)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=False, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "HEAVY []" in done.stdout, done.stdout
