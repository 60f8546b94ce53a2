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
    """Reset the peak RSS (Linux); False where it cannot be reset."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        return False
    return True


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
        """Timestamps of each training batch; the first batch is the warm-up."""

        def __init__(self) -> None:
            self.starts: list[float] = []
            self.ends: list[float] = []
            self.cpu_end = 0.0
            self.cpu_first = 0.0
            self.examples: list[int] = []
            self.tokens: list[int] = []
            self.padded: list[int] = []

        def on_train_batch_start(self, trainer, pl_module, batch, batch_idx) -> None:
            sync()
            self.starts.append(time.perf_counter())

        def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
            sync()
            self.ends.append(time.perf_counter())
            self.cpu_end = time.process_time()
            if batch_idx == 0:
                self.cpu_first = self.cpu_end
            self.examples.append(len(batch))
            self.tokens.append(int(batch.context_mask.sum()))
            self.padded.append(batch.context_mask.numel())

        def timed(self) -> Timed:
            waits = [start - end for start, end in zip(self.starts[1:], self.ends[:-1])]
            return Timed(
                self.ends[-1] - self.ends[0],
                self.cpu_end - self.cpu_first,
                sum(self.examples[1:]),
                sum(self.tokens[1:]),
                data_seconds=sum(waits),
                padded_tokens=sum(self.padded[1:]),
            )

    return StepTimer()
