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
* Files in ``--out`` that no run writes (notes, other tools' files) are moved into the new
  set; outputs of earlier commands that this one does not write (``report.pdf`` after a
  run, ``results.json`` after an ``ingest``) are stale and are not.

Two commands never write into one ``--out`` at once: :func:`staged` holds an exclusive
lock (``flock``) on ``<parent>/.<name>.lock`` for the whole command, and a second command
stops at once with one line naming the process that holds it. The operating system drops
the lock when its holder ends, however it ends (``kill -9`` included), so a stale lock never
blocks a later run; the empty lock file stays (removing it would let two commands lock two
different files of one name).

Where the exchange is impossible (the file system refuses it, ``--out`` is a mount point,
or the working directory is inside ``--out``) the new files are moved in one by one with
``results.json`` and then the report last, after the stale results and reports were
removed: the folder may then briefly hold new data files beside no results at all, never
a report of other results.
"""

from __future__ import annotations

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

from selfmodel.contract import InputError

#: Files and folders the commands write into ``--out``; any other entry is the user's.
RUN_OUTPUTS: Final = frozenset({
    "records.parquet", "quarantine.parquet", "ingest.json", "cells.parquet", "results.json",
    "run.json", "report.html", "report.pdf", "describe.json", "fits",
})
#: Written last when files must be moved one by one (a report never precedes its results).
LAST: Final = ("run.json", "results.json", "report.html", "report.pdf")
FITS: Final = "fits"
_RENAME_EXCHANGE: Final = 2
_AT_FDCWD: Final = -100


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


def check_out(out: Path) -> None:
    """Stop with one line when ``--out`` is a file, lies under one, or cannot be written.

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
    if staging.exists():
        _discard(staging, out)
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
    if out.exists():
        for entry in out.iterdir():  # the user's own files go along (hard links)
            if entry.name not in RUN_OUTPUTS and entry.is_file() and not entry.is_symlink():
                with contextlib.suppress(OSError):
                    os.link(entry, staging / entry.name)
    if not out.exists():
        out.parent.mkdir(parents=True, exist_ok=True)
        os.rename(staging, out)
    elif _swappable(out) and _same_owner_and_mode(staging, out) and _exchange(staging, out):
        _discard(staging, out)  # now the previous outputs: the user's folders move across
    else:
        _move_in(staging, out)


def _discard(staging: Path, out: Path) -> None:
    """Remove a staging folder, first moving its finished fits and the user's entries to ``out``."""
    if out.is_dir():
        with contextlib.suppress(OSError):
            if (staging / FITS).is_dir():
                _merge_fits(staging / FITS, out / FITS)
            for entry in staging.iterdir():
                if entry.name not in RUN_OUTPUTS and not (out / entry.name).exists():
                    _put(entry, out / entry.name)
    shutil.rmtree(staging, ignore_errors=True)


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
    shutil.rmtree(staging, ignore_errors=True)



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
