"""``CpuSpeedups``: the one switch that puts the CPU's fast parts into a reader's training.

The readers are their plain maths (``models/``, ``nn/``). On a CPU run this callback turns the
plain parts of the module it trains into their fast twins at ``setup``, in place, the
parameters untouched (so checkpoints are the same either way), and turns them back at
``teardown``; through the training loop it also keeps freed memory in the process and
flushes subnormal floats. A run on another device is left as it is.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import pytorch_lightning as pl
from pytorch_lightning.callbacks import Callback
from torch import nn

from attentive_reader.cpu_speedups.allocator import MemoryBound
from attentive_reader.cpu_speedups.denormals import flush_denormals, restore_denormals
from attentive_reader.cpu_speedups.dropout import FastDropout
from attentive_reader.cpu_speedups.encoders import FastSequenceEncoder
from attentive_reader.cpu_speedups.impatient_steps import FusedImpatientSteps
from attentive_reader.nn.encoders import SequenceEncoder
from attentive_reader.nn.impatient import ImpatientSteps

GruDirections = Literal["parallel", "serial"]


@dataclass(frozen=True)
class Swap:
    """One module turned into its fast twin: enough to turn it back.

    Attributes:
        module: the module (the same object before and after).
        plain: its class before.
        added: the attributes the swap gave it.
    """

    module: nn.Module
    plain: type[nn.Module]
    added: tuple[str, ...]

    def undo(self) -> None:
        """Turn the module back into its plain class."""
        for name in self.added:
            self.module.__dict__.pop(name, None)
        self.module.__class__ = self.plain


class CpuSpeedups(Callback):
    """The CPU speed-ups of ``attentive_reader.cpu_speedups``, switched on for a CPU run.

    At ``setup`` on a CPU run (``trainer.strategy.root_device`` is the CPU) the plain parts of
    the module become their fast twins, in place (as ``torch.nn.utils.parametrize`` changes a
    module's class): the same parameters under the same names, the same values and
    gradients, so a checkpoint saved with or without this callback loads either way. At
    ``teardown`` they become plain again. Through the training loop (from the first training
    batch to the end of ``fit`` or its fault) the process-wide settings ``allocator`` and
    ``denormals`` hold. A GPU run is left untouched. docs/performance.md says what each
    switch buys.

    Args:
        gru: a GRU encoder being trained runs through the fused GRU (``cpu_speedups.gru``):
            torch has no fused GRU kernel on the CPU.
        gru_directions: ``parallel``: the fused GRU's two directions each on its own core
            (where torch may use 2 threads and the loop is long enough); ``serial``: together
            on one.
        impatient_steps: the Impatient Reader's additive query steps in training run fused
            (``cpu_speedups.impatient_steps``): fewer memory passes.
        dropout: dropout masks drawn from 32 random bits per element
            (``cpu_speedups.dropout``) instead of torch's double-precision draws.
        bf16_fallback: under bf16 autocast on a CPU without bf16 instructions, the recurrent
            encoders and the Impatient steps compute in float32 (oneDNN emulates bf16 there).
        allocator: glibc's malloc keeps freed memory in the process through the training
            loop (``cpu_speedups.allocator``) instead of page-faulting it in every step;
            left alone where the user chose an allocator (``LD_PRELOAD``, ``MALLOC_*``).
        allocator_growth: the kept memory goes back to the system for the rest of the run
            once the resident memory grows past this many times its level after the first
            20 steps (and, whatever the growth, once the machine had under a tenth of its
            memory available at the run's peak since the step before).
        denormals: subnormal floats flushed to zero on torch's threads through the training
            loop (``cpu_speedups.denormals``): a CPU computes with them through slow
            microcode.
    """

    def __init__(
        self,
        gru: bool = True,
        gru_directions: GruDirections = "parallel",
        impatient_steps: bool = True,
        dropout: bool = True,
        bf16_fallback: bool = True,
        allocator: bool = True,
        allocator_growth: float = 2.0,
        denormals: bool = True,
    ) -> None:
        if gru_directions not in ("parallel", "serial"):
            raise ValueError(
                f"gru_directions must be 'parallel' or 'serial', got {gru_directions!r}; "
                "'serial' keeps the GRU's two directions on one core"
            )
        self.gru = gru
        self.gru_directions = gru_directions
        self.impatient_steps = impatient_steps
        self.dropout = dropout
        self.bf16_fallback = bf16_fallback
        self.allocator = allocator
        self.denormals = denormals
        self.memory = MemoryBound(growth=allocator_growth)
        self.swaps: list[Swap] = []
        self._training_settings = False

    # --- the fast parts ----------------------------------------------------------------------

    def setup(self, trainer: pl.Trainer, pl_module: pl.LightningModule, stage: str) -> None:
        if trainer.strategy.root_device.type == "cpu":
            self.swaps += self.swap_in(pl_module)

    def teardown(self, trainer: pl.Trainer, pl_module: pl.LightningModule, stage: str) -> None:
        self.swap_out()

    def swap_in(self, module: nn.Module) -> list[Swap]:
        """Turn the plain parts of ``module`` (exactly ``SequenceEncoder``, ``ImpatientSteps``,
        ``nn.Dropout``; subclasses are someone else's and stay) into their fast twins, as the
        switches say. Returns what was swapped; :meth:`swap_out` turns back what
        :meth:`setup` swapped."""
        swaps = []
        for part in list(module.modules()):
            plain, before = type(part), set(part.__dict__)
            if plain is SequenceEncoder and (self.gru or self.bf16_fallback):
                FastSequenceEncoder.swap_in(
                    part,
                    fused_gru=self.gru,
                    parallel_directions=self.gru_directions == "parallel",
                    bf16_fallback=self.bf16_fallback,
                )
            elif plain is ImpatientSteps and (self.impatient_steps or self.bf16_fallback):
                FusedImpatientSteps.swap_in(
                    part, fused=self.impatient_steps, bf16_fallback=self.bf16_fallback
                )
            elif plain is nn.Dropout and self.dropout:
                part.__class__ = FastDropout
            else:
                continue
            swaps.append(Swap(part, plain, tuple(set(part.__dict__) - before)))
        return swaps

    def swap_out(self) -> None:
        """Turn every part :meth:`setup` swapped back into its plain class."""
        for swap in reversed(self.swaps):
            swap.undo()
        self.swaps = []

    # --- the process-wide settings of the training loop ---------------------------------------

    def on_train_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        if trainer.strategy.root_device.type != "cpu":
            return
        self._training_settings = True
        if self.allocator:
            self.memory.start()
        if self.denormals:
            flush_denormals()

    def on_train_batch_end(
        self, trainer: pl.Trainer, pl_module: pl.LightningModule, *args: Any, **kwargs: Any
    ) -> None:
        if self._training_settings and self.allocator:
            self.memory.after_batch()

    def on_train_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        self._restore()

    def on_exception(
        self, trainer: pl.Trainer, pl_module: pl.LightningModule, exception: BaseException
    ) -> None:
        self._restore()
        self.swap_out()

    def _restore(self) -> None:
        """Malloc and the floating-point flags as they were before the training loop."""
        if not self._training_settings:
            return
        self._training_settings = False
        if self.allocator:
            self.memory.stop()
        if self.denormals:
            restore_denormals()
