"""Gzipped tar archives read as a stream, never unpacked: the members of one kind, in member
order, and a damaged archive told as a counted skip.

``.story`` archives (``cnn_stories.tgz``) and DeepMind's ``.question`` archives (``cnn.tgz``)
are both read through ``iter_members``; ``inputs.detect_kind`` tells them apart by the
first member names.
"""

from __future__ import annotations

import tarfile
import zlib
from collections.abc import Iterator
from pathlib import Path

from attentive_reader.common.errors import UserError
from attentive_reader.corpus.records import Skip

# What a damaged gzip stream or tar archive raises while it is read.
ARCHIVE_ERRORS = (tarfile.TarError, EOFError, zlib.error, OSError)


def open_stream(path: Path) -> tarfile.TarFile:
    """``path`` opened as a gzipped tar stream (``r|gz``).

    Raises:
        UserError: it is not a readable gzipped tar archive.
    """
    try:
        return tarfile.open(path, mode="r|gz")
    except ARCHIVE_ERRORS as err:
        raise UserError(f"{path}: not a readable .tgz archive ({err})") from None


def iter_members(path: Path, suffix: str, noun: str) -> Iterator[tuple[str, bytes] | Skip]:
    """Stream the regular files of an archive whose names end in ``suffix``.

    Args:
        path: a ``.tgz`` / ``.tar.gz`` archive.
        suffix: the members wanted (``.story``, ``.question``); others are passed over.
        noun: what those members are, for the message of a damaged archive (``stories``).

    Yields:
        ``(member name, bytes)`` in member order; where the archive ends early or is
        corrupt, one last ``Skip`` (reason ``truncated_archive``) naming the archive, the
        member and how many were read before it.

    Raises:
        UserError: ``path`` is not a readable gzipped tar archive.
    """
    tar = open_stream(path)
    current: str | None = None  # the member being read, or the last one read
    inside = False
    read = 0
    with tar:
        try:
            while True:
                inside = False
                member = tar.next()
                if member is None:
                    break
                tar.members.clear()  # stream mode keeps every header otherwise
                current = member.name
                if not member.isfile() or not member.name.lower().endswith(suffix):
                    continue
                inside = True
                handle = tar.extractfile(member)
                data = handle.read() if handle is not None else b""
                read += 1
                yield member.name, data
        except ARCHIVE_ERRORS as err:
            where = (
                f"inside member {current}"
                if inside
                else (f"after member {current}" if current else "before the first member")
            )
            yield Skip(
                f"{path}:{current}" if current else str(path),
                "truncated_archive",
                f"archive ends early or is corrupt ({err}) {where}; "
                f"{read} {noun} were read before it",
            )


def first_member_suffix(path: Path, suffixes: tuple[str, ...], limit: int = 1000) -> str | None:
    """The suffix, among ``suffixes``, of the first regular file of an archive that has one.

    Streams the archive's headers (the data of members passed over is read past, not kept)
    and stops at the first match, or after ``limit`` members. ``None`` when no member of the
    first ``limit`` matches or the archive cannot be read (its reader then says why).
    """
    try:
        with tarfile.open(path, mode="r|gz") as tar:
            for _ in range(limit):
                member = tar.next()
                if member is None:
                    return None
                tar.members.clear()
                name = member.name.lower()
                found = [s for s in suffixes if name.endswith(s)] if member.isfile() else []
                if found:
                    return found[0]
    except ARCHIVE_ERRORS:
        return None
    return None
