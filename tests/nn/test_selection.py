"""Position selection: padding never chosen, exact frequencies, log-probabilities, gradients."""

import itertools
import math

import pytest
import torch

from attentive_reader.nn.masking import masked_log_softmax
from attentive_reader.nn.reinforce import reinforce_loss
from attentive_reader.nn.selection import (
    SELECTORS,
    GreedySelector,
    GumbelSelector,
    SampledSelector,
    UniformSelector,
    _log_prob,
    build_selector,
    greedy_positions,
    gumbel_positions,
    sample_positions,
    select_positions,
)

STRATEGIES = [("sample", False), ("sample", True), ("gumbel", False), ("gumbel", True)]


@pytest.mark.parametrize(
    ("strategy", "replacement"), [*STRATEGIES, ("greedy", False), ("uniform", False)]
)
@pytest.mark.parametrize("k", [1, 3])
def test_padding_is_never_selected(strategy: str, replacement: bool, k: int) -> None:
    generator = torch.Generator().manual_seed(0)
    b, n = 64, 9
    lengths = torch.randint(0, n + 1, (b,), generator=generator)  # includes empty rows
    mask = torch.arange(n) < lengths.unsqueeze(1)  # (b, n)
    # Padding gets the highest raw scores: a selection that forgot the mask would pick it.
    scores = torch.randn(b, n, generator=generator) + 50.0 * (~mask)
    log_probs = masked_log_softmax(scores, mask)
    for _ in range(50):
        selection = select_positions(
            log_probs, mask, k, strategy=strategy, replacement=replacement, generator=generator
        )
        assert selection.positions.shape == (b, k) and selection.valid.shape == (b, k)
        picked = mask.gather(1, selection.positions)
        assert (picked | ~selection.valid).all()  # every valid slot is a real token
        assert (selection.valid <= picked).all()
        assert (selection.weights[~mask] == 0).all()
        if strategy == "greedy" or not replacement:
            assert torch.equal(selection.valid.sum(1), lengths.clamp(max=k))
        else:  # with replacement every slot is real as soon as the row has a real token
            assert torch.equal(selection.valid.sum(1), (lengths > 0).long() * k)
        has_token = lengths > 0
        torch.testing.assert_close(
            selection.weights.sum(1), has_token.float(), msg="reading weights sum to 1"
        )
        assert torch.isfinite(selection.log_prob).all()
        assert (selection.log_prob[~has_token] == 0).all()


def test_without_replacement_never_repeats_a_position() -> None:
    generator = torch.Generator().manual_seed(1)
    mask = torch.ones(200, 5, dtype=torch.bool)
    log_probs = torch.log_softmax(torch.randn(200, 5, generator=generator) * 3, -1)
    for strategy in ("sample", "gumbel"):
        positions = select_positions(log_probs, mask, 4, strategy, generator=generator).positions
        assert (positions.sort(1).values.diff(dim=1) > 0).all()


def _within(frequency: torch.Tensor, probability: torch.Tensor, draws: int) -> bool:
    standard_error = (probability * (1 - probability) / draws).sqrt()
    return bool(((frequency - probability).abs() <= 4 * standard_error + 1e-9).all())


def test_sampling_frequencies_match_the_policy() -> None:
    generator = torch.Generator().manual_seed(2)
    probs = torch.tensor([0.5, 0.3, 0.2, 0.0], dtype=torch.float64)
    draws = 20_000
    mask = torch.tensor([True, True, True, False]).expand(draws, 4)
    log_probs = masked_log_softmax(probs.log().expand(draws, 4), mask)
    # With replacement: every slot is an independent draw from p.
    positions = sample_positions(
        log_probs, mask, 2, replacement=True, generator=generator
    ).positions
    for slot in range(2):
        frequency = torch.bincount(positions[:, slot], minlength=4).double() / draws
        assert _within(frequency, probs, draws)
    # Without replacement: slot 0 ~ p, slot 1 ~ sum_i p_i p_j / (1 - p_i) over i != j.
    positions = sample_positions(log_probs, mask, 2, generator=generator).positions
    second = torch.tensor(
        [sum(probs[i] * probs[j] / (1 - probs[i]) for i in range(3) if i != j) for j in range(4)],
        dtype=torch.float64,
    )
    second[3] = 0.0
    assert _within(torch.bincount(positions[:, 0], minlength=4).double() / draws, probs, draws)
    assert _within(torch.bincount(positions[:, 1], minlength=4).double() / draws, second, draws)


