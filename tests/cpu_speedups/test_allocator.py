"""Freed memory kept through the training loop on glibc (``cpu_speedups/allocator.py``)."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import textwrap

import pytest
import pytorch_lightning as pl

from attentive_reader.cpu_speedups import CpuSpeedups, allocator
from tests.trainers import ProbeModule, quiet_trainer

GLIBC = platform.system() == "Linux" and platform.libc_ver()[0] == "glibc"


@pytest.fixture(autouse=True)
def released():
    """No test leaves malloc changed for the rest of the run."""
    yield
    allocator.release_freed_memory()


@pytest.mark.parametrize(
    ("environ", "outcome", "reason"),
    [
        ({"LD_PRELOAD": "/usr/lib/libjemalloc.so.2"}, "user", "LD_PRELOAD holds jemalloc"),
        ({"LD_PRELOAD": "libtcmalloc_minimal.so.4"}, "user", "LD_PRELOAD holds tcmalloc"),
        ({"MALLOC_ARENA_MAX_": "2"}, "user", "MALLOC_ARENA_MAX_ is set"),
        (
            {"GLIBC_TUNABLES": "glibc.malloc.mmap_threshold=1000000"},
            "user",
            "GLIBC_TUNABLES sets malloc tunables",
        ),
    ],
)
def test_the_users_choice_is_left_alone(environ, outcome, reason) -> None:
    setting = allocator.keep_freed_memory(environ)
    assert (setting.outcome, setting.reason) == (outcome, reason)
    assert not allocator.kept()
    assert not allocator.release_freed_memory()  # nothing to release


FAULTS = textwrap.dedent(
    """
    import json, resource, sys
    import torch
    from attentive_reader.cpu_speedups.allocator import keep_freed_memory, release_freed_memory

    def faults(repeats):
        before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        for _ in range(repeats):
            torch.empty(64 << 20, dtype=torch.uint8).fill_(1)  # 64 MiB, freed at once
        return resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before

    def resident_mib():
        status = open("/proc/self/status").read().split("VmRSS:")[1]
        return int(status.split()[0]) // 1024

    figures = {"system": faults(5), "outcome": keep_freed_memory({}).outcome}
    faults(16)  # the heap grows to hold the blocks (torch aligns them) ...
    figures["kept"] = faults(5)  # ... then reuses them
    figures["resident_kept"] = resident_mib()
    release_freed_memory()
    figures["resident_released"] = resident_mib()
    figures["released"] = faults(5)
    print(json.dumps(figures))
    """
)


@pytest.mark.slow
@pytest.mark.skipif(not GLIBC, reason="glibc only")
def test_freed_blocks_are_reused_while_kept_and_given_back_when_released() -> None:
    done = subprocess.run(
        [sys.executable, "-c", FAULTS], capture_output=True, text=True, check=True
    )
    figures = json.loads(done.stdout.splitlines()[-1])
    assert figures["outcome"] == "kept"
    # Five fresh 64 MiB blocks: 5 x 16,384 pages faulted in under the system's malloc and
    # again after the release; (nearly) none while freed memory is kept.
    assert figures["system"] >= 5 * 16_384
    assert figures["kept"] < 1_000
    assert figures["released"] >= 5 * 16_384
    # The release gives the kept blocks back to the kernel: at least one 64 MiB block.
    assert figures["resident_released"] <= figures["resident_kept"] - 64


def _trainer(callback: CpuSpeedups) -> pl.Trainer:
    return quiet_trainer(
        max_epochs=1,
        callbacks=[callback],
    )


@pytest.mark.skipif(not GLIBC, reason="glibc only")
def test_the_callback_keeps_freed_memory_through_the_training_loop_only() -> None:
    callback, module = CpuSpeedups(denormals=False), ProbeModule(allocator.kept)
    callback.memory.available = lambda: None  # kept however busy the machine running it
    _trainer(callback).fit(module)
    assert module.seen == [True, True]
    assert callback.memory.setting is not None and callback.memory.setting.outcome == "kept"
    assert not allocator.kept()  # released when fit ended

    module = ProbeModule(allocator.kept)
    _trainer(CpuSpeedups(allocator=False)).fit(module)  # switched off
    assert module.seen == [False, False]


def test_a_failing_step_releases_the_memory() -> None:
    with pytest.raises(ValueError, match="a bad step"):
        _trainer(CpuSpeedups()).fit(ProbeModule(allocator.kept, fail=True))
    assert not allocator.kept()


@pytest.mark.skipif(not GLIBC, reason="glibc only")
def test_the_with_block_keeps_inside_and_releases_however_it_ends() -> None:
    with pytest.raises(ValueError, match="a bad loop"):
        with allocator.freed_memory_kept({}) as setting:
            assert setting.outcome == "kept" and allocator.kept()
            raise ValueError("a bad loop")
    assert not allocator.kept()


class Readings:
    """Resident memory readings in MiB, one a call, the last repeated."""

    def __init__(self, *mib: int) -> None:
        self.mib, self.calls = list(mib), 0

    def __call__(self) -> int:
        self.calls += 1
        return (self.mib.pop(0) if len(self.mib) > 1 else self.mib[0]) << 20


def _batches(bound: allocator.MemoryBound, count: int) -> list[bool]:
    """Run COUNT training batches' ends through the bound; whether memory was kept after each."""
    kept = []
    for _ in range(count):
        bound.after_batch()
        kept.append(allocator.kept())
    return kept


