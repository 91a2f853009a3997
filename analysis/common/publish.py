"""Putting a staging folder's files into ``--out``: all at once, or with a journal.

A command builds its outputs in a staging folder beside ``--out``
(``<parent>/.<name>.staging``, :mod:`selfmodel.common.outputs`). The staging folder holds a
token file, :data:`TOKEN`, from the moment it is made to the moment it is gone: it names the
output folder and says what the staging folder is (``role``) and how far its publish got
(``phase``). The next command into that ``--out`` reads it and finishes or clears what a
killed command left (:func:`recover`), with no step of the user's.

Two ways to publish, chosen by :func:`publish`:

* **Exchange** (``renameat2(RENAME_EXCHANGE)``), when every entry of ``--out`` is
  ``selfmodel``'s (proven by its manifest, :mod:`selfmodel.common.manifest`): files kept from
  the old set are hard-linked into the staging folder, the manifest written there, and the
  two folders trade places in one step. The old folder, now at the staging path, is then
  cleared file by file (only what its manifest proves; anything else goes back into
  ``--out``). A reader sees the old set or the new one, never a mixture.
* **One by one** (``--out`` holds entries of the user's, is a mount point, holds the working
  folder, or the file system cannot exchange): the plan (what to remove, what to move, the
  hash of every old and new file) is written into the token first; that is the commit
  point. Then the old index files (``ingest.json``, ``results.json``, the reports, ...)
  and stale outputs are removed, the data files moved in, the index files after them (the
  report after the results) and the manifest last. A kill in between leaves no index file
  over data of another run; the next command completes the plan (each step is repeated
  only if not done, and nothing whose bytes are not the old or the new ones is touched).

Nothing here overwrites, moves or removes an entry the manifests do not prove
``selfmodel``'s: where a step would, it stops with one line naming the entry
(:class:`selfmodel.common.errors.InputError`) and leaves the journal for the next command.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import errno
import json
import os
import re
import secrets
import shutil
import stat
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from selfmodel.common import manifest
from selfmodel.common.errors import InputError
from selfmodel.common.manifest import FITS, MARKER, Manifest, file_sha256, is_cache_name

#: The token file of a staging folder (and, for a moment during an exchange, of ``--out``).
TOKEN: Final = ".selfmodel-staging"
#: Index files: the files a reader starts from. Moved in last, in this order (the results
#: before the reports made from them, a report before its key), and removed first.
INDEX: Final = (
    "ingest.json", "import.json", "reduce.json", "describe.json", "truth.json", "power.json",
    "run.json", "results.json", "report.html", ".report.html.key", "report.pdf",
    ".report.pdf.key", "run-key.json",
)
#: The empty file :func:`selfmodel.common.outputs.check_out` makes and removes at once to see
#: that ``--out`` can be written (``tempfile.mkstemp``: a new name, never an existing file).
PROBE_PREFIX: Final = ".selfmodel-write-probe."
PROBE: Final = re.compile(r"^\.selfmodel-write-probe\.[A-Za-z0-9_]{8}$")
_RENAME_EXCHANGE: Final = 2
_AT_FDCWD: Final = -100


@dataclass(frozen=True)
class Writes:
    """What a command writes into ``--out``.

    ``names``: the files (and ``fits/``) it may write. ``replaces``: files of an earlier set
    that it removes when it does not write them itself (they would describe other data).
    """

    names: frozenset[str]
    replaces: frozenset[str] = field(default_factory=frozenset)

    @property
    def touched(self) -> frozenset[str]:
        """Every name this command may overwrite or remove."""
        return self.names | self.replaces


# --------------------------------------------------------------------------- token


def new_staging(staging: Path, out: Path) -> None:
    """Make the staging folder of ``out`` with its token (role ``new``, phase ``building``)."""
    _step(os.mkdir, staging)
    _write_token(staging, {"out": str(out), "role": "new", "phase": "building",
                           "token": secrets.token_hex(16)})


def _write_token(folder: Path, doc: Mapping[str, Any], *, via: Path | None = None) -> None:
    text = json.dumps({"selfmodel": "staging", **doc}, indent=1, sort_keys=True) + "\n"
    _atomic_text(folder / TOKEN, text, via=via)


def read_token(folder: Path) -> dict[str, Any] | None:
    """The token of ``folder`` (a staging folder, or ``--out`` during an exchange), if ours."""
    path = folder / TOKEN
    try:
        if not stat.S_ISREG(path.lstat().st_mode):
            return None
        doc = json.loads(path.read_bytes())
    except (OSError, ValueError):
        return None
    if not (isinstance(doc, dict) and doc.get("selfmodel") == "staging"
            and doc.get("role") in ("new", "old") and isinstance(doc.get("out"), str)):
        return None
    return doc


def _atomic_text(target: Path, text: str, *, via: Path | None = None) -> None:
    """Write ``target`` through a temporary file and one rename.

    The temporary file is made in ``via`` (the staging folder, on the same file system) when
    given, else beside ``target``: a command killed in between never leaves one in ``--out``.
    """
    tmp = (via or target.parent) / f"{target.name}.{secrets.token_hex(4)}.tmp"
    try:
        _step(_write_new, tmp, text)
        _step(os.replace, tmp, target)
    finally:
        if os.path.lexists(tmp):
            _unlink(tmp)


def _write_new(path: Path, text: str) -> None:
    """Create ``path`` (it must not exist) with ``text``, on disk before it is renamed."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o666)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(text)
        fh.flush()
        os.fsync(fh.fileno())


