"""Attention scorers: one base class owns masking and the softmax, each scorer only scores.

Letters: ``b`` batch, ``n`` number of keys (context tokens), ``dk`` key size, ``dq`` query
size, ``a`` the additive scorer's hidden size.

- ``additive``: ``w^T tanh(W_d y_d(t) + W_q u)``, the Attentive Reader's (Hermann et al. 2015).
- ``dot``: ``y_d(t)^T u`` (no parameters; needs ``dk == dq``).
- ``cosine``: ``c cos(y_d(t), u)`` with a learned scale ``c`` (needs ``dk == dq``).
- ``bilinear``: ``y_d(t)^T W u`` (Chen et al. 2016).

Attention weights are ``masked_softmax(score, mask)`` over the keys: padding gets exactly 0
and a row without real keys gets all zeros.
"""

from __future__ import annotations

import math
from typing import Literal, get_args

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from attentive_reader.nn.masking import masked_softmax

ScorerName = Literal["additive", "dot", "cosine", "bilinear"]
SCORER_NAMES: tuple[str, ...] = get_args(ScorerName)


def _check_dim(name: str, value: int) -> None:
    if not isinstance(value, int) or value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")


class AttentionScorer(nn.Module):
    """Base class: scores every key against one query, then normalises with a masked softmax.

    Subclasses implement :meth:`score` only.

    Args:
        key_dim: size ``dk`` of each key vector.
        query_dim: size ``dq`` of the query vector.
    """

    def __init__(self, key_dim: int, query_dim: int) -> None:
        super().__init__()
        _check_dim("key_dim", key_dim)
        _check_dim("query_dim", query_dim)
        self.key_dim = key_dim
        self.query_dim = query_dim

    def score(self, keys: Tensor, query: Tensor) -> Tensor:
        """Unnormalised scores.

        Args:
            keys: (b, n, dk).
            query: (b, dq).

        Returns:
            (b, n).
        """
        raise NotImplementedError

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
        _check_dim("attention_dim", attention_dim)
        self.key_proj = nn.Linear(key_dim, attention_dim, bias=False)  # W_d
        self.query_proj = nn.Linear(query_dim, attention_dim, bias=False)  # W_q
        self.vector = nn.Linear(attention_dim, 1, bias=False)  # w

    def score(self, keys: Tensor, query: Tensor) -> Tensor:
        hidden = torch.tanh(self.key_proj(keys) + self.query_proj(query).unsqueeze(1))  # (b, n, a)
        return self.vector(hidden).squeeze(-1)  # (b, n)


class DotScorer(AttentionScorer):
    """Dot product ``y_d(t)^T u``; keys and query must have the same size."""

    def __init__(self, key_dim: int, query_dim: int) -> None:
        super().__init__(key_dim, query_dim)
        _check_same_dims("dot", key_dim, query_dim)

    def score(self, keys: Tensor, query: Tensor) -> Tensor:
        return torch.bmm(keys, query.unsqueeze(-1)).squeeze(-1)  # (b, n)


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

    def score(self, keys: Tensor, query: Tensor) -> Tensor:
        cosine = F.cosine_similarity(keys, query.unsqueeze(1), dim=-1, eps=1e-8)  # (b, n)
        return self.log_scale.exp() * cosine  # (b, n)


class BilinearScorer(AttentionScorer):
    """Bilinear form ``y_d(t)^T W u`` (Chen et al. 2016); sizes may differ.

    Args:
        key_dim: size ``dk`` of each key vector.
        query_dim: size ``dq`` of the query vector.
    """

    def __init__(self, key_dim: int, query_dim: int) -> None:
        super().__init__(key_dim, query_dim)
        self.weight = nn.Linear(query_dim, key_dim, bias=False)  # W: (dk, dq)

    def score(self, keys: Tensor, query: Tensor) -> Tensor:
        projected = self.weight(query)  # (b, dk)
        return torch.bmm(keys, projected.unsqueeze(-1)).squeeze(-1)  # (b, n)


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
