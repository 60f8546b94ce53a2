"""What every reader's ``forward`` returns (consumed by the loss, evaluation and heatmaps):
``ReaderOutput`` and, for the readers that expose more than logits and attention, a typed
record of their extras (``GatedExtras``, ``HardExtras``, ``GlimpseExtras``)."""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Any

import torch
from torch import Tensor


@dataclass
class ReaderExtras:
    """Base of the readers' extras: tensors (or ``None``), each with the batch first (b, ...).

    Lightning moves dataclasses of tensors between devices (``apply_to_collection``), and
    :meth:`map` gives the same transformation to every field.
    """

    def map(self, fn: Any) -> ReaderExtras:
        """A copy with ``fn`` applied to every tensor field (``None`` stays ``None``)."""
        changes = {
            f.name: fn(getattr(self, f.name))
            for f in fields(self)
            if getattr(self, f.name) is not None
        }
        return replace(self, **changes)

    def example(self, i: int, context_length: int, query_length: int) -> ReaderExtras:
        """Example ``i``'s extras; fields whose shape is known are cut to its real lengths."""
        return self.map(lambda value: value[i])


@dataclass
class GatedExtras(ReaderExtras):
    """The Gated-Attention Reader's extras.

    Attributes:
        hop_attention: (b, K - 1, n, m) the query attention of each gated hop.
    """

    hop_attention: Tensor

    def example(self, i: int, context_length: int, query_length: int) -> GatedExtras:
        return GatedExtras(self.hop_attention[i][:, :context_length, :query_length])


@dataclass
class HardExtras(ReaderExtras):
    """The Hard-Attention Reader's extras (``s`` samples, ``k`` positions); its training step
    reads them.

    Attributes:
        policy_log_prob: (b, s) the log-probability of each sampled selection.
        sample_logits: (b, s, e) candidate-masked answer logits of each sample.
        samples_selected: (b, s, k) the positions of each sample (-1: an empty slot).
        entropy: (b,) the policy's entropy, nats.
        policy_scores: (b, n) the policy's unnormalised log-weights.
        value: (b,) the learned baseline's value (``baseline="learned"``), else ``None``.
    """

    policy_log_prob: Tensor
    sample_logits: Tensor
    samples_selected: Tensor
    entropy: Tensor
    policy_scores: Tensor
    value: Tensor | None = None


@dataclass
class GlimpseExtras(ReaderExtras):
    """The glimpse readers' extras (``K`` glimpses of ``N`` filters); the parameters a glimpse
    type does not have are ``None``.

    Attributes:
        glimpse_attention: (b, K, n) each glimpse's weights, normalised over the real tokens.
        tokens_read: (b,) long, the tokens any glimpse read.
        centre: (b, K) each glimpse's centre position; (b, K, A) with ``A`` anchored windows.
        stride: (b, K) the spacing of its filters.
        points: (b, K, N) the positions of its filters ((b, K, A N) with anchors).
        width: (b, K) the Gaussian filters' width (Gaussian glimpses).
        intensity: (b, K) the Gaussian glimpse's intensity, where it learns one.
        filter_weights: (b, K, N) the read-out's weights over the filters
            (``glimpse_readout="attend"``).
        tokens_pooled: (b,) long, the tokens read only as part of a pooled retina window
            (low resolution; the transformer glimpse with ``retina_widths``).
        chunk_attention: (b, K, J) the locator's weights over the coarse view's chunks (the
            transformer glimpse with ``coarse_chunk``).
        read_mask: (b, n) bool, the tokens any glimpse read (``tokens_read`` counts them).
        anchors: (b, A) long, the positions the windows started from (with ``anchors``).
    """

    glimpse_attention: Tensor
    tokens_read: Tensor
    centre: Tensor | None = None
    stride: Tensor | None = None
    points: Tensor | None = None
    width: Tensor | None = None
    intensity: Tensor | None = None
    filter_weights: Tensor | None = None
    tokens_pooled: Tensor | None = None
    chunk_attention: Tensor | None = None
    read_mask: Tensor | None = None
    anchors: Tensor | None = None


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
        extras: the reader's typed extras (``ReaderExtras``), or ``None``.
    """

    logits: torch.Tensor
    attention: torch.Tensor | None = None
    selected: torch.Tensor | None = None
    extras: ReaderExtras | None = None