# --------------------------------------------------------------------------- publish


def publish(staging: Path, out: Path, writes: Writes) -> None:
    """Make the staging folder's files part of ``out`` (see the module docstring).

    ``out`` is the resolved output folder; the caller holds its lock and has checked it.
    Before the commit point (the exchange, the first rename, or the plan written into the
    token) a failure clears the staging folder (its finished fits go to ``out/fits``) and
    ``out`` is as it was; after it, the journal stays for :func:`recover`.
    """
    try:
        new = {e.name: file_sha256(e) for e in staging.iterdir()
               if e.name not in (TOKEN, MARKER, FITS)}
        has_fits = _is_real_dir(staging / FITS)
        if not os.path.lexists(out):
            out.parent.mkdir(parents=True, exist_ok=True)
            _write_manifest(staging, Manifest(files=_hashes(new),
                                              folders=frozenset({FITS} if has_fits else ())))
            _step(os.rename, staging, out)  # the commit point
            with contextlib.suppress(OSError):
                _unlink(out / TOKEN)
            return
        plan = _plan(staging, out, writes, new, has_fits)
        if plan is None:  # nothing new (a report that was up to date)
            discard_new(staging, out)
            return
        if plan["exchange"] and _try_exchange(staging, out, plan):
            # the commit point passed: ``out`` is the new set, the old one at the staging path
            with contextlib.suppress(OSError):
                _unlink(out / TOKEN)
                discard_old(staging, out)
            return
        _write_manifest(staging, Manifest(files=plan["manifest"],
                                          folders=frozenset(plan["folders"])))
        token = read_token(staging) or {}
    except BaseException:
        left = read_token(staging)  # after an exchange, the old set's (role "old"): kept
        if left is not None and left.get("role") == "new":
            discard_new(staging, out)
        raise
    _write_token(staging, {**token, "out": str(out), "role": "new", "phase": "publishing",
                           "plan": {k: plan[k] for k in ("removes", "moves", "old", "new",
                                                         "fits")}})  # the commit point
    roll_forward(staging, out, plan)


def _hashes(new: Mapping[str, str | None]) -> dict[str, str]:
    missing = [n for n, h in new.items() if h is None]
    if missing:  # a link or folder among the outputs: a bug, not a user's mistake
        raise RuntimeError(f"not a regular file among the outputs: {missing}")
    return {n: h for n, h in new.items() if h is not None}


