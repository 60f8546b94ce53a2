import math

import pytest
import torch

from attentive_reader.nn.masking import mask_logits, masked_log_softmax, masked_softmax


def test_masked_softmax_hand_computed():
    scores = torch.tensor([[1.0, 2.0, 3.0], [0.0, 0.0, 5.0]])
    mask = torch.tensor([[True, True, False], [True, True, True]])
    e = math.e
    expected = torch.tensor(
        [
            [1 / (1 + e), e / (1 + e), 0.0],
            [1 / (2 + e**5), 1 / (2 + e**5), e**5 / (2 + e**5)],
        ]
    )
    assert torch.allclose(masked_softmax(scores, mask), expected, atol=1e-6)


def test_padding_gets_exact_zero_even_with_huge_scores():
    scores = torch.tensor([[0.0, 1e30, -1e30, 3.0]])
    mask = torch.tensor([[True, False, False, True]])
    weights = masked_softmax(scores, mask)
    assert weights[0, 1].item() == 0.0 and weights[0, 2].item() == 0.0
    assert torch.allclose(weights.sum(-1), torch.ones(1))


def test_fully_masked_row_is_zero_with_finite_gradients():
    scores = torch.randn(2, 4, requires_grad=True)
    mask = torch.tensor([[False] * 4, [True, True, False, False]])
    weights = masked_softmax(scores, mask)
    assert torch.equal(weights[0], torch.zeros(4))
    assert not torch.isnan(weights).any()
    (weights * torch.arange(4.0)).sum().backward()
    assert torch.isfinite(scores.grad).all()
    # masked positions (and the whole masked row) receive no gradient
    assert torch.equal(scores.grad[0], torch.zeros(4))
    assert torch.equal(scores.grad[1, 2:], torch.zeros(2))


def test_masked_softmax_other_dim_and_broadcast_mask():
    scores = torch.randn(2, 3, 5)
    mask = torch.tensor([True, True, False]).view(1, 3, 1)  # broadcast over b and n
    weights = masked_softmax(scores, mask, dim=1)
    assert torch.equal(weights[:, 2], torch.zeros(2, 5))
    assert torch.allclose(weights.sum(1), torch.ones(2, 5))


def test_masked_log_softmax_matches_masked_softmax():
    scores = torch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], requires_grad=True)
    mask = torch.tensor([[True, True, False], [False, False, False]])
    log_weights = masked_log_softmax(scores, mask)
    minimum = torch.finfo(torch.float32).min
    # log(1 / (1 + e)) and log(e / (1 + e)) on the real positions
    assert log_weights[0, 0].item() == pytest.approx(-math.log(1 + math.e), abs=1e-6)
    assert log_weights[0, 1].item() == pytest.approx(1 - math.log(1 + math.e), abs=1e-6)
    assert log_weights[0, 2].item() == minimum
    assert torch.equal(log_weights[1], torch.full((3,), minimum))
    assert torch.allclose(log_weights.exp(), masked_softmax(scores, mask))
    log_weights[0, :2].sum().backward()
    assert torch.isfinite(scores.grad).all()


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_mask_logits(dtype):
    logits = torch.tensor([[3.0, -1.0, 2.0]], dtype=dtype)
    candidates = torch.tensor([[False, True, True]])
    masked = mask_logits(logits, candidates)
    assert masked.dtype == dtype
    assert masked[0, 0].item() == torch.finfo(dtype).min
    assert torch.equal(masked[0, 1:], logits[0, 1:])
    assert masked.argmax(-1).item() == 2  # the best candidate, not the higher non-candidate
    assert torch.softmax(masked.float(), -1)[0, 0].item() == 0.0
