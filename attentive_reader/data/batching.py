"""Batches of cloze examples as tensors.

CONTRACT (shared by data/, models/, eval/, viz/): ``ClozeBatch`` below. The collate function
and the length-bucketed batch sampler are added to this module by the data work.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass
class ClozeBatch:
    """A padded batch. Letters: ``b`` batch, ``n`` context length, ``m`` query length,
    ``e`` number of entity ids (the model's output size).

    Attributes:
        context: token ids of the anonymized context, (b, n), padded with 0.
        context_mask: True on real context tokens, (b, n) bool.
        query: token ids of the query, (b, m), padded with 0.
        query_mask: True on real query tokens, (b, m) bool.
        candidates: True for entity ids that occur in the context, (b, e) bool.
        answer: the answer's entity id (``@entity7`` -> 7 after any permutation), (b,) long.
        ids: the example ids, length b.
        truncated: True where the context was cut to the length cap, (b,) bool.
    """

    context: torch.Tensor
    context_mask: torch.Tensor
    query: torch.Tensor
    query_mask: torch.Tensor
    candidates: torch.Tensor
    answer: torch.Tensor
    ids: list[str]
    truncated: torch.Tensor

    def __len__(self) -> int:
        return self.context.shape[0]
