"""Output folders (issue 50): ownership by proof, locks that cannot be aimed, whole publishes.

A corpus of cases and their neighbours, each through the command line where a user meets it:

* a folder selfmodel made, then given files of the user's (``records.csv``, ``registry.csv``,
  ``results.json``, ``report.html``: one edited, the others never listed) meets every
  command that writes: each either refuses with one line naming a file of the user's, or
  works around them; no byte of theirs changes either way;
* folders made by older versions (marker without a manifest), the committed manifest of
  ``data_raw/`` (``make data``), inputs inside ``--out`` and ``--out`` as an input;
* lock paths that are links, hard links or not files; two spellings of one folder at once
  (processes, a barrier rather than sleeps);
* a kill between every two steps of a publish, in both ways to publish (the folder exchange
  and the one-by-one move), and during the recovery itself: right after it the folder never
  shows an index file over data of another run, the next command leaves it all-old or
  all-new, and a rerun needs no step of the user's;
* SIGTERM ends ``run``, ``fit`` and ``ingest`` as Ctrl-C does (one line, exit 143), and an
  unusable ``--out`` stops ``run`` before the numerical stack is imported.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import polars as pl
import pytest

from selfmodel.cli import main
from selfmodel.common import manifest, outputs, publish

ROOT = Path(__file__).resolve().parents[2]
CORPUS = Path(__file__).parents[1] / "bad_inputs"
VALID = CORPUS / "valid.jsonl"  # models m1, m2
IMPORTERS = Path(__file__).parents[1] / "fixtures" / "importers"
ROW = '{{"model": "{m}", "task": "refusal", "item_id": "q{i}", "prediction": true, "outcome": true}}\n'


def _records(tmp: Path, name: str, models: tuple[str, ...]) -> Path:
    path = tmp / f"{name}.jsonl"
    path.write_text("".join(ROW.format(m=m, i=i) for m in models for i in range(3)))
    return path


def _tree(folder: Path) -> dict[str, str]:
    """Every entry under ``folder`` (links not followed): the hash of a file, a link's target."""
    out = {}
    for p in sorted(folder.rglob("*")):
        rel = p.relative_to(folder).as_posix()
        if p.is_symlink():
            out[rel] = "-> " + os.readlink(p)
        elif p.is_file():
            out[rel] = hashlib.sha256(p.read_bytes()).hexdigest()
        else:
            out[rel] = "folder"
    return out


def _one_line(err: str, *needles: str) -> str:
    """Exactly one ``selfmodel: error``/``interrupted`` line, no traceback, with ``needles``."""
    assert "Traceback" not in err, err
    lines = [ln for ln in err.splitlines() if ln.startswith("selfmodel: ")
             and ("error" in ln or "interrupted" in ln)]
    assert len(lines) == 1, err
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    return lines[0]


def _proves_all(out: Path) -> None:
    """The manifest of ``out`` proves every file selfmodel left there (and nothing is stale)."""
    found = manifest.read(out)
    assert found is not None and not found.legacy
    for name in found.files:
        assert found.proves(out, name), name
    assert not outputs.staging_path(out).exists()
    assert not (out / publish.TOKEN).exists()


# --------------------------------------------------------------------------- ownership


USER_FILES = ("records.csv", "registry.csv", "results.json", "report.html")


@pytest.fixture
def shared(tmp_path: Path) -> Path:
    """A folder ``simulate`` made, then: its ``records.csv`` and ``registry.csv`` edited by
    the user (a line added), and the user's own ``results.json`` and ``report.html`` added."""
    out = tmp_path / "shared"
    assert main(["simulate", "--out", str(out), "--seed", "3"]) == 0
    for name in ("records.csv", "registry.csv"):
        with (out / name).open("a") as fh:
            fh.write("my,own,line\n")
    (out / "results.json").write_text('{"mine": true}\n')
    (out / "report.html").write_text("<html>my notes</html>\n")
    return out


