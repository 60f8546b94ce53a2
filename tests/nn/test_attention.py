import math

import pytest
import torch

from attentive_reader.nn.attention import (
    SCORER_NAMES,
    SCORERS,
    AdditiveScorer,
    Attention,
    AttentionScorer,
    BilinearScorer,
    CosineScorer,
    DotScorer,
    build_scorer,
)
from attentive_reader.nn.masking import masked_log_softmax


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
    attention = scorer(keys, query, torch.tensor([[True, True]]))
    assert torch.equal(attention.scores, scores)
    expected = torch.tensor([softmax([0.9640276, 0.0])])
    assert torch.allclose(attention.weights, expected, atol=1e-6)
    assert torch.allclose(attention.log_weights(), expected.log(), atol=1e-6)


def test_dot_hand_computed():
    scorer = DotScorer(2, 2)
    keys = torch.tensor([[[1.0, 2.0], [3.0, -1.0], [7.0, 7.0]]])
    query = torch.tensor([[2.0, 1.0]])
    assert torch.equal(scorer.score(keys, query), torch.tensor([[4.0, 5.0, 21.0]]))
    attention = scorer(keys, query, torch.tensor([[True, True, False]]))
    e = math.e
    expected = torch.tensor([[1 / (1 + e), e / (1 + e), 0.0]])
    assert torch.allclose(attention.weights, expected, atol=1e-6)
    # The padded key scored highest (21), and still gets exactly 0.
    assert torch.equal(attention.scores, torch.tensor([[4.0, 5.0, 21.0]]))
    assert attention.weights[0, 2].item() == 0.0


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


def test_the_table_holds_every_scorer_name_and_each_builds_the_same_way():
    assert tuple(SCORERS) == SCORER_NAMES
    for name, cls in SCORERS.items():
        assert issubclass(cls, AttentionScorer) and cls.name == name
        # The constructor contract: (key_dim, query_dim, attention_dim=None).
        assert type(cls(4, 4, 3)) is cls and type(cls(4, 4)) is cls
        assert type(build_scorer(name, 4, 4)) is cls
    assert AdditiveScorer(4, 2).key_proj.out_features == 4  # attention_dim: key_dim by default
    assert build_scorer("additive", 4, 2, attention_dim=3).key_proj.out_features == 3


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
    attention = scorer(keys, query, mask)
    assert isinstance(attention, Attention)
    weights = attention.weights  # (b, n)
    assert attention.scores.shape == weights.shape == (3, 5)
    assert torch.equal(attention.scores, scorer.score(keys, query))
    log_weights = attention.log_weights()
    assert torch.equal(log_weights, masked_log_softmax(attention.scores, mask))
    assert torch.allclose(log_weights[:2].exp(), weights[:2], atol=1e-6)
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
        attention = build_scorer(name, key_dim=4, query_dim=6)(
            keys, query, torch.ones(2, 3, dtype=torch.bool)
        )
        assert torch.allclose(attention.weights.sum(-1), torch.ones(2))


def test_build_scorer_rejects_unknown_name_and_bad_sizes():
    with pytest.raises(ValueError, match="unknown scorer 'mlp'; choose one of additive"):
        build_scorer("mlp", 4, 4)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="key_dim"):
        build_scorer("bilinear", 0, 4)
    with pytest.raises(ValueError, match="attention_dim"):
        build_scorer("additive", 4, 4, attention_dim=0)
    with pytest.raises(ValueError, match="initial_scale"):
        CosineScorer(2, 2, initial_scale=0.0)


@pytest.mark.parametrize("name", SCORER_NAMES)
def test_attend_scores_many_queries_against_one_mask(name):
    """``attend(prepare(keys), queries (b, s, dq), mask (b, n))``: each query's attention is
    the one of that query alone; the (b, n) mask holds for every query."""
    torch.manual_seed(0)
    scorer = build_scorer(name, key_dim=4, query_dim=4, attention_dim=3)
    keys, queries = torch.randn(2, 5, 4), torch.randn(2, 3, 4)
    mask = torch.tensor([[True] * 5, [True, True, False, False, False]])
    attention = scorer.attend(scorer.prepare(keys), queries, mask)
    assert attention.scores.shape == attention.weights.shape == (2, 3, 5)
    for i in range(3):
        alone = scorer(keys, queries[:, i], mask)
        assert torch.allclose(attention.weights[:, i], alone.weights, atol=1e-6)
    assert torch.equal(attention.weights[1, :, 2:], torch.zeros(3, 3))
    # A (b, s, n) mask: each query its own keys (a padded step reads none).
    steps = mask.unsqueeze(1).repeat(1, 3, 1)
    steps[0, 2] = False
    weights = scorer.attend(scorer.prepare(keys), queries, steps).weights
    assert torch.equal(weights[0, 2], torch.zeros(5))
    assert torch.allclose(weights[0, :2].sum(-1), torch.ones(2), atol=1e-6)