def test_log_prob_by_hand() -> None:
    log_probs = torch.tensor([[0.5, 0.3, 0.2]]).log()
    mask = torch.ones(1, 3, dtype=torch.bool)
    greedy = greedy_positions(log_probs, mask, 2)
    assert greedy.positions.tolist() == [[0, 1]]
    # Drawing 0 then 1 without replacement: 0.5 * 0.3 / (1 - 0.5).
    assert greedy.log_prob.item() == pytest.approx(math.log(0.5 * 0.3 / 0.5))
    torch.testing.assert_close(greedy.weights, torch.tensor([[0.5, 0.5, 0.0]]))
    # A one-hot policy is sampled deterministically; with replacement 0 then 0: log(1 * 1).
    point = torch.tensor([[0.0, -1e4, -1e4]]).log_softmax(-1)
    sample = sample_positions(point, mask, 2, replacement=True)
    assert sample.positions.tolist() == [[0, 0]]
    torch.testing.assert_close(sample.weights, torch.tensor([[1.0, 0.0, 0.0]]))
    assert sample.log_prob.item() == pytest.approx(0.0, abs=1e-6)


def test_greedy_takes_the_most_probable_real_positions() -> None:
    scores = torch.tensor([[0.1, 2.0, 0.5, 9.0, 1.0]])
    mask = torch.tensor([[True, True, True, False, True]])
    selection = greedy_positions(masked_log_softmax(scores, mask), mask, 2)
    assert selection.positions.tolist() == [[1, 4]]
    one = greedy_positions(masked_log_softmax(scores, mask), mask, 1)
    torch.testing.assert_close(one.weights, torch.tensor([[0.0, 1.0, 0.0, 0.0, 0.0]]))


def test_k_larger_than_the_context() -> None:
    mask = torch.tensor([[True, True]])
    log_probs = masked_log_softmax(torch.zeros(1, 2), mask)
    selection = sample_positions(log_probs, mask, 4)
    assert selection.positions.shape == (1, 4)
    assert selection.valid.tolist() == [[True, True, False, False]]
    assert sorted(selection.positions[0, :2].tolist()) == [0, 1]
    # Both orders have probability 1/2 * 1 = 1/2.
    assert selection.log_prob.item() == pytest.approx(math.log(0.5))


@pytest.mark.parametrize("replacement", [False, True])
def test_reinforce_through_selection_matches_exact_gradient(replacement: bool) -> None:
    """E[R(seq) grad log P(seq)] over k=2 ordered draws, enumerated exactly, vs Monte Carlo."""
    theta = torch.tensor([0.3, -0.4, 1.0, 0.1], dtype=torch.float64, requires_grad=True)
    mask = torch.tensor([True, True, True, False])
    reward_table = torch.tensor([1.0, -2.0, 0.5, 100.0], dtype=torch.float64)

    def reward(positions: torch.Tensor) -> torch.Tensor:  # set-dependent: mean reward
        return reward_table[positions].mean(-1)

    def log_p(positions: torch.Tensor) -> torch.Tensor:
        log_probs = masked_log_softmax(theta, mask).expand(len(positions), 4)
        selection_mask = mask.expand(len(positions), 4)
        valid = torch.ones_like(positions, dtype=torch.bool)
        return _log_prob(log_probs, selection_mask, positions, valid, replacement)

    # Exact expectation over every ordered pair of real positions.
    pairs = [p for p in itertools.product(range(3), repeat=2) if replacement or p[0] != p[1]]
    exact = torch.zeros(4, dtype=torch.float64)
    per_pair = {}
    for pair in pairs:
        positions = torch.tensor([pair])
        lp = log_p(positions)[0]
        (grad,) = torch.autograd.grad(lp, theta)
        per_pair[pair] = reward(positions)[0] * grad
        exact += lp.exp().detach() * per_pair[pair]
    total = sum(log_p(torch.tensor([p]))[0].exp().item() for p in pairs)
    assert total == pytest.approx(1.0)  # the ordered draws form a distribution

    draws = 20_000
    generator = torch.Generator().manual_seed(3)
    log_probs = masked_log_softmax(theta, mask).expand(draws, 4)
    selection = sample_positions(
        log_probs, mask.expand(draws, 4), 2, replacement=replacement, generator=generator
    )
    loss = reinforce_loss(selection.log_prob, reward(selection.positions))
    (mean_grad,) = torch.autograd.grad(-loss, theta)
    samples = torch.stack([per_pair[tuple(p)] for p in selection.positions.tolist()])  # (N, 4)
    torch.testing.assert_close(mean_grad, samples.mean(0))
    standard_error = samples.std(0) / math.sqrt(draws)
    assert ((mean_grad - exact).abs() <= 4 * standard_error + 1e-9).all(), (mean_grad, exact)


