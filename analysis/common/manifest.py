"""What ``selfmodel`` wrote into an output folder: the manifest in its marker file.

Every output folder carries the file :data:`MARKER` (``.selfmodel-out``): a JSON manifest
listing every file ``selfmodel`` wrote there with the SHA-256 of its bytes, and the folders
it made. A folder is ``selfmodel``'s only as far as the manifest proves it; ``fits/`` is
proven by a rule (files named by the key of what they hold, :data:`CACHE_NAME`, each with a
content check); a marker of versions before the manifest (:data:`LEGACY_TEXT`) proves no
file. The rules: ``docs/cli.md`` ("Output folders and limits").
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import stat
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

#: The marker file of an output folder: the manifest of what selfmodel wrote there.
MARKER: Final = ".selfmodel-out"
#: The one folder selfmodel makes in an output folder: the cache of saved fits and checks.
FITS: Final = "fits"
#: The manifest's format; another value is a marker this version does not read.
FORMAT: Final = 1
#: The marker of versions before the manifest (a folder they made; no file proven).
LEGACY_TEXT: Final = ("This folder holds outputs of selfmodel (its commands write only into a "
                      "folder with this file, an empty one or a new one).\n")
ABOUT: Final = ("selfmodel wrote the files listed under 'files' (SHA-256 of their bytes) and "
                "made the folders under 'folders'. Every other entry of this folder, and a "
                "listed file whose bytes changed, is yours: selfmodel never overwrites, moves "
                "or removes it.")
#: The name of every file selfmodel writes into ``fits/``: the key of what it holds.
CACHE_NAME: Final = re.compile(r"^[^./][^/]*-[0-9a-f]{16}\.[A-Za-z0-9.]+$")
_HEX64: Final = re.compile(r"^[0-9a-f]{64}$")
_CHUNK: Final = 1 << 20


class MarkerError(ValueError):
    """The marker file is not one selfmodel wrote (another format, a link, a folder)."""


@dataclass(frozen=True)
class Manifest:
    """What a marker proves: files (relative name -> SHA-256) and folders selfmodel made."""

    files: Mapping[str, str] = field(default_factory=dict)
    folders: frozenset[str] = frozenset()
    legacy: bool = False

    def proves(self, folder: Path, name: str) -> bool:
        """Whether ``folder/name`` is a regular file with the bytes selfmodel wrote there."""
        digest = self.files.get(name)
        return digest is not None and file_sha256(folder / name) == digest

    def proves_folder(self, folder: Path, name: str) -> bool:
        """Whether ``folder/name`` is a real folder (not a link) that selfmodel made."""
        return name in self.folders and _is_real_dir(folder / name)

    def text(self) -> str:
        """The marker file's text (JSON, names sorted)."""
        return json.dumps({"selfmodel": "outputs", "format": FORMAT, "about": ABOUT,
                           "folders": sorted(self.folders),
                           "files": dict(sorted(self.files.items()))}, indent=1) + "\n"


def file_sha256(path: Path) -> str | None:
    """SHA-256 of a regular file (links not followed); ``None`` for anything else."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        h = hashlib.sha256()
        while chunk := os.read(fd, _CHUNK):
            h.update(chunk)
        return h.hexdigest()
    finally:
        os.close(fd)


def _is_real_dir(path: Path) -> bool:
    try:
        return stat.S_ISDIR(path.lstat().st_mode)
    except OSError:
        return False


def read(folder: Path) -> Manifest | None:
    """The manifest of ``folder``; ``None`` without a marker.

    Raises :class:`MarkerError` when the marker is not one selfmodel wrote.
    """
    path = folder / MARKER
    try:
        st = path.lstat()
    except FileNotFoundError:
        return None
    except NotADirectoryError:
        return None
    if not stat.S_ISREG(st.st_mode):
        raise MarkerError(f"{path} is not a file")
    raw = path.read_bytes()
    if raw == LEGACY_TEXT.encode():
        return Manifest(legacy=True)
    try:
        doc: Any = json.loads(raw)
    except ValueError:
        raise MarkerError(f"{path} is not a manifest of selfmodel") from None
    if not (isinstance(doc, dict) and doc.get("selfmodel") == "outputs"
            and doc.get("format") == FORMAT):
        raise MarkerError(f"{path} is not a manifest of selfmodel")
    files, folders = doc.get("files"), doc.get("folders")
    if not (isinstance(files, dict) and isinstance(folders, list)
            and all(isinstance(k, str) and isinstance(v, str) and _HEX64.match(v)
                    for k, v in files.items())
            and all(isinstance(f, str) for f in folders)):
        raise MarkerError(f"{path} is not a manifest of selfmodel")
    return Manifest(files=dict(files), folders=frozenset(folders))


def is_cache_name(name: str) -> bool:
    """Whether ``name`` has the form of a saved fit or check in ``fits/`` (:data:`CACHE_NAME`)."""
    return CACHE_NAME.match(name) is not None
