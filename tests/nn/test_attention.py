import math

import pytest
import torch

from attentive_reader.nn.attention import (
    SCORER_NAMES,
    AdditiveScorer,
    BilinearScorer,
    CosineScorer,
    DotScorer,
    build_scorer,
)


def softmax(values):
    exps = [math.exp(v) for v in values]
    return [v / sum(exps) for v in exps]


def test_additive_hand_computed():
    scorer = AdditiveScorer(key_dim=2, query_dim=2, attention_dim=2)
    with torch.no_grad():
        scorer.key_proj.weight.copy_(torch.eye(2))  # W_d
        scorer.query_proj.weight.copy_(torch.tensor([[1.0, 0.0], [0.0, 0.0]]))  # W_q
        scorer.vector.weight.copy_(torch.tensor([[1.0, -1.0]]))  # w
    keys = torch.tensor([[[1.0, 0.0], [0.0, 1.0]]])
    query = torch.tensor([[1.0, 5.0]])
    # W_q u = [1, 0]; t=0: tanh([2, 0]) . [1, -1] = tanh(2); t=1: tanh([1, 1]) . [1, -1] = 0
    scores = scorer.score(keys, query)
    assert torch.allclose(scores, torch.tensor([[0.9640276, 0.0]]), atol=1e-6)
    weights = scorer(keys, query, torch.tensor([[True, True]]))
    assert torch.allclose(weights, torch.tensor([softmax([0.9640276, 0.0])]), atol=1e-6)


def test_dot_hand_computed():
    scorer = DotScorer(2, 2)
    keys = torch.tensor([[[1.0, 2.0], [3.0, -1.0], [7.0, 7.0]]])
    query = torch.tensor([[2.0, 1.0]])
    assert torch.equal(scorer.score(keys, query), torch.tensor([[4.0, 5.0, 21.0]]))
    weights = scorer(keys, query, torch.tensor([[True, True, False]]))
    e = math.e
    assert torch.allclose(weights, torch.tensor([[1 / (1 + e), e / (1 + e), 0.0]]), atol=1e-6)


def test_cosine_hand_computed():
    scorer = CosineScorer(2, 2)  # learned scale starts at 10
    keys = torch.tensor([[[3.0, 0.0], [1.0, 1.0], [0.0, -2.0]]])
    query = torch.tensor([[2.0, 0.0]])
    expected = torch.tensor([[10.0, 10.0 / math.sqrt(2.0), 0.0]])
    assert torch.allclose(scorer.score(keys, query), expected, atol=1e-5)


def test_bilinear_hand_computed_with_different_sizes():
    scorer = BilinearScorer(key_dim=3, query_dim=2)
    with torch.no_grad():
        scorer.weight.weight.copy_(torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]))  # W (3x2)
    keys = torch.tensor([[[1.0, 1.0, 0.0], [0.0, 0.0, 1.0], [1.0, 0.0, 0.0]]])
    query = torch.tensor([[2.0, 3.0]])
    # W u = [2, 3, 5]
    assert torch.equal(scorer.score(keys, query), torch.tensor([[5.0, 5.0, 2.0]]))


@pytest.mark.parametrize("name", SCORER_NAMES)
def test_every_scorer_masks_and_normalises(name):
    torch.manual_seed(0)
    scorer = build_scorer(name, key_dim=4, query_dim=4, attention_dim=3)
    keys = torch.randn(3, 5, 4)
    keys[1, 3:] = 0.0  # padding states are zero vectors in the readers
    keys.requires_grad_(True)
    query = torch.randn(3, 4, requires_grad=True)
    mask = torch.tensor(
        [[True] * 5, [True, True, True, False, False], [False] * 5]  # last row: no real key
    )
    weights = scorer(keys, query, mask)  # (b, n)
    assert weights.shape == (3, 5)
    assert not torch.isnan(weights).any()
    assert torch.allclose(weights[:2].sum(-1), torch.ones(2), atol=1e-6)
    assert torch.equal(weights[1, 3:], torch.zeros(2))
    assert torch.equal(weights[2], torch.zeros(5))
    (weights * torch.randn(3, 5)).sum().backward()
    for tensor in [keys, query, *scorer.parameters()]:
        assert torch.isfinite(tensor.grad).all()


@pytest.mark.parametrize("name", ["dot", "cosine"])
def test_dot_and_cosine_need_equal_sizes(name):
    with pytest.raises(ValueError, match="bilinear.*additive"):
        build_scorer(name, key_dim=4, query_dim=3)


def test_additive_and_bilinear_accept_different_sizes():
    keys, query = torch.randn(2, 3, 4), torch.randn(2, 6)
    for name in ("additive", "bilinear"):
        weights = build_scorer(name, key_dim=4, query_dim=6)(
            keys, query, torch.ones(2, 3, dtype=torch.bool)
        )
        assert torch.allclose(weights.sum(-1), torch.ones(2))


def test_build_scorer_rejects_unknown_name_and_bad_sizes():
    with pytest.raises(ValueError, match="unknown scorer 'mlp'"):
        build_scorer("mlp", 4, 4)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="key_dim"):
        build_scorer("bilinear", 0, 4)
