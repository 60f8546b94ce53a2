"""Dropout with 32-bit masks: what is kept, its scale, its gradient, its seed."""

from __future__ import annotations

import math

import pytest
import torch

from attentive_reader.cpu_speedups.dropout import FastDropout, dropout, keep_mask


def test_the_share_kept_is_one_minus_p_and_the_kept_values_are_scaled():
    torch.manual_seed(0)
    x = torch.randn(1000, 2000)
    p = 0.2
    y = dropout(x, p)
    kept = y != 0
    share = kept.float().mean().item()
    sigma = math.sqrt(p * (1 - p) / x.numel())
    assert abs(share - (1 - p)) < 5 * sigma  # 5 standard deviations: 0.0014
    assert torch.equal(y[kept], x[kept] * (1 / (1 - p)))


def test_the_two_halves_of_each_random_word_are_independent():
    torch.manual_seed(1)
    mask = keep_mask(torch.Size([2_000_000]), 0.5)
    low, high = mask[0::2].float(), mask[1::2].float()  # the two 32-bit halves of one draw
    both = (low * high).mean().item()
    sigma = math.sqrt(0.25 * 0.75 / low.numel())
    assert abs(both - 0.25) < 5 * sigma


@pytest.mark.parametrize("keep", [0.5, 0.8, 0.9])
def test_the_threshold_keeps_the_share_asked_for(keep):
    torch.manual_seed(2)
    mask = keep_mask(torch.Size([1_000_001]), keep)  # an odd count: half a word is unused
    sigma = math.sqrt(keep * (1 - keep) / mask.numel())
    assert abs(mask.float().mean().item() - keep) < 5 * sigma


def test_the_gradient_is_the_mask_over_the_share_kept():
    torch.manual_seed(3)
    x = torch.randn(64, 50, dtype=torch.float64, requires_grad=True)
    y = dropout(x, 0.25)
    upstream = torch.randn_like(y)
    y.backward(upstream)
    kept = (y != 0).to(x.dtype)
    assert torch.equal(x.grad, upstream * kept * (1 / 0.75))


def test_gradcheck_with_a_fixed_mask():
    x = torch.randn(8, 5, dtype=torch.float64, requires_grad=True)

    def fixed(t):
        torch.manual_seed(4)  # the same mask at every evaluation
        return dropout(t, 0.5)

    assert torch.autograd.gradcheck(fixed, (x,))


def test_the_same_seed_gives_the_same_mask_and_another_seed_another():
    x = torch.ones(10_000)
    torch.manual_seed(5)
    first = dropout(x, 0.3)
    torch.manual_seed(5)
    again = dropout(x, 0.3)
    torch.manual_seed(6)
    other = dropout(x, 0.3)
    assert torch.equal(first, again)
    assert not torch.equal(first, other)


def test_evaluation_and_p_zero_return_the_input_and_p_one_zeros():
    x = torch.randn(5, 7)
    assert dropout(x, 0.3, training=False) is x
    assert dropout(x, 0.0) is x
    assert torch.equal(dropout(x, 1.0), torch.zeros_like(x))


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_the_module_drops_in_training_only(dtype):
    module = FastDropout(0.5)
    x = torch.ones(4, 1000, dtype=dtype)
    torch.manual_seed(7)
    y = module(x)
    assert y.dtype == dtype
    assert set(y.unique().tolist()) == {0.0, 2.0}
    module.eval()
    assert torch.equal(module(x), x)
    assert module.state_dict() == {}  # nothing to save: checkpoints are unchanged
    assert "p=0.5" in repr(module)
