"""Keep freed memory in the process while a reader trains on the CPU (glibc Linux).

glibc's ``malloc`` serves every block over 32 MiB (and, before its threshold adapts, over
128 KiB) with a fresh ``mmap`` and gives it back to the kernel on ``free``. A training step
allocates and frees hundreds of such blocks (the encoder's activations, the attention's
(batch, context, hidden) tensors, their gradients), so every step page-faults its memory in
again and the kernel zeroes it, a large share of a step on a small CPU (docs/performance.md).
While training, :func:`keep_freed_memory` has glibc serve large blocks from its heap and keep
freed memory for the next step, as the CUDA caching allocator does on a GPU and as PyTorch's
CPU performance guide gets from jemalloc or TCMalloc; :func:`release_freed_memory` puts
malloc back and returns the free memory to the kernel.

Only the training loop runs this way (``CpuSpeedups(allocator=True)``, through
:class:`MemoryBound`): a step allocates the same blocks again and again, so the memory kept
settles at one level. Data preparation does not (large buffers of growing sizes, kept, would
pile up). Where the blocks' sizes never repeat closely enough (a recurrent encoder over batches
of every length from 200 to 2,000 tokens), glibc's heap can grow without end instead;
:class:`MemoryBound` watches the process's resident memory and gives the memory back, for the
rest of the run, once it has grown past ``growth`` times its level after the first steps, or
once the machine's available memory, at the run's peak since the batch before, fell under
``min_available`` of its total (a large batch starts so high that twice its level would not
fit; its steps swing by gigabytes, so the memory between two steps says little). An
allocator the user chose (``LD_PRELOAD`` of jemalloc, TCMalloc or mimalloc, or glibc's
``MALLOC_*`` variables and malloc tunables) is left as it is. Nothing happens on other systems.
"""

from __future__ import annotations

import ctypes
import logging
import os
import platform
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Literal

from attentive_reader.common.checks import check_positive

log = logging.getLogger(__name__)

# mallopt(3) parameters (glibc's malloc.h) and glibc's defaults for them.
M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
M_MMAP_MAX = -4
DEFAULT_TRIM_THRESHOLD = 128 * 1024
DEFAULT_MMAP_THRESHOLD = 128 * 1024
DEFAULT_MMAP_MAX = 65536
# While kept: memory goes back to the kernel only when this much is free at the top of the
# heap (the largest value mallopt takes, 2 GiB).
KEPT_TRIM_THRESHOLD = 2**31 - 1

Outcome = Literal["kept", "user", "unsupported"]


@dataclass(frozen=True)
class AllocatorSetting:
    """What :func:`keep_freed_memory` did.

    Attributes:
        outcome: ``kept``: large blocks now come from the heap and freed memory stays in the
            process; ``user``: left as it is because the user chose an allocator or malloc
            settings; ``unsupported``: not glibc, or ``mallopt`` refused.
        reason: one line saying why, for logs.
    """

    outcome: Outcome
    reason: str


_kept = False


def _user_choice(environ: Mapping[str, str]) -> str | None:
    preload = environ.get("LD_PRELOAD", "")
    for name in ("jemalloc", "tcmalloc", "mimalloc"):
        if name in preload:
            return f"LD_PRELOAD holds {name}"
    for key in environ:
        if key.startswith("MALLOC_") and key.endswith("_"):
            return f"{key} is set"
    if "glibc.malloc." in environ.get("GLIBC_TUNABLES", ""):
        return "GLIBC_TUNABLES sets malloc tunables"
    return None


# Whether this system's malloc is glibc's, the one these settings are for.
GLIBC_SUPPORTED = platform.system() == "Linux" and platform.libc_ver()[0] == "glibc"


def _libc() -> ctypes.CDLL | None:
    if not GLIBC_SUPPORTED:
        return None
    libc = ctypes.CDLL(None)
    if not hasattr(libc, "mallopt") or not hasattr(libc, "malloc_trim"):
        return None
    libc.mallopt.argtypes, libc.mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    libc.malloc_trim.argtypes, libc.malloc_trim.restype = [ctypes.c_size_t], ctypes.c_int
    return libc