@pytest.mark.parametrize("replacement", [False, True])
def test_gumbel_is_hard_forward_and_differentiable(replacement: bool) -> None:
    generator = torch.Generator().manual_seed(4)
    scores = torch.randn(8, 6, generator=generator, requires_grad=True)
    mask = torch.ones(8, 6, dtype=torch.bool)
    mask[:, 4:] = False
    selection = gumbel_positions(
        masked_log_softmax(scores, mask),
        mask,
        2,
        replacement=replacement,
        temperature=0.5,
        generator=generator,
    )
    # Forward values are the hard reading weights of the chosen positions.
    hard = torch.zeros(8, 6).scatter_add(1, selection.positions, torch.full((8, 2), 0.5))
    torch.testing.assert_close(selection.weights, hard)
    # ... and a loss on the reading reaches the scores (unlike a plain sample's weights).
    states = torch.randn(8, 6, 3, generator=generator)
    reading = torch.bmm(selection.weights.unsqueeze(1), states).squeeze(1)  # (8, 3)
    reading.pow(2).sum().backward()
    assert scores.grad is not None and scores.grad.abs().sum() > 0
    assert (scores.grad[:, 4:] == 0).all()
    with pytest.raises(ValueError, match="temperature"):
        gumbel_positions(scores, mask, 1, temperature=0.0)


def test_invalid_arguments() -> None:
    with pytest.raises(ValueError, match="k"):
        sample_positions(torch.zeros(1, 3), torch.ones(1, 3, dtype=torch.bool), 0)
    with pytest.raises(ValueError, match="same shape"):
        sample_positions(torch.zeros(1, 3), torch.ones(1, 4, dtype=torch.bool), 1)
    with pytest.raises(ValueError, match="strategy"):
        select_positions(torch.zeros(1, 3), torch.ones(1, 3, dtype=torch.bool), 1, "top")  # type: ignore[arg-type]


def test_the_table_holds_every_selector_behind_one_draw() -> None:
    assert set(SELECTORS) == {"sample", "greedy", "gumbel", "uniform"}
    for name in SELECTORS:
        selector = build_selector(name, temperature=0.5)  # type: ignore[arg-type]
        assert selector.name == name
    assert build_selector("gumbel", 0.5).temperature == 0.5
    # Only greedy draws the same positions every time; only gumbel passes the gradient.
    assert [name for name in SELECTORS if build_selector(name).deterministic] == ["greedy"]
    assert [name for name in SELECTORS if build_selector(name).differentiable] == ["gumbel"]
    with pytest.raises(ValueError, match="temperature"):
        GumbelSelector(0.0)


def test_each_selector_draws_as_its_function() -> None:
    """A selector's draw is its strategy's function: the same positions from the same noise."""
    mask = torch.tensor([[True, True, True, False], [True, True, False, False]])
    log_probs = masked_log_softmax(
        torch.tensor([[0.2, 1.5, -0.3, 9.0], [2.0, 0.0, 0.0, 0.0]]), mask
    )

    def drawn(function, *args, **kwargs):
        return function(*args, generator=torch.Generator().manual_seed(5), **kwargs)

    pairs = [
        (SampledSelector(), lambda **kw: sample_positions(log_probs, mask, 2, True, **kw)),
        (GumbelSelector(0.5), lambda **kw: gumbel_positions(log_probs, mask, 2, True, 0.5, **kw)),
    ]
    for selector, function in pairs:
        mine = drawn(selector.draw, log_probs, mask, 2, True)
        assert torch.equal(mine.positions, drawn(function).positions)
        torch.testing.assert_close(mine.log_prob, drawn(function).log_prob)
    greedy = GreedySelector().draw(log_probs, mask, 2, replacement=True)  # never replaces
    assert greedy.positions.tolist() == [[1, 0], [0, 1]]


def test_uniform_ignores_the_policy_and_its_log_prob_is_uniform() -> None:
    generator = torch.Generator().manual_seed(6)
    draws = 20_000
    mask = torch.tensor([True, True, True, True, False]).expand(draws, 5)
    # A policy that puts all its mass on position 0: the uniform draw ignores it.
    log_probs = masked_log_softmax(torch.tensor([50.0, 0.0, 0.0, 0.0, 0.0]).expand(draws, 5), mask)
    selection = UniformSelector().draw(log_probs, mask, 1, generator=generator)
    frequency = torch.bincount(selection.positions[:, 0], minlength=5).double() / draws
    assert _within(
        frequency, torch.tensor([0.25, 0.25, 0.25, 0.25, 0.0], dtype=torch.float64), draws
    )
    # log (1/4): the probability of the draw under the uniform policy, not the given one.
    torch.testing.assert_close(selection.log_prob, torch.full((draws,), math.log(0.25)))
