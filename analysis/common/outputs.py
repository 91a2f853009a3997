"""All outputs of a run belong together: built in a staging folder, then swapped in whole.

``selfmodel run``, ``fit`` and ``ingest`` write nothing into ``--out`` while they work.
:func:`staged` gives them a staging folder beside it (``<parent>/.<name>.staging``) that
starts with the saved fits and checks of ``--out/fits`` (hard links, so nothing is copied
and the old folder is never touched). When the command finishes, the staging folder and
``--out`` trade places in one atomic ``renameat2(RENAME_EXCHANGE)``, and the old outputs are
removed. So, whatever stops a run (Ctrl-C, ``kill -9``, a full disk, an error in any stage
or in the renderer), ``--out`` holds either the previous complete set of outputs or the new
complete set, never a mixture:

* A run stopped by an error or Ctrl-C leaves ``--out`` as it was, apart from ``fits/``:
  the fits and checks it finished are added there (each file is content-hashed and named
  by its key, so adding one never changes what an old result reads), and a rerun reuses
  them.
* A run killed outright leaves its staging folder behind; the next run removes it after
  moving its finished fits into ``--out/fits``.
* ``--out`` must be a new folder, an empty one, or one that ``selfmodel`` made (it holds
  the marker file ``.selfmodel-out``, or only files ``selfmodel`` writes). Any other folder
  is refused with one line before anything is written, so a user's folder (a repository,
  a home folder, the working folder) is never changed.
* Entries of ``--out`` that no command writes (notes added to it later, other tools' files)
  are never moved, renamed, overwritten or removed: the new outputs are then moved in one
  by one (below) instead of swapping the folder. Outputs of earlier commands that this one
  does not write (``report.pdf`` after a run, ``results.json`` after an ``ingest``) are
  stale and are removed.

Two commands never write into one ``--out`` at once: :func:`staged` holds an exclusive
lock (``flock``) on ``<parent>/.<name>.lock`` for the whole command, and a second command
stops at once with one line naming the process that holds it. The operating system drops
the lock when its holder ends, however it ends (``kill -9`` included), so a stale lock never
blocks a later run; the empty lock file stays (removing it would let two commands lock two
different files of one name).

Where the exchange is impossible (the file system refuses it, ``--out`` is a mount point,
the working directory is inside ``--out``, or ``--out`` holds entries that are not
``selfmodel``'s) the new files are moved in one by one with
``results.json`` and then the report last, after the stale results and reports were
removed: the folder may then briefly hold new data files beside no results at all, never
a report of other results.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import ctypes.util
import errno
import fcntl
import os
import re
import shutil
import stat
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Final

from selfmodel.common.errors import InputError

#: Files and folders the commands write into ``--out``; any other entry is the user's.
RUN_OUTPUTS: Final = frozenset({
    "records.parquet", "quarantine.parquet", "ingest.json", "cells.parquet", "results.json",
    "run.json", "report.html", "report.pdf", "describe.json", "fits",
})
#: The marker file in every ``--out`` that ``selfmodel`` made: only such a folder, an empty
#: one, or one holding nothing but its outputs is written into.
MARKER: Final = ".selfmodel-out"
_MARKER_TEXT: Final = ("This folder holds outputs of selfmodel (its commands write only into a "
                       "folder with this file, an empty one or a new one).\n")
#: What a ``run``, ``fit`` or ``ingest`` swaps in or out as a whole: the outputs, the marker,
#: the rerun record and the keys of the rendered reports.
SWAPPED: Final = RUN_OUTPUTS | {MARKER, "run-key.json", ".report.html.key", ".report.pdf.key"}
#: Every name a ``selfmodel`` command writes into ``--out`` (``import``, ``simulate``,
#: ``power`` and ``reduce`` too): any other entry is the user's.
OWN_NAMES: Final = SWAPPED | {".selfmodel-write-probe", "registry.csv", "records.csv",
                              "truth.json", "power.json", "power.png", "design.toml",
                              "reduce.json"}
#: A temporary file of :mod:`selfmodel.common.atomic` for one of those names (``.results.json.x1.tmp``).
_OWN_TEMPORARY: Final = re.compile(r"^\.(?P<name>.+)\.[^.]+\.tmp$")
#: Written last when files must be moved one by one (a report never precedes its results).
LAST: Final = ("run.json", "results.json", "report.html", "report.pdf")
FITS: Final = "fits"
_RENAME_EXCHANGE: Final = 2
_AT_FDCWD: Final = -100


def out_folder(text: str) -> Path:
    """``--out`` as given on the command line; an empty one is an error, not the working folder."""
    if not text.strip():
        raise argparse.ArgumentTypeError(
            "--out is empty (it would mean the current folder); name a new folder, e.g. --out build")
    return Path(text)


def staging_path(out: Path) -> Path:
    """The staging folder of ``out``: a hidden sibling (``<parent>/.<name>.staging``)."""
    out = out.absolute()
    return out.parent / f".{out.name}.staging"


def lock_path(out: Path) -> Path:
    """The lock file of ``out``: a hidden sibling (``<parent>/.<name>.lock``)."""
    out = out.absolute()
    return out.parent / f".{out.name}.lock"


@contextlib.contextmanager
def locked(out: Path) -> Iterator[None]:
    """Hold the exclusive lock of ``out`` (one command writing into it at a time).

    Raises :class:`InputError` (one line, exit 2) when another process holds it.
    """
    path = lock_path(out)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 64, 0).decode(errors="replace").strip() or "another process"
            raise InputError(
                f"--out {out}: another selfmodel command ({holder}) is writing into it. "
                "Wait for it to finish, or choose another --out.") from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"pid {os.getpid()}".encode(), 0)
        try:
            yield
        finally:
            with contextlib.suppress(OSError):
                os.ftruncate(fd, 0)
    finally:
        os.close(fd)  # releases the lock


def is_own(name: str, names: frozenset[str] = OWN_NAMES) -> bool:
    """Whether an entry of ``--out`` called ``name`` is one ``selfmodel`` writes (of ``names``)."""
    if name in names:
        return True
    found = _OWN_TEMPORARY.match(name)
    return found is not None and found.group("name") in names


def foreign_entries(out: Path, names: frozenset[str] = OWN_NAMES) -> list[str]:
    """Names of the entries of the folder ``out`` not among ``names`` (sorted)."""
    try:
        return sorted(e.name for e in out.iterdir() if not is_own(e.name, names))
    except FileNotFoundError:
        return []


def check_owned(out: Path) -> None:
    """Stop with one line when ``out`` is a folder of the user's, not one ``selfmodel`` made.

    Written into: a folder that does not exist yet, an empty one, one with the marker file
    :data:`MARKER`, or one holding only entries ``selfmodel`` writes (made before the
    marker existed). Anything else is refused before anything is written.
    """
    if not out.is_dir() or (out / MARKER).is_file():
        return
    foreign = foreign_entries(out)
    if foreign:
        shown = ", ".join(repr(n) for n in foreign[:3]) + (" ..." if len(foreign) > 3 else "")
        raise InputError(
            f"--out {out}: this folder holds {len(foreign)} entr"
            f"{'y' if len(foreign) == 1 else 'ies'} selfmodel did not write ({shown}), and "
            "selfmodel writes only into a new folder, an empty one or one it made. Choose a "
            "new folder for --out.")


def claim(out: Path) -> None:
    """Check that ``out`` may be written into (:func:`check_out`) and make it.

    A new or empty folder gets the marker file; one already holding outputs is left as
    it is (``selfmodel simulate --out data_raw`` adds nothing to the data it rewrites).
    """
    out = Path(out)
    check_out(out)
    out.mkdir(parents=True, exist_ok=True)
    if not any(out.iterdir()):
        mark(out)


def mark(folder: Path) -> None:
    """Write the marker file :data:`MARKER` into ``folder`` (kept when it is there)."""
    marker = folder / MARKER
    if not marker.is_file():
        marker.write_text(_MARKER_TEXT, encoding="utf-8")


def check_out(out: Path) -> None:
    """Stop with one line when ``--out`` cannot or may not be written into.

    That is: it is a file, lies under one, cannot be written, or is a folder of the user's
    (see :func:`check_owned`).

    A folder that exists is probed by creating and removing a file in it, which also
    catches an immutable folder (``chattr +i``), where root ignores permissions.
    """
    for p in (out, *out.parents):
        if p.exists():
            if not p.is_dir():
                what = "is a file" if p == out else f"lies under the file {p}"
                raise InputError(f"--out {out}: {what}. Choose a folder for --out.")
            break
    if out.is_dir():
        check_owned(out)  # before the probe: a user's folder is not touched at all
        probe = out / ".selfmodel-write-probe"
        try:
            probe.touch()
            probe.unlink()
        except OSError as exc:
            why = exc.strerror or type(exc).__name__
            raise InputError(f"--out {out}: cannot write into it ({why}). Check its "
                             "permissions (chattr -i if it is immutable) or choose another "
                             "--out.") from exc


@contextlib.contextmanager
def staged(out: Path | str, say: Callable[[str], None] = lambda _m: None) -> Iterator[Path]:
    """Yield a staging folder for a command's outputs; put them into ``out`` on success.

    On any exception (``KeyboardInterrupt`` included) ``out`` is left as it was, except
    that the fits finished in the staging folder are added to ``out/fits``; the exception
    propagates.
    """
    out = Path(out).absolute()
    check_out(out)
    with locked(out):  # so the staging folder found by recover() is never a live command's
        staging = staging_path(out)
        recover(out, say)
        staging.mkdir(parents=True)
        try:
            mark(staging)
            _link_fits(out / FITS, staging / FITS)
            yield staging
        except BaseException as exc:
            _discard(staging, out)
            os_error = as_os_error(exc, out)
            if os_error is not None:
                raise os_error from exc
            raise
        try:
            publish(staging, out)
        except BaseException:
            _discard(staging, out)
            raise


def recover(out: Path, say: Callable[[str], None] = lambda _m: None) -> None:
    """Clean up after a command that was killed: keep its fits, remove its staging folder.

    The staging folder is then an unfinished new set (killed before the swap) or the
    previous set (killed just after it); in both cases ``out`` is complete. Its finished
    fits and the user's own entries missing from ``out`` are moved there; the rest goes.
    """
    staging = staging_path(out)
    if not (staging.exists() or staging.is_symlink()):
        return
    if staging.is_symlink() or not staging.is_dir() or not (staging / MARKER).is_file():
        raise InputError(
            f"--out {out}: {staging} is in the way and selfmodel did not make it (it keeps "
            "its unfinished outputs there). Move it away, or choose another --out.")
    _discard(staging, out)
    if staging.exists():
        left = sorted(e.name for e in staging.iterdir() if e.name != MARKER)
        raise InputError(
            f"--out {out}: {staging} holds {', '.join(map(repr, left[:3]))} that selfmodel "
            f"did not write and could not move back into {out} (the name is taken there, or "
            "it cannot be moved). Move them yourself and remove that folder, then rerun.")
    say(f"removed the unfinished outputs of an interrupted run ({staging})")


#: How libraries that wrap an operating-system error report it: polars and other Rust code
#: ("No space left on device (os error 28)"), HDF5 through h5py ("errno = 28").
_WRAPPED_OS_ERROR: Final = re.compile(r"\(os error (\d+)\)|errno = (\d+)")


def as_os_error(exc: BaseException, out: Path) -> OSError | None:
    """The operating-system error inside a library's exception (a full disk in polars)."""
    if isinstance(exc, OSError) and exc.errno is not None:
        return None  # already one: handled as it is
    if not isinstance(exc, Exception):
        return None
    found = _WRAPPED_OS_ERROR.search(str(exc))
    if found is None:
        return None
    code = int(found.group(1) or found.group(2))
    return OSError(code, os.strerror(code), str(out))