#: Every command that writes into --out, and the file of the user's it would touch (None:
#: it writes around them).
WRITERS = {
    "simulate": (["simulate", "--seed", "4"], "'records.csv'"),
    "import": (["import", "lmeval", str(IMPORTERS / "single"), "--mapping",
                str(IMPORTERS / "single.toml")], "'registry.csv'"),
    "ingest": (["ingest", str(VALID)], "'results.json'"),
    "run": (["run", str(VALID), "--no-report"], "'results.json'"),
    "fit": (["fit", str(VALID)], "'results.json'"),
    "report": (["report"], "'report.html'"),
    "reduce": (["reduce", str(VALID)], "'results.json'"),
    "describe": (["describe", str(VALID)], None),
    "power": (["power", "--sims", "2", "--sweep-sims", "0", "--slopes", "0", "--quiet"], None),
}


@pytest.mark.parametrize("command", sorted(WRITERS))
def test_no_command_touches_a_users_file_in_a_folder_selfmodel_made(
    command: str, shared: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    argv, touched = WRITERS[command]
    user_before = {n: (shared / n).read_bytes() for n in USER_FILES}
    before = _tree(shared)
    capsys.readouterr()
    code = main([*argv, "--out", str(shared)])
    err = capsys.readouterr().err
    assert {n: (shared / n).read_bytes() for n in USER_FILES} == user_before
    if touched is None:  # it writes around them, and its manifest does not claim them
        assert code == 0, err
        found = manifest.read(shared)
        assert found is not None and not set(USER_FILES) & set(found.files)
        assert "truth.json" in found.files  # selfmodel's own file is still listed
    else:
        assert code == 2
        line = _one_line(err, touched, "so it is yours", "Move it away")
        edited = touched in ("'records.csv'", "'registry.csv'")
        assert ("its bytes changed since" if edited else "does not list it") in line
        assert _tree(shared) == before  # nothing at all changed
    assert not outputs.staging_path(shared).exists()


def test_simulate_into_a_users_copy_of_the_input_layout_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    """The issue's reproduction: data_raw's files copied into mydata/, one line added."""
    mine = tmp_path / "mydata"
    mine.mkdir()
    for name in ("records.csv", "registry.csv"):
        (mine / name).write_bytes((ROOT / "data_raw" / name).read_bytes())
    with (mine / "registry.csv").open("a") as fh:
        fh.write("added,by,me\n")
    before = _tree(mine)
    assert main(["simulate", "--out", str(mine), "--seed", "3"]) == 2
    _one_line(capsys.readouterr().err, "selfmodel did not write", "'records.csv'")
    assert _tree(mine) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mydata"]  # no lock, no staging


def test_import_into_a_folder_holding_a_users_registry_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "registry.csv").write_text("model,family\nmy-model,mine\n")
    before = _tree(mine)
    assert main(["import", "lmeval", str(IMPORTERS / "single"), "--mapping",
                 str(IMPORTERS / "single.toml"), "--out", str(mine)]) == 2
    _one_line(capsys.readouterr().err, "selfmodel did not write ('registry.csv')")
    assert _tree(mine) == before


def test_a_users_file_in_fits_and_a_fits_folder_of_the_users(
    tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    """``fits/`` is proven by a rule: a file there that is not named by a key stays as it is;
    a ``fits`` folder the manifest does not list is the user's and refused."""
    out = tmp_path / "out"
    assert main(["ingest", str(VALID), "--out", str(out)]) == 0
    (out / "fits" / "notes.txt").write_text("mine")
    assert main(["ingest", str(_records(tmp_path, "new", ("n1",))), "--out", str(out)]) == 0
    assert (out / "fits" / "notes.txt").read_text() == "mine"
    _proves_all(out)
    made = tmp_path / "made"
    assert main(["simulate", "--out", str(made)]) == 0
    (made / "fits").mkdir()
    (made / "fits" / "mine.txt").write_text("mine")
    before = _tree(made)
    capsys.readouterr()
    assert main(["ingest", str(VALID), "--out", str(made)]) == 2
    _one_line(capsys.readouterr().err, "'fits' is not a folder selfmodel made")
    assert _tree(made) == before


def test_a_marker_of_the_users_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / manifest.MARKER).write_text("my own file of that name\n")
    before = _tree(out)
    assert main(["ingest", str(VALID), "--out", str(out)]) == 2
    _one_line(capsys.readouterr().err, "is not a manifest selfmodel wrote")
    assert _tree(out) == before