def test_attention_of_scores_is_the_masked_softmax_by_hand():
    scores = torch.tensor([[0.0, math.log(3.0), 100.0], [1.0, 2.0, 3.0]])
    mask = torch.tensor([[True, True, False], [False, False, False]])
    attention = Attention.of(scores, mask)
    assert torch.allclose(attention.weights[0], torch.tensor([0.25, 0.75, 0.0]))
    assert torch.equal(attention.weights[1], torch.zeros(3))  # no real key: all 0, not NaN
    assert torch.isfinite(attention.log_weights()).all()


# --- "project keys once, score many queries" ---------------------------------------------


def step_by_step(scorer, keys, query):
    """Each scorer's score as it was computed before the hook, one query (b, dq) at a time."""
    if isinstance(scorer, AdditiveScorer):
        hidden = torch.tanh(scorer.key_proj(keys) + scorer.query_proj(query).unsqueeze(1))
        return scorer.vector(hidden).squeeze(-1)
    if isinstance(scorer, DotScorer):
        return torch.bmm(keys, query.unsqueeze(-1)).squeeze(-1)
    if isinstance(scorer, CosineScorer):
        cosine = torch.nn.functional.cosine_similarity(keys, query.unsqueeze(1), dim=-1, eps=1e-8)
        return scorer.log_scale.exp() * cosine
    return torch.bmm(keys, scorer.weight(query).unsqueeze(-1)).squeeze(-1)


@pytest.mark.parametrize("name", SCORER_NAMES)
@pytest.mark.parametrize("stacked", [False, True], ids=["one-query-at-a-time", "stacked"])
def test_prepared_keys_give_the_step_by_step_values_and_gradients(name, stacked):
    torch.manual_seed(0)
    scorer = build_scorer(name, key_dim=4, query_dim=4, attention_dim=3)
    keys = torch.randn(2, 5, 4, requires_grad=True)
    queries = torch.randn(2, 3, 4, requires_grad=True)  # 3 queries per example
    upstream = torch.randn(2, 3, 5)
    inputs = [keys, queries, *scorer.parameters()]

    expected = torch.stack([step_by_step(scorer, keys, queries[:, i]) for i in range(3)], 1)
    expected_grads = torch.autograd.grad((expected * upstream).sum(), inputs)

    prepared = scorer.prepare(keys)  # once
    if stacked:
        scores = scorer.score_prepared(prepared, queries)  # (b, s, n)
    else:
        scores = torch.stack([scorer.score_prepared(prepared, queries[:, i]) for i in range(3)], 1)
    grads = torch.autograd.grad((scores * upstream).sum(), inputs)

    assert scores.shape == (2, 3, 5)
    # A batched product may sum in another order.
    exact = not stacked
    if exact:
        assert torch.equal(scores, expected)
    else:
        assert torch.allclose(scores, expected, atol=1e-6)
    for grad, expected_grad in zip(grads, expected_grads):
        assert torch.allclose(grad, expected_grad, atol=1e-6)
    # score(keys, q) is the prepared path, so the single-query API agrees too.
    single = scorer.score(keys, queries[:, 0])
    assert (
        torch.equal(single, scores[:, 0])
        if not stacked
        else torch.allclose(single, expected[:, 0], atol=1e-6)
    )


def test_additive_scores_are_the_tanh_maths_to_rounding_in_both_precisions():
    """w^T tanh(W_d y + W_q u) in float32 and under bf16 autocast, against float64."""
    torch.manual_seed(1)
    scorer = AdditiveScorer(key_dim=8, query_dim=6, attention_dim=16)
    keys, query = 3 * torch.randn(4, 9, 8), 3 * torch.randn(4, 6)  # tanh well into saturation
    reference = step_by_step(scorer.double(), keys.double(), query.double())
    scorer.float()
    assert torch.allclose(scorer.score(keys, query).double(), reference, atol=2e-6)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        low = scorer.score(keys, query)
    assert torch.allclose(low.double(), reference, atol=0.15)  # bf16's own rounding


def test_prepare_projects_the_keys_once():
    """The additive scorer's W_d runs in prepare only: scoring reads the prepared keys alone."""
    torch.manual_seed(0)
    scorer = AdditiveScorer(key_dim=4, query_dim=4, attention_dim=3)
    keys, query = torch.randn(2, 5, 4), torch.randn(2, 4)
    prepared = scorer.prepare(keys)
    before = scorer.score_prepared(prepared, query)
    with torch.no_grad():
        scorer.key_proj.weight.zero_()  # W_d gone: only the prepared keys still hold it
    assert torch.equal(scorer.score_prepared(prepared, query), before)
    assert not torch.allclose(scorer.score(keys, query), before)


def test_cosine_prepared_keys_are_unit_vectors_and_zero_keys_score_zero():
    scorer = CosineScorer(2, 2)
    keys = torch.tensor([[[3.0, 4.0], [0.0, 0.0]]])
    prepared = scorer.prepare(keys)
    assert torch.allclose(prepared.keys, torch.tensor([[[0.6, 0.8], [0.0, 0.0]]]))
    scores = scorer.score_prepared(prepared, torch.tensor([[[0.0, 2.0], [1.0, 0.0]]]))
    assert torch.allclose(scores, torch.tensor([[[8.0, 0.0], [6.0, 0.0]]]), atol=1e-5)
