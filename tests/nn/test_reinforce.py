"""REINFORCE loss and baselines: unbiasedness against a closed form, hand-computed values."""

import math
from typing import get_args

import pytest
import torch

from attentive_reader.nn import reinforce
from attentive_reader.nn.reinforce import (
    BASELINES,
    BaselineName,
    CorrectReward,
    EmaBaseline,
    EntropySchedule,
    LearnedBaseline,
    LeaveOneOutBaseline,
    LogLikelihoodReward,
    MovingAverageBaseline,
    NoBaseline,
    RewardName,
    advantage,
    leave_one_out_baseline,
    policy_entropy,
    reinforce_loss,
)

THETA = [0.5, -1.0, 0.2, 1.3]
REWARDS = [1.0, 3.0, -2.0, 0.5]


def _estimate(
    baseline: str, samples: int = 40_000, shift: float = 0.0, seed: int = 0
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Monte-Carlo policy gradient of E[r] for softmax(theta) through ``reinforce_loss``.

    Returns the mean estimate (from autograd), the closed form ``p_i (r_i - sum_j p_j r_j)``
    and the per-sample estimates ``(r_a - b_a)(e_a - p)`` (for the standard error).
    """
    generator = torch.Generator().manual_seed(seed)
    theta = torch.tensor(THETA, dtype=torch.float64, requires_grad=True)
    rewards = torch.tensor(REWARDS, dtype=torch.float64) + shift
    probs = torch.softmax(theta, -1).detach()
    actions = torch.multinomial(probs, samples, replacement=True, generator=generator)  # (N,)
    log_prob = torch.log_softmax(theta, -1)[actions]  # (N,)
    reward = rewards[actions]  # (N,)
    if baseline == "none":
        base = torch.zeros(samples, dtype=torch.float64)
    elif baseline == "constant":
        base = torch.full((samples,), 1.7 + shift, dtype=torch.float64)
    elif baseline == "ema":
        # An EMA fitted on an earlier, independent batch: a constant for these samples.
        ema = MovingAverageBaseline(decay=0.9).double()
        earlier = torch.multinomial(probs, 256, replacement=True, generator=generator)
        for chunk in rewards[earlier].split(32):
            ema.update(chunk)
        base = ema().expand(samples)
    elif baseline == "leave_one_out":
        base = leave_one_out_baseline(reward.view(-1, 4)).reshape(-1)
    else:
        raise AssertionError(baseline)
    loss = reinforce_loss(log_prob, reward, base)
    loss.backward()
    mean_estimate = -theta.grad
    expected = probs * (rewards - (probs * rewards).sum())
    one_hot = torch.nn.functional.one_hot(actions, len(THETA)).double()  # (N, 4)
    per_sample = (reward - base).unsqueeze(-1) * (one_hot - probs)  # (N, 4)
    return mean_estimate, expected, per_sample


@pytest.mark.parametrize("baseline", ["none", "constant", "ema", "leave_one_out"])
def test_mean_estimate_matches_closed_form_gradient(baseline: str) -> None:
    mean_estimate, expected, per_sample = _estimate(baseline)
    # The autograd gradient of the surrogate is the mean of the per-sample estimates ...
    torch.testing.assert_close(mean_estimate, per_sample.mean(0), rtol=1e-9, atol=1e-12)
    # ... and it is unbiased: within 4 standard errors of the closed form, per component.
    standard_error = per_sample.std(0) / math.sqrt(per_sample.shape[0])
    assert ((mean_estimate - expected).abs() <= 4 * standard_error + 1e-7).all(), (
        mean_estimate,
        expected,
        standard_error,
    )


def test_baselines_reduce_variance_when_rewards_are_offset() -> None:
    # With every reward shifted by +10 the no-baseline estimator is very noisy; a baseline
    # near E[r] removes most of that noise without changing the mean.
    variance = {
        name: _estimate(name, samples=8_000, shift=10.0)[2].var(0).sum().item()
        for name in ("none", "ema", "leave_one_out")
    }
    assert variance["ema"] < variance["none"] / 10
    assert variance["leave_one_out"] < variance["none"] / 10


def test_reward_and_baseline_are_detached() -> None:
    log_prob = torch.tensor([-0.5, -1.0], requires_grad=True)
    reward = torch.tensor([1.0, 2.0], requires_grad=True)
    baseline = torch.tensor([0.5, 0.5], requires_grad=True)
    loss = reinforce_loss(log_prob, reward, baseline)
    loss.backward()
    assert reward.grad is None and baseline.grad is None
    # d/d log_prob of -mean((r - b) log_prob) = -(r - b) / 2
    torch.testing.assert_close(log_prob.grad, torch.tensor([-0.25, -0.75]))
    torch.testing.assert_close(loss, torch.tensor(-(0.5 * -0.5 + 1.5 * -1.0) / 2))
    assert not advantage(reward, baseline).requires_grad


def test_reinforce_loss_rejects_mismatched_shapes() -> None:
    with pytest.raises(ValueError, match="same shape"):
        reinforce_loss(torch.zeros(3), torch.zeros(3, 1))


def test_leave_one_out_by_hand() -> None:
    reward = torch.tensor([[1.0, 2.0, 3.0, 6.0], [0.0, 0.0, 1.0, 1.0]])
    expected = torch.tensor([[11 / 3, 10 / 3, 9 / 3, 6 / 3], [2 / 3, 2 / 3, 1 / 3, 1 / 3]])
    torch.testing.assert_close(leave_one_out_baseline(reward), expected)
    # Two samples: each one's baseline is the other's reward.
    torch.testing.assert_close(
        leave_one_out_baseline(torch.tensor([[5.0, -1.0]])), torch.tensor([[-1.0, 5.0]])
    )
    with pytest.raises(ValueError, match="at least 2 samples"):
        leave_one_out_baseline(torch.ones(3, 1))


def test_moving_average_by_hand() -> None:
    ema = MovingAverageBaseline(decay=0.5)
    assert ema().item() == 0.0  # before any update
    assert ema.update(torch.tensor([2.0, 2.0])).item() == 2.0  # first update: the mean
    assert ema.update(torch.tensor([4.0, 6.0])).item() == 3.5  # 0.5 * 2 + 0.5 * 5
    assert ema().item() == 3.5
    assert ema.update(torch.tensor([[1.5]])).item() == 2.5  # 0.5 * 3.5 + 0.5 * 1.5
    # The state travels with the state dict (checkpoints).
    restored = MovingAverageBaseline(decay=0.5)
    restored.load_state_dict(ema.state_dict())
    assert restored().item() == 2.5
    assert restored.update(torch.tensor([0.5])).item() == 1.5
    with pytest.raises(ValueError, match="decay"):
        MovingAverageBaseline(decay=1.0)


def test_entropy_schedule() -> None:
    schedule = EntropySchedule(initial=0.1, decay=0.5)
    assert schedule(0) == pytest.approx(0.1)
    assert schedule(3) == pytest.approx(0.0125)
    assert EntropySchedule(0.2, 1.0)(10_000) == pytest.approx(0.2)
    with pytest.raises(ValueError, match="decay"):
        EntropySchedule(0.1, 0.0)
    with pytest.raises(ValueError, match=">= 0"):
        EntropySchedule(-0.1, 0.9)


def test_policy_entropy_masked() -> None:
    mask = torch.tensor([[True, True, True, False], [False, False, False, False]])
    log_probs = torch.tensor(
        [[math.log(1 / 3)] * 3 + [float("-inf")], [float("-inf")] * 4], requires_grad=True
    )
    entropy = policy_entropy(log_probs, mask)
    torch.testing.assert_close(entropy, torch.tensor([math.log(3.0), 0.0]))
    entropy.sum().backward()
    assert torch.isfinite(log_probs.grad).all()
    # A point mass has entropy 0.
    point = torch.log(torch.tensor([[1.0, 0.0]]))
    assert policy_entropy(point, torch.tensor([[True, True]])).item() == pytest.approx(0.0)


def test_the_tables_hold_every_reward_and_baseline_name() -> None:
    assert tuple(reinforce.REWARDS) == get_args(RewardName)
    assert tuple(BASELINES) == get_args(BaselineName)
    for name, cls in reinforce.REWARDS.items():
        assert cls.name == name
    for name, make in BASELINES.items():
        assert make(MovingAverageBaseline(0.5), 2).name == name


def test_rewards_by_hand() -> None:
    # Two examples, two samples each, three answer choices.
    logits = torch.tensor(
        [[[0.0, 0.0, 0.0], [math.log(3.0), 0.0, 0.0]], [[0.0, 5.0, 1.0], [2.0, 1.0, 0.0]]],
        requires_grad=True,
    )
    answer = torch.tensor([[0, 0], [2, 2]])
    log_likelihood = LogLikelihoodReward()(logits, answer)
    expected = torch.tensor(
        [
            [math.log(1 / 3), math.log(3 / 5)],  # uniform; e^log3 / (3 + 1 + 1)
            [1.0 - math.log(1 + math.exp(5) + math.e), -math.log(math.exp(2) + math.e + 1)],
        ]
    )
    torch.testing.assert_close(log_likelihood, expected)
    correct = CorrectReward()(logits, answer)
    # Ties go to the first choice (argmax): answer 0 in the first row wins both samples.
    assert correct.tolist() == [[1.0, 1.0], [0.0, 0.0]]
    assert not log_likelihood.requires_grad and not correct.requires_grad


def test_baselines_by_hand() -> None:
    reward = torch.tensor([[1.0, 3.0], [0.0, 2.0]])
    assert NoBaseline()(reward).item() == 0.0
    torch.testing.assert_close(
        LeaveOneOutBaseline(2)(reward), torch.tensor([[3.0, 1.0], [2.0, 0.0]])
    )
    value = torch.tensor([0.5, -1.0], requires_grad=True)
    learned = LearnedBaseline()(reward, value)
    torch.testing.assert_close(learned, torch.tensor([[0.5], [-1.0]]))
    assert not learned.requires_grad
    with pytest.raises(ValueError, match="value head"):
        LearnedBaseline()(reward)
    # The moving average is read before the batch updates it.
    average = MovingAverageBaseline(decay=0.5)
    ema = EmaBaseline(average)
    assert ema(reward).item() == 0.0  # nothing seen yet; now the average is mean(reward) = 1.5
    assert ema(torch.tensor([[3.5]])).item() == 1.5  # then 0.5 * 1.5 + 0.5 * 3.5 = 2.5
    assert average().item() == 2.5
    with pytest.raises(ValueError, match="num_samples >= 2"):
        LeaveOneOutBaseline(1)


def test_only_the_learned_baseline_builds_a_value_head() -> None:
    heads = {
        name: make(MovingAverageBaseline(), 2).value_head(6, 3) for name, make in BASELINES.items()
    }
    assert [name for name, head in heads.items() if head is not None] == ["learned"]
    head = heads["learned"]
    assert head(torch.zeros(4, 6)).shape == (4, 1)
    # Its parameter names are the reader's checkpoint keys (value_head.0.weight, ...).
    assert list(head.state_dict()) == ["0.weight", "0.bias", "2.weight", "2.bias"]