def kept() -> bool:
    """Whether freed memory is being kept now (between keep and release)."""
    return _kept


def keep_freed_memory(environ: Mapping[str, str] | None = None) -> AllocatorSetting:
    """Serve large blocks from glibc's heap and keep freed memory in the process.

    Call :func:`release_freed_memory` when the training loop ends. Calling it again while
    kept changes nothing.

    Args:
        environ: the environment to read for an allocator the user chose (default:
            ``os.environ``).

    Returns:
        What was done, and why.
    """
    global _kept
    environ = os.environ if environ is None else environ
    if (user := _user_choice(environ)) is not None:
        return AllocatorSetting("user", user)
    libc = _libc()
    if libc is None:
        return AllocatorSetting("unsupported", "not glibc")
    # Trim first: were the second call refused, memory would still go back to the kernel.
    if not (libc.mallopt(M_TRIM_THRESHOLD, KEPT_TRIM_THRESHOLD) and libc.mallopt(M_MMAP_MAX, 0)):
        _restore(libc)
        return AllocatorSetting("unsupported", "mallopt refused")
    _kept = True
    return AllocatorSetting("kept", "large blocks from the heap, kept when freed")


def release_freed_memory() -> bool:
    """Put malloc back (large blocks by ``mmap``, freed memory trimmed) and return the free
    memory to the kernel; nothing when it is not kept.

    The settings go back to glibc's initial values (blocks over 128 KiB by ``mmap``); the
    threshold that glibc otherwise raises as it sees large blocks freed stays at that value.

    Returns:
        Whether memory had been kept.
    """
    global _kept
    if not _kept:
        return False
    libc = _libc()
    if libc is not None:
        _restore(libc)
        libc.malloc_trim(0)
    _kept = False
    return True


@contextmanager
def freed_memory_kept(environ: Mapping[str, str] | None = None) -> Iterator[AllocatorSetting]:
    """Keep freed memory inside the ``with`` block (a training loop written by hand), and
    release it when the block ends, however it ends.

    Args:
        environ: the environment to read (default: ``os.environ``).

    Yields:
        What :func:`keep_freed_memory` did.
    """
    setting = keep_freed_memory(environ)
    try:
        yield setting
    finally:
        release_freed_memory()


def _restore(libc: ctypes.CDLL) -> None:
    libc.mallopt(M_MMAP_MAX, DEFAULT_MMAP_MAX)
    libc.mallopt(M_MMAP_THRESHOLD, DEFAULT_MMAP_THRESHOLD)
    libc.mallopt(M_TRIM_THRESHOLD, DEFAULT_TRIM_THRESHOLD)


def resident_bytes() -> int | None:
    """This process's resident memory in bytes (``None`` without Linux's ``/proc``)."""
    try:
        with open("/proc/self/statm") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return None


def peak_resident_bytes() -> int | None:
    """This process's peak resident memory in bytes since the last call (``VmHWM``, reset by
    writing 5 to ``/proc/self/clear_refs``; where the reset is refused, since the process
    started); ``None`` without Linux's ``/proc``."""
    try:
        with open("/proc/self/status") as status:
            peak = next(int(line.split()[1]) * 1024 for line in status if line.startswith("VmHWM:"))
    except (OSError, ValueError, IndexError, StopIteration):
        return None
    try:
        with open("/proc/self/clear_refs", "w") as clear_refs:
            clear_refs.write("5")
    except OSError:
        pass
    return peak