def relabel(say: Callable[[str], None], staging: Path, out: Path) -> Callable[[str], None]:
    """Progress messages that name ``out`` where the work names its staging folder."""
    inside, shown = str(staging), str(out)
    return lambda message: say(message.replace(inside, shown))


def interrupted_message(out: Path) -> str:
    """What an interrupted ``run``, ``fit`` or ``ingest`` left in ``out`` (one line)."""
    return (f"interrupted; {out} is as it was before this command (its new outputs are "
            "built in a staging folder and swapped in only when complete; fits that "
            "finished were added to its fits/ and a rerun reuses them). Rerun to finish.")


def publish(staging: Path, out: Path) -> None:
    """Make the staging folder's files the contents of ``out`` (atomically when possible)."""
    if not out.exists():
        out.parent.mkdir(parents=True, exist_ok=True)
        os.rename(staging, out)
    elif (not foreign_entries(out, SWAPPED) and _swappable(out) and _same_owner_and_mode(staging, out)
          and _exchange(staging, out)):
        _discard(staging, out)  # now the previous outputs, selfmodel's files only
    else:  # entries of the user's stay where they are, untouched
        _move_in(staging, out)


def _discard(staging: Path, out: Path) -> None:
    """Remove a staging folder: its finished fits go to ``out``, then selfmodel's own files.

    Only entries ``selfmodel`` writes are removed. Anything else (a file the user put into
    ``out`` just as the folders were swapped) is moved back into ``out`` when its name is
    free there; if that fails, the staging folder is left in place with it, and the next
    command says so instead of removing it.
    """
    if out.is_dir() and (staging / FITS).is_dir():
        with contextlib.suppress(OSError):
            _merge_fits(staging / FITS, out / FITS)
    for entry in list(staging.iterdir()) if staging.is_dir() else []:
        try:
            if entry.name == MARKER:
                continue  # removed last: a folder left behind is still known as ours
            if is_own(entry.name, SWAPPED):
                _remove(entry)
            elif out.is_dir() and not (out / entry.name).exists() and \
                    not (out / entry.name).is_symlink():
                os.rename(entry, out / entry.name)  # same file system: one step, nothing copied
        except OSError:
            continue  # left in the staging folder, which is then kept
    with contextlib.suppress(OSError):
        if [e.name for e in staging.iterdir()] == [MARKER]:
            (staging / MARKER).unlink()
        staging.rmdir()  # only when empty: never removes an entry that is not selfmodel's


