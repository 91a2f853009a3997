"""All outputs of a run belong together (issue 14): fault injection through the CLI.

A previous complete set of outputs is made by one run; a second run on other data is then
stopped in ingest, fitting or rendering (Ctrl-C as ``KeyboardInterrupt``, a real SIGINT,
``kill -9`` of the whole command, the report's kernel killed, a full disk). Each time
``--out`` must hold the previous set byte for byte (plus the fits that finished, which a
rerun reuses), the command must end with one line and no traceback, and a rerun must give
the new complete set. The sampler is replaced by a stand-in stage that writes a fit file:
what is tested is where outputs go, not the statistics.
"""

from __future__ import annotations

import errno
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import polars as pl
import pytest

import selfmodel.pipeline.stages as pipeline
import selfmodel.report.document as report
from selfmodel.cli import main
from selfmodel.common import atomic, outputs

CORPUS = Path(__file__).parents[1] / "bad_inputs"
OLD_DATA = CORPUS / "valid.jsonl"  # models m1, m2
ROW = '{{"model": "{m}", "task": "refusal", "item_id": "q{i}", "prediction": true, "outcome": true}}\n'


def _new_data(tmp: Path) -> Path:
    path = tmp / "new.jsonl"
    path.write_text("".join(ROW.format(m=m, i=i) for m in ("n1", "n2") for i in range(3)))
    return path


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def _fake_render(out, fmt="html", progress=None):
    atomic.write_text(Path(out) / f"report.{fmt}", f"<html>{_models(Path(out))}</html>")
    return Path(out) / f"report.{fmt}"


def _models(out: Path) -> list[str]:
    return sorted(pl.read_parquet(out / "records.parquet").get_column("model").unique())


def _fake_pipeline(monkeypatch: pytest.MonkeyPatch, *, fit: str = "pooled-new.json",
                   render=_fake_render, fail_fit: bool = False) -> None:
    """The real ingest and cells stages, a stand-in fit, results and (by default) report."""

    def fake_fit(state, say):
        atomic.write_text(state.config.out / "fits" / fit, json.dumps({"fit": fit}))
        if fail_fit:
            raise KeyboardInterrupt

    def fake_results(state):
        res = {"scale_effect": {"units": "logit", "decision": "inconclusive"},
               "diagnostics": {"passed": True}, "models": _models(state.config.out)}
        atomic.write_json(state.config.out / "results.json", res)
        return res

    monkeypatch.setattr(pipeline, "STAGES", (pipeline.stage_ingest, pipeline.stage_cells,
                                             fake_fit))
    monkeypatch.setattr(pipeline, "write_results", fake_results)
    monkeypatch.setattr(pipeline, "_run_info", lambda *a, **k: {"run": "fake"})
    if render is not None:
        monkeypatch.setattr(pipeline, "render_report", render)


