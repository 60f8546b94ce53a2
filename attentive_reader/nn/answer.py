"""Answer layers: from what a reader read to scores over the entity ids.

Letters: ``b`` batch, ``n`` context length, ``g`` size of the reader's output vector, ``d``
embedding size, ``e`` number of entity ids.

- ``output``: ``W_a g``, one learned row per entity id (Hermann et al. 2015; Chen et al. 2016).
- ``tied``: ``(W g + c + x) . E[@entity_k] / sqrt(d)``: every entity id is scored against the embedding
  of its own marker through one shared projection, so relabelling the entity ids (and their
  embeddings with them) permutes the scores and changes nothing else. ``x`` is the entity
  markers' *embeddings* under the reader's attention (``sum_{t: d_t is an entity} s(t)
  E[d_t]``; 0 for readers without token attention): when the attention rests on an entity's
  mention, ``x . E[@entity_k]`` is largest for that entity, with nothing to learn, so the tied
  layer learns as fast as the attention does.
- ``pointer``: the attention sum of Kadlec et al. (2016, the AS Reader):
  ``p(k) ~ sum_{t: d_t = @entity_k} exp(score(t))``, the reader's token attention gathered by
  entity; also permutation equivariant, and it needs no output parameters at all.

Why ``tied`` and ``pointer`` exist: with the paper's per-example permutation of entity ids,
each of the ``e`` output rows of ``W_a`` must be aligned with its own input embedding
separately, and on a small corpus each id is seen too rarely for that: the reader sits at
chance for many epochs. The tied and pointer layers have nothing id-specific to learn.

Every layer is an :class:`AnswerHead` with one method, ``score(context, given)``: raw scores
``(b, e)`` from what the reader hands it (:class:`AnswerInput`: its vector ``g``, the weights
its attention used, its token scores); each head takes what it needs and says so when it is
missing. The reader masks the scores to the candidates (``mask_logits``), so softmax
probabilities sum to 1 over the candidates and are 0 elsewhere. :func:`build_answer_head`
makes the head of a name (``ANSWER_HEADS``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar, Literal, get_args

import torch
from torch import Tensor, nn

AnswerLayerName = Literal["output", "tied", "pointer"]
ANSWER_LAYERS: tuple[str, ...] = get_args(AnswerLayerName)
# How far below the best entity an entity without a position in the (truncated) context is
# put: probability ~e^-50 relative, with a finite loss and gradient if it is the answer.
_ABSENT_MARGIN = 50.0


@dataclass(frozen=True)
class AnswerContext:
    """The context as an answer head sees it (letters as above).

    Attributes:
        context: token ids (b, n).
        mask: True on real tokens (b, n).
        embedding: the reader's word embeddings (entity markers included); read, never owned.
        entity_offset: token id of ``@entity0``.
        num_entities: number of entity ids ``e``.
    """

    context: Tensor
    mask: Tensor
    embedding: nn.Embedding
    entity_offset: int
    num_entities: int

    def entities(self) -> Tensor:
        """(b, n) the entity id of every context token, ``-1`` elsewhere (``token_entities``)."""
        return token_entities(self.context, self.mask, self.entity_offset, self.num_entities)

    def entity_embeddings(self) -> Tensor:
        """(e, d) ``E[@entity_0 .. @entity_{e-1}]``."""
        return self.embedding.weight[self.entity_offset : self.entity_offset + self.num_entities]


@dataclass(frozen=True)
class AnswerInput:
    """What a reader hands its answer head (letters as above; ``s`` samples of a reading).

    Attributes:
        vector: ``g`` (b, g), the vector the ``output`` and ``tied`` heads answer from. A
            reader with a read-out (``ClozeReader.readout``) gives its reading ``r`` here and
            ``query`` beside it; the answer path replaces it by ``readout(r, u)``.
        query: ``u`` (b, g), the query vector the read-out combines with ``r``.
        weights: (b, n) the attention weights of the reading, or (b, s, n) for ``s``
            readings whose vectors are the rows ``b * s`` of ``vector`` (``tied`` adds the
            marker embeddings they rest on); ``None`` for a reader without token attention.
        token_scores: (b, n) unnormalised log-attention over the context tokens
            (``pointer``).
    """

    vector: Tensor | None = None
    query: Tensor | None = None
    weights: Tensor | None = None
    token_scores: Tensor | None = None

    def needed(self, name: str, head: str) -> Tensor:
        """The field ``name``; a ``ValueError`` naming the ``head`` when it is ``None``."""
        value = getattr(self, name)
        if value is None:
            raise ValueError(f"the {head} answer layer needs {name}")
        return value


class AnswerHead(nn.Module):
    """What every answer layer offers the reader that composes it: :meth:`score`."""

    #: The name of the head in configs (``answer_layer``).
    name: ClassVar[str]
    #: True: the head answers from token scores alone, and the reader needs no read-out.
    reads_tokens: ClassVar[bool] = False

    def score(self, context: AnswerContext, given: AnswerInput) -> Tensor:
        """Raw scores (b, e) over the entity ids (``(b * s, e)`` for ``s`` readings)."""
        raise NotImplementedError


class OutputAnswer(nn.Linear, AnswerHead):
    """``W_a g + b_a``: a learned row per entity id (the paper's answer layer).

    Args:
        input_dim: size ``g`` of the reader's output vector.
        num_entities: number of entity ids ``e``.
    """

    name = "output"

    def __init__(self, input_dim: int, num_entities: int) -> None:
        super().__init__(input_dim, num_entities)

    def score(self, context: AnswerContext, given: AnswerInput) -> Tensor:
        return self(given.needed("vector", self.name))  # (b, e)


class TiedAnswer(AnswerHead):
    """``(W g + c + x) . E[@entity_k] / sqrt(d)``: scores tied to the entity markers' embeddings.

    Scaled by ``1 / sqrt(d)`` as in dot-product attention: a match ``E[k] . E[k]`` grows like
    ``d`` and a mismatch like ``sqrt(d)``, so the scaled match stands ``sqrt(d)`` above noise
    without saturating the softmax.

    Args:
        input_dim: size ``g`` of the reader's output vector.
        embedding_dim: size ``d`` of the word (and entity marker) embeddings.
    """

    name = "tied"

    def __init__(self, input_dim: int, embedding_dim: int) -> None:
        super().__init__()
        self.proj = nn.Linear(input_dim, embedding_dim)  # W, c

    def forward(
        self, g: Tensor, entity_embeddings: Tensor, markers: Tensor | None = None
    ) -> Tensor:
        """Scores (b, e) of ``g`` (b, g) against ``entity_embeddings`` (e, d).

        Args:
            g: the reader's output vector (b, g).
            entity_embeddings: ``E[@entity_0 .. @entity_{e-1}]`` (e, d).
            markers: ``x`` (b, d), the attended marker embeddings, or ``None``.
        """
        query = self.proj(g)  # (b, d)
        if markers is not None:
            query = query + markers.to(query.dtype)
        scale = 1.0 / math.sqrt(entity_embeddings.shape[-1])
        return scale * (query @ entity_embeddings.to(query.dtype).t())  # (b, e)

    def attended_markers(self, context: AnswerContext, weights: Tensor) -> Tensor:
        """``x = sum_{t: d_t is an entity} w(t) E[d_t]``: the context's entity-marker embeddings
        under ``weights`` (b, n) -> (b, d), or under several readings (b, s, n) -> (b, s, d)."""
        # Only the entity markers' embeddings: attention that rests on a word adds nothing
        # (and trains no word embedding towards the answer's marker).
        entities = context.entities()  # (b, n)
        embedded = context.embedding(context.context) * (entities >= 0).unsqueeze(-1)  # (b, n, d)
        if weights.dim() == 2:
            return torch.bmm(weights.unsqueeze(1).to(embedded.dtype), embedded).squeeze(1)
        return torch.bmm(weights.to(embedded.dtype), embedded)  # (b, s, d)

    def score(self, context: AnswerContext, given: AnswerInput) -> Tensor:
        g = given.needed("vector", self.name)  # (b | b * s, g)
        markers = None
        if given.weights is not None:
            markers = self.attended_markers(context, given.weights).reshape(len(g), -1)
        return self(g, context.entity_embeddings(), markers)  # (b | b * s, e)


class PointerAnswer(AnswerHead):
    """The attention sum (``pointer_scores``): the reader's token attention gathered by entity;
    no parameters."""

    name = "pointer"
    reads_tokens = True

    def forward(self, token_scores: Tensor, entities: Tensor, num_entities: int) -> Tensor:
        """Scores (b, e) of ``token_scores`` (b, n) gathered by ``entities`` (b, n)."""
        return pointer_scores(token_scores, entities, num_entities)

    def score(self, context: AnswerContext, given: AnswerInput) -> Tensor:
        token_scores = given.needed("token_scores", self.name)  # (b, n)
        return self(token_scores, context.entities(), context.num_entities)  # (b, e)


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


def build_answer_head(
    name: AnswerLayerName, input_dim: int, num_entities: int, embedding_dim: int
) -> AnswerHead:
    """The answer head called ``name``.

    Args:
        name: ``output``, ``tied`` or ``pointer`` (see ``check_answer_layer``).
        input_dim: size ``g`` of the reader's output vector (``output``, ``tied``).
        num_entities: number of entity ids ``e``.
        embedding_dim: size ``d`` of the reader's embeddings (``tied``).
    """
    if name not in ANSWER_HEADS:
        check_answer_layer(name, ANSWER_LAYERS, "a reader")
    return ANSWER_HEADS[name](input_dim, num_entities, embedding_dim)


# How each head is made from the sizes a reader knows.
ANSWER_HEADS: dict[str, Callable[[int, int, int], AnswerHead]] = {
    "output": lambda input_dim, entities, embedding_dim: OutputAnswer(input_dim, entities),  # W_a
    "tied": lambda input_dim, entities, embedding_dim: TiedAnswer(input_dim, embedding_dim),
    "pointer": lambda input_dim, entities, embedding_dim: PointerAnswer(),
}


def check_answer_layer(name: str, allowed: tuple[str, ...], reader: str, why: str = "") -> None:
    """Raise a ``ValueError`` naming the choices when ``name`` is not among ``allowed``."""
    if name not in ANSWER_LAYERS:
        raise ValueError(f"answer_layer must be one of {', '.join(ANSWER_LAYERS)}, got {name!r}")
    if name not in allowed:
        raise ValueError(
            f"{reader} cannot use answer_layer={name!r}{why}; choose one of {', '.join(allowed)}"
        )
