"""One writer per output (``locking``) and write faults in one line (``faults``)."""

from __future__ import annotations

import errno
import os
import signal
import subprocess
import sys
import time

import pytest

from attentive_reader.cli import main as cli_main
from attentive_reader.common.faults import OutputError, describe, format_size, writing
from attentive_reader.common.locking import OutputInUse, holder, lock_path, output_lock

TRY_LOCK = """
import sys
from attentive_reader.common.locking import OutputInUse, output_lock
try:
    with output_lock(sys.argv[1], "test"):
        print("locked")
except OutputInUse as error:
    print(error)
    sys.exit(3)
"""


def _try_in_child(output) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", TRY_LOCK, str(output)], capture_output=True, text=True, timeout=60
    )


def test_a_run_arriving_second_is_refused_and_a_killed_holder_leaves_no_stale_lock(
    tmp_path, lock_holder
):
    out = tmp_path / "out"
    child = lock_holder(out, "preprocess")
    with pytest.raises(OutputInUse, match=rf"in use by process {child.pid} \(attentive-reader"):
        with output_lock(out, "preprocess"):
            pass
    assert not out.exists()  # touched nothing
    assert holder(out)["pid"] == child.pid
    child.send_signal(signal.SIGKILL)
    child.wait()
    with output_lock(out, "preprocess") as path:  # the kernel released it
        assert path == lock_path(out) and holder(out)["pid"] == os.getpid()
    assert not lock_path(out).exists()  # removed on release


def test_a_child_arriving_second_is_refused_while_this_process_holds_the_lock(tmp_path):
    out = tmp_path / "report.json"
    with output_lock(out, "evaluate"):
        with output_lock(out, "evaluate"):  # re-entrant within one process
            refused = _try_in_child(out)
        assert refused.returncode == 3, refused.stderr
        assert f"in use by process {os.getpid()}" in refused.stdout
    assert _try_in_child(out).stdout.strip() == "locked"


def test_forked_workers_do_not_keep_the_lock_after_their_parent(tmp_path):
    out = tmp_path / "out"
    with output_lock(out, "preprocess"):
        worker = os.fork()
        if worker == 0:  # a shard worker outliving its parent's lock
            time.sleep(5)
            os._exit(0)
    try:
        assert _try_in_child(out).stdout.strip() == "locked"
    finally:
        os.kill(worker, signal.SIGKILL)
        os.waitpid(worker, 0)


@pytest.mark.parametrize(
    ("code", "words"),
    [
        (errno.ENOSPC, ["the disk holding OUT is full: 1.5 MB written, about 4.0 MB needed",
                        "free space and run the same command again to continue"]),
        (errno.EROFS, ["OUT is on a read-only filesystem", "OUT/a cannot be written",
                       "(1.5 MB written)", "run the same command again"]),
        (errno.EACCES, ["no permission to write OUT/a (1.5 MB written)", "permissions"]),
        (errno.ENOTDIR, ["OUT/a: a part of this path is a file, not a folder"]),
        (errno.EEXIST, ["OUT/a is a file where a folder is needed"]),
    ],
)  # fmt: skip
def test_each_fault_says_what_where_how_much_and_what_to_do(code, words):
    line = describe(
        OSError(code, os.strerror(code), "OUT/a"), "OUT", written=1_500_000, needed=4_000_000
    )
    assert "\n" not in line
    for word in words:
        assert word in line


def test_format_size():
    assert [format_size(n) for n in (0, 999, 12_345, 3_400_000, 1_200_000_000)] == [
        "0 B",
        "999 B",
        "12 KB",
        "3.4 MB",
        "1.2 GB",
    ]


def test_writing_counts_the_bytes_written_and_runs_the_cleanups(tmp_path):
    out = tmp_path / "out"
    cleaned = []
    with pytest.raises(OutputError, match="is full: 999 B written, about 5.0 MB needed"):
        with writing(out, "export") as guard:
            out.mkdir()
            (out / "a").write_bytes(b"x" * 999)
            guard.needed = 5_000_000
            guard.cleanups.append(lambda: cleaned.append(True))
            raise OSError(errno.ENOSPC, "No space left on device", str(out / "b"))
    assert cleaned == [True] and not lock_path(out).exists()
    with pytest.raises(ValueError):  # other errors pass through unchanged
        with writing(out, "export"):
            raise ValueError("mine")


def test_a_path_through_a_file_and_a_stray_fault_are_one_line(tmp_path, capsys):
    (tmp_path / "file").write_text("x")
    with pytest.raises(OutputError, match="is a file where a folder is needed|not a folder"):
        with writing(tmp_path / "file" / "sub" / "out", "export"):
            pass


def test_the_console_entry_tells_a_stray_fault_in_one_line(monkeypatch, capsys):
    import attentive_reader.commands.export as export

    def read_only(argv):
        raise OSError(errno.EROFS, "Read-only file system", "/mnt/out/x")

    monkeypatch.setattr(export, "main", read_only)
    assert cli_main(["export", "data", "--output", "/mnt/out"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "/mnt/out is on a read-only filesystem" in err


def test_waiting_lock_makes_a_second_holder_wait_for_the_first(tmp_path):
    import threading

    from attentive_reader.common.locking import waiting_lock

    lock_file = tmp_path / "cache" / ".vocab.lock"
    order: list[str] = []
    with waiting_lock(lock_file):
        order.append("first")

        def second() -> None:
            with waiting_lock(lock_file):  # a second open file: flock makes it wait
                order.append("second")

        thread = threading.Thread(target=second)
        thread.start()
        thread.join(timeout=0.5)
        assert thread.is_alive() and order == ["first"]  # still waiting
        order.append("released")
    thread.join(timeout=10)
    assert order == ["first", "released", "second"]
    assert lock_file.is_file()  # the lock file stays for the next process
