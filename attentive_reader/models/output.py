"""What every reader's ``forward`` returns (consumed by the loss, evaluation and heatmaps)."""

from __future__ import annotations

from dataclasses import dataclass, field

import torch


@dataclass
class ReaderOutput:
    """Output of a reader's forward pass. Letters as in ``ClozeBatch``.

    Attributes:
        logits: answer scores over entity ids, (b, e); entity ids that are not candidates
            hold the dtype's most negative finite value, so their softmax probability is 0.
        attention: the per-token weights over the context: (b, n) for single-attention
            readers, (b, m, n) for the Impatient Reader (one row per query token), or
            ``None`` for readers without attention (Deep LSTM). Padding holds exactly 0.
        selected: for hard-attention readers, the selected context positions, (b, k) long;
            else ``None``.
        extras: anything else a reader wants to expose (e.g. glimpse parameters).
    """

    logits: torch.Tensor
    attention: torch.Tensor | None = None
    selected: torch.Tensor | None = None
    extras: dict = field(default_factory=dict)
