"""Where bf16 autocast has no hardware behind it."""

from __future__ import annotations

import torch
from torch import Tensor


def bf16_is_emulated(tensor: Tensor) -> bool:
    """Whether ``tensor`` is under CPU bf16 autocast on a CPU without bf16 instructions.

    There oneDNN has no bf16 LSTM or GRU and emulates bf16 arithmetic, so a loop of many small
    steps runs several times slower than in float32: the recurrent encoders and the Impatient
    Reader's query steps leave autocast and compute in float32 instead
    (``CpuSpeedups(bf16_fallback=True)``).
    """
    if tensor.device.type != "cpu" or not torch.is_autocast_enabled("cpu"):
        return False
    if torch.get_autocast_dtype("cpu") != torch.bfloat16:
        return False
    return not torch.ops.mkldnn._is_mkldnn_bf16_supported()
