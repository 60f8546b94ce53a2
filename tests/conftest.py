"""Shared test fixtures. ``SHARED_DATA`` points at the real sample corpora (skip when absent)."""

import os
from pathlib import Path

import pytest

from tests.trained_reader import TrainedReader, train_tiny_reader

# The tests train tiny models: one torch thread is fastest for them, and on a machine whose
# cores are busy more threads make every small parallel section wait for a descheduled
# thread (the toy-task test took 463 s with 2 threads on a loaded 2-core machine, 34 s with
# 1). Set before torch is imported; subprocesses (DDP, resume tests) inherit it.
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")

SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"


@pytest.fixture
def one_thread():
    """Tiny LSTMs gain nothing from threads; on a loaded 2-core machine extra threads
    oversubscribe the cores and make these tests several times slower."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture
def shared_data() -> Path:
    if not SHARED_DATA.is_dir():
        pytest.skip("../shared/data is not present")
    return SHARED_DATA


# The answering tests' set-up (tests/test_api*.py, tests/serve/, ...).
@pytest.fixture(scope="session")
def trained(tmp_path_factory) -> TrainedReader:
    """The tiny trained reader and its corpus, trained once per test session."""
    return train_tiny_reader(tmp_path_factory.mktemp("answer"))


@pytest.fixture(scope="module")
def reader(trained: TrainedReader):
    """``attentive_reader.Reader`` loaded from the tiny reader's checkpoint (once a module)."""
    from attentive_reader import Reader

    return Reader.load(trained.ckpt)


# A child process that holds an output's lock until it is killed (a run in progress).
_HOLDER = """
import sys, time
from attentive_reader.common.locking import output_lock
with output_lock(sys.argv[1], sys.argv[2]):
    print("locked", flush=True)
    time.sleep(600)
"""


@pytest.fixture
def lock_holder():
    """``start(output, command)``: a child process holding ``output``'s lock (a ``Popen``)."""
    import subprocess
    import sys

    children = []

    def start(output, command: str = "preprocess") -> subprocess.Popen:
        child = subprocess.Popen(
            [sys.executable, "-c", _HOLDER, str(output), command],
            stdout=subprocess.PIPE,
            text=True,
        )
        children.append(child)
        assert child.stdout.readline().strip() == "locked"
        return child

    yield start
    for child in children:
        child.kill()
        child.wait()


@pytest.fixture
def small_disk(tmp_path):
    """``mount(size)``: a fresh ``tmpfs`` of ``size`` (e.g. ``"64k"``) under ``tmp_path``, a
    real small disk; ``resize(size)`` and ``read_only(flag)`` remount it. Skips where
    mounting is not allowed (not root, or a container without the capability)."""
    import subprocess

    point = tmp_path / "disk"
    point.mkdir()

    def run(*args: str) -> None:
        subprocess.run(["mount", *args, str(point)], check=True, capture_output=True)

    class Disk:
        path = point

        def resize(self, size: str) -> None:
            run("-o", f"remount,size={size}")

        def read_only(self, flag: bool) -> None:
            run("-o", "remount," + ("ro" if flag else "rw"))

    try:
        run("-t", "tmpfs", "-o", "size=64k", "tmpfs")
    except (OSError, subprocess.CalledProcessError) as error:
        pytest.skip(f"cannot mount a tmpfs here: {error}")
    try:
        yield Disk()
    finally:
        subprocess.run(["umount", "-l", str(point)], capture_output=True)