def _stale_pdf(out: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A ``report.pdf`` selfmodel wrote (``selfmodel report --format pdf``, renderer faked)."""

    def fake(out_dir, fmt="html", progress=None, force=False, into=None):
        atomic.write_text(Path(into or out_dir) / f"report.{fmt}", "stale pdf of the old results")
        return Path(out_dir) / f"report.{fmt}"

    monkeypatch.setattr(report, "render_report", fake)
    assert main(["report", "--format", "pdf", "--out", str(out)]) == 0


@pytest.fixture
def previous(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """``--out`` holding a complete set from an earlier run, a stale PDF and a user's note."""
    out = tmp_path / "out"
    _fake_pipeline(monkeypatch, fit="pooled-old.json")
    assert main(["run", str(OLD_DATA), "--out", str(out)]) == 0
    (out / "notes.txt").write_text("my notes")
    assert json.loads((out / "results.json").read_text())["models"] == ["m1", "m2"]
    return out


def _one_line(err: str, needle: str) -> str:
    assert "Traceback" not in err and "IPKernelApp" not in err, err
    lines = [ln for ln in err.splitlines() if ln.startswith("selfmodel: ")
             and ("error" in ln or "interrupted" in ln)]
    assert len(lines) == 1, err
    assert needle in lines[0], lines[0]
    return lines[0]


def _unchanged(out: Path, before: dict[str, bytes], *, new_fits: tuple[str, ...] = ()) -> None:
    after = _snapshot(out)
    added = {k: v for k, v in after.items() if k not in before}
    assert {k: after.get(k) for k in before} == before  # every old file, byte for byte
    assert sorted(added) == sorted(f"fits/{f}" for f in new_fits)  # only finished fits added
    assert not outputs.staging_path(out).exists()


def test_rerun_replaces_the_whole_set(previous: Path, tmp_path: Path,
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    out = previous
    _stale_pdf(out, monkeypatch)
    out.chmod(0o750)
    _fake_pipeline(monkeypatch, fit="pooled-new.json")
    assert main(["run", str(_new_data(tmp_path)), "--out", str(out)]) == 0
    assert json.loads((out / "results.json").read_text())["models"] == ["n1", "n2"]
    assert _models(out) == ["n1", "n2"]
    assert (out / "report.html").read_text() == "<html>['n1', 'n2']</html>"
    assert pl.read_parquet(out / "cells.parquet").get_column("model").unique().sort().to_list() \
        == ["n1", "n2"]
    assert not (out / "report.pdf").exists()  # a report of other results is not carried over
    assert (out.stat().st_mode & 0o777) == 0o750  # the folder keeps its permissions
    assert (out / "notes.txt").read_text() == "my notes"  # the user's file is
    assert sorted(p.name for p in (out / "fits").iterdir()) == ["pooled-new.json",
                                                                "pooled-old.json"]
    assert not outputs.staging_path(out).exists()


@pytest.mark.parametrize("where", ["ingest", "fitting", "rendering"])
def test_ctrl_c_anywhere_keeps_the_previous_set(
    where: str, previous: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    out = previous
    before = _snapshot(out)
    capsys.readouterr()

    def interrupted_render(out_dir, fmt="html", progress=None):
        (Path(out_dir) / "report.html").write_text("<html>half")  # a partial report
        raise KeyboardInterrupt

    _fake_pipeline(monkeypatch, fit="pooled-new.json", fail_fit=where == "fitting",
                   render=interrupted_render if where == "rendering" else _fake_render)
    if where == "ingest":
        def interrupted_write(result, folder):
            atomic.write_parquet(Path(folder) / "records.parquet", result.records)
            raise KeyboardInterrupt

        monkeypatch.setattr(pipeline, "write_ingest", interrupted_write)
    assert main(["run", str(_new_data(tmp_path)), "--out", str(out)]) == 130
    _one_line(capsys.readouterr().err, f"{out} is as it was")
    _unchanged(out, before, new_fits=() if where == "ingest" else ("pooled-new.json",))


_DRIVER = """
import signal, sys, time
from pathlib import Path
signal.signal(signal.SIGINT, signal.default_int_handler)  # as in a terminal
import pytest
import selfmodel.pipeline.stages as pipeline
import selfmodel.report.document as report
from selfmodel.cli import main
sys.path.insert(0, {tests!r})
import test_outputs as t

mp = pytest.MonkeyPatch()
mode = {mode!r}
marker = Path({marker!r})
def hang(out, fmt="html", progress=None):
    (Path(out) / "report.html").write_text("<html>half")
    marker.touch()
    time.sleep(600)
t._fake_pipeline(mp, fit="pooled-killed.json", render=hang if mode == "kill" else None)
if mode == "sigint":
    qmd = marker.parent / "slow.qmd"
    qmd.write_text("---\\ntitle: t\\n---\\n\\n```{{python}}\\nimport pathlib, time\\n"
                   f"pathlib.Path({{str(marker)!r}}).touch()\\ntime.sleep(600)\\n```\\n")
    mp.setattr(report, "REPORT_QMD", qmd)
sys.exit(main(["run", {data!r}, "--out", {out!r}]))
"""


def _start(tmp: Path, out: Path, mode: str) -> tuple[subprocess.Popen, Path]:
    marker = tmp / f"{mode}.started"
    script = _DRIVER.format(tests=str(Path(__file__).parent), mode=mode, marker=str(marker),
                            data=str(_new_data(tmp)), out=str(out))
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True,
                            env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[2])})
    while not marker.exists():  # no time limit: a loaded machine is only slower
        if proc.poll() is not None:
            pytest.fail(f"the run ended before rendering: {proc.communicate()}")
        time.sleep(0.2)
    return proc, marker


