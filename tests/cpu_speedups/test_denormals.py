"""Subnormal floats flushed to zero while a reader trains (``cpu_speedups/denormals.py``)."""

from __future__ import annotations

import pytest
import torch

from attentive_reader.cpu_speedups import CpuSpeedups, denormals
from tests.trainers import ProbeModule, quiet_trainer

SUBNORMAL = 1e-39  # below float32's smallest normal number, 1.18e-38
SUPPORTED = torch.set_flush_denormal(False)  # False on CPUs without the flags


def _survivors() -> int:
    """How many of a large tensor of subnormal numbers survive a product computed by
    torch's threads (two, each taking half)."""
    return int((torch.full((1 << 18,), SUBNORMAL) * 1.0).count_nonzero())


@pytest.fixture(autouse=True)
def _two_threads_restored():
    threads = torch.get_num_threads()
    torch.set_num_threads(2)
    yield
    denormals.restore_denormals()
    torch.set_num_threads(threads)


@pytest.mark.skipif(not SUPPORTED, reason="this CPU has no flush-to-zero flags")
def test_flushing_reaches_every_thread_and_restoring_undoes_it():
    assert _survivors() == 1 << 18
    setting = denormals.flush_denormals()
    assert setting.outcome in ("flushed", "calling thread") and denormals.flushed()
    if setting.outcome == "flushed":
        assert _survivors() == 0  # torch's other thread flushes too
    else:
        assert torch.tensor([SUBNORMAL]) * 1.0 == 0  # the calling thread at least
    assert denormals.restore_denormals() and not denormals.flushed()
    assert _survivors() == 1 << 18
    assert not denormals.restore_denormals()  # nothing left to restore


@pytest.mark.skipif(not SUPPORTED, reason="this CPU has no flush-to-zero flags")
def test_the_callback_flushes_through_the_training_loop_only():
    module = ProbeModule(denormals.flushed)
    quiet_trainer(max_epochs=1, callbacks=[CpuSpeedups(allocator=False)]).fit(module)
    assert module.seen == [True, True]
    assert not denormals.flushed()

    failing = ProbeModule(denormals.flushed, fail=True)
    with pytest.raises(ValueError, match="a bad step"):
        quiet_trainer(max_epochs=1, callbacks=[CpuSpeedups(allocator=False)]).fit(failing)
    assert not denormals.flushed()

    module = ProbeModule(denormals.flushed)  # switched off
    quiet_trainer(max_epochs=1, callbacks=[CpuSpeedups(denormals=False)]).fit(module)
    assert module.seen == [False, False]


def test_the_with_block_restores_however_it_ends():
    with pytest.raises(ValueError, match="a bad loop"):
        with denormals.denormals_flushed() as setting:
            assert denormals.flushed() == (setting.outcome != "unsupported")
            raise ValueError("a bad loop")
    assert not denormals.flushed()