@pytest.mark.skipif(not GLIBC, reason="glibc only")
def test_memory_that_keeps_growing_goes_back_to_the_system(caplog) -> None:
    # The level after 4 batches is 1,000 MiB; read again after 6 and 8 batches: 1,900 MiB
    # stays kept (under twice the level), 2,100 MiB does not.
    readings = Readings(1000, 1900, 2100)
    bound = allocator.MemoryBound(
        warmup_steps=4, check_every=2, resident=readings, available=lambda: None
    )
    bound.setting = allocator.keep_freed_memory({})
    with caplog.at_level("WARNING", logger="attentive_reader.cpu_speedups.allocator"):
        kept = _batches(bound, 12)
    assert kept == [True] * 7 + [False] * 5
    assert readings.calls == 3  # after batches 4, 6 and 8; none once given back
    assert bound.released == (1000 << 20, 2100 << 20)
    assert "grew from 1000 MiB after 4 steps to 2100 MiB after 8" in caplog.text
    assert "CpuSpeedups(allocator=false)" in caplog.text


@pytest.mark.skipif(not GLIBC, reason="glibc only")
def test_memory_that_settles_stays_kept() -> None:
    readings = Readings(1000, 1500, 1999, 2000, 1800)
    bound = allocator.MemoryBound(
        warmup_steps=1, check_every=1, resident=readings, available=lambda: None
    )
    bound.setting = allocator.keep_freed_memory({})
    assert _batches(bound, 8) == [True] * 8
    assert bound.released is None


@pytest.mark.skipif(not GLIBC, reason="glibc only")
def test_memory_goes_back_when_the_machine_ran_short_at_the_peak(caplog) -> None:
    # A large batch on 24 GiB: the run holds 10,000 MiB after each batch and stays under twice
    # its level, and 6 GiB of the machine is available then; after batch 3 the run had peaked
    # at 14,500 MiB since the batch before, so at the peak only 6,144 - 4,500 = 1,644 MiB was
    # available: under a tenth (2,457.6 MiB), though 6 GiB is over it.
    peaks = Readings(10500, 11000, 14500)
    bound = allocator.MemoryBound(
        warmup_steps=20,
        resident=Readings(10000),
        available=lambda: (6 << 30, 24 << 30),
        peak=peaks,
    )
    bound.setting = allocator.keep_freed_memory({})
    with caplog.at_level("WARNING", logger="attentive_reader.cpu_speedups.allocator"):
        kept = _batches(bound, 5)
    assert kept == [True] * 2 + [False] * 3  # read after every batch, before the warm-up ends
    assert peaks.calls == 3  # none once given back
    assert bound.released == (10000 << 20, 10000 << 20)
    assert "had about 1644 MiB of its 24576 MiB available" in caplog.text
    assert "at this run's peak of 14500 MiB, by step 3" in caplog.text


