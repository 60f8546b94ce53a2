"""Measurements shared by the sections: peak memory, ``Timed`` results, the GPU sync, the
toolkit's trainer and its step timer."""

from __future__ import annotations

import resource
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from bench.settings import WHERE


def peak_reset() -> bool:
    """Reset the peak RSS (Linux) and, on CUDA, the peak GPU memory; False where the RSS
    cannot be reset."""
    if WHERE.device == "cuda":
        torch.cuda.reset_peak_memory_stats()
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        return False
    return True


def process_threads() -> int | None:
    """The threads this process has now (Linux ``/proc``), or ``None`` elsewhere: a team of
    intra-op threads left by one entry (more threads than cores) slows the later ones."""
    try:
        return len(list(Path("/proc/self/task").iterdir()))
    except OSError:
        return None


def gpu_peak_mib() -> float | None:
    """The GPU memory torch's tensors held at most since the last ``peak_reset`` (MiB), or
    ``None`` off CUDA (what the caching allocator reserved beyond that is not counted)."""
    if WHERE.device != "cuda":
        return None
    return torch.cuda.max_memory_allocated() / 2**20


def peak_mib() -> float:
    """The process's peak RSS in MiB (since the last reset where supported)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (1024 * 1024 if sys.platform == "darwin" else 1024)


@dataclass
class Timed:
    """What one epoch's timed batches did."""

    seconds: float
    cpu_seconds: float
    examples: int
    tokens: int
    data_seconds: float = 0.0
    # Tokens the batches hold with their padding (what the encoder computes): the share of
    # real tokens tells padding from the reader's own cost.
    padded_tokens: int = 0

    @property
    def rate(self) -> float:
        return self.examples / self.seconds

    @property
    def cpu_rate(self) -> float:
        return self.examples / self.cpu_seconds


def sync() -> None:
    """Wait for the GPU (timings on CUDA); nothing on the CPU."""
    if WHERE.device == "cuda":
        torch.cuda.synchronize()


def toolkit_trainer(precision: str, **kwargs: Any):
    import pytorch_lightning as pl

    return pl.Trainer(
        accelerator="gpu" if WHERE.device == "cuda" else "cpu",
        devices=1,
        precision=precision,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        num_sanity_val_steps=0,
        **kwargs,
    )


def timer_callback():
    from pytorch_lightning.callbacks import Callback

    class StepTimer(Callback):
        """Timestamps of each training batch of the last epoch; the epochs before it are the
        warm-up."""

        def __init__(self) -> None:
            # (epoch, start, CPU start), then (end, CPU end, examples, tokens, padded tokens)
            self.starts: list[tuple[int, float, float]] = []
            self.ends: list[tuple[float, float, int, int, int]] = []

        def on_train_batch_start(self, trainer, pl_module, batch, batch_idx) -> None:
            sync()
            self.starts.append((trainer.current_epoch, time.perf_counter(), time.process_time()))

        def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
            sync()
            ended = (time.perf_counter(), time.process_time())
            mask = batch.context_mask
            self.ends.append((*ended, len(batch), int(mask.sum()), mask.numel()))

        def timed(self) -> Timed:
            last = [i for i, start in enumerate(self.starts) if start[0] == self.starts[-1][0]]
            first, end = self.starts[last[0]], self.ends[last[-1]]
            waits = [self.starts[i + 1][1] - self.ends[i][0] for i in last[:-1]]
            return Timed(
                end[0] - first[1],
                end[1] - first[2],
                sum(self.ends[i][2] for i in last),
                sum(self.ends[i][3] for i in last),
                data_seconds=sum(waits),
                padded_tokens=sum(self.ends[i][4] for i in last),
            )

    return StepTimer()
