"""Output folders: what a command may write into ``--out``, one writer at a time, whole.

Every command that writes (``run``, ``fit``, ``ingest``, ``describe``, ``report``,
``import``, ``simulate``, ``power``, ``reduce``) goes through this module: ownership by proof
(the manifest, :mod:`selfmodel.common.manifest`; :func:`check_out`), one writer per resolved
folder (:func:`locked`), all or nothing (:func:`staged`, published by
:mod:`selfmodel.common.publish`), and stale outputs removed with their set (:data:`RUN`).
The rules, as a user meets them: ``docs/cli.md`` ("Output folders and limits").
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import os
import re
import signal
import stat
import tempfile
import threading
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, Final

from selfmodel.common import manifest
from selfmodel.common.errors import InputError
from selfmodel.common.manifest import FITS, MARKER, Manifest
from selfmodel.common.publish import (
    PROBE_PREFIX,
    TOKEN,
    Writes,
    discard_new,
    link_fits,
    new_staging,
    publish,
    staging_of,
    unproven,
)
from selfmodel.common.publish import (
    recover as _recover,
)

__all__ = ["FITS", "MARKER", "TOKEN", "Writes"]

#: Files and folders ``run``, ``fit`` and ``ingest`` write into ``--out``.
RUN_OUTPUTS: Final = frozenset({
    "records.parquet", "quarantine.parquet", "ingest.json", "cells.parquet", "results.json",
    "run.json", "report.html", "report.pdf", "describe.json", FITS,
})
#: ... with the rerun record and the keys of the rendered reports.
RUN_WRITES: Final = RUN_OUTPUTS | {"run-key.json", ".report.html.key", ".report.pdf.key"}
#: One set of records and what describes it: a command that writes a new one removes the
#: rest of the old one (an ``ingest.json`` or ``results.json`` of other records).
RECORDS_SET: Final = (RUN_WRITES | {"import.json", "reduce.json"}) - {FITS}
RUN: Final = Writes(RUN_WRITES, RECORDS_SET)
IMPORT: Final = Writes(frozenset({"records.parquet", "registry.csv", "import.json"}), RECORDS_SET)
REDUCE: Final = Writes(frozenset({"cells.parquet", "reduce.json"}), RECORDS_SET)
SIMULATE: Final = Writes(frozenset({"records.csv", "registry.csv", "truth.json"}))
POWER: Final = Writes(frozenset({"power.json", "power.png", "design.toml"}))
DESCRIBE: Final = Writes(frozenset({"describe.json"}))


def report_writes(fmt: str) -> Writes:
    """What ``selfmodel report --format fmt`` writes: the report and its key."""
    return Writes(frozenset({f"report.{fmt}", f".report.{fmt}.key"}))


#: The resolved folders whose new outputs this process published (for the interrupted line).
PUBLISHED: set[Path] = set()


def out_folder(text: str) -> Path:
    """``--out`` as given on the command line; an empty one is an error, not the working folder."""
    if not text.strip():
        raise argparse.ArgumentTypeError(
            "--out is empty (it would mean the current folder); name a new folder, e.g. --out build")
    return Path(text)


def real_path(out: Path | str) -> Path:
    """``out`` resolved: links followed, as far as it exists (one folder, one spelling)."""
    return Path(os.path.realpath(Path(out).absolute()))


def staging_path(out: Path | str) -> Path:
    """The staging folder of ``out``: a hidden sibling of the resolved folder."""
    return staging_of(real_path(out))


def lock_path(out: Path | str) -> Path:
    """The lock file of ``out``: ``<parent>/.<name>.lock`` of the resolved folder."""
    real = real_path(out)
    return real.parent / f".{real.name}.lock"


# --------------------------------------------------------------------------- the lock


@contextlib.contextmanager
def locked(out: Path | str) -> Iterator[None]:
    """Hold the exclusive lock of ``out`` (one command writing into it at a time).

    Raises :class:`InputError` (one line, exit 2) when another process holds it, or when the
    lock path is a link or not a regular file of one name.
    """
    real = _usable(Path(out))
    path = lock_path(real)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = _open_lock(path, out)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise InputError(
                f"--out {out}: another selfmodel command ({_holder(fd)}) is writing into it. "
                "Wait for it to finish, or choose another --out.") from None
        yield
    finally:
        os.close(fd)  # releases the lock


def _open_lock(path: Path, out: Path | str) -> int:
    """Open the lock file: never through a link, created only when absent, never written."""
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    try:
        try:
            fd = os.open(path, flags)
        except FileNotFoundError:
            try:
                fd = os.open(path, flags | os.O_CREAT | os.O_EXCL, 0o644)
            except FileExistsError:  # made just now by another command, or a dangling link
                fd = os.open(path, flags)
    except OSError as exc:
        if path.is_symlink():
            raise _bad_lock(path, out, "is a link") from None
        raise exc
    st = os.fstat(fd)
    why = ("is not a regular file" if not stat.S_ISREG(st.st_mode)
           else "is a hard link (a lock file of selfmodel has one name)" if st.st_nlink != 1
           else None)
    if why is not None:
        os.close(fd)
        raise _bad_lock(path, out, why)
    return fd


def _bad_lock(path: Path, out: Path | str, why: str) -> InputError:
    return InputError(
        f"--out {out}: its lock file {path} {why}; selfmodel did not make it and will not "
        "use it. Remove it (selfmodel makes a new one), or choose another --out.")


_LOCK_LINE: Final = re.compile(r"^\d+:\s+FLOCK\s+\S+\s+WRITE\s+(\d+)\s+(\S+):(\d+)\s")


def _holder(fd: int) -> str:
    """``pid N`` of the process that holds the lock on ``fd``'s file (Linux), if it can tell."""
    st = os.fstat(fd)
    device = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}"
    try:
        lines = Path("/proc/locks").read_text().splitlines()
    except OSError:
        return "another process"
    exact: list[str] = []
    same_inode: list[str] = []
    for line in lines:
        found = _LOCK_LINE.match(line)
        if found is None or int(found.group(3)) != st.st_ino:
            continue
        (exact if found.group(2) == device else same_inode).append(found.group(1))
    pids = exact or same_inode
    return f"pid {pids[0]}" if pids else "another process"