@pytest.mark.skipif(not GLIBC, reason="glibc only")
def test_memory_goes_back_when_the_machine_runs_short_now(caplog) -> None:
    # No peak reading: the machine is judged by its memory now, 12, 3 and then 2 GiB of 24.
    machine = iter([(12 << 30, 24 << 30), (3 << 30, 24 << 30), (2 << 30, 24 << 30)])
    bound = allocator.MemoryBound(
        resident=Readings(9000), available=lambda: next(machine), peak=lambda: None
    )
    bound.setting = allocator.keep_freed_memory({})
    with caplog.at_level("WARNING", logger="attentive_reader.cpu_speedups.allocator"):
        kept = _batches(bound, 5)
    assert kept == [True] * 2 + [False] * 3
    assert "had about 2048 MiB of its 24576 MiB available at this run's peak of 9000" in (
        caplog.text
    )


@pytest.mark.skipif(not GLIBC, reason="glibc only")
def test_a_machine_with_memory_to_spare_keeps_it() -> None:
    # Exactly a tenth available at the peak is enough (2 GiB now, the peak 1 GiB above the
    # run's memory now, of 10 GiB); no reading of the machine checks only the growth.
    for machine in ((2 << 30, 10 << 30), None):
        bound = allocator.MemoryBound(
            warmup_steps=1,
            check_every=1,
            resident=Readings(1000),
            available=lambda m=machine: m,
            peak=Readings(1000 + 1024),
        )
        bound.setting = allocator.keep_freed_memory({})
        assert _batches(bound, 4) == [True] * 4
        assert bound.released is None
        allocator.release_freed_memory()


@pytest.mark.skipif(platform.system() != "Linux", reason="Linux's /proc only")
def test_the_peak_is_read_from_proc_and_starts_again_at_each_reading() -> None:
    allocator.peak_resident_bytes()
    before = allocator.resident_bytes()
    block = bytearray(300 << 20)  # touched: zeroed pages count as resident once written
    block[::4096] = b"x" * len(block[::4096])
    del block  # a block this large goes straight back to the kernel
    peak = allocator.peak_resident_bytes()
    assert peak >= before + (290 << 20)
    # The reading reset the peak to the memory now (clear_refs), far under the block's.
    assert allocator.peak_resident_bytes() < before + (100 << 20)


def test_the_machine_memory_is_read_from_proc() -> None:
    machine = allocator.available_bytes()
    if not os.path.exists("/proc/meminfo"):
        assert machine is None
        return
    available, total = machine
    assert 0 < available <= total < 1 << 50


def test_without_a_reading_nothing_is_checked() -> None:
    bound = allocator.MemoryBound(warmup_steps=1, check_every=1, resident=lambda: None)
    bound.setting = allocator.keep_freed_memory({})
    _batches(bound, 5)
    assert bound.released is None
    assert allocator.kept() == (bound.setting.outcome == "kept")


def test_the_resident_memory_is_read_from_proc() -> None:
    resident = allocator.resident_bytes()
    if platform.system() != "Linux":
        assert resident is None
        return
    # This process holds at least torch, and far less than a terabyte.
    assert 50 << 20 < resident < 1 << 40


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"growth": 1.0}, "growth must be above 1"),
        ({"warmup_steps": 0}, "warmup_steps must be a positive integer"),
        ({"check_every": -1}, "check_every must be a positive integer"),
        ({"min_available": 1.0}, "min_available must be a share from 0 to 1"),
    ],
)
def test_the_bound_takes_sensible_settings(options, message) -> None:
    with pytest.raises(ValueError, match=message):
        allocator.MemoryBound(**options)