def available_bytes() -> tuple[int, int] | None:
    """The machine's available and total memory in bytes, from ``/proc/meminfo``'s
    ``MemAvailable`` and ``MemTotal`` (``None`` without them)."""
    fields: dict[str, int] = {}
    try:
        with open("/proc/meminfo") as meminfo:
            for line in meminfo:
                name, _, value = line.partition(":")
                if name in ("MemAvailable", "MemTotal"):
                    fields[name] = int(value.split()[0]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    if len(fields) < 2:
        return None
    return fields["MemAvailable"], fields["MemTotal"]


class MemoryBound:
    """Freed memory kept from :meth:`start` to :meth:`stop`, unless it keeps growing: what
    ``CpuSpeedups(allocator=True)`` runs through the training loop.

    Args:
        growth: how many times its level after ``warmup_steps`` the resident memory may reach
            before the kept memory is given back and malloc put back for the rest of the run.
        warmup_steps: training batches before the level is taken (the first steps allocate
            the blocks every later step reuses).
        check_every: batches between two readings of the resident memory for the growth.
        min_available: the share of the machine's memory that must stay available at the
            run's peak; read after every batch (from the first), and under it the kept memory
            is given back as well, however little it grew.
        resident: reads the resident memory in bytes (``None``: unknown, nothing checked).
        available: reads the machine's (available, total) memory in bytes (``None``: unknown,
            only the growth is checked).
        peak: reads the peak resident memory in bytes since its last reading (``None``:
            unknown, the machine is judged by its memory now).
    """

    def __init__(
        self,
        growth: float = 2.0,
        warmup_steps: int = 20,
        check_every: int = 10,
        min_available: float = 0.1,
        resident: Callable[[], int | None] = resident_bytes,
        available: Callable[[], tuple[int, int] | None] = available_bytes,
        peak: Callable[[], int | None] = peak_resident_bytes,
    ) -> None:
        check_positive(warmup_steps=warmup_steps, check_every=check_every)
        if not growth > 1:
            raise ValueError(f"growth must be above 1, got {growth}")
        if not 0 <= min_available < 1:
            raise ValueError(f"min_available must be a share from 0 to 1, got {min_available}")
        self.growth, self.warmup_steps, self.check_every = growth, warmup_steps, check_every
        self.min_available = min_available
        self.resident, self.available, self.peak = resident, available, peak
        self.setting: AllocatorSetting | None = None
        # (level after the warm-up, resident memory) when the kept memory was given back (the
        # resident memory twice when the machine ran short before the warm-up ended).
        self.released: tuple[int, int] | None = None
        self._level: int | None = None
        self._batches = 0

    def start(self) -> None:
        """Keep freed memory from now on (the first training batch)."""
        self._level, self._batches = None, 0
        self.setting = keep_freed_memory()
        self.peak()  # the peak from here on

    def after_batch(self) -> None:
        """Count a training batch; give the memory back when it grew past the bound or the
        machine ran short of memory at the run's peak."""
        if not kept():
            return
        self._batches += 1
        found = self._short_of_memory() or self._grown()
        if found is None:
            return
        why, now = found
        release_freed_memory()
        self.released = (self._level or now, now)
        log.warning(
            "%s: the memory kept for training goes back to the system for the rest of this "
            "run (CpuSpeedups(allocator=false) starts a run that way)",
            why,
        )

    def _short_of_memory(self) -> tuple[str, int] | None:
        """Why the machine ran short and the run's resident memory, or ``None``: short when its
        available memory now, less what the run held at its peak since the last batch above
        what it holds now, is under the share."""
        machine = self.available()
        now = self.resident() if machine is not None else None
        if machine is None or now is None:
            return None
        top = max(now, self.peak() or now)
        at_peak = machine[0] - (top - now)
        if at_peak >= self.min_available * machine[1]:
            return None
        return (
            f"the machine had about {max(at_peak, 0) >> 20} MiB of its {machine[1] >> 20} MiB "
            f"available at this run's peak of {top >> 20} MiB, by step {self._batches}",
            now,
        )

    def _grown(self) -> tuple[str, int] | None:
        """Why the kept memory grew past the bound and the run's resident memory, or ``None``
        (read every ``check_every`` batches after the warm-up; the level is the first)."""
        if (
            self._batches < self.warmup_steps
            or (self._batches - self.warmup_steps) % self.check_every
        ):
            return None
        now = self.resident()
        if now is None:
            return None
        if self._level is None:
            self._level = now
        if now <= self.growth * self._level:
            return None
        return (
            f"the memory kept for training grew from {self._level >> 20} MiB after "
            f"{self.warmup_steps} steps to {now >> 20} MiB after {self._batches}",
            now,
        )

    def stop(self) -> None:
        """Put malloc back (the end of the training loop, or its fault)."""
        release_freed_memory()
