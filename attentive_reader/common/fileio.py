"""Writing a file whole, and the digest of a value (floor 0: imports nothing of the package).

``replacing`` is the one temp-file-and-rename of the package: the new content goes to a
temporary sibling, is flushed to disk (``fsync``) and then renamed over the target, so that a
reader of the target sees the old file or the whole new one, never a part, even after a
crash or a full disk; on an error the temporary file is removed. ``place`` is the rename
itself for what a caller built elsewhere first (a folder, a staged dataset, a resumed
download): it syncs the file and the folder that receives it, so the rename survives a crash.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import socket
from collections.abc import Iterator
from pathlib import Path


@contextlib.contextmanager
def replacing(path: Path) -> Iterator[Path]:
    """A temporary file beside ``path`` that replaces ``path`` when the block ends without an
    error.

    The block writes the temporary file (and closes it); it is then synced and renamed. Its
    name, ``.NAME.tmp-HOST-PID`` and ``path``'s suffix (matplotlib reads the format from it),
    is unique to this host and process; ``.NAME.tmp-*`` finds the leftovers of a crash.
    """
    path = Path(path)
    tmp = path.with_name(f".{path.name}.tmp-{socket.gethostname()}-{os.getpid()}{path.suffix}")
    try:
        yield tmp
        _fsync(tmp)
        os.replace(tmp, path)
    except BaseException:  # e.g. a full disk: leave no partial file behind
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)
        raise


def write_text_atomic(path: Path, text: str) -> None:
    """Write ``text`` (UTF-8) to ``path`` whole (``replacing``)."""
    with replacing(path) as tmp:
        tmp.write_text(text, encoding="utf-8")


def write_json_atomic(path: Path, data: object) -> None:
    """Write ``data`` as indented JSON to ``path`` whole (``replacing``)."""
    write_text_atomic(path, json.dumps(data, indent=2, ensure_ascii=False) + "\n")


def digest_of(value: object) -> str:
    """The SHA-256 hex digest of ``value`` as JSON with sorted keys: equal values, equal
    digests, whatever the order of their dicts."""
    return hashlib.sha256(json.dumps(value, sort_keys=True).encode("utf-8")).hexdigest()


def place(built: Path, target: Path) -> None:
    """Move ``built`` (a finished file or folder) to ``target`` in one rename.

    A file is flushed to disk first; afterwards the receiving folder is synced, so that after
    a crash ``target`` is either absent (or the old one) or whole. ``target``, when it exists,
    must be a file or an empty folder (the rename's rule).
    """
    built, target = Path(built), Path(target)
    if built.is_file():
        _fsync(built)
    os.replace(built, target)
    _fsync_folder(target.parent)


def _fsync_folder(folder: Path) -> None:
    with contextlib.suppress(OSError):  # not every system can open a folder for syncing
        descriptor = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(descriptor)
        finally:
            os.close(descriptor)


def _fsync(path: Path) -> None:
    with open(path, "rb") as handle:
        os.fsync(handle.fileno())