@pytest.mark.parametrize("command", ["ingest", "run", "simulate"])
def test_a_folder_of_an_older_version_is_never_overwritten(
    command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    """Marker without a manifest: selfmodel's folder, but no file in it is proven."""
    old = tmp_path / "build"
    old.mkdir()
    (old / manifest.MARKER).write_text(manifest.LEGACY_TEXT)
    for name in ("records.parquet", "ingest.json", "results.json", "records.csv"):
        (old / name).write_text(f"written by an older selfmodel, or by you: {name}")
    before = _tree(old)
    argv = {"ingest": ["ingest", str(VALID)], "run": ["run", str(VALID), "--no-report"],
            "simulate": ["simulate"]}[command]
    assert main([*argv, "--out", str(old)]) == 2
    _one_line(capsys.readouterr().err, "made by an earlier version of selfmodel",
              "cannot tell its files from yours")
    assert _tree(old) == before


def test_an_older_versions_folder_gets_a_manifest_when_nothing_is_replaced(
    tmp_path: Path,
) -> None:
    old = tmp_path / "build"
    old.mkdir()
    (old / manifest.MARKER).write_text(manifest.LEGACY_TEXT)
    (old / "notes.txt").write_text("mine")
    assert main(["describe", str(VALID), "--out", str(old)]) == 0
    found = manifest.read(old)
    assert found is not None and sorted(found.files) == ["describe.json"]
    assert (old / "notes.txt").read_text() == "mine"


def test_data_raw_carries_the_manifest_make_data_needs(tmp_path: Path) -> None:
    """``make data`` (simulate --out data_raw): the committed manifest proves the committed
    files, so a copy of data_raw is rewritten (and its manifest with it)."""
    found = manifest.read(ROOT / "data_raw")
    assert found is not None
    assert sorted(found.files) == ["records.csv", "registry.csv", "truth.json"]
    for name in found.files:
        assert found.proves(ROOT / "data_raw", name), f"data_raw/{name} differs from its manifest"
    copy = tmp_path / "data_raw"
    copy.mkdir()
    for p in (ROOT / "data_raw").iterdir():
        (copy / p.name).write_bytes(p.read_bytes())
    assert main(["simulate", "--out", str(copy)]) == 0
    _proves_all(copy)
    assert (copy / "records.csv").read_bytes() == (ROOT / "data_raw" / "records.csv").read_bytes()


def test_a_write_probe_left_behind_is_cleared_and_only_that(tmp_path: Path) -> None:
    """The probe is an empty file of a new name: one left by a kill (or carried off by a
    concurrent exchange) goes with the next command; a file of yours of that form does not."""
    out = tmp_path / "out"
    assert main(["ingest", str(VALID), "--out", str(out)]) == 0
    (out / ".selfmodel-write-probe.abcd_123").write_bytes(b"")
    (out / ".selfmodel-write-probe.mine1234").write_text("not empty: yours")
    assert main(["ingest", str(VALID), "--out", str(out)]) == 0
    assert not (out / ".selfmodel-write-probe.abcd_123").exists()
    assert (out / ".selfmodel-write-probe.mine1234").read_text() == "not empty: yours"
    _proves_all(out)


# --------------------------------------------------------------------------- inputs and --out


def _import_folder(tmp: Path, name: str) -> Path:
    out = tmp / name
    assert main(["import", "lmeval", str(IMPORTERS / "single"), "--mapping",
                 str(IMPORTERS / "single.toml"), "--out", str(out)]) == 0
    return out


def test_out_that_is_an_input_or_holds_one_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    imported = _import_folder(tmp_path, "imported")  # records.parquet, read as input
    before = _tree(imported)
    capsys.readouterr()
    cases = [
        (["ingest", str(imported), "--out", str(imported)], "is also an input"),
        (["ingest", str(imported / "records.parquet"), "--out", str(imported)], "lies inside --out"),
        (["run", str(VALID), "--registry", str(imported / "registry.csv"), "--out",
          str(imported), "--no-report"], "lies inside --out"),
        (["describe", str(imported), "--out", str(imported)], "is also an input"),
        (["reduce", str(imported), "--out", str(imported)], "is also an input"),
    ]
    for argv, needle in cases:
        assert main(argv) == 2, argv
        _one_line(capsys.readouterr().err, needle, "outputs are never inputs")
    assert _tree(imported) == before
    # an --out inside an input folder that holds records which would be read, then replaced
    data = tmp_path / "data"
    data.mkdir()
    (data / "runs.jsonl").write_bytes(VALID.read_bytes())
    inner = _import_folder(data, "inner")
    before = _tree(inner)
    capsys.readouterr()
    assert main(["ingest", str(data), "--out", str(inner)]) == 2
    _one_line(capsys.readouterr().err, "inner/records.parquet", "lies inside --out")
    assert _tree(inner) == before
    # a symlink spelling of the input folder is the same folder
    link = tmp_path / "link"
    link.symlink_to(imported, target_is_directory=True)
    assert main(["ingest", str(imported), "--out", str(link)]) == 2
    _one_line(capsys.readouterr().err, "is also an input")
    assert _tree(imported) == before


def test_default_data_as_out_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    """``run --out data_raw`` with no PATHS: the default data are the input (a copy here)."""
    import selfmodel.cli as cli

    data = tmp_path / "data_raw"
    data.mkdir()
    for p in (ROOT / "data_raw").iterdir():
        (data / p.name).write_bytes(p.read_bytes())
    monkeypatch.setattr(cli, "DEFAULT_DATA", data)
    monkeypatch.chdir(tmp_path)
    before = _tree(data)
    assert main(["run", "--out", "data_raw", "--no-report"]) == 2
    _one_line(capsys.readouterr().err, "is also an input")
    assert _tree(data) == before


_IMPORTS_AFTER = """
import sys
from selfmodel.cli import main
code = main(sys.argv[1:])
heavy = sorted(m for m in ("pymc", "pytensor", "arviz", "nutpie", "scipy") if m in sys.modules)
print(code, heavy)
"""


@pytest.mark.parametrize("argv", [["run", "--out", "/"], ["fit", "--out", "/"],
                                  ["run", "--out", "{user}"], ["power", "--out", "{user}"],
                                  ["describe", "--out", "{user}"]])
def test_unusable_out_is_refused_before_the_numerical_stack(argv: list[str],
                                                            tmp_path: Path) -> None:
    user = tmp_path / "mine"
    user.mkdir()
    (user / "notes.txt").write_text("mine")
    argv = [a.format(user=user) for a in argv]
    done = subprocess.run([sys.executable, "-c", _IMPORTS_AFTER, *argv], capture_output=True,
                          text=True, cwd=tmp_path)
    assert done.stdout.split(maxsplit=1) == ["2", "[]\n"], (done.stdout, done.stderr)
    _one_line(done.stderr, "--out")
    assert (user / "notes.txt").read_text() == "mine" and len(list(user.iterdir())) == 1


# --------------------------------------------------------------------------- locks


@pytest.mark.parametrize("kind", ["symlink", "dangling symlink", "hard link", "folder", "fifo"])
def test_a_lock_path_that_is_not_a_lock_of_selfmodels_is_refused(
    kind: str, tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    out = tmp_path / "out"
    victim = tmp_path / "victim.txt"
    victim.write_text("a file someone cares about\n")
    lock = outputs.lock_path(out)
    if kind == "symlink":
        lock.symlink_to(victim)
    elif kind == "dangling symlink":
        lock.symlink_to(tmp_path / "would-be-created")
    elif kind == "hard link":
        os.link(victim, lock)
    elif kind == "folder":
        lock.mkdir()
    else:
        os.mkfifo(lock)
    before = _tree(tmp_path)
    assert main(["ingest", str(VALID), "--out", str(out)]) == 2
    why = {"symlink": "is a link", "dangling symlink": "is a link", "hard link": "is a hard link",
           "folder": "is not a regular file", "fifo": "is not a regular file"}[kind]
    _one_line(capsys.readouterr().err, str(lock), why, "Remove it")
    assert _tree(tmp_path) == before  # nothing created, truncated or written
    assert victim.read_text() == "a file someone cares about\n"


def test_an_existing_lock_file_is_never_written(tmp_path: Path) -> None:
    """A regular file of the lock's name (an old lock, or anyone's) is locked, not written."""
    out = tmp_path / "out"
    lock = outputs.lock_path(out)
    lock.write_text("pid 123 (left by an earlier version)\n")
    for _ in range(2):
        assert main(["ingest", str(VALID), "--out", str(out)]) == 0
    assert lock.read_text() == "pid 123 (left by an earlier version)\n"


def test_two_spellings_of_one_folder_take_one_lock(tmp_path: Path) -> None:
    out = tmp_path / "out"
    latest = tmp_path / "latest"
    assert main(["ingest", str(VALID), "--out", str(out)]) == 0
    latest.symlink_to(out, target_is_directory=True)
    assert outputs.lock_path(latest) == outputs.lock_path(out)
    assert outputs.staging_path(latest) == outputs.staging_path(out)
    with outputs.locked(out), pytest.raises(outputs.InputError, match="is writing into it"):
        with outputs.locked(latest):
            pass
    with outputs.locked(tmp_path / "." / "x" / ".." / "out"), \
            pytest.raises(outputs.InputError, match="is writing into it"):
        with outputs.locked(latest):
            pass


_HOLDER = """
import sys, time
from pathlib import Path
from selfmodel.common import outputs
ready, go = Path(sys.argv[2]), Path(sys.argv[3])
with outputs.locked(Path(sys.argv[1])):
    ready.touch()
    while not go.exists():  # released when the test says so
        time.sleep(0.05)
"""

_INGEST = """
import sys, time
from pathlib import Path
from selfmodel.cli import main
ready, go = Path(sys.argv[1]), Path(sys.argv[2])
ready.touch()
while not go.exists():  # a barrier: both start together
    time.sleep(0.01)
sys.exit(main(sys.argv[3:]))
"""


def _wait_for(path: Path, proc: subprocess.Popen) -> None:
    while not path.exists():  # no time limit: a loaded machine is only slower
        if proc.poll() is not None:
            pytest.fail(f"ended early: {proc.communicate()}")
        time.sleep(0.05)


def test_a_command_through_another_spelling_stops_while_one_holds_the_lock(
    tmp_path: Path,
) -> None:
    """A real process holds the lock through ``out``; ``ingest --out latest`` stops at once."""
    out = tmp_path / "out"
    assert main(["ingest", str(VALID), "--out", str(out)]) == 0
    (tmp_path / "latest").symlink_to(out, target_is_directory=True)
    before = _tree(out)
    ready, go = tmp_path / "ready", tmp_path / "go"
    holder = subprocess.Popen([sys.executable, "-c", _HOLDER, str(out), str(ready), str(go)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        _wait_for(ready, holder)
        done = subprocess.run([sys.executable, "-m", "selfmodel.cli", "ingest",
                               str(_records(tmp_path, "b", ("b1",))), "--out",
                               str(tmp_path / "latest")], capture_output=True, text=True)
        assert done.returncode == 2
        _one_line(done.stderr, "another selfmodel command", "is writing into it")
        if Path("/proc/locks").is_file():
            assert f"(pid {holder.pid})" in done.stderr
        assert _tree(out) == before
    finally:
        go.touch()
        holder.communicate()
    assert holder.returncode == 0


def test_two_spellings_at_once_never_mix(tmp_path: Path) -> None:
    """``ingest A --out out`` and ``ingest B --out latest`` started together (a barrier):
    each either finishes or stops with one line, and the folder is one of the two sets."""
    out = tmp_path / "out"
    assert main(["ingest", str(VALID), "--out", str(out)]) == 0
    (tmp_path / "latest").symlink_to(out, target_is_directory=True)
    go = tmp_path / "go"
    procs = []
    for name, spelling in (("a", "out"), ("b", "latest")):
        data = _records(tmp_path, name, (f"{name}1", f"{name}2"))
        ready = tmp_path / f"ready-{name}"
        procs.append((ready, subprocess.Popen(
            [sys.executable, "-c", _INGEST, str(ready), str(go), "ingest", str(data),
             "--out", str(tmp_path / spelling)], stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True)))
    for ready, proc in procs:
        _wait_for(ready, proc)
    go.touch()
    results = [proc.communicate() + (proc.returncode,) for _, proc in procs]
    assert {code for *_, code in results} <= {0, 2} and 0 in {code for *_, code in results}
    for _, err, code in results:
        if code == 2:
            _one_line(err, "is writing into it")
    summary = json.loads((out / "ingest.json").read_text())
    models = sorted(pl.read_parquet(out / "records.parquet").get_column("model").unique())
    assert models in (["a1", "a2"], ["b1", "b2"])
    assert summary["records_used"] == 6 and summary["files"][0]["path"].endswith(
        f"{models[0][0]}.jsonl")
    _proves_all(out)


# --------------------------------------------------------------------------- kills mid-publish

OLD = ("records.parquet", "quarantine.parquet", "cells.parquet", "ingest.json", "results.json",
       "report.html", ".report.html.key")
NEW = ("records.parquet", "quarantine.parquet", "ingest.json", "results.json", "run.json",
       "report.html", ".report.html.key")  # no cells.parquet: the old one is stale
DATA = ("records.parquet", "quarantine.parquet", "cells.parquet")


class _Killed(BaseException):
    """Stands for SIGKILL: raised at one step of a publish and at every step after it."""


def _write_set(out: Path, tag: str, names: tuple[str, ...]) -> None:
    with outputs.staged(out) as staging:
        for name in names:
            (staging / name).write_text(f"{tag}\n")
        key = hashlib.sha256(tag.encode()).hexdigest()[:16]
        (staging / "fits" / f"scale-{key}.nc").write_text(tag)


def _view(out: Path) -> dict[str, str]:
    """What a reader finds: the tag of each file of the sets that is there."""
    return {n: (out / n).read_text().strip() for n in {*OLD, *NEW} if (out / n).is_file()}


def _complete(view: dict[str, str]) -> str | None:
    """``old`` or ``new`` when the reader sees exactly that set; else ``None``."""
    for tag, names in (("old", OLD), ("new", NEW)):
        if view == dict.fromkeys(names, tag):
            return tag
    return None


def _index_never_over_other_data(view: dict[str, str]) -> None:
    """An index file is only ever beside the complete data of its own set, and nothing else."""
    index = {n: t for n, t in view.items() if n not in DATA}
    if not index:
        return  # no index file: a reader finds no results, not wrong ones
    tags = set(view.values())
    assert len(tags) == 1, view  # no file of the other set beside an index file
    (tag,) = tags
    names = OLD if tag == "old" else NEW
    assert all(n in view for n in names if n in DATA), view  # and all of its own data


@pytest.fixture
def kill_at(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict]:
    """Count the steps of a publish (``state['steps']``); with ``state['at'] = k``, kill at k."""
    state: dict = {"steps": 0, "at": None, "counting": False}
    real_step, real_publish = publish._step, publish.publish

    def step(fn, *args):
        if state["counting"]:
            if state["at"] is not None and state["steps"] >= state["at"]:
                raise _Killed
            state["steps"] += 1
        return real_step(fn, *args)

    def counted_publish(*args, **kwargs):
        state["counting"] = True
        try:
            return real_publish(*args, **kwargs)
        finally:
            state["counting"] = False

    monkeypatch.setattr(publish, "_step", step)
    monkeypatch.setattr(outputs, "publish", counted_publish)
    yield state


def _previous(out: Path, *, users_entry: bool) -> dict[str, str]:
    _write_set(out, "old", OLD)
    if users_entry:  # an entry of the user's: the files are moved in one by one around it
        (out / "notes.txt").write_text("my notes")
    return {k: v for k, v in _tree(out).items() if k == "notes.txt"}


@pytest.mark.parametrize("way", ["exchange", "one by one"])
def test_a_kill_between_any_two_steps_of_a_publish(
    way: str, tmp_path: Path, kill_at: dict, capsys: pytest.CaptureFixture[str],
) -> None:
    users_entry = way == "one by one"
    first = tmp_path / "count"
    _previous(first, users_entry=users_entry)
    inode = first.stat().st_ino
    kill_at["steps"] = 0
    _write_set(first, "new", NEW)
    n = kill_at["steps"]
    assert _complete(_view(first)) == "new" and n >= (12 if users_entry else 8), n
    assert (first.stat().st_ino == inode) == users_entry  # the folder exchanged, or not
    ends = set()
    for k in range(n):
        out = tmp_path / f"k{k}"
        user = _previous(out, users_entry=users_entry)
        kill_at.update(steps=0, at=k)
        with pytest.raises(_Killed):
            _write_set(out, "new", NEW)
        kill_at["at"] = None
        right_after = _view(out)
        _index_never_over_other_data(right_after)
        if not users_entry:  # the exchange is one step: never anything but a whole set
            assert _complete(right_after) is not None, (k, right_after)
        assert {k2: v for k2, v in _tree(out).items() if k2 == "notes.txt"} == user
        # the next command settles it by itself, all-old or all-new, then does its own work
        outputs.recover(out, lambda _m: None)
        end = _complete(_view(out))
        assert end is not None, (k, _view(out))
        ends.add(end)
        _proves_all(out)
        capsys.readouterr()
        assert main(["ingest", str(VALID), "--out", str(out)]) == 0, capsys.readouterr().err
        _proves_all(out)
        assert {k2: v for k2, v in _tree(out).items() if k2 == "notes.txt"} == user
        assert not (out / "results.json").exists() and (out / "ingest.json").is_file()
    assert ends == {"old", "new"}  # kills before and after the commit point were both met


def test_a_kill_during_the_recovery_of_a_kill(tmp_path: Path, kill_at: dict) -> None:
    """The recovery is itself a journal: killed at any of its steps, the next one finishes."""
    base = tmp_path / "count"
    _previous(base, users_entry=True)
    kill_at["steps"] = 0
    _write_set(base, "new", NEW)
    middle = kill_at["steps"] // 2  # after the commit point: the recovery rolls forward

    def killed_mid_publish(out: Path) -> None:
        _previous(out, users_entry=True)
        kill_at.update(steps=0, at=middle)
        with pytest.raises(_Killed):
            _write_set(out, "new", NEW)
        kill_at["at"] = None

    probe = tmp_path / "probe"
    killed_mid_publish(probe)
    kill_at.update(steps=0, counting=True)
    publish.recover(outputs.real_path(probe))
    kill_at["counting"] = False
    m = kill_at["steps"]
    assert m >= 3 and _complete(_view(probe)) == "new"
    for j in range(m):
        out = tmp_path / f"r{j}"
        killed_mid_publish(out)
        kill_at.update(steps=0, at=j, counting=True)
        with pytest.raises(_Killed):
            publish.recover(outputs.real_path(out))
        kill_at.update(at=None, counting=False)
        _index_never_over_other_data(_view(out))
        outputs.recover(out)
        assert _complete(_view(out)) == "new", (j, _view(out))
        assert (out / "notes.txt").read_text() == "my notes"
        _proves_all(out)


_KILLED_PUBLISH = """
import os, signal, sys
from selfmodel.cli import main
from selfmodel.common import outputs, publish
at, seen = int(sys.argv[1]), [0]
real_step, real_publish = publish._step, publish.publish
def step(fn, *args):
    if seen[0] == at:
        os.kill(os.getpid(), signal.SIGKILL)
    seen[0] += 1
    return real_step(fn, *args)
def killing_publish(*args, **kwargs):
    publish._step = step
    try:
        return real_publish(*args, **kwargs)
    finally:
        publish._step = real_step
outputs.publish = killing_publish
sys.exit(main(sys.argv[2:]))
"""


@pytest.mark.parametrize("at", [3, 6])
def test_a_real_sigkill_mid_publish_then_a_rerun(at: int, tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """SIGKILL itself (not a stand-in) while an ingest moves its files in one by one."""
    out = tmp_path / "out"
    assert main(["ingest", str(VALID), "--out", str(out)]) == 0
    (out / "notes.txt").write_text("my notes")
    new = _records(tmp_path, "new", ("n1", "n2"))
    done = subprocess.run([sys.executable, "-c", _KILLED_PUBLISH, str(at), "ingest", str(new),
                           "--out", str(out)], capture_output=True, text=True)
    assert done.returncode == -signal.SIGKILL, done.stderr
    if (out / "ingest.json").is_file():  # an index file is only ever beside its own records
        used = json.loads((out / "ingest.json").read_text())["records_used"]
        assert pl.read_parquet(out / "records.parquet").height == used
    capsys.readouterr()
    assert main(["ingest", str(new), "--out", str(out)]) == 0
    assert sorted(pl.read_parquet(out / "records.parquet").get_column("model").unique()) == [
        "n1", "n2"]
    assert (out / "notes.txt").read_text() == "my notes"
    _proves_all(out)


def test_signals_wait_for_a_publish_to_end(tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """SIGTERM (and Ctrl-C) during a publish are delivered once it is complete."""
    out = tmp_path / "out"
    got: list[int] = []
    real = publish._step

    def handler(signum, _frame):
        got.append(signum)
        raise KeyboardInterrupt

    def step(fn, *args):
        if fn is os.rename:
            os.kill(os.getpid(), signal.SIGTERM)  # arrives mid-publish
        return real(fn, *args)

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        with pytest.raises(KeyboardInterrupt):
            with outputs.staged(out) as staging:
                (staging / "ingest.json").write_text("new\n")
                monkeypatch.setattr(publish, "_step", step)
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert got == [signal.SIGTERM]
    assert (out / "ingest.json").read_text() == "new\n"  # the publish finished first
    _proves_all(out)
    assert "was complete" in outputs.interrupted_message(out)


# --------------------------------------------------------------------------- SIGTERM

_HANG = """
import sys, time
from pathlib import Path
import pytest
import selfmodel.pipeline.stages as pipeline
from selfmodel.cli import main
sys.path.insert(0, {tests!r})
import test_outputs as t
marker = Path({marker!r})
mp = pytest.MonkeyPatch()
def hang(*args, **kwargs):
    marker.touch()
    time.sleep(600)
if {command!r} == "ingest":
    mp.setattr("selfmodel.cli.write_ingest", hang)
else:
    t._fake_pipeline(mp, fit="pooled-killed.json", render=hang)
    if {command!r} == "fit":
        mp.setattr(pipeline, "write_results", lambda state: hang())
sys.exit(main({argv!r}))
"""


@pytest.mark.parametrize("command", ["run", "fit", "ingest"])
def test_sigterm_ends_a_command_as_ctrl_c_does(command: str, tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert main(["ingest", str(VALID), "--out", str(out)]) == 0
    before = _tree(out)
    marker = tmp_path / "started"
    argv = [command, str(_records(tmp_path, "new", ("n1", "n2"))), "--out", str(out)]
    script = _HANG.format(tests=str(Path(__file__).parent), marker=str(marker),
                          command=command, argv=argv)
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    _wait_for(marker, proc)
    proc.send_signal(signal.SIGTERM)  # what timeout, CI runners and systemd send
    _, err = proc.communicate()
    assert proc.returncode == 143, err
    line = _one_line(err, f"interrupted; {out} is as it was before this command")
    assert err.strip().splitlines()[-1] == line
    after = _tree(out)
    added = sorted(set(after) - set(before))
    assert {k: after.get(k) for k in before} == before
    assert added == ([] if command == "ingest" else ["fits/pooled-killed.json"])
    assert not outputs.staging_path(out).exists()  # cleared by the command itself
