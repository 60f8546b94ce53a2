"""Flush subnormal floats to zero while a reader trains on the CPU.

A float32 below 1.2e-38 is subnormal, and an x86 CPU computes with one through a microcode
assist, far slower than with a normal float. Gradients that fade along a long
recurrence pass through that range: the Deep LSTM Reader's loss reads only the last states
of a sequence of ~870 tokens, so ``dL/dh`` shrinks at every step back, and for about a
hundred steps of every sequence oneDNN's LSTM backward computes with subnormal numbers
(docs/performance.md). Flushing them to zero (the CPU's FTZ and DAZ flags, which TensorFlow
sets in its own threads) changes only values below float32's normal range.

The flags belong to each thread. ``torch.set_flush_denormal`` sets the calling thread's,
and torch's intra-op threads (an OpenMP team, already started by the time a model exists)
keep their own: :func:`flush_denormals` also hands the calling thread's floating-point
environment to every thread of that team (``GOMP_parallel`` calling ``fesetenv``), where
torch's OpenMP is GNU's. Autograd runs a CPU backward on the thread that calls it.

Like the allocator setting (``allocator.py``), only the training loop runs this way
(``CpuSpeedups(denormals=True)``, the callback a CPU config lists).
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import torch

Outcome = Literal["flushed", "calling thread", "unsupported"]


@dataclass(frozen=True)
class DenormalSetting:
    """What :func:`flush_denormals` did.

    Attributes:
        outcome: ``flushed``: on the calling thread and torch's OpenMP threads; ``calling
            thread``: on the calling thread only (torch's threads are not GNU OpenMP's);
            ``unsupported``: this CPU has no such flags.
        reason: one line saying why, for logs.
    """

    outcome: Outcome
    reason: str


_flushed = False


def flushed() -> bool:
    """Whether subnormal floats are being flushed now (between flush and restore)."""
    return _flushed


def flush_denormals() -> DenormalSetting:
    """Flush subnormal floats to zero on the calling thread and torch's OpenMP threads.

    Call :func:`restore_denormals` when the training loop ends.
    """
    global _flushed
    if not _set_everywhere(True):
        return DenormalSetting("unsupported", "torch.set_flush_denormal: not on this CPU")
    _flushed = True
    if _openmp_team_runner() is None:
        return DenormalSetting("calling thread", "torch's threads are not GNU OpenMP's")
    return DenormalSetting("flushed", "subnormal floats flushed to zero on torch's threads")


def restore_denormals() -> bool:
    """Compute with subnormal floats again, on the same threads; nothing when they are not
    being flushed.

    Returns:
        Whether they had been flushed.
    """
    global _flushed
    if not _flushed:
        return False
    _set_everywhere(False)
    _flushed = False
    return True


@contextmanager
def denormals_flushed() -> Iterator[DenormalSetting]:
    """Flush subnormal floats inside the ``with`` block (a training loop written by hand).

    Yields:
        What :func:`flush_denormals` did.
    """
    setting = flush_denormals()
    try:
        yield setting
    finally:
        restore_denormals()


def _set_everywhere(on: bool) -> bool:
    """Set the flags on this thread, then copy this thread's environment to the team."""
    if not torch.set_flush_denormal(on):
        return False
    run = _openmp_team_runner()
    if run is not None:
        libc = ctypes.CDLL(None)
        environment = ctypes.create_string_buffer(256)  # larger than any fenv_t
        if libc.fegetenv(environment) == 0:
            run(ctypes.cast(libc.fesetenv, ctypes.c_void_p), ctypes.addressof(environment))
    return True


def _openmp_team_runner() -> Callable[[int, int], None] | None:
    """``GOMP_parallel(fn, data, 0, 0)`` of the libgomp torch runs its threads on: calls
    ``fn(data)`` on every thread of the team; ``None`` where torch does not use one."""
    if "OpenMP" not in torch.__config__.parallel_info():
        return None
    libraries = [path for path in _loaded_libraries() if Path(path).name.startswith("libgomp")]
    if not libraries:
        return None
    torch_lib = str(Path(torch.__file__).parent)
    libraries.sort(key=lambda path: not path.startswith(torch_lib))  # torch's own first
    run = ctypes.CDLL(libraries[0]).GOMP_parallel
    run.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_uint, ctypes.c_uint]
    run.restype = None
    return lambda fn, data: run(fn, data, 0, 0)


def _loaded_libraries() -> list[str]:
    """The shared libraries mapped into this process (Linux), else none."""
    try:
        lines = Path("/proc/self/maps").read_text().splitlines()
    except OSError:
        return []
    return sorted({line.split()[-1] for line in lines if ".so" in line.split()[-1]})
