"""Recurrent sequence encoders over embeddings.

Letters: ``b`` batch, ``n`` sequence length, ``d`` input (embedding) size, ``h`` hidden size
per direction.
"""

from __future__ import annotations

from typing import Literal

import torch
from torch import Tensor, nn

from attentive_reader.common.checks import check_dropout, check_positive

RnnName = Literal["lstm", "gru"]


class SequenceEncoder(nn.Module):
    """A (bi)directional LSTM or GRU that reads only the real tokens of each sequence.

    Padding comes after the real tokens, so it never reaches them: the forward direction runs
    over the padded batch, the backward direction forwards over each sequence reversed within
    its own length. Stacked bidirectional layers run one at a time. Each direction is one
    ``nn.LSTM`` / ``nn.GRU`` over the whole padded batch, so torch's fused kernels run it
    (oneDNN on the CPU, cuDNN on CUDA): a ``PackedSequence`` costs O(n^2) in the backward pass
    on the CPU and runs step by step on CUDA (docs/performance.md, docs/scale.md).

    Args:
        input_dim: size ``d`` of each input vector.
        hidden_dim: size ``h`` of the hidden state of each direction.
        num_layers: stacked recurrent layers.
        rnn: ``lstm`` or ``gru``.
        dropout: dropout between stacked layers (ignored with one layer).
        bidirectional: read in both directions (outputs ``2h``) or forwards only (``h``).
    """

    def __init__(
        self,
        input_dim: int,
        hidden_dim: int,
        num_layers: int = 1,
        rnn: RnnName = "lstm",
        dropout: float = 0.0,
        bidirectional: bool = True,
    ) -> None:
        super().__init__()
        check_positive(input_dim=input_dim, hidden_dim=hidden_dim, num_layers=num_layers)
        check_dropout(dropout)
        if rnn not in ("lstm", "gru"):
            raise ValueError(f"rnn must be 'lstm' or 'gru', got {rnn!r}")
        self.rnn = rnn
        cell = nn.LSTM if rnn == "lstm" else nn.GRU
        directions = 2 if bidirectional else 1
        # layers[k][0] reads forwards, layers[k][1] (bidirectional) reads backwards. Built in
        # the order of a bidirectional nn.LSTM's parameters, so a seed gives the same weights.
        self.layers = nn.ModuleList(
            nn.ModuleList(
                cell(input_dim if k == 0 else hidden_dim * directions, hidden_dim, batch_first=True)
                for _ in range(directions)
            )
            for k in range(num_layers)
        )
        self.dropout = nn.Dropout(dropout if num_layers > 1 else 0.0)  # between layers
        self.hidden_dim = hidden_dim
        self.bidirectional = bidirectional
        self.output_dim = hidden_dim * directions

    def forward(self, inputs: Tensor, mask: Tensor) -> tuple[Tensor, Tensor]:
        """Encode a padded batch.

        Args:
            inputs: (b, n, d) vectors; real tokens first, padding after them.
            mask: (b, n) bool, True on real tokens.

        Returns:
            ``states`` (b, n, o) with ``o = 2h`` (bidirectional) or ``h``, exactly 0 on padding;
            ``final`` (b, o): the concatenation of the forward state at the last real token
            and the backward state at the first token (top layer). Sequences without any real
            token get zeros in both.
        """
        lengths = mask.sum(dim=1)  # (b,)
        states = inputs
        for k, directions in enumerate(self.layers):
            if k > 0:
                states = self.dropout(states)
            states = self.read_layer(directions, states, mask, lengths)  # (b, n, o)
        return states, self.final_states(states, lengths)

    def read_layer(
        self, directions: nn.ModuleList, states: Tensor, mask: Tensor, lengths: Tensor
    ) -> Tensor:
        """One layer over the padded batch: (b, n, d') -> (b, n, o), 0 on padding. The
        backward direction reads each sequence reversed within its length.

        Args:
            directions: the layer's forward (and backward) RNN.
            states: the layer's input (b, n, d').
            mask: (b, n) True on real tokens; lengths: (b,) their number.
        """
        reverse = _reverse_index(lengths, states.shape[1]).unsqueeze(-1)  # (b, n, 1)
        outputs = [directions[0](states)[0]]  # (b, n, h)
        if len(directions) == 2:
            flipped = _gather_time(states, reverse)  # (b, n, d'): each sequence reversed
            backward_states = directions[1](flipped)[0]  # (b, n, h)
            outputs.append(_gather_time(backward_states, reverse))  # back in token order
        states = torch.cat(outputs, dim=-1) if len(outputs) == 2 else outputs[0]  # (b, n, o)
        return torch.where(mask.unsqueeze(-1), states, 0.0)

    def final_states(self, states: Tensor, lengths: Tensor) -> Tensor:
        """``final`` (b, o) of :meth:`forward` from the top layer's ``states`` (b, n, o) and the
        ``lengths`` (b,)."""
        h = self.hidden_dim
        last = (lengths - 1).clamp(min=0).view(-1, 1, 1).expand(-1, 1, h)  # (b, 1, h)
        final = torch.gather(states[..., :h], 1, last).squeeze(1)  # (b, h) last forward
        if self.bidirectional:
            final = torch.cat([final, states[:, 0, h:]], dim=-1)  # (b, 2h) + first backward
        return torch.where((lengths > 0).unsqueeze(-1), final, 0.0)  # (b, o)


def set_forget_bias(encoder: SequenceEncoder, value: float) -> None:
    """Start every LSTM forget gate of ``encoder`` at ``sigmoid(value)``.

    torch draws an LSTM's biases around 0, so each forget gate starts near ``sigmoid(0) = 0.5``
    and a state, with its gradient, halves at every step: what a unidirectional reader saw 50
    tokens before its end reaches it ``0.5^50`` times weaker. A bias of 1 (Gers et al. 2000;
    Jozefowicz et al. 2015) keeps ~0.73 per step at the start, and the gates learn from there.
    Sets the forget block of ``bias_ih`` (torch's gate order is input, forget, cell, output) to
    ``value`` and of ``bias_hh`` to 0, so the sum is ``value``.

    Args:
        encoder: an ``lstm`` ``SequenceEncoder`` (its GRUs have no forget gate).
        value: the forget gates' summed bias.

    Raises:
        ValueError: the encoder is a GRU.
    """
    h = encoder.hidden_dim
    for directions in encoder.layers:
        for cell in directions:
            if not isinstance(cell, nn.LSTM):
                raise ValueError("forget_bias needs an LSTM encoder (a GRU has no forget gate)")
            with torch.no_grad():
                cell.bias_ih_l0[h : 2 * h].fill_(value)
                cell.bias_hh_l0[h : 2 * h].zero_()


def _reverse_index(lengths: Tensor, n: int) -> Tensor:
    """Time indices that reverse each sequence within its length and leave padding in place.

    Args:
        lengths: (b,) real tokens per sequence.
        n: padded length.

    Returns:
        (b, n) long: ``lengths - 1 - t`` for ``t < lengths``, else ``t`` (an involution).
    """
    position = torch.arange(n, device=lengths.device).unsqueeze(0)  # (1, n)
    end = lengths.unsqueeze(1)  # (b, 1)
    return torch.where(position < end, end - 1 - position, position)  # (b, n)


def _gather_time(values: Tensor, index: Tensor) -> Tensor:
    """``values[i, index[i, t]]`` for every ``i, t``: (b, n, c) by (b, n, 1) -> (b, n, c)."""
    return torch.gather(values, 1, index.expand(-1, -1, values.shape[-1]))
