"""``Ensemble``: readers of one vocabulary that answer together, by the mean of their answer
probabilities.

The published readers got their best numbers this way (Kadlec et al. 2016; Chen et al. 2016;
Dhingra et al. 2017): each member reads the same batch, and the ensemble's probability of
entity ``a`` is the mean of the members' probabilities (over the candidate entities, after
each member's softmax, not a mean of logits)::

    p(a | d, q) = 1/R sum_r p_r(a | d, q)

What the members must share (the vocabulary, the entity block, how the text was anonymized,
the context cap) is checked where their checkpoints are read (``eval/ensemble.py``); here
they need only the same number of entity ids.

The ensemble's attention, for heatmaps, is the mean of its members' weights over the context
tokens; members without attention (the Deep LSTM Reader) are left out of the mean. When the
members' attention differs in form (an Impatient Reader's one row per query token beside
another reader's single row), each Impatient member enters with the row of its last real query
token (the attention of its final read). Hard-attention members' selected positions are all
shown; the members' extras (e.g. a Gated-Attention Reader's hop attention) are not kept. The
ensemble reads the tokens any member reads (the union of their reading masks). A one-member
ensemble is its member: the same prediction record, extras included.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor, nn

from attentive_reader.data.batching import ClozeBatch
from attentive_reader.models.base import ClozeReader
from attentive_reader.models.predictions import BatchPrediction


class Ensemble(nn.Module):
    """Readers that answer by the mean of their answer probabilities.

    It answers as a reader does at evaluation (``predict_step``, ``eval``, ``parameters``), so
    evaluation and ``Reader`` use it in a reader's place; it is not trained.

    Args:
        members: the readers, each with the same ``num_entities``.

    Raises:
        ValueError: no member, or members with different entity blocks.
    """

    def __init__(self, members: Sequence[ClozeReader]) -> None:
        super().__init__()
        if not members:
            raise ValueError("an ensemble needs at least one reader")
        sizes = sorted({member.num_entities for member in members})
        if len(sizes) > 1:
            raise ValueError(f"an ensemble's readers must share one entity block, got {sizes}")
        self.members = nn.ModuleList(members)
        self.num_entities = sizes[0]

    def predict_step(
        self, batch: ClozeBatch, batch_idx: int = 0, dataloader_idx: int = 0
    ) -> BatchPrediction:
        """Every member's prediction for the batch, averaged (``average``)."""
        return average(
            [member.predict_step(batch, batch_idx, dataloader_idx) for member in self.members]
        )


def average(predictions: Sequence[BatchPrediction]) -> BatchPrediction:
    """The ensemble's prediction from its members' predictions of one batch.

    Letters as in ``ClozeBatch``: ``b`` batch, ``n`` context length, ``m`` query length, ``e``
    entity ids, ``k`` selected positions.

    Args:
        predictions: each member's ``predict_step`` of the same batch.

    Returns:
        ``probs`` the members' mean (b, e), ``logits`` its logarithm (non-candidates at the
        most negative float), ``prediction`` its argmax, ``read`` the positions any member
        read (``None`` when a member does not say); attention and selected positions as the
        module docstring says. One prediction is returned as it is.
    """
    first = predictions[0]
    if len(predictions) == 1:
        return first
    probs = torch.stack([p.probs for p in predictions]).mean(0)  # (b, e)
    logits = torch.where(probs > 0, probs.log(), torch.finfo(probs.dtype).min)  # (b, e)
    selected = [p.selected for p in predictions if p.selected is not None]  # each (b, k_r)
    reads = [p.read for p in predictions if p.read is not None]  # each (b, n) bool
    read = torch.stack(reads).any(0) if len(reads) == len(predictions) else None  # (b, n)
    return BatchPrediction(
        ids=list(first.ids),
        logits=logits,
        probs=probs,
        prediction=probs.argmax(dim=-1),  # (b,)
        answer=first.answer,
        attention=mean_attention([p.attention for p in predictions], first.query_lengths),
        selected=torch.cat(selected, dim=-1) if selected else None,  # (b, sum k_r)
        context_lengths=first.context_lengths,
        query_lengths=first.query_lengths,
        read=read,
    )


def mean_attention(attention: Sequence[Tensor | None], query_lengths: Tensor) -> Tensor | None:
    """The mean of the members' attention over the context (``None``: no member has any).

    Args:
        attention: each member's weights, (b, n) or (b, m, n) (one row per query token), or
            ``None``.
        query_lengths: (b,) the real query tokens of each example.

    Returns:
        (b, n), or (b, m, n) when every member with attention gives rows.
    """
    present = [weights for weights in attention if weights is not None]
    if not present:
        return None
    if len({weights.dim() for weights in present}) > 1:  # rows beside single rows
        present = [w if w.dim() == 2 else final_row(w, query_lengths) for w in present]
    return torch.stack(present).mean(0)


def final_row(rows: Tensor, query_lengths: Tensor) -> Tensor:
    """Each example's row of its last real query token: (b, m, n) -> (b, n)."""
    last = (query_lengths - 1).clamp(min=0).to(torch.long)  # (b,)
    return rows[torch.arange(rows.shape[0]), last]  # (b, n)
