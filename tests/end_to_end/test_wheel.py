"""The built wheel works from any directory (issue 13).

Builds the wheel of this checkout (offline, with the venv's setuptools), installs it with
``--no-deps`` into a fresh venv that reuses this venv's locked packages (a ``.pth`` line: no
registry access, seconds instead of minutes), and from an empty directory runs
``selfmodel run`` on the default data with quick sampler settings. The installed package must
be the only top-level name: the folder names ``analysis``, ``models``, ``reports`` are not
importable there.

:func:`import_and_run` is the helper for importer fixtures (a folder of logs and a mapping):
``selfmodel import`` then ``selfmodel run``, from an empty directory, in the installed venv.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

try:  # this folder is on sys.path (pytest's default prepend import mode)
    from test_import_end_to_end import check_real_logs_run
    from test_import_end_to_end import import_and_run as import_real_logs_and_run
except ImportError:  # tests/ became a package
    from tests.end_to_end.test_import_end_to_end import check_real_logs_run
    from tests.end_to_end.test_import_end_to_end import import_and_run as import_real_logs_and_run

ROOT = Path(__file__).resolve().parents[2]
#: What the wheel is built from (copied, so that the build leaves nothing in the checkout).
SOURCES = ("analysis", "models", "reports", "pyproject.toml", "README.md")
QUICK = ("--draws", "200", "--tune", "200", "--chains", "2", "--no-power", "--no-robustness")

pytestmark = [pytest.mark.slow, pytest.mark.ci, pytest.mark.e2e]


def _clean_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    env["PYTHONNOUSERSITE"] = "1"
    return env


def build_wheel(tmp: Path) -> Path:
    """``pip wheel --no-deps --no-build-isolation`` of a copy of the sources; the wheel's path."""
    src = tmp / "src"
    src.mkdir()
    for name in SOURCES:
        path = ROOT / name
        if path.is_dir():
            shutil.copytree(path, src / name, symlinks=True,
                            ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copy(path, src / name)
    dist = tmp / "dist"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
                    "--quiet", "-w", str(dist), str(src)], check=True, env=_clean_env())
    (wheel,) = dist.glob("selfmodel-*.whl")
    return wheel


def fresh_venv(tmp: Path, wheel: Path) -> Path:
    """A new venv with the wheel installed and this venv's packages on its path; its bin/."""
    venv = tmp / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                          check=True, capture_output=True, text=True).stdout.strip()
    # the locked dependencies (and pip) from this venv; its .pth files (the editable install
    # of the checkout) are not read from a directory named in a .pth line
    Path(site, "locked-dependencies.pth").write_text(sysconfig.get_path("purelib") + "\n")
    subprocess.run([str(python), "-m", "pip", "install", "--no-deps", "--quiet",
                    "--disable-pip-version-check", str(wheel)], check=True, env=_clean_env())
    return venv / "bin"


@pytest.fixture(scope="module")
def wheel_bin(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """bin/ of a fresh venv with the built wheel installed."""
    tmp = tmp_path_factory.mktemp("wheel")
    return fresh_venv(tmp, build_wheel(tmp))


def selfmodel(bin_dir: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Run the installed ``selfmodel`` in ``cwd``; fails the test with its stderr otherwise."""
    proc = subprocess.run([str(bin_dir / "selfmodel"), *args], cwd=cwd, capture_output=True,
                          text=True, env=_clean_env())
    assert proc.returncode == 0, f"selfmodel {' '.join(args)}\n{proc.stderr[-4000:]}"
    return proc


def import_and_run(bin_dir: Path, workdir: Path, src: Path, mapping: Path | None = None,
                   fmt: str = "mapped", run_args: tuple[str, ...] = QUICK,
                   out: str = "out") -> Path:
    """From the empty ``workdir``: import ``src`` with ``mapping`` (if given), then run.

    ``mapping=None`` runs on ``src`` directly (canonical records); ``fmt`` is the import
    subcommand (``mapped`` reads the format from the mapping). Returns ``workdir/out`` after
    checking that ``results.json`` and ``report.html`` are there.
    """
    workdir.mkdir(parents=True, exist_ok=True)
    assert not any(workdir.iterdir()), f"{workdir} is not empty"
    records = src
    if mapping is not None:
        selfmodel(bin_dir, workdir, "import", fmt, str(src), "--mapping", str(mapping),
                  "--out", "imported")
        records = workdir / "imported"
    selfmodel(bin_dir, workdir, "run", str(records), "--out", out, *run_args)
    folder = workdir / out
    assert (folder / "results.json").is_file() and (folder / "report.html").is_file()
    return folder


def test_the_wheel_installs_only_selfmodel(wheel_bin: Path, tmp_path: Path) -> None:
    python = str(wheel_bin / "python")
    code = ("import selfmodel, selfmodel.models.scale, selfmodel.records.ingest; "
            "from selfmodel.common.paths import DEFAULT_HYPOTHESES_FILE, REPORT_QMD, REPORTS_DIR; "
            "print(selfmodel.__file__); "
            "print(DEFAULT_HYPOTHESES_FILE.is_file(), REPORT_QMD.is_file(), "
            "(REPORTS_DIR / 'page.typst').is_file())")
    out = subprocess.run([python, "-c", code], cwd=tmp_path, capture_output=True, text=True,
                         env=_clean_env(), check=True).stdout.split("\n")
    assert str(wheel_bin.parent) in out[0] and str(ROOT) not in out[0]
    assert out[1] == "True True True"
    for name in ("analysis", "models", "reports"):
        proc = subprocess.run([python, "-c", f"import {name}"], cwd=tmp_path,
                              capture_output=True, text=True, env=_clean_env())
        assert proc.returncode != 0 and "ModuleNotFoundError" in proc.stderr, name


def test_selfmodel_runs_from_an_empty_directory(wheel_bin: Path, tmp_path: Path) -> None:
    out = import_and_run(wheel_bin, tmp_path / "empty", ROOT / "data_raw", out="build")
    res = json.loads((out / "results.json").read_text())
    # the shipped default hypotheses, named without the machine's site-packages path
    assert res["hypotheses"]["file"] == "selfmodel/data/hypotheses.toml"
    assert res["hypotheses"]["rows"]
    assert res["fit"]["sampler"]["draws"] == 200 and res["fit"]["sampler"]["chains"] == 2
    assert (out / res["fit"]["file"]).is_file()
    # the API example of docs/api.md, in the installed package, on that folder: its run
    # block has the same settings and --out, so it reuses the saved fits
    (tmp_path / "empty" / "data_raw").symlink_to(ROOT / "data_raw", target_is_directory=True)
    script = ("import re, sys; text = open(sys.argv[1]).read(); "
              "[exec(compile(b, sys.argv[1], 'exec'), {}) for b in "
              "re.findall(r'^```python\\n(.*?)^```', text, re.S | re.M)]")
    proc = subprocess.run([str(wheel_bin / "python"), "-c", script, str(ROOT / "docs" / "api.md")],
                          cwd=tmp_path / "empty", capture_output=True, text=True, env=_clean_env())
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert res["scale_effect"]["decision"] in proc.stdout
    assert "reused saved fit" in proc.stderr


def test_real_logs_from_an_empty_directory(wheel_bin: Path, tmp_path: Path) -> None:
    """Issue 13's done-when: the installed wheel imports real Inspect ``.eval`` logs and a
    real lm-eval output (mappings of at most ten lines), then runs, from an empty directory."""
    work = tmp_path / "work"
    work.mkdir()
    check_real_logs_run(import_real_logs_and_run([str(wheel_bin / "selfmodel")], work))
