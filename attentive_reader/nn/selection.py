"""Choosing k context positions from a masked policy: sampled, greedy or Gumbel-softmax.

Every strategy takes the policy's log-probabilities over positions and the mask of valid
positions, and returns a :class:`Selection`: the chosen positions, which of the k slots hold a
real choice, the reading weights (the reading is ``weights @ states``) and the log-probability
of the choice under the policy (what REINFORCE differentiates). Masked positions (padding) are
never chosen: their perturbed scores are ``-inf`` before any arg-max or top-k. A row with fewer
than k valid positions (without replacement) or with none at all gets invalid slots, which
carry no weight and no log-probability.

Strategies, each a :class:`Selector` (one method, ``draw``) in ``SELECTORS``:

- ``"sample"``: k draws from the policy, with replacement (k independent categorical draws) or
  without (the Gumbel-top-k trick, an exact sample of the sequential draw without
  replacement; its log-probability is the Plackett-Luce probability of the ordered draw).
- ``"greedy"``: the k most probable positions (evaluation).
- ``"gumbel"``: the straight-through Gumbel-softmax (Jang et al. 2017): the forward pass reads
  the hard sample, the backward pass differentiates the relaxed ``softmax((log p + g) / tau)``.
  A differentiable control for REINFORCE.
- ``"uniform"``: ``"sample"`` from the uniform policy over the valid positions, whatever the
  given one: the control that shows what a learned selection adds.

Letters: ``b`` batch, ``n`` positions, ``k`` positions chosen per row.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar, Literal

import torch
from torch import Tensor

from attentive_reader.nn.masking import masked_log_softmax, masked_softmax

SelectionStrategy = Literal["sample", "greedy", "gumbel", "uniform"]


@dataclass
class Selection:
    """k positions chosen per row.

    Attributes:
        positions: the chosen positions, (b, k) long, in the order drawn (greedy: by
            decreasing probability). Invalid slots hold 0.
        valid: True on slots holding a real choice, (b, k) bool.
        weights: reading weights over positions, (b, n): each valid slot contributes
            ``1 / #valid`` at its position (a position drawn twice counts twice), so
            ``weights @ states`` is the mean of the chosen states. Exactly 0 on padding. For
            ``"gumbel"`` the values are the same, but the gradient is the relaxed sample's.
        log_prob: log-probability of the ordered choice under the policy, (b,);
            differentiable with respect to the policy's log-probabilities; 0 for a row
            without valid slots.
    """

    positions: Tensor
    valid: Tensor
    weights: Tensor
    log_prob: Tensor


class Selector:
    """One way of choosing ``k`` positions per row from a masked policy: :meth:`draw`."""

    #: The strategy's name (``SelectionStrategy``).
    name: ClassVar[str]
    #: True: every draw chooses the same positions, so one draw per row is enough.
    deterministic: ClassVar[bool] = False
    #: True: the reading weights carry the policy's gradient (straight-through); False: the
    #: policy learns from the choice only through a REINFORCE term (``nn/reinforce.py``).
    differentiable: ClassVar[bool] = False

    def draw(
        self,
        log_probs: Tensor,
        mask: Tensor,
        k: int,
        replacement: bool = False,
        generator: torch.Generator | None = None,
    ) -> Selection:
        """Choose ``k`` positions per row (arguments as in :func:`select_positions`)."""
        raise NotImplementedError


class SampledSelector(Selector):
    """``"sample"``: an exact draw from the policy (:func:`sample_positions`)."""

    name = "sample"

    def draw(
        self,
        log_probs: Tensor,
        mask: Tensor,
        k: int,
        replacement: bool = False,
        generator: torch.Generator | None = None,
    ) -> Selection:
        return sample_positions(log_probs, mask, k, replacement=replacement, generator=generator)


class GreedySelector(Selector):
    """``"greedy"``: the ``k`` most probable positions (:func:`greedy_positions`); never
    draws with replacement."""

    name = "greedy"
    deterministic = True

    def draw(
        self,
        log_probs: Tensor,
        mask: Tensor,
        k: int,
        replacement: bool = False,
        generator: torch.Generator | None = None,
    ) -> Selection:
        return greedy_positions(log_probs, mask, k)


class GumbelSelector(Selector):
    """``"gumbel"``: the straight-through Gumbel-softmax (:func:`gumbel_positions`).

    Args:
        temperature: the relaxation's temperature ``tau``, > 0.
    """

    name = "gumbel"
    differentiable = True

    def __init__(self, temperature: float = 1.0) -> None:
        if temperature <= 0:
            raise ValueError(f"the Gumbel-softmax temperature must be > 0, got {temperature}")
        self.temperature = temperature

    def draw(
        self,
        log_probs: Tensor,
        mask: Tensor,
        k: int,
        replacement: bool = False,
        generator: torch.Generator | None = None,
    ) -> Selection:
        return gumbel_positions(
            log_probs, mask, k, replacement, temperature=self.temperature, generator=generator
        )


class UniformSelector(Selector):
    """``"uniform"``: a draw from the uniform policy over the valid positions; the given
    policy is ignored (its ``log_prob`` is the uniform policy's)."""

    name = "uniform"

    def draw(
        self,
        log_probs: Tensor,
        mask: Tensor,
        k: int,
        replacement: bool = False,
        generator: torch.Generator | None = None,
    ) -> Selection:
        uniform = masked_log_softmax(torch.zeros_like(log_probs), mask)  # (b, n)
        return sample_positions(uniform, mask, k, replacement=replacement, generator=generator)


# How each selector is made from the Gumbel-softmax temperature (only "gumbel" reads it).
SELECTORS: dict[str, Callable[[float], Selector]] = {
    "sample": lambda temperature: SampledSelector(),
    "greedy": lambda temperature: GreedySelector(),
    "gumbel": GumbelSelector,
    "uniform": lambda temperature: UniformSelector(),
}


def build_selector(strategy: SelectionStrategy, temperature: float = 1.0) -> Selector:
    """The selector of ``strategy`` (``SELECTORS``); ``temperature`` for ``"gumbel"``."""
    if strategy not in SELECTORS:
        raise ValueError(
            f"unknown selection strategy {strategy!r}: use one of {', '.join(SELECTORS)}"
        )
    return SELECTORS[strategy](temperature)


def select_positions(
    log_probs: Tensor,
    mask: Tensor,
    k: int,
    strategy: SelectionStrategy = "sample",
    replacement: bool = False,
    temperature: float = 1.0,
    generator: torch.Generator | None = None,
) -> Selection:
    """Choose ``k`` positions per row with the given strategy (see the module docstring).

    Args:
        log_probs: the policy's log-probabilities, (b, n); values on masked positions are
            ignored (they may be ``-inf``).
        mask: True on positions that may be chosen, (b, n) bool.
        k: positions per row, >= 1.
        strategy: ``"sample"``, ``"greedy"``, ``"gumbel"`` or ``"uniform"``.
        replacement: for ``"sample"``, ``"gumbel"`` and ``"uniform"``: draw with replacement.
        temperature: the Gumbel-softmax temperature (``"gumbel"`` only), > 0.
        generator: optional random generator, for reproducible draws.

    Returns:
        The :class:`Selection`.
    """
    selector = build_selector(strategy, temperature)
    return selector.draw(log_probs, mask, k, replacement=replacement, generator=generator)


def sample_positions(
    log_probs: Tensor,
    mask: Tensor,
    k: int,
    replacement: bool = False,
    generator: torch.Generator | None = None,
) -> Selection:
    """Draw ``k`` positions per row from the masked policy (see :func:`select_positions`)."""
    _check(log_probs, mask, k)
    log_probs = _clean(log_probs, mask)
    if replacement:
        noise = _gumbel_noise((*log_probs.shape[:-1], k, log_probs.shape[-1]), log_probs, generator)
        perturbed = log_probs.detach().unsqueeze(-2) + noise  # (b, k, n)
        perturbed = perturbed.masked_fill(~mask.unsqueeze(-2), float("-inf"))
        positions = perturbed.argmax(dim=-1)  # (b, k)
        valid = mask.gather(-1, positions)  # (b, k)
    else:
        noise = _gumbel_noise(log_probs.shape, log_probs, generator)
        perturbed = (log_probs.detach() + noise).masked_fill(~mask, float("-inf"))  # (b, n)
        positions, valid = _top_k(perturbed, mask, k)  # (b, k), (b, k)
    return Selection(
        positions=positions,
        valid=valid,
        weights=_reading_weights(positions, valid, log_probs),
        log_prob=_log_prob(log_probs, mask, positions, valid, replacement),
    )


def greedy_positions(log_probs: Tensor, mask: Tensor, k: int) -> Selection:
    """The ``k`` most probable valid positions per row (ties broken by ``torch.topk``).

    ``log_prob`` is that of drawing exactly this ordered sequence without replacement.
    """
    _check(log_probs, mask, k)
    log_probs = _clean(log_probs, mask)
    scores = log_probs.detach().masked_fill(~mask, float("-inf"))  # (b, n)
    positions, valid = _top_k(scores, mask, k)  # (b, k), (b, k)
    return Selection(
        positions=positions,
        valid=valid,
        weights=_reading_weights(positions, valid, log_probs),
        log_prob=_log_prob(log_probs, mask, positions, valid, replacement=False),
    )


def gumbel_positions(
    log_probs: Tensor,
    mask: Tensor,
    k: int,
    replacement: bool = False,
    temperature: float = 1.0,
    generator: torch.Generator | None = None,
) -> Selection:
    """Straight-through Gumbel-softmax selection of ``k`` positions per row.

    With replacement each of the k slots is an independent relaxed one-hot sample and the
    reading weights are their mean. Without replacement one perturbation gives the hard top-k
    (the same exact sample as ``"sample"``) and one relaxed ``softmax((log p + g) / tau)``
    carries the gradient. Either way the forward values equal the hard weights.
    """
    _check(log_probs, mask, k)
    if temperature <= 0:
        raise ValueError(f"the Gumbel-softmax temperature must be > 0, got {temperature}")
    log_probs = _clean(log_probs, mask)
    if replacement:
        noise = _gumbel_noise((*log_probs.shape[:-1], k, log_probs.shape[-1]), log_probs, generator)
        perturbed = log_probs.unsqueeze(-2) + noise  # (b, k, n)
        slot_mask = mask.unsqueeze(-2).expand_as(perturbed)  # (b, k, n)
        soft = masked_softmax(perturbed / temperature, slot_mask)  # (b, k, n)
        positions = perturbed.detach().masked_fill(~slot_mask, float("-inf")).argmax(-1)  # (b, k)
        valid = mask.gather(-1, positions)  # (b, k)
        hard = torch.nn.functional.one_hot(positions, log_probs.shape[-1]).to(soft.dtype)
        hard = hard * valid.unsqueeze(-1)  # (b, k, n)
        soft = soft * valid.unsqueeze(-1)
        count = valid.sum(-1, keepdim=True).clamp_min(1).to(soft.dtype)  # (b, 1)
        straight = (hard - soft.detach() + soft).sum(dim=-2) / count  # (b, n)
    else:
        noise = _gumbel_noise(log_probs.shape, log_probs, generator)
        perturbed = log_probs + noise  # (b, n)
        soft = masked_softmax(perturbed / temperature, mask)  # (b, n)
        scores = perturbed.detach().masked_fill(~mask, float("-inf"))  # (b, n)
        positions, valid = _top_k(scores, mask, k)  # (b, k), (b, k)
        hard = _reading_weights(positions, valid, log_probs).detach()  # (b, n)
        soft = soft * valid.any(-1, keepdim=True)
        straight = hard - soft.detach() + soft  # (b, n)
    return Selection(
        positions=positions,
        valid=valid,
        weights=straight,
        log_prob=_log_prob(log_probs, mask, positions, valid, replacement),
    )


def _check(log_probs: Tensor, mask: Tensor, k: int) -> None:
    if k < 1:
        raise ValueError(f"k (positions to select) must be >= 1, got {k}")
    if log_probs.shape != mask.shape:
        raise ValueError(
            f"log_probs {tuple(log_probs.shape)} and mask {tuple(mask.shape)} must have the "
            "same shape (b, n)"
        )
    if mask.dtype != torch.bool:
        raise ValueError(f"mask must be a bool tensor, got {mask.dtype}")


def _clean(log_probs: Tensor, mask: Tensor) -> Tensor:
    """Masked entries -> the most negative finite value, so no -inf/NaN reaches a gradient."""
    floor = torch.finfo(log_probs.dtype).min
    return torch.where(mask, log_probs, torch.full_like(log_probs, floor))


def _gumbel_noise(
    shape: tuple[int, ...] | torch.Size, like: Tensor, generator: torch.Generator | None
) -> Tensor:
    # Drawn in float32 whatever the policy's dtype: in bf16, 1 - 1e-7 rounds to 1 and the
    # noise overflows.
    tiny = torch.finfo(torch.float32).tiny
    uniform = torch.rand(shape, generator=generator, device=like.device, dtype=torch.float32)
    return (-torch.log(-torch.log(uniform.clamp(min=tiny, max=1.0 - 1e-7)))).to(like.dtype)


def _top_k(scores: Tensor, mask: Tensor, k: int) -> tuple[Tensor, Tensor]:
    """Top-k indices of ``scores`` (-inf on masked entries) along the last dim, and validity.

    Returns:
        positions (b, k), padded with 0 when ``k`` exceeds the number of positions, and valid
        (b, k): the slot holds a real (unmasked) position.
    """
    n = scores.shape[-1]
    positions = scores.topk(min(k, n), dim=-1).indices  # (b, min(k, n))
    valid = mask.gather(-1, positions)  # (b, min(k, n))
    if k > n:
        pad = positions.new_zeros((*positions.shape[:-1], k - n))
        positions = torch.cat([positions, pad], dim=-1)  # (b, k)
        valid = torch.cat([valid, pad.bool()], dim=-1)  # (b, k)
    return positions, valid


def _reading_weights(positions: Tensor, valid: Tensor, like: Tensor) -> Tensor:
    """(b, n) weights: 1/#valid at each valid chosen position (repeats add up)."""
    count = valid.sum(-1, keepdim=True).clamp_min(1).to(like.dtype)  # (b, 1)
    weights = torch.zeros_like(like)  # (b, n)
    return weights.scatter_add(-1, positions, valid.to(like.dtype)) / count


def _log_prob(
    log_probs: Tensor, mask: Tensor, positions: Tensor, valid: Tensor, replacement: bool
) -> Tensor:
    """Log-probability of the ordered draw ``positions`` (invalid slots contribute 0)."""
    picked = log_probs.gather(-1, positions)  # (b, k)
    if not replacement:
        # Slot j is drawn from what is left: p_j / (sum of the not-yet-drawn valid p), whose
        # log-denominator is a logsumexp over the remaining positions (stable even when the
        # earlier draws took nearly all the mass, unlike log(1 - cumsum)).
        n = log_probs.shape[-1]
        drawn = torch.nn.functional.one_hot(positions, n) * valid.unsqueeze(-1)  # (b, k, n)
        before = drawn.cumsum(dim=-2) - drawn  # (b, k, n): drawn in an earlier slot
        remaining = mask.unsqueeze(-2) & (before == 0)  # (b, k, n)
        floor = torch.finfo(log_probs.dtype).min
        left = torch.where(
            remaining,
            log_probs.unsqueeze(-2),
            torch.full_like(before, floor, dtype=log_probs.dtype),
        )
        picked = picked - torch.logsumexp(left, dim=-1)  # (b, k)
    zero = torch.zeros_like(picked)
    return torch.where(valid, picked, zero).sum(dim=-1)  # (b,)
