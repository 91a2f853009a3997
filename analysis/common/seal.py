"""Keyed seals of what selfmodel saves and later trusts as its own work.

Saved fits, saved derived results and the record of a finished run each carry a seal: an
HMAC-SHA-256, under a secret of this user, of what they hold (:func:`seal`); a file whose
seal does not verify is computed again, with a note. The secret is :data:`KEY_FILE` in the
cache folder (:mod:`selfmodel.common.caches`), made on first use, readable by its owner
only; when no key file can be used, the command seals with a key no file holds
(:func:`ephemeral`). Why a plain hash would not do, and what a user sees:
``docs/cli.md`` ("Caches and sealed results").
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import hmac
import os
import secrets
import stat
import sys
import tempfile
from typing import Final

from selfmodel.common import caches

#: Name of the secret's file in the cache folder.
KEY_FILE: Final = "derived-results.key"
#: Length of the key file's text (hexadecimal digits of 32 random bytes).
_KEY_CHARS: Final = 64

_adopted: list[bytes] = []


def _note(message: str) -> None:
    sys.stderr.write(f"selfmodel: note: {' '.join(message.split())}\n")


def _read_key_file() -> tuple[bytes | None, str]:
    """The key in the cache folder (made when absent), or ``None`` and why it cannot be used."""
    folder = caches.folder()
    if folder is None:
        return None, "no cache folder can be made"
    path = folder / KEY_FILE
    try:
        if not path.exists():
            fd, tmp = tempfile.mkstemp(prefix=f".{KEY_FILE}.", dir=folder)  # mode 0600
            try:
                with os.fdopen(fd, "wb") as fh:
                    fh.write(secrets.token_hex(_KEY_CHARS // 2).encode())
                with contextlib.suppress(FileExistsError):
                    os.link(tmp, path)  # the first process to get here wins; all read its key
            finally:
                os.unlink(tmp)
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
        with os.fdopen(fd, "rb") as fh:
            info = os.fstat(fh.fileno())
            text = fh.read(4 * _KEY_CHARS).strip()
    except OSError as exc:
        return None, f"{path}: {exc.strerror or type(exc).__name__}"
    if not stat.S_ISREG(info.st_mode):
        return None, f"{path} is not a regular file"
    if info.st_uid != os.geteuid() or info.st_mode & 0o077:
        return None, (f"{path} is owned by another user or others may read or change it "
                      "(remove it: a new one is made)")
    if len(text) < _KEY_CHARS:
        return None, f"{path} is too short to be a key (remove it: a new one is made)"
    return text, ""


@functools.cache
def _key() -> tuple[bytes, bool]:
    """The user's key, and whether it is the command's own (no key file could be used)."""
    if _adopted:
        return _adopted[-1], True
    key, why = _read_key_file()
    if key is not None:
        return key, False
    _note(f"no key to seal saved results ({why}): this command seals what it saves with a key "
          "of its own, so nothing an earlier command saved (fits, checks) is reused: it is "
          "computed again")
    return secrets.token_hex(_KEY_CHARS // 2).encode(), True


def ephemeral() -> bytes | None:
    """The command's own key when no key file is used (for its worker processes), else ``None``."""
    key, own = _key()
    return key if own else None


def adopt(key: bytes) -> None:
    """Seal with ``key`` (a worker process: its parent's :func:`ephemeral` key)."""
    _adopted.append(key)
    _key.cache_clear()


def reset() -> None:
    """Forget the key read (the next seal reads the key file again; for tests)."""
    _adopted.clear()
    _key.cache_clear()


def seal(purpose: str, payload: bytes) -> str:
    """HMAC-SHA-256 of ``payload`` under this user's key, for one ``purpose`` (``"fit"`` ...).

    The purpose is part of what is sealed, so a seal made for one kind of file never
    verifies another.
    """
    return hmac.new(_key()[0], purpose.encode() + b"\0" + payload, hashlib.sha256).hexdigest()


def verify(purpose: str, payload: bytes, claimed: object) -> bool:
    """``claimed`` is the seal of ``payload`` for ``purpose`` under this user's key."""
    return isinstance(claimed, str) and hmac.compare_digest(seal(purpose, payload), claimed)


def why_not() -> str:
    """Words for a note about a saved file whose seal does not verify."""
    if _key()[1]:
        return "its seal cannot be verified without a key file (see the note above)"
    return ("its seal does not verify (edited, made by another user or on another machine, or "
            "by another version of selfmodel)")