def _plan(staging: Path, out: Path, writes: Writes, new: Mapping[str, str | None],
          has_fits: bool) -> dict[str, Any] | None:
    """What to remove, move and keep; every name to overwrite or remove proven ours first."""
    old = _manifest_of(out)
    entries = {e.name for e in out.iterdir()}
    stale = sorted(n for n in writes.replaces & entries
                   if n not in new and n not in (FITS, MARKER, TOKEN))
    replaced = sorted(n for n in new if n in entries)
    bad = [n for n in (*stale, *replaced) if not old.proves(out, n)]
    if bad:
        raise InputError(
            f"--out {out}: {bad[0]!r} changed while this command ran (its bytes are not "
            "the ones selfmodel wrote, so it is yours now); nothing was replaced. Move it "
            "away and rerun, or choose another --out.")
    fits_out = os.path.lexists(out / FITS)
    if has_fits and fits_out and not old.proves_folder(out, FITS):
        raise InputError(f"--out {out}: 'fits' is not a folder selfmodel made; nothing was "
                         "replaced. Move it away and rerun, or choose another --out.")
    if not new and not stale and not _new_fits(staging / FITS, out / FITS):
        return None
    kept = {n: old.files[n] for n in sorted(entries)
            if n in old.files and n not in stale and n not in new and old.proves(out, n)}
    folders = sorted({FITS} if has_fits or (fits_out and old.proves_folder(out, FITS)) else ())
    user = sorted(n for n in entries if n not in kept and n not in stale and n not in new
                  and n not in (MARKER, FITS))
    fits_plain = not fits_out or (old.proves_folder(out, FITS) and all(
        e.is_file() and not e.is_symlink() for e in (out / FITS).iterdir()))
    removes: list[str] = [n for n in INDEX if n in stale or n in replaced]
    removes += [n for n in stale if n not in removes]
    data = [n for n in sorted(new) if n not in INDEX]
    return {
        "exchange": not user and fits_plain and not old.legacy,
        "kept": kept, "folders": folders,
        "manifest": {**kept, **_hashes(new)},
        "removes": removes,
        "moves": [*data, *[n for n in INDEX if n in new], MARKER],
        "old": {n: old.files[n] for n in (*stale, *replaced)},
        "new": _hashes(new),
        "fits": has_fits,
    }


def _manifest_of(out: Path) -> Manifest:
    try:
        found = manifest.read(out)
    except manifest.MarkerError as exc:
        raise InputError(f"--out {out}: {exc}; selfmodel did not write it. Move it away, "
                         "or choose another --out.") from None
    return found if found is not None else Manifest()


def _write_manifest(folder: Path, found: Manifest, *, via: Path | None = None) -> None:
    _atomic_text(folder / MARKER, found.text(), via=via)


def _new_fits(src: Path, dst: Path) -> bool:
    """Whether ``src`` holds a saved fit that ``dst`` does not have (as the same file)."""
    if not _is_real_dir(src):
        return False
    for entry in src.iterdir():
        target = dst / entry.name
        if entry.is_file() and not entry.name.startswith(".") and not (
                target.exists() and os.path.samefile(entry, target)):
            return True
    return False


def _try_exchange(staging: Path, out: Path, plan: Mapping[str, Any]) -> bool:
    """Swap the folders in one step; ``False`` (nothing changed in ``out``) when impossible."""
    if not _swappable(out):
        return False
    try:
        for name in plan["kept"]:
            _step(os.link, out / name, staging / name)
        if not _is_real_dir(staging / FITS) and _is_real_dir(out / FITS):
            link_fits(out / FITS, staging / FITS)
        _write_manifest(staging, Manifest(files=plan["manifest"],
                                          folders=frozenset(plan["folders"])))
        if not _same_owner_and_mode(staging, out):
            return False
    except OSError:
        return False
    token = read_token(staging) or {}
    # says what the old folder is, once the two have traded places
    _write_token(out, {**token, "out": str(out), "role": "old"}, via=staging)
    if not _step(exchange, staging, out):
        _unlink(out / TOKEN)
        return False
    return True


def roll_forward(staging: Path, out: Path, plan: Mapping[str, Any]) -> None:
    """Carry out (or finish) a one-by-one publish; each step is skipped when already done."""
    old, new, moves = plan["old"], plan["new"], plan["moves"]

    def ours(path: Path, name: str) -> bool:
        digest = file_sha256(path)
        return digest is not None and digest in (old.get(name), new.get(name))

    for name in plan["removes"]:
        target = out / name
        if not os.path.lexists(target):
            continue
        if name in moves and not os.path.lexists(staging / name):
            continue  # the new file, moved in already
        if file_sha256(target) != old.get(name):
            raise _changed(out, name)
        _unlink(target)
    if plan["fits"] and _is_real_dir(staging / FITS):
        _merge_fits(staging / FITS, out / FITS)
    for name in moves:
        src, dst = staging / name, out / name
        if not os.path.lexists(src):
            continue  # moved already
        if name != MARKER and os.path.lexists(dst) and not ours(dst, name):
            raise _changed(out, name)
        put(src, dst)
    _clear(staging)


