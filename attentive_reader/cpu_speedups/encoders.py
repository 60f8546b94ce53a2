"""``SequenceEncoder`` with the CPU's fast paths: the fused GRU in training, float32 where the
CPU only emulates bf16.

Letters: ``b`` batch, ``n`` sequence length, ``d`` input size, ``o`` output size.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from attentive_reader.cpu_speedups.gru import packed_gru
from attentive_reader.cpu_speedups.precision import bf16_is_emulated
from attentive_reader.nn.encoders import SequenceEncoder


class FastSequenceEncoder(SequenceEncoder):
    """A ``SequenceEncoder`` (the same parameters, values and gradients) with two fast paths.

    - ``fused_gru``: a GRU being trained on the CPU runs through ``cpu_speedups.gru`` (the
      packed rows of the real tokens, the backward written out): the CPU has no fused GRU
      kernel, so ``nn.GRU`` runs a dozen autograd nodes a step. Elsewhere (evaluation, an
      LSTM, which oneDNN fuses) the plain path runs.
    - ``bf16_fallback``: under CPU bf16 autocast on a CPU without bf16 instructions (oneDNN has
      no bf16 LSTM or GRU there) the encoder leaves autocast and computes in float32.

    ``CpuSpeedups`` turns a reader's encoders into this class in place (:meth:`swap_in`);
    the switches are attributes set there.

    Attributes:
        fused_gru: use the fused GRU in training.
        parallel_directions: the fused GRU's directions each on its own core.
        bf16_fallback: float32 where bf16 is emulated.
    """

    fused_gru: bool = True
    parallel_directions: bool = True
    bf16_fallback: bool = True

    @classmethod
    def swap_in(
        cls,
        encoder: SequenceEncoder,
        fused_gru: bool,
        parallel_directions: bool,
        bf16_fallback: bool,
    ) -> None:
        """Turn the plain ``encoder`` into this class in place (its parameters stay as they
        are), with the given switches."""
        encoder.__class__ = cls
        encoder.fused_gru = fused_gru
        encoder.parallel_directions = parallel_directions
        encoder.bf16_fallback = bf16_fallback

    def forward(self, inputs: Tensor, mask: Tensor) -> tuple[Tensor, Tensor]:
        """``SequenceEncoder.forward``: ``inputs`` (b, n, d), ``mask`` (b, n) -> ``states``
        (b, n, o), ``final`` (b, o)."""
        if self.bf16_fallback and bf16_is_emulated(inputs):
            with torch.autocast("cpu", enabled=False):
                return self.forward(inputs.float(), mask)
        return super().forward(inputs, mask)

    def read_layer(
        self, directions: nn.ModuleList, states: Tensor, mask: Tensor, lengths: Tensor
    ) -> Tensor:
        """``SequenceEncoder.read_layer``, through the fused GRU where it applies."""
        if not self._fused_applies(states):
            return super().read_layer(directions, states, mask, lengths)
        cells = list(directions)
        reverse = (False, True) if self.bidirectional else (False,)
        if torch.is_autocast_enabled("cpu"):
            with torch.autocast("cpu", enabled=False):
                return packed_gru(states.float(), lengths, cells, reverse, self.parallel_directions)
        return packed_gru(states, lengths, cells, reverse, self.parallel_directions)

    def _fused_applies(self, inputs: Tensor) -> bool:
        """A GRU being trained (gradients on) on the CPU, in float32 or float64 or under
        autocast (the fused GRU then computes in float32: torch's GRU there would cast every
        step's product)."""
        exact = inputs.dtype in (torch.float32, torch.float64)
        return (
            self.fused_gru
            and self.rnn == "gru"
            and inputs.device.type == "cpu"
            and torch.is_grad_enabled()
            and (exact or torch.is_autocast_enabled("cpu"))
        )
