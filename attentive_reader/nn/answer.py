"""Answer layers: from what a reader read to scores over the entity ids.

Letters: ``b`` batch, ``n`` context length, ``g`` size of the reader's output vector, ``d``
embedding size, ``e`` number of entity ids.

- ``output``: ``W_a g``, one learned row per entity id (Hermann et al. 2015; Chen et al. 2016).
- ``tied``: ``(W g + c + x) . E[@entity_k] / sqrt(d)``: every entity id is scored against the embedding
  of its own marker through one shared projection, so relabelling the entity ids (and their
  embeddings with them) permutes the scores and changes nothing else. ``x`` is what the
  reader's attention read of the entity markers' *embeddings* (``sum_{t: d_t is an entity}
  s(t) E[d_t]``; 0 for readers without token attention): when the attention rests on an entity's mention, ``x . E[@entity_k]`` is
  largest for that entity, with nothing to learn, so the tied layer learns as fast as the
  attention does.
- ``pointer``: the attention sum of Kadlec et al. (2016, the AS Reader):
  ``p(k) ~ sum_{t: d_t = @entity_k} exp(score(t))``, the reader's token attention gathered by
  entity; also permutation equivariant, and it needs no output parameters at all.

Why ``tied`` and ``pointer`` exist: with the paper's per-example permutation of entity ids,
each of the ``e`` output rows of ``W_a`` must be aligned with its own input embedding
separately, and on a small corpus each id is seen too rarely for that: the reader sits at
chance for many epochs. The tied and pointer layers have nothing id-specific to learn.

Every layer returns raw scores ``(b, e)``; the reader masks them to the candidates
(``mask_logits``), so softmax probabilities sum to 1 over the candidates and are 0 elsewhere.
"""

from __future__ import annotations

import math
from typing import Literal, get_args

import torch
from torch import Tensor, nn

AnswerLayerName = Literal["output", "tied", "pointer"]
ANSWER_LAYERS: tuple[str, ...] = get_args(AnswerLayerName)
# How far below the best entity an entity without a position in the (truncated) context is
# put: probability ~e^-50 relative, with a finite loss and gradient if it is the answer.
_ABSENT_MARGIN = 50.0


class OutputAnswer(nn.Linear):
    """``W_a g + b_a``: a learned row per entity id (the paper's answer layer).

    Args:
        input_dim: size ``g`` of the reader's output vector.
        num_entities: number of entity ids ``e``.
    """

    def __init__(self, input_dim: int, num_entities: int) -> None:
        super().__init__(input_dim, num_entities)


class TiedAnswer(nn.Module):
    """``(W g + c + x) . E[@entity_k] / sqrt(d)``: scores tied to the entity markers' embeddings.

    Scaled by ``1 / sqrt(d)`` as in dot-product attention: a match ``E[k] . E[k]`` grows like
    ``d`` and a mismatch like ``sqrt(d)``, so the scaled match stands ``sqrt(d)`` above noise
    without saturating the softmax.

    Args:
        input_dim: size ``g`` of the reader's output vector.
        embedding_dim: size ``d`` of the word (and entity marker) embeddings.
    """

    def __init__(self, input_dim: int, embedding_dim: int) -> None:
        super().__init__()
        self.proj = nn.Linear(input_dim, embedding_dim)  # W, c

    def forward(self, g: Tensor, entity_embeddings: Tensor, read: Tensor | None = None) -> Tensor:
        """Scores (b, e) of ``g`` (b, g) against ``entity_embeddings`` (e, d).

        Args:
            g: the reader's output vector (b, g).
            entity_embeddings: ``E[@entity_0 .. @entity_{e-1}]`` (e, d).
            read: ``x`` (b, d), the attention-weighted embeddings of the context, or ``None``.
        """
        query = self.proj(g)  # (b, d)
        if read is not None:
            query = query + read.to(query.dtype)
        scale = 1.0 / math.sqrt(entity_embeddings.shape[-1])
        return scale * (query @ entity_embeddings.to(query.dtype).t())  # (b, e)


def token_entities(context: Tensor, mask: Tensor, entity_offset: int, num_entities: int) -> Tensor:
    """The entity id of every context token, ``-1`` for words and padding.

    Args:
        context: token ids (b, n).
        mask: True on real tokens (b, n).
        entity_offset: token id of ``@entity0``.
        num_entities: size of the entity block ``e``.

    Returns:
        (b, n) long, in ``-1 .. e-1``.
    """
    k = context.long() - entity_offset  # (b, n)
    is_entity = (k >= 0) & (k < num_entities) & mask.bool()  # (b, n)
    return torch.where(is_entity, k, torch.full_like(k, -1))


def pointer_scores(token_scores: Tensor, entities: Tensor, num_entities: int) -> Tensor:
    """The attention sum: ``log sum_{t: entities[t] = k} exp(token_scores[t])`` per entity id.

    A softmax of the result over the candidates is the reader's token attention renormalised
    over the candidates' positions and summed per candidate. Computed in float32 with a
    per-entity maximum, so any score range is safe. Entity ids with no position (absent, or
    cut off by a length cap) get the row's best score minus 50: probability ~0, finite loss.

    Args:
        token_scores: unnormalised log-attention over the context tokens, (b, n); only
            positions with ``entities >= 0`` are read (raw scorer scores or log-weights).
        entities: entity id of each token, ``-1`` elsewhere, (b, n) (``token_entities``).
        num_entities: number of entity ids ``e``.

    Returns:
        (b, e) float32 scores.
    """
    b = token_scores.shape[0]
    valid = entities >= 0  # (b, n)
    index = entities.clamp_min(0)  # (b, n)
    scores = token_scores.float().masked_fill(~valid, float("-inf"))  # (b, n)
    best = torch.full((b, num_entities), float("-inf"), device=scores.device)
    best = best.scatter_reduce(1, index, scores, reduce="amax", include_self=True)  # (b, e)
    present = torch.isfinite(best)  # (b, e)
    shift = torch.where(present, best, torch.zeros_like(best)).detach()  # (b, e)
    weights = torch.exp(scores - shift.gather(1, index)).masked_fill(~valid, 0.0)  # (b, n)
    sums = torch.zeros_like(best).scatter_add(1, index, weights)  # (b, e)
    logits = shift + torch.log(sums.clamp_min(torch.finfo(sums.dtype).tiny))  # (b, e)
    floor = torch.where(present, logits, torch.full_like(logits, float("-inf")))
    floor = floor.amax(dim=1, keepdim=True).nan_to_num(0.0, neginf=0.0) - _ABSENT_MARGIN
    return torch.where(present, logits, floor.expand_as(logits))  # (b, e)


def check_answer_layer(name: str, allowed: tuple[str, ...], reader: str, why: str = "") -> None:
    """Raise a ``ValueError`` naming the choices when ``name`` is not among ``allowed``."""
    if name not in ANSWER_LAYERS:
        raise ValueError(f"answer_layer must be one of {', '.join(ANSWER_LAYERS)}, got {name!r}")
    if name not in allowed:
        raise ValueError(
            f"{reader} cannot use answer_layer={name!r}{why}; choose one of {', '.join(allowed)}"
        )