def test_kill_9_while_rendering_then_rerun(previous: Path, tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    out = previous
    before = _snapshot(out)
    proc, _ = _start(tmp_path, out, "kill")
    proc.send_signal(signal.SIGKILL)
    proc.communicate()
    assert proc.returncode == -signal.SIGKILL
    assert _snapshot(out) == before  # the killed run's files are all in its staging folder
    assert outputs.staging_path(out).is_dir()
    # the rerun cleans up, keeps the fit the killed run finished, and completes the new set
    capsys.readouterr()
    _fake_pipeline(monkeypatch, fit="pooled-new.json")
    assert main(["run", str(_new_data(tmp_path)), "--out", str(out)]) == 0
    assert "removed the unfinished outputs of an interrupted run" in capsys.readouterr().err
    assert not outputs.staging_path(out).exists()
    assert sorted(p.name for p in (out / "fits").iterdir()) == [
        "pooled-killed.json", "pooled-new.json", "pooled-old.json"]
    assert (out / "report.html").read_text() == "<html>['n1', 'n2']</html>"


def test_a_second_command_into_a_busy_out_stops_with_one_line(
        previous: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """Two commands into one ``--out``: the second stops before any work, the first is untouched.

    Without the lock the second would take the first one's live staging folder for an
    interrupted run's and remove it (or, for ``report``, render into a folder that the first
    is about to swap away).
    """
    out = previous
    before = _snapshot(out)
    proc, _ = _start(tmp_path, out, "kill")  # a run paused while rendering
    try:
        staging_before = _snapshot(outputs.staging_path(out))
        capsys.readouterr()
        for argv in (["run", str(_new_data(tmp_path))], ["ingest", str(OLD_DATA)], ["report"]):
            assert main([*argv, "--out", str(out)]) == 2
            _one_line(capsys.readouterr().err, f"another selfmodel command (pid {proc.pid})")
        assert _snapshot(outputs.staging_path(out)) == staging_before  # its work is intact
        assert _snapshot(out) == before
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.communicate()
    # the holder is gone (killed, not released): its lock went with it
    _fake_pipeline(monkeypatch, fit="pooled-new.json")
    assert main(["run", str(_new_data(tmp_path)), "--out", str(out)]) == 0
    assert (out / "report.html").read_text() == "<html>['n1', 'n2']</html>"
    assert outputs.lock_path(out).read_text() == ""  # released: no pid left behind


def test_lock_is_exclusive_within_one_process_too(tmp_path: Path) -> None:
    out = tmp_path / "out"
    with outputs.locked(out):
        assert outputs.lock_path(out).read_text() == ""  # never written (issue 50)
        with pytest.raises(outputs.InputError, match="is writing into it") as info:
            with outputs.locked(out):
                pass
        if Path("/proc/locks").is_file():  # the holder, named from the kernel's table
            assert f"(pid {os.getpid()})" in str(info.value)
    with outputs.locked(out):  # released on exit
        pass


@pytest.mark.e2e  # a real report kernel, in a subprocess
def test_real_ctrl_c_while_the_kernel_runs_is_one_line(previous: Path, tmp_path: Path) -> None:
    """SIGINT during a real render: no kernel traceback, one line, the old set intact."""
    out = previous
    before = _snapshot(out)
    proc, _ = _start(tmp_path, out, "sigint")
    os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C does: the whole foreground group
    _, err = proc.communicate()
    assert proc.returncode == 130, err
    line = _one_line(err, f"{out} is as it was")
    assert err.strip().splitlines()[-1] == line
    _unchanged(out, before, new_fits=("pooled-killed.json",))


@pytest.mark.e2e  # a real report kernel
def test_renderer_killed(previous: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                         capsys: pytest.CaptureFixture[str]) -> None:
    """The report's kernel dies (killed): exit 2, one line naming it, the old set intact."""
    out = previous
    before = _snapshot(out)
    capsys.readouterr()
    qmd = tmp_path / "dies.qmd"
    qmd.write_text("---\ntitle: t\n---\n\n```{python}\nimport os, signal\n"
                   "os.kill(os.getpid(), signal.SIGKILL)\n```\n")
    _fake_pipeline(monkeypatch, fit="pooled-new.json", render=report.render_report)
    monkeypatch.setattr(report, "REPORT_QMD", qmd)
    assert main(["run", str(_new_data(tmp_path)), "--out", str(out)]) == 2
    _one_line(capsys.readouterr().err, "kernel died")
    _unchanged(out, before, new_fits=("pooled-new.json",))


@pytest.mark.parametrize("how", ["OSError", "polars", "h5py"])
def test_full_disk_while_writing_results(
    how: str, previous: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A write that fails as on a full disk: an OSError, or a library's wrapped errno 28."""
    out = previous
    before = _snapshot(out)
    capsys.readouterr()
    _fake_pipeline(monkeypatch)

    def full(self, file, *a, **k):
        if how == "OSError":
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(file))
        if how == "h5py":  # what h5py raises: an OSError without an errno
            raise OSError("Can't write data (file write failed: time = Tue, filename = "
                          "'x.nc', errno = 28, error message = 'No space left on device')")
        raise pl.exceptions.ComputeError("parquet: underlying IO error: No space left on "
                                         "device (os error 28)")

    monkeypatch.setattr(pl.DataFrame, "write_parquet", full)
    assert main(["run", str(_new_data(tmp_path)), "--out", str(out)]) == 2
    _one_line(capsys.readouterr().err, "No space left on device. Free disk space")
    _unchanged(out, before)


def _mount_tmpfs(where: Path, size: str) -> bool:
    where.mkdir()
    if os.geteuid() != 0 or shutil.which("mount") is None:
        return False
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)],
                          capture_output=True)
    return done.returncode == 0


