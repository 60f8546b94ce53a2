"""Masked softmax and friends: the one place where padding is kept out of a normalisation.

Every attention layer and the answer layer call these helpers instead of re-deriving masking.
Conventions: ``mask`` is a bool tensor (or anything castable to bool) broadcastable to
``scores``; ``True`` marks a real position. Masked positions are filled with the dtype's most
negative *finite* value rather than ``-inf``, so a row with no real position stays finite and
its gradients stay finite too.
"""

from __future__ import annotations

import torch
from torch import Tensor


def mask_logits(logits: Tensor, mask: Tensor) -> Tensor:
    """Replace the logits of masked positions by ``torch.finfo(logits.dtype).min``.

    A softmax over the result gives masked positions probability 0 (``exp`` underflows), an
    ``argmax`` never picks them while a real position exists, and no value is ``inf``/NaN.

    Args:
        logits: scores of any shape.
        mask: True on positions to keep, broadcastable to ``logits``.

    Returns:
        A tensor of ``logits``'s shape and dtype.
    """
    return logits.masked_fill(~mask.bool(), torch.finfo(logits.dtype).min)


def masked_softmax(scores: Tensor, mask: Tensor, dim: int = -1) -> Tensor:
    """Softmax over the real positions of ``scores`` along ``dim``.

    Masked positions get exactly 0; a row without any real position gets all zeros (not NaN,
    not a uniform distribution over padding). Gradients are finite everywhere and exactly 0
    for masked positions.

    Args:
        scores: unnormalised scores, e.g. (b, n).
        mask: True on real positions, broadcastable to ``scores``.
        dim: the dimension to normalise over.

    Returns:
        Weights of ``scores``'s shape; each row with a real position sums to 1.
    """
    mask = mask.bool()
    weights = torch.softmax(mask_logits(scores, mask), dim=dim)
    # A fully masked row softmaxes to uniform over padding; zeroing it (and, for other rows,
    # the exp-underflowed zeros) gives exact zeros on every masked position.
    return weights.masked_fill(~mask, 0.0)


def masked_log_softmax(scores: Tensor, mask: Tensor, dim: int = -1) -> Tensor:
    """Log-softmax over the real positions of ``scores`` along ``dim``.

    Real positions hold log-probabilities normalised over the real positions of their row;
    masked positions (and every position of a fully masked row) hold
    ``torch.finfo(dtype).min``, so ``exp`` of the result equals :func:`masked_softmax`.

    Args:
        scores: unnormalised scores, e.g. (b, n).
        mask: True on real positions, broadcastable to ``scores``.
        dim: the dimension to normalise over.

    Returns:
        Finite log-weights of ``scores``'s shape.
    """
    mask = mask.bool()
    log_weights = torch.log_softmax(mask_logits(scores, mask), dim=dim)
    return mask_logits(log_weights, mask)
