"""Faults of the machine while writing an output, told in one line.

A full disk, a read-only folder, a missing permission or a path that runs through a file
raise ``OSError`` deep inside pyarrow, datasets or ``open``. ``writing(output, command)``
holds the output's lock (``locking.output_lock``) and turns those errors into an
``OutputError`` (a ``UserError``: one line, no traceback, a non-zero exit) that says what
went wrong, where, how much had been written and what to do. The writers keep their outputs
so that a failed run never looks complete and the same command continues once the cause is
fixed.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from attentive_reader.common.errors import UserError
from attentive_reader.common.locking import output_lock

# The errors of the machine ``writing`` turns into one line (others keep their traceback).
WRITE_ERRNOS = frozenset(
    {
        errno.ENOSPC,
        errno.EDQUOT,
        errno.EROFS,
        errno.EACCES,
        errno.EPERM,
        errno.ENOTDIR,
        errno.EEXIST,
        errno.EISDIR,
    }
)


class OutputError(UserError):
    """Writing an output failed for a reason of the machine (disk, permissions, paths)."""


def is_write_fault(error: BaseException) -> bool:
    """Whether ``error`` is an ``OSError`` that ``writing`` reports in one line."""
    return isinstance(error, OSError) and error.errno in WRITE_ERRNOS


def size_of(*paths: str | os.PathLike) -> int:
    """Bytes in the files under ``paths`` (files or folders; missing ones count 0)."""
    size = 0
    for path in paths:
        try:
            if not os.path.isdir(path):
                size += os.path.getsize(path)
                continue
        except OSError:
            continue
        for root, _, files in os.walk(path):
            for name in files:
                try:
                    size += os.lstat(os.path.join(root, name)).st_size
                except OSError:
                    pass
    return size


def format_size(size: int) -> str:
    """``size`` bytes for a reader: ``0 B``, ``12 KB``, ``3.4 MB``, ``1.2 GB``."""
    if size < 1000:
        return f"{size} B"
    if size < 1_000_000:
        return f"{size / 1000:.0f} KB"
    if size < 1_000_000_000:
        return f"{size / 1e6:.1f} MB"
    return f"{size / 1e9:.1f} GB"


def describe(
    error: OSError,
    output: str | os.PathLike | None = None,
    *,
    written: int | None = None,
    needed: int | None = None,
) -> str:
    """The one line for a write fault: what, where, how much was written, what to do."""
    where = str(output) if output is not None else os.path.dirname(str(error.filename or ""))
    name = str(error.filename) if error.filename else where
    done = f"{format_size(written)} written" if written is not None else ""
    again = "then run the same command again"
    code = error.errno
    if code in (errno.ENOSPC, errno.EDQUOT):
        what = "full" if code == errno.ENOSPC else "over your disk quota"
        amounts = [done] if done else []
        if needed:
            amounts.append(f"about {format_size(needed)} needed")
        detail = f": {', '.join(amounts)}" if amounts else ""
        return (
            f"the disk holding {where} is {what}{detail}; free space and run the same command "
            "again to continue"
        )
    note = f" ({done})" if done else ""
    if code == errno.EROFS:
        return (
            f"{where} is on a read-only filesystem, {name} cannot be written{note}; "
            f"choose a writable output or make it writable, {again}"
        )
    if code in (errno.EACCES, errno.EPERM):
        return (
            f"no permission to write {name}{note}; fix the permissions of that folder or "
            f"choose another output, {again}"
        )
    if code == errno.ENOTDIR:
        return (
            f"{name}: a part of this path is a file, not a folder{note}; move that file away "
            f"or choose another output, {again}"
        )
    if code == errno.EEXIST:
        return (
            f"{name} is a file where a folder is needed{note}; move it away or choose another "
            f"output, {again}"
        )
    if code == errno.EISDIR:
        return (
            f"{name} is a folder where a file is needed{note}; move it away or choose another "
            f"output, {again}"
        )
    return f"cannot write {name}: {error.strerror}{note}"


@dataclass
class WriteGuard:
    """What ``writing`` knows about the output while the body runs.

    Attributes:
        output: the directory or file being written.
        also: other paths that hold this run's bytes (e.g. a temporary sibling folder),
            counted in "written".
        needed: the expected size of the whole output in bytes, once known (``preprocess``
            estimates it from its first shard); shown for a full disk.
        cleanups: called, after "written" is measured, when a write fault ends the run.
    """

    output: Path
    also: tuple[Path, ...] = ()
    needed: int | None = None
    cleanups: list[Callable[[], None]] = field(default_factory=list)


@contextmanager
def writing(
    output: str | os.PathLike, command: str, *, also: tuple[str | os.PathLike, ...] = ()
) -> Iterator[WriteGuard]:
    """Hold the lock of ``output`` and report write faults in its body as ``OutputError``.

    Args:
        output: the directory or file the body writes.
        command: the command's name (recorded in the lock for a second run's message).
        also: other paths the body writes for this output (their bytes count as written).

    Raises:
        OutputInUse: another run holds the output.
        OutputError: a full disk, a read-only filesystem, a missing permission or a path
            through a file, while taking the lock or in the body.
    """
    guard = WriteGuard(Path(output), tuple(Path(p) for p in also))
    try:
        with output_lock(output, command):
            yield guard
    except OSError as error:
        if not is_write_fault(error):
            raise
        written = size_of(guard.output, *guard.also)
        for cleanup in guard.cleanups:
            try:
                cleanup()
            except OSError:
                pass
        raise OutputError(
            describe(error, guard.output, written=written, needed=guard.needed)
        ) from None