def test_full_disk_on_a_small_tmpfs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A real full disk: a 128 KiB tmpfs holds the old ingest but not the new one."""
    disk = tmp_path / "disk"
    if not _mount_tmpfs(disk, "128k"):
        pytest.skip("cannot mount a tmpfs here (needs root and mount)")
    try:
        out = disk / "out"
        assert main(["ingest", str(OLD_DATA), "--out", str(out)]) == 0
        before = _snapshot(out)
        big = tmp_path / "big.csv"
        rng = random.Random(1)  # item ids that do not compress
        big.write_text("model,task,item_id,prediction,outcome\n" + "".join(
            f"m{i % 3},t,{rng.getrandbits(64):016x},yes,no\n" for i in range(20000)))
        capsys.readouterr()
        assert main(["ingest", str(big), "--out", str(out)]) == 2
        _one_line(capsys.readouterr().err, "No space left on device")
        _unchanged(out, before)
    finally:
        subprocess.run(["umount", str(disk)], check=False)


def test_immutable_out(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``chattr +i``: even root cannot write there; one line before any work."""
    out = tmp_path / "frozen"
    out.mkdir()
    if shutil.which("chattr") is None or subprocess.run(
            ["chattr", "+i", str(out)], capture_output=True).returncode != 0:
        pytest.skip("chattr +i is not available here")
    try:
        assert main(["run", str(OLD_DATA), "--out", str(out)]) == 2
        _one_line(capsys.readouterr().err, "cannot write into it (Operation not permitted)")
    finally:
        subprocess.run(["chattr", "-i", str(out)], check=False)
    assert list(out.iterdir()) == []
    assert not outputs.staging_path(out).exists()


def test_kernel_output_never_reaches_the_terminal() -> None:
    """The kernel's own stderr goes to a file; its last line names why it died."""
    import tempfile

    from selfmodel.report.render_kernel import kernel_said

    with tempfile.TemporaryFile() as log:
        log.write(textwrap.dedent("""\
            Traceback (most recent call last):
              File "x", line 1
            MemoryError: out of memory
            """).encode())
        assert kernel_said(log) == "MemoryError: out of memory"
    with tempfile.TemporaryFile() as log:
        assert kernel_said(log) == ""