# --------------------------------------------------------------------------- checks


def _usable(out: Path) -> Path:
    """The resolved ``out``; one line when it is the root, a file, or lies under a file."""
    real = real_path(out)
    if real == real.parent:
        raise InputError(f"--out {out}: the root folder is not an output folder. Choose a new "
                         "folder for --out, e.g. --out build.")
    for p in (real, *real.parents):
        if p.exists():
            if not p.is_dir():
                what = "is a file" if p == real else f"lies under the file {p}"
                raise InputError(f"--out {out}: {what}. Choose a folder for --out.")
            break
    return real


def _probe(out: Path, real: Path) -> None:
    """Create and remove a file of a new name in ``real`` (catches ``chattr +i`` too)."""
    try:
        fd, name = tempfile.mkstemp(prefix=PROBE_PREFIX, dir=real)
        os.close(fd)
        with contextlib.suppress(FileNotFoundError):  # a command swapping the folder took it
            os.unlink(name)  # along (its next recovery removes it): it could be written
    except OSError as exc:
        why = exc.strerror or type(exc).__name__
        raise InputError(f"--out {out}: cannot write into it ({why}). Check its permissions "
                         "(chattr -i if it is immutable) or choose another --out.") from exc


def _read_manifest(out: Path, real: Path) -> Manifest | None:
    try:
        return manifest.read(real)
    except manifest.MarkerError:
        raise InputError(
            f"--out {out}: its {MARKER} is not a manifest selfmodel wrote, so selfmodel cannot "
            "tell which files there are its own. Choose a new folder for --out.") from None


def _not_a_folder_of_ours(out: Path, real: Path) -> None:
    """Refuse a folder with no manifest that is not empty (nothing is touched, no lock made)."""
    if not real.is_dir() or os.path.lexists(real / MARKER):
        return
    if os.path.lexists(staging_of(real)):
        return  # perhaps a first publish stopped short: settled under the lock
    foreign = sorted(e.name for e in real.iterdir())
    if foreign:
        shown = ", ".join(repr(n) for n in foreign[:3]) + (" ..." if len(foreign) > 3 else "")
        raise InputError(
            f"--out {out}: this folder holds {len(foreign)} entr"
            f"{'y' if len(foreign) == 1 else 'ies'} selfmodel did not write ({shown}), and "
            "selfmodel writes only into a new folder, an empty one or one it made. Choose a "
            "new folder for --out.")


def _prechecks(out: Path) -> Path:
    """What needs no lock: usable, not a folder of the user's, writable. The resolved ``out``."""
    real = _usable(out)
    if real.is_dir():
        marked = _read_manifest(out, real) is not None
        _not_a_folder_of_ours(out, real)
        if marked or not any(real.iterdir()):  # else settled under the lock first
            _probe(out, real)
    return real


def _owned(out: Path, real: Path, writes: Writes, say: Callable[[str], None]) -> None:
    """Under the lock: clear a killed command's leftovers, then prove what will be touched."""
    _recover(real, say)
    if not real.is_dir():
        return
    found = _read_manifest(out, real)
    _not_a_folder_of_ours(out, real)
    if found is None:
        return
    bad = unproven(real, writes.touched, found)
    if bad:
        raise InputError(_not_ours(out, bad, found))


def _not_ours(out: Path, bad: list[str], found: Manifest) -> str:
    shown = ", ".join(repr(n) for n in bad[:3]) + (" ..." if len(bad) > 3 else "")
    if found.legacy:
        return (f"--out {out}: this folder was made by an earlier version of selfmodel, which "
                "did not record what it wrote, so selfmodel cannot tell its files from yours "
                f"({shown}), and this command would replace or remove them. Move away what "
                "you keep and remove the folder, or choose a new --out.")
    name = bad[0]
    more = f" (and {len(bad) - 1} more: {shown})" if len(bad) > 1 else ""
    if name == FITS:
        why = "'fits' is not a folder selfmodel made"
    elif name not in found.files:
        why = f"{name!r} is not a file selfmodel wrote (its manifest {MARKER} does not list it)"
    else:
        why = f"{name!r} is not the file selfmodel wrote there (its bytes changed since)"
    return (f"--out {out}: {why}{more}, so it is yours, and this command would replace or "
            "remove it. Move it away, or choose another --out.")