def _changed(out: Path, name: str) -> InputError:
    return InputError(
        f"--out {out}: {name!r} is not a file selfmodel wrote (its bytes changed), so it "
        f"was not replaced; selfmodel's unfinished outputs wait in {staging_of(out)}. Move "
        f"{name!r} away and rerun: the rerun finishes them.")


def staging_of(out: Path) -> Path:
    """The staging folder of the resolved output folder ``out``."""
    return out.parent / f".{out.name}.staging"


def _clear(staging: Path) -> None:
    """Remove a staging folder whose contents are all selfmodel's; the token goes last."""
    for entry in list(staging.iterdir()):
        if entry.name != TOKEN:
            _remove(entry)
    _unlink(staging / TOKEN)
    _step(os.rmdir, staging)


def discard_new(staging: Path, out: Path) -> None:
    """Clear an unfinished staging folder: its new fits go to ``out/fits``, the rest goes."""
    with contextlib.suppress(OSError, InputError):
        if _new_fits(staging / FITS, out / FITS) and ensure_fits(out, via=staging):
            _merge_fits(staging / FITS, out / FITS)
    _clear(staging)


def ensure_fits(out: Path, *, via: Path) -> bool:
    """Whether ``out/fits`` is (now) a folder selfmodel made; it is listed before it is made."""
    if not _is_real_dir(out):
        return False
    found = _manifest_of(out) if os.path.lexists(out / MARKER) else None
    if os.path.lexists(out / FITS):
        return found is not None and found.proves_folder(out, FITS)
    if found is None:
        if any(out.iterdir()):
            return False  # not a folder selfmodel made
        found = Manifest()
    elif found.legacy:
        return False
    _write_manifest(out, Manifest(files=found.files, folders=found.folders | {FITS}), via=via)
    _step(os.mkdir, out / FITS)
    return True


def discard_old(staging: Path, out: Path) -> None:
    """Clear the previous set after an exchange: only what its manifest proves is removed.

    Its fits are all in ``out/fits`` already (linked); an entry it does not prove (put into
    ``out`` just as the folders traded places) goes back into ``out`` when its name is free
    there, and otherwise stays, with the staging folder, for the user (:func:`recover` says
    so).
    """
    try:
        old = manifest.read(staging) or Manifest()
    except manifest.MarkerError:
        old = Manifest()
    for entry in sorted(staging.iterdir()):
        if entry.name in (MARKER, TOKEN):
            continue
        if entry.name == FITS and old.proves_folder(staging, FITS):
            for f in list(entry.iterdir()):
                if f.is_file() and not f.is_symlink() and os.path.lexists(out / FITS / f.name):
                    _unlink(f)
                elif _is_real_dir(out / FITS) and not os.path.lexists(out / FITS / f.name):
                    _step(os.rename, f, out / FITS / f.name)
            with contextlib.suppress(OSError):
                _step(os.rmdir, entry)
        elif old.proves(staging, entry.name) or _is_probe(entry):
            _unlink(entry)
        elif not os.path.lexists(out / entry.name):
            with contextlib.suppress(OSError):
                _step(os.rename, entry, out / entry.name)
    left = {e.name for e in staging.iterdir()}
    if left <= {MARKER, TOKEN}:
        _unlink(staging / MARKER)
        _unlink(staging / TOKEN)
        _step(os.rmdir, staging)


# --------------------------------------------------------------------------- recovery


def recover(out: Path, say: Callable[[str], None] = lambda _m: None) -> None:
    """Finish or clear what a killed command left beside (and in) the resolved ``out``.

    A staging folder that was still being built is cleared (its finished fits kept in
    ``out/fits``); one whose one-by-one publish had begun is completed; the old folder of an
    exchange is cleared. A staging folder without a token of this ``out`` is not
    ``selfmodel``'s and is refused, never removed.
    """
    staging = staging_of(out)
    if _is_real_dir(out):
        left = read_token(out)
        if left is not None and left.get("out") == str(out):
            _unlink(out / TOKEN)  # an exchange's, or a first publish's, stopped just after
        for entry in out.iterdir():  # a write probe of a command killed in between
            if _is_probe(entry):
                _unlink(entry)
    if not os.path.lexists(staging):
        return
    if not _is_real_dir(staging):
        raise _in_the_way(out, staging)
    if not any(staging.iterdir()):
        _step(os.rmdir, staging)  # emptied but for its name: nothing of anyone's inside
        return
    token = read_token(staging)
    if token is None or token.get("out") != str(out):
        raise _in_the_way(out, staging)
    if token["role"] == "old":
        discard_old(staging, out)
        if os.path.lexists(staging):
            kept = sorted(e.name for e in staging.iterdir() if e.name not in (MARKER, TOKEN))
            raise InputError(
                f"--out {out}: {staging} holds {', '.join(map(repr, kept[:3]))} that selfmodel "
                f"did not write and could not move back into {out} (the name is taken there, "
                "or it cannot be moved). Move them yourself and remove that folder, then rerun.")
        say(f"cleared the previous outputs of an interrupted command ({staging})")
    elif token.get("phase") == "publishing" and isinstance(token.get("plan"), dict):
        roll_forward(staging, out, token["plan"])
        say(f"finished moving the outputs of an interrupted command into {out}")
    else:
        discard_new(staging, out)
        say(f"removed the unfinished outputs of an interrupted run ({staging})")