@pytest.mark.parametrize("where", ["cwd inside out", "out is a link", "out is a mount point"])
def test_rerun_where_out_cannot_be_swapped(
    where: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The files are moved in one by one (report last): the new set is complete all the same."""
    real = tmp_path / "real"
    out = real
    if where == "out is a mount point" and not _mount_tmpfs(real, "8m"):
        pytest.skip("cannot mount a tmpfs here (needs root and mount)")
    try:
        if where == "out is a link":
            real.mkdir()
            out = tmp_path / "link"
            out.symlink_to(real, target_is_directory=True)
        _fake_pipeline(monkeypatch, fit="pooled-old.json")
        assert main(["run", str(OLD_DATA), "--out", str(out)]) == 0
        (out / "notes.txt").write_text("my notes")
        _stale_pdf(out, monkeypatch)
        if where == "cwd inside out":
            monkeypatch.chdir(out)
        _fake_pipeline(monkeypatch, fit="pooled-new.json")
        assert main(["run", str(_new_data(tmp_path)), "--out", str(out)]) == 0
        assert out.is_symlink() == (where == "out is a link")  # still the user's link
        assert json.loads((real / "results.json").read_text())["models"] == ["n1", "n2"]
        assert (real / "report.html").read_text() == "<html>['n1', 'n2']</html>"
        assert not (real / "report.pdf").exists()
        assert (real / "notes.txt").read_text() == "my notes"
        assert sorted(p.name for p in (real / "fits").iterdir()) == ["pooled-new.json",
                                                                     "pooled-old.json"]
        assert not outputs.staging_path(out).exists()
    finally:
        if where == "out is a mount point":
            monkeypatch.chdir(tmp_path)
            subprocess.run(["umount", str(real)], check=False)


# --------------------------------------------------------------------------- a user's folder
# Issue 30: outputs never delete, move or overwrite anything selfmodel did not write. A
# folder of the user's (a repository, with subfolders, a link, a FIFO and an entry that
# cannot be moved) is refused before anything is written; one selfmodel made keeps the
# entries the user added to it. Run as a user who is not root (root ignores permissions).

_NOBODY = 65534


def _as_nobody() -> list[str]:
    """The prefix that runs a command as ``nobody`` when this is root, else nothing.

    ``nobody`` keeps one capability, reading any file (``CAP_DAC_READ_SEARCH``): the
    interpreter may sit under root's private home (pyenv). Writing, which is what is
    tested, obeys the permissions as for any user who is not root.
    """
    if os.geteuid() != 0:
        return []
    if shutil.which("setpriv") is None:
        pytest.skip("root, and no setpriv to run the command as a user who is not root")
    return ["setpriv", f"--reuid={_NOBODY}", f"--regid={_NOBODY}", "--clear-groups",
            "--inh-caps=+dac_read_search", "--ambient-caps=+dac_read_search"]


def _users_folder(user: Path, *, results: bool = True) -> Path:
    """A folder of the user's: .git/, a subfolder, a link, a FIFO, a read-only folder."""
    (user / ".git" / "objects").mkdir(parents=True)
    (user / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (user / "sub").mkdir()
    (user / "sub" / "data.txt").write_text("keep me")
    (user / "notes.txt").write_text("my notes")
    if results:
        (user / "results.json").write_text('{"mine": true}')  # a name selfmodel also writes
    (user / "link").symlink_to("sub/data.txt")
    os.mkfifo(user / "pipe")
    (user / "frozen").mkdir()
    (user / "frozen" / "inside.txt").write_text("cannot be moved")
    return user


def _tree(folder: Path) -> dict[str, tuple]:
    """Every entry under ``folder`` (links not followed): type, mode, owner, content."""
    out: dict[str, tuple] = {".": (oct(folder.lstat().st_mode), folder.lstat().st_uid)}
    for p in sorted(folder.rglob("*")):
        st = p.lstat()
        body = (os.readlink(p) if p.is_symlink() else p.read_bytes() if p.is_file()
                and not p.is_fifo() else None)
        out[p.relative_to(folder).as_posix()] = (oct(st.st_mode), st.st_uid, body)
    return out


def _chown_tree(folder: Path) -> None:
    if os.geteuid() == 0:
        for p in [folder, *folder.rglob("*")]:
            os.chown(p, _NOBODY, _NOBODY, follow_symlinks=False)


def _selfmodel(args: list[str], cwd: Path, home: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "HOME": str(home), "TMPDIR": str(home)}
    return subprocess.run([*_as_nobody(), sys.executable, "-m", "selfmodel.cli", *args],
                          cwd=cwd, env=env, capture_output=True, text=True)


@pytest.fixture
def nobody_base():
    """A folder ``nobody`` owns, readable by all (``tmp_path`` is private to root)."""
    import tempfile

    base = Path(tempfile.mkdtemp(prefix="selfmodel-nobody-"))
    base.chmod(0o755)
    (base / "home").mkdir()
    (base / "cwd").mkdir()  # the working folder: nobody cannot write there
    shutil.copy(OLD_DATA, base / "in.jsonl")
    _chown_tree(base)
    os.chown(base / "cwd", 0, 0) if os.geteuid() == 0 else (base / "cwd").chmod(0o555)
    yield base
    subprocess.run(["chmod", "-R", "u+rwx", str(base)], check=False)
    shutil.rmtree(base, ignore_errors=True)


@pytest.mark.parametrize("command", ["ingest", "simulate"])
def test_a_users_folder_is_refused_and_left_untouched(command: str, nobody_base: Path) -> None:
    base = nobody_base
    user = _users_folder(base / "mine")
    _chown_tree(user)
    (user / "frozen").chmod(0o555)
    before, parent_before = _tree(user), sorted(p.name for p in base.iterdir())
    inputs = [] if command == "simulate" else [str(base / "in.jsonl")]
    done = _selfmodel([command, *inputs, "--out", str(user)], base / "cwd", base / "home")
    assert done.returncode == 2, done.stderr
    _one_line(done.stderr, "selfmodel did not write")
    assert "'.git'" in done.stderr and "Choose a new folder for --out" in done.stderr
    assert _tree(user) == before  # nothing deleted, moved, overwritten or added
    assert sorted(p.name for p in base.iterdir()) == parent_before  # no lock, no staging


def test_entries_added_to_an_out_selfmodel_made_are_never_touched(nobody_base: Path) -> None:
    """A rerun into a folder selfmodel made moves its outputs in by name, around the user's."""
    base = nobody_base
    out = base / "out"
    first = _selfmodel(["ingest", str(base / "in.jsonl"), "--out", str(out)], base / "cwd",
                       base / "home")
    assert first.returncode == 0, first.stderr
    assert (out / outputs.MARKER).is_file()
    _users_folder(out, results=False)  # the same entries, now inside selfmodel's folder
    _chown_tree(out)
    (out / "frozen").chmod(0o555)
    user_entries = {k: v for k, v in _tree(out).items()
                    if k.split("/")[0] in {".git", "sub", "notes.txt", "link", "pipe", "frozen"}}
    new = base / "new.jsonl"
    new.write_text("".join(ROW.format(m=m, i=i) for m in ("n1", "n2") for i in range(3)))
    _chown_tree(new)
    for _ in range(2):  # twice: the second run finds no leftovers either
        done = _selfmodel(["ingest", str(new), "--out", str(out)], base / "cwd", base / "home")
        assert done.returncode == 0, done.stderr
        assert {k: v for k, v in _tree(out).items() if k in user_entries} == user_entries
        assert _models(out) == ["n1", "n2"]
        assert not outputs.staging_path(out).exists()


def test_empty_out_is_an_error_not_the_working_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(tmp_path)
    for out in ("", "  "):
        with pytest.raises(SystemExit) as info:
            main(["ingest", str(OLD_DATA), "--out", out])
        assert info.value.code == 2
        _one_line(capsys.readouterr().err, "--out is empty")
    assert list(tmp_path.iterdir()) == []


def test_the_working_folder_of_the_user_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    (tmp_path / "notes.txt").write_text("mine")
    monkeypatch.chdir(tmp_path)
    assert main(["ingest", str(OLD_DATA), "--out", "."]) == 2
    _one_line(capsys.readouterr().err, "selfmodel did not write ('notes.txt')")
    assert [p.name for p in tmp_path.iterdir()] == ["notes.txt"]


def test_a_staging_name_of_the_users_is_not_removed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    """``<parent>/.<out>.staging`` that selfmodel did not make is the user's: refused, kept."""
    out = tmp_path / "out"
    staging = outputs.staging_path(out)
    staging.mkdir()
    (staging / "records.parquet").write_text("the user's, despite the name")
    assert main(["ingest", str(OLD_DATA), "--out", str(out)]) == 2
    _one_line(capsys.readouterr().err, "selfmodel did not make it")
    assert (staging / "records.parquet").read_text() == "the user's, despite the name"
    assert not out.exists()


@pytest.mark.parametrize("nested", ["out", "deeper/out"])
def test_an_out_inside_the_input_folder_is_never_read_back(
    nested: str, tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    data = tmp_path / "data"
    data.mkdir()
    shutil.copy(OLD_DATA, data / "runs.jsonl")
    out = data / nested
    counts = []
    for _ in range(3):
        assert main(["ingest", str(data), "--out", str(out)]) == 0, capsys.readouterr().err
        s = json.loads((out / "ingest.json").read_text())
        counts.append((s["records_read"], s["records_used"], s["records_duplicate"]))
        assert len(counts) == 1 or {"path": f"{data.as_posix()}/{nested}",
                "reason": "outputs of selfmodel (an earlier --out): outputs are never inputs"} \
            in s["files_not_read"]
    assert counts == [(3, 3, 0)] * 3
    assert main(["ingest", str(out), "--out", str(tmp_path / "o2")]) == 2
    _one_line(capsys.readouterr().err, "holds outputs of selfmodel")
    # named as a file, an output is read (the documented way to reuse one)
    assert main(["ingest", str(out / "records.parquet"), "--out", str(tmp_path / "o3")]) == 0
