"""The CPU speed-ups: fast twins of the plain parts with the same values and gradients (the
fused GRU and its parallel directions, the fused Impatient steps, the dropout masks, float32
where bf16 is emulated) and the training loop's process-wide settings (the allocator bound,
the denormal flush), switched on by one Lightning callback, :class:`CpuSpeedups`, that a CPU
config lists. The readers never import this package."""

from attentive_reader.cpu_speedups.callback import CpuSpeedups

__all__ = ["CpuSpeedups"]
