"""Every cache selfmodel causes follows one setting (issue 50; analysis/common/caches.py).

``SELFMODEL_CACHE_DIR``, else ``$XDG_CACHE_HOME/selfmodel``, else ``~/.cache/selfmodel`` holds
selfmodel's key, PyTensor's compile folder (with its numba cache and generated sources) and
numba's cache; with none writable, a private temporary folder and a one-line note. The
settings are checked in fresh interpreters (they take effect when ``selfmodel`` is imported,
before PyTensor or numba); where files land, by compiling in one (``ci``); an unwritable home
folder, by the command line end to end (``e2e``).

An unwritable home is made by pointing ``HOME`` below a plain file: nothing can be created
there by any user, root included, so the tests do not depend on who runs them (the same
commands as uid 65534 with ``HOME=/nonexistent`` are in the commit that added this file).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from selfmodel.common import caches
from selfmodel.fitting import compile_cache

ROOT = Path(__file__).resolve().parents[2]

#: The settings a user may have made, removed so that each test states its own.
SETTINGS = ("SELFMODEL_CACHE_DIR", "XDG_CACHE_HOME", "PYTENSOR_FLAGS", "PYTENSORRC",
            "NUMBA_CACHE_DIR", "MPLCONFIGDIR", "IPYTHONDIR")

REPORT_CONFIG = """
import json, os, sys
import selfmodel
import matplotlib, numba, pytensor
print(json.dumps({
    "compiledir": str(pytensor.config.compiledir),
    "generated_src_dir": str(pytensor.config.generated_src_dir),
    "pytensor_numba": str(__import__("pytensor.link.numba.cache").link.numba.cache.NUMBA_CACHE_PATH),
    "numba": str(numba.config.CACHE_DIR),
    "matplotlib": matplotlib.get_cachedir(),
    "ipython": os.environ.get("IPYTHONDIR", ""),
}))
"""


def _env(tmp_path: Path, **settings: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in SETTINGS}
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    tmp = tmp_path / "tmp"
    tmp.mkdir(exist_ok=True)
    return {**env, "HOME": str(home), "TMPDIR": str(tmp), **settings}


def _python(code: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=env, cwd=cwd, check=False)


def _inside(path: str, folder: Path) -> bool:
    return Path(path).resolve().is_relative_to(folder.resolve())


def test_the_setting_moves_pytensor_numba_matplotlib_and_ipython(tmp_path: Path) -> None:
    cache = tmp_path / "chosen"
    done = _python(REPORT_CONFIG, _env(tmp_path, SELFMODEL_CACHE_DIR=str(cache)), tmp_path)
    assert done.returncode == 0, done.stderr
    where = json.loads(done.stdout)
    assert all(_inside(p, cache) for p in where.values()), where
    assert _inside(where["compiledir"], cache / "pytensor")
    assert _inside(where["pytensor_numba"], cache / "pytensor")
    assert done.stderr == ""  # a usable folder: nothing to say


def test_without_the_setting_the_xdg_cache_is_used(tmp_path: Path) -> None:
    xdg = tmp_path / "xdg"
    done = _python(REPORT_CONFIG, _env(tmp_path, XDG_CACHE_HOME=str(xdg)), tmp_path)
    assert done.returncode == 0, done.stderr
    where = json.loads(done.stdout)
    for name in ("compiledir", "generated_src_dir", "pytensor_numba", "numba"):
        assert _inside(where[name], xdg / "selfmodel"), where
    assert _inside(where["matplotlib"], xdg / "matplotlib")  # matplotlib's own XDG folder


def test_a_users_own_settings_are_kept(tmp_path: Path) -> None:
    """PYTENSOR_FLAGS, a ~/.pytensorrc, NUMBA_CACHE_DIR and MPLCONFIGDIR of the user win."""
    mine = tmp_path / "mine"
    env = _env(tmp_path, SELFMODEL_CACHE_DIR=str(tmp_path / "chosen"),
               PYTENSOR_FLAGS=f"base_compiledir={mine / 'pt'}", NUMBA_CACHE_DIR=str(mine / "nb"),
               MPLCONFIGDIR=str(mine / "mpl"))
    (tmp_path / "home" / ".pytensorrc").write_text(f"[global]\ngenerated_src_dir = {mine / 'src'}\n")
    done = _python(REPORT_CONFIG, env, tmp_path)
    assert done.returncode == 0, done.stderr
    where = json.loads(done.stdout)
    assert _inside(where["compiledir"], mine / "pt") and _inside(where["pytensor_numba"], mine / "pt")
    assert where["generated_src_dir"] == str(mine / "src")
    assert where["numba"] == str(mine / "nb") and where["matplotlib"] == str(mine / "mpl")


def test_an_unusable_folder_gives_a_private_temporary_one_and_one_note(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv("SELFMODEL_CACHE_DIR", str(blocker / "cache"))
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
    monkeypatch.setattr(caches, "_private", {})
    first = compile_cache.default_cache_dir()
    assert first.is_dir() and first.parent == tmp_path and first.name.startswith("selfmodel-cache-")
    assert first.stat().st_mode & 0o077 == 0  # private
    assert os.environ["SELFMODEL_CACHE_DIR"] == str(first)  # what worker processes inherit
    assert compile_cache.default_cache_dir() == first
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and str(blocker / "cache") in err[0] and str(first) in err[0]
    assert "set SELFMODEL_CACHE_DIR to a writable folder" in err[0]


@pytest.mark.ci
def test_compiled_code_lands_in_the_chosen_folder(tmp_path: Path) -> None:
    """A PyTensor function compiled with numba and a numba function with ``cache=True``.

    Their files appear under the chosen folder, none in the home or temporary folder
    (PyTensor otherwise writes ``~/.pytensor`` and one temporary file per function).
    """
    cache = tmp_path / "chosen"
    work = tmp_path / "work"
    work.mkdir()
    (work / "jitted.py").write_text(
        "import numba\n\n@numba.njit(cache=True)\ndef plus_one(x):\n    return x + 1\n")
    code = ("import selfmodel, pytensor, pytensor.tensor as pt, jitted\n"
            "x = pt.dvector('x')\n"
            "f = pytensor.function([x], pt.exp(x).sum(), mode='NUMBA')\n"
            "print(f([0.0, 1.0]), jitted.plus_one(1))\n")
    env = _env(tmp_path, SELFMODEL_CACHE_DIR=str(cache), PYTHONPATH=str(work))
    done = _python(code, env, work)
    assert done.returncode == 0, done.stderr
    made = [p.relative_to(cache).as_posix() for p in cache.rglob("*") if p.is_file()]
    assert any(p.startswith("pytensor/numba/") for p in made), made
    assert any(p.startswith("pytensor/src/") for p in made), made
    assert any(p.startswith("numba/") and "plus_one" in p for p in made), made
    assert not list((tmp_path / "home").iterdir()) and not list((tmp_path / "tmp").iterdir())
    assert not (work / "__pycache__").exists()


@pytest.mark.e2e
def test_an_unwritable_home_still_runs_end_to_end(tmp_path: Path) -> None:
    """Issue 50: ``run`` died in its worker processes ("Unable to create the compiledir").

    ``ingest``, ``run`` (fits in two worker processes) and ``report`` (a kernel) each keep
    their caches in a private temporary folder, say so in one line, and leave nothing behind.
    """
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    env = _env(tmp_path, HOME=str(blocker / "home"))
    tmp = Path(env["TMPDIR"])
    out = tmp_path / "out"
    commands = [
        ["ingest", str(ROOT / "data_raw"), "--out", str(tmp_path / "checked")],
        ["run", str(ROOT / "data_raw"), "--out", str(out), "--draws", "200", "--tune", "200",
         "--chains", "2", "--no-power", "--no-robustness", "--jobs", "2", "--no-report",
         "--models", "scale"],  # with the training model, two fits in two worker processes
        ["report", "--out", str(out)],
    ]
    for argv in commands:
        done = subprocess.run([sys.executable, "-m", "selfmodel.cli", *argv], capture_output=True,
                              text=True, env=env, cwd=tmp_path, check=False)
        assert done.returncode == 0, done.stderr[-3000:]
        assert "Traceback" not in done.stderr, done.stderr[-3000:]
        notes = [line for line in done.stderr.splitlines() if "cannot be used" in line]
        assert len(notes) == 1 and str(blocker / "home") in notes[0], done.stderr[-3000:]
        assert not list(tmp.iterdir()), list(tmp.iterdir())  # the private folder is removed
    assert (out / "report.html").is_file()
    assert json.loads((out / "results.json").read_text())["fit"]["file"]
