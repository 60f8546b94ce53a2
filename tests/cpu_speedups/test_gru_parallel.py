"""The GRU's step loops with each direction on its own thread (``cpu_speedups/gru_parallel.py``): the same
values and gradients as the loops over both directions together, and when they are used."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from torch import nn

from attentive_reader.cpu_speedups import gru_parallel
from attentive_reader.cpu_speedups.gru import packed_gru


@pytest.fixture(autouse=True)
def small_loops_in_parallel(monkeypatch):
    """The tests' loops are short: run them in parallel all the same."""
    monkeypatch.setattr(gru_parallel, "MIN_WORK", 1)


@pytest.fixture
def two_threads():
    threads = torch.get_num_threads()
    torch.set_num_threads(2)
    yield
    torch.set_num_threads(threads)


@pytest.fixture
def counted(monkeypatch):
    """How often the parallel loops ran, forward and backward."""
    calls = {"forward": 0, "backward": 0}
    for name in calls:
        original = getattr(gru_parallel.Loops, name)

        def wrapper(self, *args, _name=name, _original=original):
            calls[_name] += 1
            return _original(self, *args)

        monkeypatch.setattr(gru_parallel.Loops, name, wrapper)
    return calls


def _run(lengths, dtype, seed=0, parallel=True):
    """States and gradients of a bidirectional GRU layer (two cells) over a padded batch."""
    generator = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    cells = [nn.GRU(6, 5).to(dtype) for _ in range(2)]
    n = max(lengths)
    lengths_t = torch.tensor(lengths)
    inputs = torch.randn(len(lengths), n, 6, generator=generator, dtype=dtype)
    inputs = torch.where((torch.arange(n) < lengths_t.unsqueeze(1)).unsqueeze(-1), inputs, 0.0)
    inputs.requires_grad_()
    states = packed_gru(inputs, lengths_t, cells, (False, True), parallel)
    weights = torch.randn(states.shape, generator=generator, dtype=dtype)
    tensors = [inputs, *(p for cell in cells for p in cell.parameters())]
    return states.detach(), torch.autograd.grad((states * weights).sum(), tensors)


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize("lengths", [[9, 3, 7, 1, 0], [4, 4, 4], [1]])
def test_parallel_directions_give_the_serial_values_and_gradients(
    lengths, dtype, two_threads, counted, monkeypatch
):
    states, grads = _run(lengths, dtype)
    assert counted == {"forward": 1, "backward": 1}  # the parallel loops ran
    serial_states, serial_grads = _run(lengths, dtype, parallel=False)  # gru_directions
    assert counted == {"forward": 1, "backward": 1}  # and here they did not
    tolerance = 1e-12 if dtype == torch.float64 else 1e-6
    assert torch.allclose(states, serial_states, atol=tolerance, rtol=0)
    for got, expected in zip(grads, serial_grads, strict=True):
        assert torch.allclose(got, expected, atol=tolerance, rtol=0)
    assert torch.get_num_threads() == 2  # restored after the loops


def test_one_thread_one_direction_or_a_short_loop_keeps_the_serial_loops(counted, monkeypatch):
    threads = torch.get_num_threads()
    try:
        torch.set_num_threads(1)  # the process was told to use one thread
        assert gru_parallel.loops(2) is None
        _run([5, 3], torch.float64)
        torch.set_num_threads(2)
        assert gru_parallel.loops(1) is None
        monkeypatch.setattr(gru_parallel, "MIN_WORK", 100)
        assert gru_parallel.loops(2, steps=9, hidden=11) is None  # 99: too little work
        assert gru_parallel.loops(2, steps=10, hidden=10) is not None
    finally:
        torch.set_num_threads(threads)
    assert counted == {"forward": 0, "backward": 0}


def test_without_torchscript_the_serial_loops_serve(two_threads, counted, monkeypatch):
    def no_script(function):
        raise OSError("could not get source code")

    monkeypatch.setattr(torch.jit, "script", no_script)
    gru_parallel._compiled.cache_clear()
    try:
        assert gru_parallel.loops(2) is None
        states, _ = _run([6, 2, 4], torch.float64)
    finally:
        gru_parallel._compiled.cache_clear()
    assert counted == {"forward": 0, "backward": 0}
    assert states.shape == (3, 6, 10)
    assert torch.equal(states[1, 2:], torch.zeros(4, 10))  # padding stays 0


@pytest.mark.parametrize("flushing", [True, False])
def test_a_directions_thread_flushes_subnormals_as_the_training_loop_does(flushing, monkeypatch):
    monkeypatch.setattr(gru_parallel, "flushed", lambda: flushing)
    seen = {}

    def read(name):  # a subnormal float32 times one: 0 where subnormals are flushed
        seen[name] = (torch.tensor([1e-39]) * 1.0).item()

    assert torch.set_flush_denormal(flushing) or not flushing
    try:
        gru_parallel._at_once(read, [("calling thread",), ("other thread",)])
    finally:
        torch.set_flush_denormal(False)
    assert seen["other thread"] == seen["calling thread"]
    assert (seen["other thread"] == 0.0) == flushing


def test_a_failure_in_a_directions_thread_reaches_the_caller():
    def fail(name):
        if name == "other":
            raise RuntimeError("boom in the other direction")

    with pytest.raises(RuntimeError, match="boom in the other direction"):
        gru_parallel._at_once(fail, [("first",), ("other",)])


_THREAD_COUNT = """
import os, torch
from attentive_reader.cpu_speedups import gru_parallel
torch.set_num_threads(2)
a = torch.randn(512, 512)
torch.mm(a, a)  # the calling thread's own team of intra-op threads exists now
def threads():
    return len(os.listdir("/proc/self/task"))
def product(x):
    torch.mm(x, x)
before = threads()
gru_parallel._at_once(product, [(a,), (a,)])
first = threads()
gru_parallel._at_once(product, [(a,), (a,)])
print(before, first, threads(), torch.get_num_threads())
"""


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="counts threads in Linux /proc")
def test_the_helper_thread_adds_itself_and_no_team_of_intra_op_threads():
    """A helper whose products spread over every core kept a team of threads of its own, and
    with more threads than cores every later step of the process waited for sleeping threads
    (docs/performance.md)."""
    result = subprocess.run(
        [sys.executable, "-c", _THREAD_COUNT],
        capture_output=True,
        text=True,
        timeout=120,
        # As a training run has them (the tests' conftest sets both to 1).
        env={**os.environ, "OMP_NUM_THREADS": "2", "MKL_NUM_THREADS": "2"},
    )
    assert result.returncode == 0, result.stderr
    before, first, second, restored = map(int, result.stdout.split())
    assert (first - before, second - before) == (1, 1)  # the helper itself, once
    assert restored == 2
