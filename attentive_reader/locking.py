"""One writer per output: an exclusive lock on every directory or file the toolkit writes.

``waiting_lock(lock_file)`` is the blocking flavour, for work that a second process waits
for and then reuses (the encoded-ids cache).

``output_lock(path, command)`` takes ``fcntl.flock`` on a lock file beside the output,
``PARENT/.NAME.lock``, which records the holder (process id, host, command). A second run on
the same output fails at once with ``OutputInUse`` (a ``UserError``: one line, no traceback)
and touches nothing. The kernel releases the lock when the holder's process ends, so a run
killed with ``kill -9`` never leaves a stale lock; the lock file is removed on release.

The lock lives beside the output rather than inside it so that it also guards outputs that
are replaced by a rename (``export``) and files (``evaluate --out``). ``flock`` works on local
filesystems and on NFS (Linux emulates it with byte-range locks), so two machines sharing a
folder see each other's lock.

Processes forked by the holder (shard workers, data loader workers) close their inherited
copy of the lock at fork, so that a worker outliving a killed parent does not keep the
output locked; they write under their parent's lock.
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from attentive_reader.common.errors import UserError

# Lock file -> [descriptor, depth] of the locks this process holds (closed in forked children).
_HELD: dict[Path, list[int]] = {}


def _close_inherited() -> None:
    for fd, _ in _HELD.values():
        try:
            os.close(fd)  # drops the child's reference only; the parent keeps the lock
        except OSError:
            pass
    _HELD.clear()


os.register_at_fork(after_in_child=_close_inherited)


@contextmanager
def waiting_lock(lock_file: Path) -> Iterator[None]:
    """Hold an exclusive ``flock`` on ``lock_file`` for the ``with`` block, waiting for a
    holder to release it (for work a second process should wait for, then reuse: the
    encoded-ids cache). Creates the file and its folder; the file stays.

    Raises:
        OSError: the lock file cannot be created.
    """
    lock_file.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(lock_file, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # releases the lock


class OutputInUse(UserError):
    """Another process holds the lock of an output."""


def lock_path(output: str | os.PathLike) -> Path:
    """The lock file of ``output``: ``PARENT/.NAME.lock`` (the output resolved first)."""
    target = Path(output).resolve()
    return target.parent / f".{target.name}.lock"


def holder(output: str | os.PathLike) -> dict | None:
    """What the lock file of ``output`` records about its holder, if it can be read."""
    try:
        data = json.loads(lock_path(output).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _describe(info: dict | None) -> str:
    if not info or "pid" not in info:
        return "another process"
    text = f"process {info['pid']}"
    if info.get("host") and info["host"] != socket.gethostname():
        text += f" on {info['host']}"
    if info.get("command"):
        text += f" (attentive-reader {info['command']})"
    return text


@contextmanager
def output_lock(output: str | os.PathLike, command: str) -> Iterator[Path]:
    """Hold the exclusive lock of ``output`` for the body of the ``with`` block.

    Creates the output's parent folder if needed (nothing else). Re-entrant: a process
    that holds the lock may take it again (a command around a library call that locks).

    Args:
        output: the directory or file the caller will write.
        command: the command's name, recorded for the message a second run prints.

    Yields:
        The lock file's path.

    Raises:
        OutputInUse: another process holds the lock (its id is in the message).
        OSError: the lock file cannot be created (read-only folder, no permission, ...).
    """
    path = lock_path(output)
    if path in _HELD:
        _HELD[path][1] += 1
        try:
            yield path
        finally:
            _HELD[path][1] -= 1
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise OutputInUse(
                f"{Path(output)} is in use by {_describe(holder(output))}; wait for that run "
                "to finish (or stop it), or choose another output"
            ) from None
        except BaseException:
            os.close(fd)
            raise
        # The previous holder may have removed the file between our open and our lock:
        # then we hold a lock on a file nobody else can see; open the current one again.
        try:
            same = os.stat(path).st_ino == os.fstat(fd).st_ino
        except FileNotFoundError:
            same = False
        if same:
            break
        os.close(fd)
    _HELD[path] = [fd, 1]
    try:
        record = {"pid": os.getpid(), "host": socket.gethostname(), "command": command}
        os.ftruncate(fd, 0)
        os.pwrite(fd, (json.dumps(record) + "\n").encode(), 0)
        yield path
    finally:
        del _HELD[path]
        try:
            path.unlink()  # before the unlock: a waiting opener then retries (see above)
        except OSError:
            pass
        os.close(fd)
