"""Attention scorers: one base class owns masking and the softmax, each scorer only scores.

Letters: ``b`` batch, ``n`` number of keys (context tokens), ``dk`` key size, ``dq`` query
size, ``a`` the additive scorer's hidden size.

- ``additive``: ``w^T tanh(W_d y_d(t) + W_q u)``, the Attentive Reader's (Hermann et al. 2015).
- ``dot``: ``y_d(t)^T u`` (no parameters; needs ``dk == dq``).
- ``cosine``: ``c cos(y_d(t), u)`` with a learned scale ``c`` (needs ``dk == dq``).
- ``bilinear``: ``y_d(t)^T W u`` (Chen et al. 2016).

Attention weights are ``masked_softmax(score, mask)`` over the keys: padding gets exactly 0
and a row without real keys gets all zeros.

"Project keys once, score many queries": a reader that scores several queries against the
same keys (the Impatient Reader's query steps) calls ``prepared = scorer.prepare(keys)`` once
and ``scorer.score_prepared(prepared, query)`` per query, or passes all queries at once as a
(b, s, dq) tensor. ``prepare`` does the work that depends on the keys alone (the additive
scorer's ``W_d y_d``, the cosine's key norms); ``score`` is ``score_prepared(prepare(keys),
query)``, so both paths compute the same numbers.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal, get_args

import torch
from torch import Tensor, nn

from attentive_reader.common.checks import check_positive
from attentive_reader.nn.masking import masked_softmax

ScorerName = Literal["additive", "dot", "cosine", "bilinear"]
SCORER_NAMES: tuple[str, ...] = get_args(ScorerName)


@dataclass(frozen=True)
class PreparedKeys:
    """Keys as a scorer prepared them, to score any number of queries against.

    Attributes:
        keys: what the scorer reads for every query, (b, n, ·): the keys themselves (dot,
            bilinear), their projection ``W_d y_d`` (b, n, a) (additive) or the keys scaled
            to unit length (cosine).
    """

    keys: Tensor


class AttentionScorer(nn.Module):
    """Base class: scores every key against one query, then normalises with a masked softmax.

    Subclasses implement :meth:`score_prepared` and, when some work depends on the keys
    alone, :meth:`prepare`.

    Args:
        key_dim: size ``dk`` of each key vector.
        query_dim: size ``dq`` of the query vector.
    """

    def __init__(self, key_dim: int, query_dim: int) -> None:
        super().__init__()
        check_positive(key_dim=key_dim)
        check_positive(query_dim=query_dim)
        self.key_dim = key_dim
        self.query_dim = query_dim

    def prepare(self, keys: Tensor) -> PreparedKeys:
        """The keys (b, n, dk) ready to be scored against many queries (default: as they are)."""
        return PreparedKeys(keys)

    def score_prepared(self, prepared: PreparedKeys, query: Tensor) -> Tensor:
        """Unnormalised scores of prepared keys.

        Args:
            prepared: from :meth:`prepare`.
            query: (b, dq), or (b, s, dq) for ``s`` queries at once.

        Returns:
            (b, n), or (b, s, n).
        """
        raise NotImplementedError

    def score(self, keys: Tensor, query: Tensor) -> Tensor:
        """Unnormalised scores.

        Args:
            keys: (b, n, dk).
            query: (b, dq), or (b, s, dq).

        Returns:
            (b, n), or (b, s, n).
        """
        return self.score_prepared(self.prepare(keys), query)

    def forward(self, keys: Tensor, query: Tensor, mask: Tensor) -> Tensor:
        """Attention weights over the keys.

        Args:
            keys: (b, n, dk).
            query: (b, dq).
            mask: True on real keys, (b, n).

        Returns:
            (b, n) weights: rows sum to 1 over real keys, padding holds exactly 0, rows without
            a real key are all 0.
        """
        return masked_softmax(self.score(keys, query), mask)  # (b, n)


class AdditiveScorer(AttentionScorer):
    """The Attentive Reader's scorer (Hermann et al. 2015): ``w^T tanh(W_d y_d(t) + W_q u)``.

    Args:
        key_dim: size ``dk`` of each key vector.
        query_dim: size ``dq`` of the query vector.
        attention_dim: hidden size ``a`` of the tanh layer.
    """

    def __init__(self, key_dim: int, query_dim: int, attention_dim: int) -> None:
        super().__init__(key_dim, query_dim)
        check_positive(attention_dim=attention_dim)
        self.key_proj = nn.Linear(key_dim, attention_dim, bias=False)  # W_d
        self.query_proj = nn.Linear(query_dim, attention_dim, bias=False)  # W_q
        self.vector = nn.Linear(attention_dim, 1, bias=False)  # w

    def prepare(self, keys: Tensor) -> PreparedKeys:
        return PreparedKeys(self.key_proj(keys))  # W_d y_d: (b, n, a)

    def score_prepared(self, prepared: PreparedKeys, query: Tensor) -> Tensor:
        projected = self.query_proj(query).unsqueeze(-2)  # W_q u: (b, [s,] 1, a)
        keys = prepared.keys if query.dim() == 2 else prepared.keys.unsqueeze(1)
        # In place on the fresh sum: one (b, n, a) tensor per query instead of two.
        hidden = (keys + projected).tanh_()  # (b, n, a) | (b, s, n, a)
        return self.vector(hidden).squeeze(-1)  # w^T tanh(...): (b, n) | (b, s, n)


class DotScorer(AttentionScorer):
    """Dot product ``y_d(t)^T u``; keys and query must have the same size."""

    def __init__(self, key_dim: int, query_dim: int) -> None:
        super().__init__(key_dim, query_dim)
        _check_same_dims("dot", key_dim, query_dim)

    def score_prepared(self, prepared: PreparedKeys, query: Tensor) -> Tensor:
        return _dot(prepared.keys, query)  # (b, n) | (b, s, n)


class CosineScorer(AttentionScorer):
    """Scaled cosine similarity ``c * y_d(t)^T u / (|y_d(t)| |u|)``; needs ``dk == dq``.

    A plain cosine lies in [-1, 1], which caps how sharp the attention can get (a ratio of
    ``e^2`` between the best and the worst key); the learned scale ``c`` (initially 10,
    stored as its logarithm, as in Swin Transformer V2's scaled cosine attention) lifts that
    cap. Zero vectors score 0.
    """

    def __init__(self, key_dim: int, query_dim: int, initial_scale: float = 10.0) -> None:
        super().__init__(key_dim, query_dim)
        _check_same_dims("cosine", key_dim, query_dim)
        if initial_scale <= 0:
            raise ValueError(f"initial_scale must be positive, got {initial_scale}")
        self.log_scale = nn.Parameter(torch.tensor(math.log(initial_scale)))

    def prepare(self, keys: Tensor) -> PreparedKeys:
        return PreparedKeys(_unit(keys))  # (b, n, dk)

    def score_prepared(self, prepared: PreparedKeys, query: Tensor) -> Tensor:
        # An element-wise product and a sum, as F.cosine_similarity computes it (same bits).
        unit_query = _unit(query).unsqueeze(-2)  # (b, 1, dk) | (b, s, 1, dk)
        keys = prepared.keys if query.dim() == 2 else prepared.keys.unsqueeze(1)
        cosine = (keys * unit_query).sum(-1)  # (b, n) | (b, s, n)
        return self.log_scale.exp() * cosine


class BilinearScorer(AttentionScorer):
    """Bilinear form ``y_d(t)^T W u`` (Chen et al. 2016); sizes may differ.

    Args:
        key_dim: size ``dk`` of each key vector.
        query_dim: size ``dq`` of the query vector.
    """

    def __init__(self, key_dim: int, query_dim: int) -> None:
        super().__init__(key_dim, query_dim)
        self.weight = nn.Linear(query_dim, key_dim, bias=False)  # W: (dk, dq)

    def score_prepared(self, prepared: PreparedKeys, query: Tensor) -> Tensor:
        # W u rather than W^T y_d: one projection per query, none per key.
        return _dot(prepared.keys, self.weight(query))  # (b, n) | (b, s, n)


def _dot(keys: Tensor, query: Tensor) -> Tensor:
    """``keys`` (b, n, d) dotted with ``query`` (b, d) -> (b, n), or (b, s, d) -> (b, s, n)."""
    if query.dim() == 2:
        return torch.bmm(keys, query.unsqueeze(-1)).squeeze(-1)  # (b, n)
    return torch.bmm(query, keys.transpose(1, 2))  # (b, s, n)


def _unit(vectors: Tensor, eps: float = 1e-8) -> Tensor:
    """``vectors`` (..., d) scaled to unit length; zero vectors stay 0 (as in cosine_similarity)."""
    return vectors / vectors.norm(dim=-1, keepdim=True).clamp_min(eps)


def _check_same_dims(name: str, key_dim: int, query_dim: int) -> None:
    if key_dim != query_dim:
        raise ValueError(
            f"the {name} scorer needs key_dim == query_dim, got key_dim={key_dim} and "
            f"query_dim={query_dim}; use the 'bilinear' or 'additive' scorer to compare "
            "vectors of different sizes"
        )


def build_scorer(
    name: ScorerName, key_dim: int, query_dim: int, attention_dim: int | None = None
) -> AttentionScorer:
    """Build a scorer by name.

    Args:
        name: one of ``additive``, ``dot``, ``cosine``, ``bilinear``.
        key_dim: size of each key vector.
        query_dim: size of the query vector.
        attention_dim: hidden size of the additive scorer (default: ``key_dim``); ignored by
            the others.

    Raises:
        ValueError: for an unknown name, or dot/cosine with different sizes.
    """
    if name == "additive":
        return AdditiveScorer(
            key_dim, query_dim, key_dim if attention_dim is None else attention_dim
        )
    if name == "dot":
        return DotScorer(key_dim, query_dim)
    if name == "cosine":
        return CosineScorer(key_dim, query_dim)
    if name == "bilinear":
        return BilinearScorer(key_dim, query_dim)
    raise ValueError(f"unknown scorer {name!r}; choose one of {', '.join(SCORER_NAMES)}")