def _swappable(out: Path) -> bool:
    """Whether ``out`` can be renamed: not a mount point, not holding the working folder."""
    if out.is_symlink() or os.path.ismount(out):
        return False
    try:
        cwd = Path.cwd().resolve()
    except OSError:
        return True
    real = out.resolve()
    return not (cwd == real or real in cwd.parents)


def _same_owner_and_mode(staging: Path, out: Path) -> bool:
    """Give the staging folder ``out``'s permissions and owner, so the swap keeps them."""
    st = out.stat()
    try:
        os.chmod(staging, stat.S_IMODE(st.st_mode))
        if (staging.stat().st_uid, staging.stat().st_gid) != (st.st_uid, st.st_gid):
            os.chown(staging, st.st_uid, st.st_gid)
    except OSError:
        return False  # then the files are moved into ``out`` itself
    return True


def _exchange(a: Path, b: Path) -> bool:
    """Swap two folders in one step (Linux ``renameat2``); ``False`` when not possible."""
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name, use_errno=True)
        renameat2 = libc.renameat2
    except (OSError, AttributeError, TypeError):
        return False
    renameat2.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p,
                          ctypes.c_uint]
    code = renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE)
    return code == 0


def _move_in(staging: Path, out: Path) -> None:
    """Move the staged files into ``out`` one by one: stale results first out, report last."""
    for name in LAST:
        (out / name).unlink(missing_ok=True)
    for entry in out.iterdir():
        if entry.name in RUN_OUTPUTS and entry.name != FITS and not (staging / entry.name).exists():
            _remove(entry)  # a stale output this command does not write
    names = sorted(p.name for p in staging.iterdir())
    for name in [n for n in names if n not in LAST] + [n for n in LAST if n in names]:
        src, dst = staging / name, out / name
        if name == FITS and dst.is_dir():
            _merge_fits(src, dst)
            continue
        if dst.is_dir() and not dst.is_symlink():
            shutil.rmtree(dst)
        _put(src, dst)
    _discard(staging, out)  # what is left: the emptied fits folder



