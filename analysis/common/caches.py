"""Where selfmodel keeps its caches, and the caches of the libraries it drives.

One setting chooses the folder: ``$SELFMODEL_CACHE_DIR``, else ``$XDG_CACHE_HOME/selfmodel``,
else ``~/.cache/selfmodel`` (:func:`chosen`); what it holds (the sealing key, PyTensor's,
numba's, matplotlib's and IPython's folders) is in ``docs/cli.md`` ("Caches and sealed
results"). :func:`export_environment` (run when ``selfmodel`` is imported, before PyTensor,
numba or matplotlib are) puts these in the environment, so worker processes and the
report's kernel use the same folders; PyTensor's ``pytensorrc`` here is put first on
``PYTENSORRC``, so a user's ``~/.pytensorrc`` and ``PYTENSOR_FLAGS`` still win. When the
chosen folder cannot be made or written, the command uses a private temporary folder,
removed when it ends, and says so in one line.
"""

from __future__ import annotations

import atexit
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Final

#: The setting that chooses the folder.
ENV: Final = "SELFMODEL_CACHE_DIR"
#: PyTensor config file written into the folder (first on ``PYTENSORRC``).
PYTENSORRC: Final = "pytensorrc"

#: Private temporary folders made by this process, by the folder they stand in for.
_private: dict[str, Path] = {}


def chosen() -> tuple[Path, str]:
    """The folder the settings name, and the setting that named it (no file is touched)."""
    env = os.environ.get(ENV)
    if env:
        return Path(env).expanduser(), ENV
    xdg = os.environ.get("XDG_CACHE_HOME")
    if xdg:
        return Path(xdg).expanduser() / "selfmodel", "XDG_CACHE_HOME"
    return _home() / ".cache" / "selfmodel", "HOME"


def _home() -> Path:
    """The home folder (``$HOME``); with none at all, a path under which nothing can be made."""
    try:
        return Path.home()
    except RuntimeError:  # no $HOME and no password entry for this user
        return Path(os.devnull)  # not a folder: its "subfolders" fail to be made, even for root


def _note(message: str) -> None:
    sys.stderr.write(f"selfmodel: note: {' '.join(message.split())}\n")


def _writable_folder(path: Path) -> str | None:
    """Make ``path`` (owner-only when new); ``None`` when it is a writable folder, else why not."""
    try:
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError as exc:
        return exc.strerror or type(exc).__name__
    if not os.access(path, os.W_OK | os.X_OK):
        return "not writable"
    return None


def creatable(path: Path) -> bool:
    """``path`` is a writable folder, or could be made: its nearest existing parent is one."""
    for p in (path, *path.parents):
        if p.exists():
            return p.is_dir() and os.access(p, os.W_OK | os.X_OK)
    return False


def folder() -> Path | None:
    """The cache folder to use: the chosen one, else this process's private temporary one.

    The temporary folder is made at the first call that needs it (owner-only), named in a
    note on stderr, put in ``$SELFMODEL_CACHE_DIR`` for the processes this one starts, and
    removed when this process ends. ``None`` when not even a temporary folder can be made.
    """
    path, setting = chosen()
    why = _writable_folder(path)
    if why is None:
        return path
    made = _private.get(str(path))
    if made is None:
        try:
            made = Path(tempfile.mkdtemp(prefix="selfmodel-cache-"))
        except OSError:
            _note(f"no cache folder can be made ({path}, from {setting}: {why}; nor a temporary "
                  f"one): set {ENV} to a writable folder")
            return None
        atexit.register(shutil.rmtree, made, True)
        _private[str(path)] = made
        _note(f"cache folder {path} (from {setting}) cannot be used ({why}): this command keeps "
              f"its caches in {made}, removed when it ends, so models compile again and earlier "
              f"saved fits are refitted; set {ENV} to a writable folder to keep them")
    os.environ[ENV] = str(made)  # worker processes and the report's kernel use it too
    return made


def _pytensorrc(base: Path) -> Path | None:
    """Write ``base/pytensorrc`` naming PyTensor's folders under ``base``; ``None`` if it cannot."""
    def value(p: Path) -> str:
        return str(p).replace("%", "%%")  # the file is read with ConfigParser's interpolation

    text = (
        "# written by selfmodel (selfmodel.common.caches): PyTensor's folders in selfmodel's\n"
        "# cache folder. A ~/.pytensorrc or PYTENSOR_FLAGS of yours takes precedence.\n"
        "[global]\n"
        f"base_compiledir = {value(base / 'pytensor')}\n"
        f"generated_src_dir = {value(base / 'pytensor' / 'src')}\n"
    )
    rc = base / PYTENSORRC
    try:
        if not rc.is_file() or rc.read_text() != text:
            fd, tmp = tempfile.mkstemp(prefix=f".{PYTENSORRC}.", dir=base)
            with os.fdopen(fd, "w") as fh:
                fh.write(text)
            os.replace(tmp, rc)
    except OSError:
        return None
    return rc


def export_environment() -> Path | None:
    """Point PyTensor, numba, matplotlib and IPython at the cache folder; return the folder.

    Settings the user made (``PYTENSOR_FLAGS``, ``~/.pytensorrc``, ``NUMBA_CACHE_DIR``,
    ``MPLCONFIGDIR``, ``IPYTHONDIR``) are kept: PyTensor reads the files of ``PYTENSORRC``
    with the ones on the right taking precedence, and its flags over every file, so
    selfmodel's file goes first. Takes effect for libraries imported after it (and for the
    processes started after it).
    """
    base = folder()
    if base is None:
        return None
    rc = _pytensorrc(base)
    if rc is not None:
        files = os.environ.get("PYTENSORRC") or "~/.pytensorrc"
        if files.split(os.pathsep)[0] != str(rc):
            os.environ["PYTENSORRC"] = f"{rc}{os.pathsep}{files}"
    os.environ.setdefault("NUMBA_CACHE_DIR", str(base / "numba"))
    home, env = _home(), os.environ.get
    own = chosen()[1] == ENV  # the user named the folder: everything goes there
    defaults = {
        "MPLCONFIGDIR": [Path(env("XDG_CONFIG_HOME") or home / ".config") / "matplotlib",
                         Path(env("XDG_CACHE_HOME") or home / ".cache") / "matplotlib"],
        "IPYTHONDIR": [home / ".ipython"],
    }
    for name, folders in defaults.items():
        if name not in os.environ and (own or not all(creatable(p) for p in folders)):
            os.environ[name] = str(base / name.removesuffix("DIR").lower())
    return base