def _is_probe(entry: Path) -> bool:
    """An empty file of the write probe's name (made with a new name, so selfmodel's)."""
    try:
        st = entry.lstat()
    except OSError:
        return False
    return PROBE.match(entry.name) is not None and stat.S_ISREG(st.st_mode) and st.st_size == 0


def _in_the_way(out: Path, staging: Path) -> InputError:
    return InputError(
        f"--out {out}: {staging} is in the way and selfmodel did not make it (it keeps its "
        "unfinished outputs there). Move it away, or choose another --out.")


# --------------------------------------------------------------------------- file steps


def _step(fn: Callable[..., Any], *args: Any) -> Any:
    """One change of the file system (a seam where tests inject a kill)."""
    return fn(*args)


def _unlink(path: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        _step(os.unlink, path)


def _remove(entry: Path) -> None:
    if _is_real_dir(entry):
        _step(shutil.rmtree, entry)
    else:
        _unlink(entry)


def _is_real_dir(path: Path) -> bool:
    try:
        return stat.S_ISDIR(path.lstat().st_mode)
    except OSError:
        return False


def link_fits(src: Path | None, dst: Path) -> None:
    """``dst`` starts with every saved fit and check of ``src`` (hard links, else copies)."""
    if not _is_real_dir(dst):
        _step(os.mkdir, dst)
    if src is None or not _is_real_dir(src):
        return
    for entry in src.iterdir():
        if entry.is_file() and not entry.is_symlink() and not entry.name.startswith("."):
            try:
                _step(os.link, entry, dst / entry.name)
            except FileExistsError:
                continue
            except OSError:
                shutil.copy2(entry, dst / entry.name)


def _merge_fits(src: Path, dst: Path) -> None:
    """Move finished saved fits (not temporaries) from ``src`` into ``dst``.

    A file of ``dst`` is replaced only by a saved fit of the same name (named by its key:
    :data:`selfmodel.common.manifest.CACHE_NAME`) that this command computed because that
    one failed its check; no other file there is touched.
    """
    if not _is_real_dir(dst):
        _step(os.mkdir, dst)
    for entry in src.iterdir():
        if not entry.is_file() or entry.is_symlink() or entry.name.startswith("."):
            continue
        target = dst / entry.name
        if os.path.lexists(target) and (
                (target.exists() and os.path.samefile(entry, target))
                or not is_cache_name(entry.name)):
            continue
        put(entry, target)


def put(src: Path, dst: Path) -> None:
    """Move ``src`` onto ``dst`` in one rename; across file systems, copy beside it first."""
    try:
        _step(os.replace, src, dst)
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
    _step(os.replace, tmp, dst)
    _remove(src)


def _swappable(out: Path) -> bool:
    """Whether ``out`` can be renamed: not a mount point, not holding the working folder."""
    if os.path.ismount(out):
        return False
    try:
        cwd = Path.cwd().resolve()
    except OSError:
        return True
    return not (cwd == out or out in cwd.parents)


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


def exchange(a: Path, b: Path) -> bool:
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


def unproven(out: Path, names: Collection[str], found: Manifest) -> list[str]:
    """The entries of ``out`` among ``names`` that ``found`` does not prove selfmodel's."""
    bad = []
    for name in sorted(names):
        if not os.path.lexists(out / name) or name == MARKER:
            continue
        ok = found.proves_folder(out, name) if name == FITS else found.proves(out, name)
        if not ok:
            bad.append(name)
    return bad


