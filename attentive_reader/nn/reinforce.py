"""The score-function (REINFORCE) estimator and its variance-reduction helpers.

For a policy ``pi_theta`` over discrete choices ``a`` and a reward ``R(a)``, the gradient of
the expected reward is ``E[(R(a) - b) grad log pi_theta(a)]`` for any baseline ``b`` that does
not depend on ``a`` (Williams 1992). :func:`reinforce_loss` is the surrogate whose gradient is
the negative of that estimate; reward and baseline are detached inside it, so no gradient ever
flows into either of them through the policy term.

Baselines offered here, each a :class:`Baseline` (one call: the baseline of a batch's
rewards) in ``BASELINES``:

- ``none``: 0.
- ``ema``: an exponential moving average of past mean rewards (:class:`MovingAverageBaseline`).
- ``learned``: a value head's prediction, fitted by MSE; the head lives in the model that owns
  the features it reads (:meth:`Baseline.value_head` builds it), and its prediction is detached.
- ``leave_one_out``: with ``s >= 2`` samples per example, sample ``i``'s baseline is the mean
  reward of the other ``s - 1`` samples (:func:`leave_one_out_baseline`; Kool et al. 2019, "Buy
  4 REINFORCE samples, get a baseline for free"); unbiased because the other samples are
  independent of sample ``i``.

Rewards of a sampled reading's answer, each a :class:`Reward` in ``REWARDS``:
``log_likelihood`` (``log p(answer)``) and ``correct`` (``1[argmax = answer]``).

:class:`EntropySchedule` gives the weight of an entropy bonus that decays with the training
step, and :func:`policy_entropy` the entropy of a masked categorical policy.

Letters: ``b`` batch, ``s`` samples per example, ``e`` answer choices (entity ids).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import ClassVar, Literal

import torch
from torch import Tensor, nn

RewardName = Literal["log_likelihood", "correct"]
BaselineName = Literal["none", "ema", "learned", "leave_one_out"]


def reinforce_loss(log_prob: Tensor, reward: Tensor, baseline: Tensor | float = 0.0) -> Tensor:
    """REINFORCE surrogate loss: ``-mean((reward - baseline) * log_prob)``.

    Its gradient with respect to the policy parameters is minus the Monte-Carlo estimate of
    ``grad E[reward]``, so minimising it ascends the expected reward. ``reward`` and
    ``baseline`` are detached here; only ``log_prob`` carries gradient.

    Args:
        log_prob: log-probability of each sampled action under the policy, any shape ``S``
            (e.g. (b,) or (b, s)).
        reward: the reward of each sample, shape ``S``.
        baseline: a baseline broadcastable to ``S`` (a float, a scalar tensor, or one value per
            sample that does not depend on that sample's action).

    Returns:
        The scalar loss (the mean over all samples).

    Raises:
        ValueError: if ``log_prob`` and ``reward`` differ in shape.
    """
    if log_prob.shape != reward.shape:
        raise ValueError(
            f"log_prob {tuple(log_prob.shape)} and reward {tuple(reward.shape)} must have the "
            "same shape: one reward per sampled action"
        )
    return -(advantage(reward, baseline) * log_prob).mean()


def advantage(reward: Tensor, baseline: Tensor | float = 0.0) -> Tensor:
    """The detached advantage ``reward - baseline`` (same shape as ``reward``)."""
    baseline = torch.as_tensor(baseline, dtype=reward.dtype, device=reward.device)
    return (reward - baseline).detach()


def leave_one_out_baseline(reward: Tensor) -> Tensor:
    """Leave-one-out baseline over the sample dimension (the last one).

    Args:
        reward: rewards of ``s >= 2`` independent samples per example, (..., s).

    Returns:
        (..., s): for sample ``i``, the mean reward of the other ``s - 1`` samples. Detached.

    Raises:
        ValueError: with fewer than 2 samples per example.
    """
    samples = reward.shape[-1] if reward.dim() else 0
    if samples < 2:
        raise ValueError(
            "the leave-one-out baseline needs at least 2 samples per example (last dimension); "
            f"got shape {tuple(reward.shape)}: draw more samples per example"
        )
    reward = reward.detach()
    total = reward.sum(dim=-1, keepdim=True)  # (..., 1)
    return (total - reward) / (samples - 1)  # (..., s)


class MovingAverageBaseline(nn.Module):
    """Exponential moving average of the mean reward, used as a constant baseline.

    The first :meth:`update` sets the average to the batch's mean reward; later updates apply
    ``value = decay * value + (1 - decay) * mean(reward)``. The state is a buffer, so it is
    saved in checkpoints. Use the value *before* updating with the current batch as the
    baseline of that batch, so the baseline never depends on the current samples.

    Args:
        decay: weight of the past, in [0, 1).
    """

    value: Tensor
    initialized: Tensor

    def __init__(self, decay: float = 0.99) -> None:
        super().__init__()
        if not 0.0 <= decay < 1.0:
            raise ValueError(f"decay must be in [0, 1), got {decay}: try 0.9 or 0.99")
        self.decay = decay
        self.register_buffer("value", torch.zeros(()))
        self.register_buffer("initialized", torch.zeros((), dtype=torch.bool))

    def forward(self) -> Tensor:
        """The current baseline (a detached scalar; 0 before the first update)."""
        return self.value.detach().clone()

    @torch.no_grad()
    def update(self, reward: Tensor) -> Tensor:
        """Fold the mean of ``reward`` (any shape, non-empty) into the average.

        Returns:
            The updated value (scalar).
        """
        mean = reward.detach().float().mean().to(self.value.dtype)
        if bool(self.initialized):
            self.value.mul_(self.decay).add_((1.0 - self.decay) * mean)
        else:
            self.value.copy_(mean)
            self.initialized.fill_(True)
        return self.value.clone()


class EntropySchedule:
    """Weight of the entropy bonus at a training step: ``initial * decay ** step``.

    Args:
        initial: weight at step 0, >= 0 (0 switches the bonus off).
        decay: per-step multiplicative decay in (0, 1]; 1 keeps the weight constant.
    """

    def __init__(self, initial: float = 0.0, decay: float = 1.0) -> None:
        if initial < 0.0:
            raise ValueError(f"the entropy bonus must be >= 0, got {initial}")
        if not 0.0 < decay <= 1.0:
            raise ValueError(f"the entropy decay must be in (0, 1], got {decay}: try 0.999")
        self.initial = initial
        self.decay = decay

    def __call__(self, step: int) -> float:
        """The weight at ``step`` (>= 0)."""
        if step < 0:
            raise ValueError(f"step must be >= 0, got {step}")
        return self.initial * self.decay**step


def policy_entropy(log_probs: Tensor, mask: Tensor) -> Tensor:
    """Entropy of a masked categorical policy, ``-sum_i p_i log p_i`` over valid positions.

    Args:
        log_probs: log-probabilities, (..., n); masked positions may hold anything finite or
            ``-inf`` (they are excluded, so ``0 * log 0`` never produces NaN).
        mask: True on valid positions, (..., n).

    Returns:
        (...,) entropies in nats; 0 for a row without valid positions.
    """
    # -inf (a zero probability, masked or underflowed) -> the most negative finite value, so
    # that p log p = 0 * finite = 0 instead of 0 * -inf = NaN, in the value and the gradient.
    log_probs = log_probs.clamp_min(torch.finfo(log_probs.dtype).min)
    log_probs = torch.where(mask, log_probs, torch.zeros_like(log_probs))
    terms = log_probs.exp() * log_probs  # (..., n)
    return -torch.where(mask, terms, torch.zeros_like(terms)).sum(dim=-1)


class Reward:
    """The reward of each sampled reading, from its answer scores: one call."""

    #: The reward's name in configs (``reward``).
    name: ClassVar[str]

    def __call__(self, logits: Tensor, answer: Tensor) -> Tensor:
        """Detached rewards (b, s) of answer ``logits`` (b, s, e) for the ``answer`` ids (b, s)."""
        raise NotImplementedError


class LogLikelihoodReward(Reward):
    """``log p(answer)`` under the softmax of the logits: dense, every sample is graded."""

    name = "log_likelihood"

    def __call__(self, logits: Tensor, answer: Tensor) -> Tensor:
        log_probs = logits.detach().log_softmax(-1)  # (b, s, e)
        return log_probs.gather(-1, answer.unsqueeze(-1)).squeeze(-1)  # (b, s)


class CorrectReward(Reward):
    """``1[argmax logits = answer]``: the 0/1 reward of accuracy."""

    name = "correct"

    def __call__(self, logits: Tensor, answer: Tensor) -> Tensor:
        return (logits.detach().argmax(-1) == answer).to(logits.dtype)  # (b, s)


REWARDS: dict[str, type[Reward]] = {
    reward.name: reward for reward in (LogLikelihoodReward, CorrectReward)
}


class Baseline:
    """A REINFORCE baseline: ``b`` for each sample's reward, independent of its own action.

    One call gives the baseline of a batch's rewards; a baseline that a model must fit
    (``learned``) also builds that model (:meth:`value_head`) and reads its prediction.
    """

    #: The baseline's name in configs (``baseline``).
    name: ClassVar[str]

    def __call__(self, reward: Tensor, value: Tensor | None = None) -> Tensor:
        """The detached baseline for ``reward`` (b, s), broadcastable to it.

        Args:
            reward: the rewards of the batch's samples, (b, s).
            value: the value head's prediction (b,), for a baseline that has one.
        """
        raise NotImplementedError

    def value_head(self, input_dim: int, hidden_dim: int) -> nn.Module | None:
        """The model this baseline predicts the reward with (None: it needs none)."""
        return None


class NoBaseline(Baseline):
    """``b = 0``: plain REINFORCE."""

    name = "none"

    def __call__(self, reward: Tensor, value: Tensor | None = None) -> Tensor:
        return torch.zeros((), dtype=reward.dtype, device=reward.device)


class EmaBaseline(Baseline):
    """The moving average of past mean rewards, read before this batch updates it.

    Args:
        average: the average's state, owned (and saved) by the model.
    """

    name = "ema"

    def __init__(self, average: MovingAverageBaseline) -> None:
        self.average = average

    def __call__(self, reward: Tensor, value: Tensor | None = None) -> Tensor:
        baseline = self.average().to(reward.dtype)  # before seeing this batch
        self.average.update(reward)
        return baseline


class LearnedBaseline(Baseline):
    """A value head's prediction of the reward, ``V`` (b,) -> (b, 1); the model fits it by MSE."""

    name = "learned"

    def __call__(self, reward: Tensor, value: Tensor | None = None) -> Tensor:
        if value is None:
            raise ValueError("the learned baseline needs the value head's prediction (value=)")
        return value.detach().unsqueeze(1)  # (b, 1)

    def value_head(self, input_dim: int, hidden_dim: int) -> nn.Module:
        return nn.Sequential(nn.Linear(input_dim, hidden_dim), nn.Tanh(), nn.Linear(hidden_dim, 1))


class LeaveOneOutBaseline(Baseline):
    """Each sample's baseline is the mean reward of its example's other samples.

    Args:
        num_samples: samples drawn per example, >= 2.
    """

    name = "leave_one_out"

    def __init__(self, num_samples: int) -> None:
        if num_samples < 2:
            raise ValueError(
                "baseline='leave_one_out' needs num_samples >= 2 (it averages the rewards of "
                f"the other samples of each example), got num_samples={num_samples}"
            )

    def __call__(self, reward: Tensor, value: Tensor | None = None) -> Tensor:
        return leave_one_out_baseline(reward)  # (b, s)


# How each baseline is made from the moving average's state and the samples per example.
BASELINES: dict[str, Callable[[MovingAverageBaseline, int], Baseline]] = {
    "none": lambda average, num_samples: NoBaseline(),
    "ema": lambda average, num_samples: EmaBaseline(average),
    "learned": lambda average, num_samples: LearnedBaseline(),
    "leave_one_out": lambda average, num_samples: LeaveOneOutBaseline(num_samples),
}