def check_out(out: Path | str, writes: Writes = RUN,
              say: Callable[[str], None] = lambda _m: None) -> None:
    """Stop with one line when ``out`` cannot or may not be written into; before any work.

    That is: it is the root, a file, lies under a file, cannot be written, is a folder
    without a manifest that is not empty, or holds a file of the user's where this command
    (``writes``) would write or remove one. A killed command's leftovers are cleared first
    (under the lock, which a busy ``out`` refuses at once).
    """
    out = Path(out)
    real = _prechecks(out)
    if os.path.lexists(real / MARKER) or os.path.lexists(staging_of(real)):
        with locked(out):
            _owned(out, real, writes, say)


def check_writable(out: Path | str) -> None:
    """Stop with one line when ``out`` is the root, a file, under a file or not writable."""
    out = Path(out)
    real = _usable(out)
    if real.is_dir():
        _probe(out, real)


def check_apart(out: Path | str, inputs: Iterable[Path | str | None]) -> None:
    """Stop with one line when an input is ``out`` or lies inside it (outputs are never inputs).

    ``out`` inside an input folder is fine: the files of ``out`` are not read from there
    (:func:`selfmodel.records.ingest.discover.walk_folder`), and the inputs found are
    checked here too.
    """
    real = real_path(out)
    for given in inputs:
        if given is None:
            continue
        path = real_path(given)
        if path == real:
            raise InputError(
                f"--out {out} is also an input of this command ({given}), and outputs are "
                "never inputs: writing there would replace what is read. Choose another --out.")
        if real in path.parents:
            raise InputError(
                f"{given}: lies inside --out {out}, which this command writes into, and outputs "
                "are never inputs. Copy it elsewhere, or choose another --out.")


# --------------------------------------------------------------------------- staging


@contextlib.contextmanager
def staged(out: Path | str, say: Callable[[str], None] = lambda _m: None, *,
           writes: Writes = RUN, then: Callable[[Path], Any] | None = None) -> Iterator[Path]:
    """Yield a staging folder for a command's outputs; publish them into ``out`` on success.

    ``writes``: what the command writes (checked before it starts and again before anything
    is replaced). ``then``: called after the publish, still holding the lock, with a new
    staging folder for files made from the published outputs (the rerun record); they are
    published in turn. On any exception (``KeyboardInterrupt`` included) ``out`` is left as
    it was, except that the fits finished in the staging folder are added to ``out/fits``;
    the exception propagates.
    """
    out = Path(out)
    real = _prechecks(out)
    with locked(out):  # so the staging folder found by recover() is never a live command's
        _owned(out, real, writes, say)
        PUBLISHED.discard(real)
        staging = staging_of(real)
        new_staging(staging, real)
        try:
            if FITS in writes.names:
                found = _read_manifest(out, real) if real.is_dir() else None
                own = found is not None and found.proves_folder(real, FITS)
                link_fits(real / FITS if own else None, staging / FITS)
            yield staging
        except BaseException as exc:
            with contextlib.suppress(OSError):
                discard_new(staging, real)
            os_error = as_os_error(exc, out)
            if os_error is not None:
                raise os_error from exc
            raise
        with _signals_deferred():
            publish(staging, real, writes)
            PUBLISHED.add(real)
            if then is not None:
                new_staging(staging, real)
                try:
                    then(staging)
                except BaseException:
                    discard_new(staging, real)
                    raise
                made = frozenset(e.name for e in staging.iterdir() if e.name != TOKEN)
                publish(staging, real, Writes(made))


@contextlib.contextmanager
def _signals_deferred() -> Iterator[None]:
    """Ctrl-C and SIGTERM wait until the block ends (a publish is never cut in two)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    got: list[int] = []
    kinds = (signal.SIGINT, signal.SIGTERM)
    previous = {s: signal.signal(s, lambda signum, _frame: got.append(signum)) for s in kinds}
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler if handler is not None else signal.SIG_DFL)
    if got:
        signal.raise_signal(got[0])


def recover(out: Path | str, say: Callable[[str], None] = lambda _m: None) -> None:
    """Finish or clear what a killed command left (holding the lock of ``out``)."""
    with locked(out):
        _recover(real_path(out), say)


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


def interrupted_message(out: Path, *, fits: bool = True) -> str:
    """What an interrupted command left in ``out`` (one line)."""
    if real_path(out) in PUBLISHED:
        return (f"interrupted after {out} was complete: it holds the new outputs of this "
                "command.")
    kept = "; fits that finished were added to its fits/ and a rerun reuses them" if fits else ""
    return (f"interrupted; {out} is as it was before this command (its new outputs are "
            f"built in a staging folder and swapped in only when complete{kept}). Rerun to "
            "finish.")