def _link_fits(src: Path, dst: Path) -> None:
    """``dst`` starts with every saved fit and check of ``src`` (hard links, else copies)."""
    dst.mkdir(parents=True, exist_ok=True)
    if not src.is_dir():
        return
    for entry in src.iterdir():
        if entry.is_file() and not entry.name.startswith("."):
            try:
                os.link(entry, dst / entry.name)
            except OSError:
                shutil.copy2(entry, dst / entry.name)


def _merge_fits(src: Path, dst: Path) -> None:
    """Move finished cache files (not temporaries) from ``src`` into ``dst`` atomically."""
    dst.mkdir(parents=True, exist_ok=True)
    for entry in src.iterdir():
        if entry.is_file() and not entry.name.startswith("."):
            target = dst / entry.name
            if not (target.exists() and os.path.samefile(entry, target)):
                _put(entry, target)


def _remove(entry: Path) -> None:
    if entry.is_dir() and not entry.is_symlink():
        shutil.rmtree(entry)
    else:
        entry.unlink(missing_ok=True)


def _put(src: Path, dst: Path) -> None:
    """Move ``src`` onto ``dst`` in one rename; across file systems, copy beside it first."""
    try:
        os.replace(src, dst)
        return
    except OSError as exc:
        if exc.errno != errno.EXDEV:
            raise
    tmp = dst.parent / f".{dst.name}.incoming"
    _remove(tmp)
    if src.is_dir() and not src.is_symlink():
        shutil.copytree(src, tmp, symlinks=True)
    else:
        shutil.copy2(src, tmp, follow_symlinks=False)
    os.replace(tmp, dst)
    _remove(src)
