"""Dropout whose mask costs one 32-bit random draw per element on the CPU.

On the CPU, torch's dropout draws its mask with ``bernoulli_``, one double-precision uniform
number per element from the Mersenne twister, which can take as long as the rest of the
reading of the tensor it masks (docs/performance.md). Here the mask
comes from 32 random bits per element (``random_`` over the whole 64-bit range, read as two
32-bit integers): an element is kept when its integer is below the threshold that leaves it
with probability ``1 - p``, exact to ``2**-32`` (torch's own mask is exact to its doubles'
``2**-53``; a float from ``torch.rand`` would give ``2**-24``). Kept elements are scaled by
``1 / (1 - p)``, as torch's dropout does; the mask is kept as booleans, and the output and
the gradient are each one fused ``native_dropout_backward`` (``x * mask / (1 - p)``).

The random numbers come from torch's default generator, so ``seed_everything`` makes the
masks reproducible; they are not the masks ``nn.Dropout`` would draw for the same seed. On
other devices (CUDA's dropout draws its mask in its fused kernel) and where ``p`` is 0 or 1,
:func:`dropout` is ``F.dropout``.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch.autograd.function import once_differentiable

_TWO_32 = 2**32
_INT32_MIN = -(2**31)


def keep_mask(shape: torch.Size, keep: float, device: torch.device | None = None) -> Tensor:
    """Booleans, each True with probability ``keep`` (to ``2**-32``), independently.

    Args:
        shape: the mask's shape.
        keep: ``1 - p``, in (0, 1).
        device: where the mask is drawn (the default generator of that device).
    """
    count = shape.numel()
    words = torch.empty((count + 1) // 2, dtype=torch.int64, device=device)
    words.random_(-(2**63), None)  # every 64-bit pattern equally likely
    bits = words.view(torch.int32)[:count].view(shape)  # uniform over [-2**31, 2**31)
    return bits < round(keep * _TWO_32) + _INT32_MIN


class _MaskedScale(torch.autograd.Function):
    """``x * mask * scale`` with the mask saved as booleans."""

    @staticmethod
    def forward(ctx: Any, inputs: Tensor, mask: Tensor, scale: float) -> Tensor:
        ctx.save_for_backward(mask)
        ctx.scale = scale
        return torch.ops.aten.native_dropout_backward(inputs, mask, scale)

    @staticmethod
    @once_differentiable
    def backward(ctx: Any, grad: Tensor) -> tuple[Tensor | None, None, None]:
        (mask,) = ctx.saved_tensors
        return torch.ops.aten.native_dropout_backward(grad, mask, ctx.scale), None, None


def dropout(inputs: Tensor, p: float, training: bool = True) -> Tensor:
    """``F.dropout(inputs, p, training)``, with the mask drawn as the module docstring says."""
    if not training or p == 0.0:
        return inputs
    if inputs.device.type != "cpu" or p >= 1.0 or not inputs.is_floating_point():
        return F.dropout(inputs, p, training)
    keep = 1.0 - p
    mask = keep_mask(inputs.shape, keep, inputs.device)
    return _MaskedScale.apply(inputs, mask, 1.0 / keep)


class FastDropout(nn.Dropout):
    """``nn.Dropout`` drawing its mask with :func:`dropout` (module docstring); what
    ``CpuSpeedups(dropout=True)`` turns a reader's ``nn.Dropout`` into."""

    def forward(self, inputs: Tensor) -> Tensor:
        if self.inplace:  # not used by the readers; torch's path keeps its in-place contract
            return super().forward(inputs)
        return dropout(inputs, self.p, self.training)
