"""The Gaussian filterbank and the linear-interpolation sampler, checked by hand."""

import math

import pytest
import torch

from attentive_reader.nn.glimpse import (
    anchored_grid,
    anchored_parameters,
    chunk_any,
    chunk_locator_loss,
    clamp_to_document,
    coarse_view,
    gaussian_filterbank,
    glimpse_parameters,
    grid_points,
    interpolation_weights,
    linear_sample,
    match_weights,
    position_weights,
    query_anchors,
    retina_read,
    sampled_mask,
    support_mask,
    window_sums,
    window_weights,
)


def _mask(lengths: list[int], n: int) -> torch.Tensor:
    return torch.arange(n).unsqueeze(0) < torch.tensor(lengths).unsqueeze(1)  # (b, n)


def test_grid_is_drawn_symmetric_about_the_centre():
    # mu_i = g + (i - N/2 - 0.5) delta, i = 1..N: N=4, g=5, delta=2 -> 2, 4, 6, 8.
    mu = grid_points(torch.tensor([5.0]), torch.tensor([2.0]), 4)
    assert mu.tolist() == [[2.0, 4.0, 6.0, 8.0]]
    assert grid_points(torch.tensor([3.0]), torch.tensor([7.0]), 1).tolist() == [[3.0]]


def test_parameters_are_scaled_to_the_true_length():
    raw = torch.tensor([[0.0, 0.0, 0.0, math.log(2.0)], [0.0, 0.0, 0.0, 0.0]])
    params = glimpse_parameters(raw, torch.tensor([11, 5]), num_filters=3)
    assert params.centre.tolist() == [5.0, 2.0]  # (L - 1) * sigmoid(0)
    assert params.stride.tolist() == [2.5, 1.0]  # (L - 1) / (N - 1) * sigmoid(0)
    assert torch.allclose(params.width, torch.tensor([11 / 3, 5 / 3]))  # L / N * exp(0)
    assert torch.allclose(params.intensity, torch.tensor([2.0, 1.0]))
    # Fewer columns: no intensity, then no width either.
    three = glimpse_parameters(raw[:, :3], torch.tensor([11, 5]), num_filters=3)
    assert three.intensity.tolist() == [1.0, 1.0]
    two = glimpse_parameters(raw[:, :2], torch.tensor([11, 5]), num_filters=3)
    assert two.width.tolist() == [1.0, 1.0]
    # The centre never leaves the real tokens, however large the raw value.
    far = glimpse_parameters(torch.tensor([[50.0, 0.0], [-50.0, 0.0]]), torch.tensor([11, 5]), 3)
    assert torch.allclose(far.centre, torch.tensor([10.0, 0.0]))
    with pytest.raises(ValueError, match="raw must be"):
        glimpse_parameters(torch.zeros(2, 5), torch.tensor([3, 3]), 3)


def test_filter_values_by_hand():
    # One filter at mu = 1, sigma = 1 over 3 real tokens (t = 0, 1, 2) and one pad:
    # exp(-1/2), 1, exp(-1/2), normalised.
    filters = gaussian_filterbank(torch.tensor([[1.0]]), torch.tensor([1.0]), _mask([3], 4))
    e = math.exp(-0.5)
    expected = torch.tensor([[[e, 1.0, e, 0.0]]]) / (1 + 2 * e)
    assert torch.allclose(filters, expected)


def test_a_tiny_sigma_on_a_token_reads_that_token():
    states = torch.randn(1, 5, 3)
    mask = _mask([5], 5)
    filters = gaussian_filterbank(torch.tensor([[2.0, 4.0]]), torch.tensor([1e-3]), mask)
    assert torch.equal(filters[0, 0], torch.tensor([0.0, 0.0, 1.0, 0.0, 0.0]))
    read = torch.bmm(filters, states)  # (1, 2, 3)
    assert torch.allclose(read[0, 0], states[0, 2]) and torch.allclose(read[0, 1], states[0, 4])


def test_padding_gets_zero_weight_even_when_the_filter_sits_on_it():
    mask = _mask([3, 6], 6)
    # Filters centred on padding (t = 4, 5) of the first example: all weight goes to real
    # tokens, exactly none to padding, and nothing is NaN even with a tiny sigma.
    mu = torch.tensor([[4.0, 5.0], [4.0, 5.0]])
    for sigma in (torch.tensor([1e-3, 1e-3]), torch.tensor([2.0, 2.0])):
        filters = gaussian_filterbank(mu, sigma, mask)
        assert torch.isfinite(filters).all()
        assert torch.equal(filters[0, :, 3:], torch.zeros(2, 3))
        assert torch.allclose(filters.sum(-1), torch.ones(2, 2))
    # The tiny filter beyond the end reads the last real token.
    assert filters.shape == (2, 2, 6)
    tiny = gaussian_filterbank(mu, torch.tensor([1e-3, 1e-3]), mask)
    assert torch.equal(tiny[0, 0], torch.tensor([0.0, 0.0, 1.0, 0.0, 0.0, 0.0]))


def test_length_one_and_empty_documents_stay_finite():
    mask = _mask([1, 0], 3)
    params = glimpse_parameters(torch.randn(2, 4), mask.sum(1), num_filters=4)
    mu = grid_points(params.centre, params.stride, 4)
    assert torch.equal(mu[0], torch.zeros(4))  # span 0: every point on the only token
    filters = gaussian_filterbank(mu, params.width, mask)
    assert torch.equal(filters[0], torch.tensor([[1.0, 0.0, 0.0]] * 4))
    assert torch.equal(filters[1], torch.zeros(4, 3))  # no real token: nothing read
    weights = interpolation_weights(mu, mask.sum(1), 3)
    assert torch.equal(weights[0], torch.tensor([[1.0, 0.0, 0.0]] * 4))
    assert torch.equal(weights[1], torch.zeros(4, 3))
    states = torch.randn(2, 3, 2) * mask.unsqueeze(-1)
    read = linear_sample(states, mu, mask.sum(1))
    assert torch.allclose(read[0], states[0, :1].expand(4, 2)) and torch.equal(
        read[1], torch.zeros(4, 2)
    )
    assert torch.equal(position_weights(filters, mask), torch.tensor([[1.0, 0, 0], [0, 0, 0]]))


def test_interpolation_halfway_reads_the_mean():
    states = torch.tensor([[[1.0, 10.0], [3.0, 30.0], [7.0, 70.0], [0.0, 0.0]]])  # 3 real
    lengths = torch.tensor([3])
    read = linear_sample(states, torch.tensor([[0.5, 1.5, 1.0, 1.25]]), lengths)
    assert torch.allclose(read[0, 0], torch.tensor([2.0, 20.0]))  # mean of tokens 0, 1
    assert torch.allclose(read[0, 1], torch.tensor([5.0, 50.0]))  # mean of tokens 1, 2
    assert torch.allclose(read[0, 2], torch.tensor([3.0, 30.0]))  # on token 1
    assert torch.allclose(read[0, 3], torch.tensor([4.0, 40.0]))  # 0.75 * 3 + 0.25 * 7


def test_interpolation_never_reads_padding():
    states = torch.tensor([[[1.0], [3.0], [99.0], [99.0]]])  # 2 real tokens, then padding
    points = torch.tensor([[1.7, 5.0, -2.0]])  # past the end, far past it, before the start
    lengths = torch.tensor([2])
    read = linear_sample(states, points, lengths)
    assert read.flatten().tolist() == [3.0, 3.0, 1.0]  # the border token repeats
    weights = interpolation_weights(points, lengths, 4)
    assert torch.equal(weights[..., 2:], torch.zeros(1, 3, 2))
    assert torch.allclose(torch.bmm(weights, states), read)
    assert sampled_mask(points, lengths, 4).tolist() == [[True, True, False, False]]
    assert torch.equal(clamp_to_document(points, lengths), torch.tensor([[1.0, 1.0, 0.0]]))


def test_dense_interpolation_weights_equal_the_sampler():
    generator = torch.Generator().manual_seed(0)
    lengths = torch.tensor([7, 3, 5])
    states = torch.randn(3, 7, 4, generator=generator) * _mask([7, 3, 5], 7).unsqueeze(-1)
    points = torch.rand(3, 6, generator=generator) * 9 - 1  # some outside [0, L-1]
    weights = interpolation_weights(points, lengths, 7)  # (3, 6, 7)
    assert torch.allclose(weights.sum(-1), torch.ones(3, 6))
    assert torch.allclose(torch.bmm(weights, states), linear_sample(states, points, lengths))
    # Each point touches at most its two neighbours.
    assert ((weights > 0).sum(-1) <= 2).all()


def test_gradients_reach_centre_and_stride_through_the_interpolation():
    states = torch.tensor([[[0.0], [1.0], [4.0], [9.0], [16.0]]])  # s(t) = t^2
    lengths = torch.tensor([5])
    centre = torch.tensor([1.6], requires_grad=True)
    stride = torch.tensor([0.9], requires_grad=True)
    points = grid_points(centre, stride, 2)  # 1.15, 2.05
    linear_sample(states, points, lengths).sum().backward()
    # d read_i / d p_i = s(ceil p) - s(floor p): 4 - 1 = 3 and 9 - 4 = 5.
    # d p_i / d g = 1; d p_i / d delta = i - N/2 - 0.5 = -0.5, 0.5.
    assert torch.allclose(centre.grad, torch.tensor([8.0]))
    assert torch.allclose(stride.grad, torch.tensor([-0.5 * 3 + 0.5 * 5]))


def test_gradients_reach_centre_stride_and_width_through_the_filterbank():
    states = torch.arange(6.0).view(1, 6, 1)  # s(t) = t
    mask = _mask([6], 6)
    raw = torch.tensor([[0.3, -0.2, 0.1, 0.0]], requires_grad=True)
    params = glimpse_parameters(raw, mask.sum(1), num_filters=3)
    mu = grid_points(params.centre, params.stride, 3)
    read = torch.bmm(gaussian_filterbank(mu, params.width, mask), states)  # (1, 3, 1)
    read[0, 2, 0].backward()  # the last filter's reading: moves right with g and delta
    grad = raw.grad[0]
    assert torch.isfinite(grad).all()
    assert grad[0] > 0 and grad[1] > 0  # more centre or stride reads further right
    assert grad[2] != 0  # the width changes the reading too
    assert grad[3] == 0  # intensity is applied by the reader, not here


def test_position_weights_and_support():
    filters = torch.tensor([[[0.5, 0.5, 0.0, 0.0], [0.0, 0.9995, 0.0005, 0.0]]])  # (1, 2, 4)
    mask = _mask([3], 4)
    assert torch.allclose(
        position_weights(filters, mask), torch.tensor([[0.25, 0.74975, 0.00025, 0]])
    )
    assert support_mask(filters, 1e-3).tolist() == [[True, True, False, False]]


def test_coarse_view_by_hand():
    # Two examples, n = 5, chunks of C = 2: positions (0,1), (2,3), (4,).
    # Example 0: 5 real tokens with states 1..5 (one feature); example 1: 3 real tokens.
    states = torch.tensor([[1.0, 2.0, 3.0, 4.0, 5.0], [10.0, 20.0, 30.0, 99.0, 99.0]])
    states = states.unsqueeze(-1)  # (2, 5, 1)
    mask = _mask([5, 3], 5)
    in_query = torch.tensor([[True, False, True, True, False], [False, True, False, True, True]])
    view = coarse_view(states, mask, in_query, chunk=2)
    # Means over real tokens: padding (the 99s) never counts.
    assert view.states.squeeze(-1).tolist() == [[1.5, 3.5, 5.0], [15.0, 30.0, 0.0]]
    # Query-match fractions over real tokens: the padded "matches" of example 1 do not count.
    assert view.match.tolist() == [[0.5, 1.0, 0.0], [0.5, 0.0, 0.0]]
    # Mean real positions; the partial chunk (2, 3) of example 1 holds only position 2.
    assert view.centres.tolist() == [[0.5, 2.5, 4.0], [0.5, 2.0, 0.0]]
    assert view.mask.tolist() == [[True, True, True], [True, True, False]]
    # One chunk per token is the token itself.
    same = coarse_view(states, mask, in_query, chunk=1)
    assert torch.equal(same.states, states * mask.unsqueeze(-1))
    with pytest.raises(ValueError, match="chunk must be at least 1"):
        coarse_view(states, mask, in_query, chunk=0)


def test_window_weights_by_hand():
    # Width 3 around the integer point 2 over 6 real tokens: tokens 1, 2, 3, a third each.
    mask = _mask([6, 4], 7)
    lengths = mask.sum(1)
    w = window_weights(torch.tensor([[2.0], [3.0]]), lengths, mask, width=3)
    assert torch.allclose(w[0, 0], torch.tensor([0, 1, 1, 1, 0, 0, 0]) / 3.0)
    # At the document's end (L = 4) the window holds only the real tokens 2 and 3.
    assert torch.allclose(w[1, 0], torch.tensor([0, 0, 1, 1, 0, 0, 0]) / 2.0)
    # Between tokens (p = 2.25): linear edges, 0.75 on token 1, 1 on 2 and 3, 0.25 on token 4.
    half = window_weights(torch.tensor([[2.25]]), lengths[:1], mask[:1], width=3)
    assert torch.allclose(half[0, 0], torch.tensor([0, 0.75, 1, 1, 0.25, 0, 0]) / 3.0)
    with pytest.raises(ValueError, match="width must be at least 1"):
        window_weights(torch.tensor([[2.0]]), lengths[:1], mask[:1], width=0)


def test_a_window_of_one_token_is_the_interpolation():
    mask = _mask([6, 3], 7)
    lengths = mask.sum(1)
    points = torch.tensor([[0.0, 1.3, 4.5, 9.0], [-2.0, 0.5, 1.75, 2.0]])
    torch.testing.assert_close(
        window_weights(points, lengths, mask, width=1), interpolation_weights(points, lengths, 7)
    )


def test_retina_read_concatenates_the_point_and_its_windows():
    torch.manual_seed(0)
    states = torch.randn(2, 12, 3)
    mask = _mask([12, 5], 12)
    states = states * mask.unsqueeze(-1)
    lengths = mask.sum(1)
    points = torch.tensor([[5.0, 6.5], [4.0, 1.0]])
    read, pooled = retina_read(states, points, lengths, mask, (3, 9))
    assert read.shape == (2, 2, 9)
    torch.testing.assert_close(read[..., :3], linear_sample(states, points, lengths))
    # The 3-window at 5.0 is the mean of tokens 4, 5, 6; the 9-window the mean of 1..9.
    torch.testing.assert_close(read[0, 0, 3:6], states[0, 4:7].mean(0))
    torch.testing.assert_close(read[0, 0, 6:], states[0, 1:10].mean(0))
    # Example 1 (L = 5): the 9-window at 4.0 holds tokens 0..4 only; padding gets no weight.
    torch.testing.assert_close(read[1, 0, 6:], states[1, :5].mean(0))
    # pooled: tokens inside some window (the 9-windows at 5.0 and 6.5 cover 1..11).
    assert pooled[0].tolist() == [False] + [True] * 11
    assert pooled[1].tolist() == [True] * 5 + [False] * 7
    # The read is differentiable in the points (through the windows' edges too).
    moving = points.clone().requires_grad_(True)
    retina_read(states, moving, lengths, mask, (3,))[0][..., 3:].sum().backward()
    assert moving.grad[0].abs().sum() > 0


def test_chunk_flags_and_the_locator_loss():
    flags = torch.tensor([[False, False, True, False, False], [False, False, False, False, False]])
    target = chunk_any(flags, 2)  # chunks (0,1), (2,3), (4,)
    assert target.tolist() == [[False, True, False], [False, False, False]]
    weights = torch.tensor([[0.2, 0.5, 0.3], [0.1, 0.1, 0.8]])
    # Only example 0 has a target: -log 0.5.
    assert chunk_locator_loss(weights, target).item() == pytest.approx(math.log(2.0))
    # Two target chunks: the marginal, -log(0.2 + 0.5).
    both = torch.tensor([[True, True, False], [False, False, False]])
    assert chunk_locator_loss(weights, both).item() == pytest.approx(-math.log(0.7))
    assert chunk_locator_loss(weights, torch.zeros_like(both)).item() == 0.0


def test_match_weights_by_hand():
    # Document ids 5 7 5 9 8 [pad pad], query 5 9 4 [pad]: 5 occurs twice in the document
    # (1/2 each), 9 once (1); 7 and 8 are not in the query; padding (id 0, and the query's
    # padding id 0) never counts.
    context = torch.tensor([[5, 7, 5, 9, 8, 0, 0], [4, 4, 4, 6, 0, 0, 0]])
    query = torch.tensor([[5, 9, 4, 0], [4, 0, 0, 0]])
    weights = match_weights(context, context != 0, query, query != 0)
    expected = [[0.5, 0.0, 0.5, 1.0, 0.0, 0.0, 0.0], [1 / 3, 1 / 3, 1 / 3, 0.0, 0.0, 0.0, 0.0]]
    torch.testing.assert_close(weights, torch.tensor(expected))


def test_window_sums_by_hand():
    values = torch.tensor([[1.0, 0.0, 2.0, 0.0, 0.0, 4.0]])
    # radius 1: t=0 sums 0..1, t=1 sums 0..2, ..., t=5 sums 4..5.
    assert window_sums(values, 1).tolist() == [[1.0, 3.0, 2.0, 2.0, 4.0, 4.0]]
    assert torch.equal(window_sums(values, 0), values)
    assert window_sums(values, 9).tolist() == [[7.0] * 6]
    with pytest.raises(ValueError, match="radius must be >= 0"):
        window_sums(values, -1)


def test_anchors_sit_in_the_middle_of_the_query_words_apart_and_never_on_padding():
    weights = torch.zeros(3, 14)
    weights[0, 2:4] = 1.0  # a cluster at 2, 3
    weights[0, 9] = weights[0, 11] = 0.5  # another at 9, 11
    weights[1, 4] = 1.0
    weights[1, 7] = 5.0  # on padding, inside the box of real position 5: never counts
    mask = _mask([14, 6, 0], 14)
    anchors = query_anchors(weights, mask, count=2, radius=2)
    # Example 0: the box sums (radius 2) are 2 for centres 1..4; the first box, 0..3, holds
    # 2 and 3, and the anchor is their middle, 2.5 rounded up: 3 (the box's centre, 1, sits
    # before the cluster). Positions 0..5 are then taken; the best box left is centred at 9
    # (7..11: weight 1), anchored at (9 + 11) / 2 = 10.
    # Example 1: the box at 2 (0..4) holds 4; then every real position is taken: 0. (Were
    # the padding counted, the box at 5 (3..7) would sum 6 and anchor at 6.5 -> 7, padding.)
    # Example 2 has no real token: 0, 0.
    assert anchors.tolist() == [[3, 10], [4, 0], [0, 0]]
    # Without weight the anchors are the earliest free positions, more than 2 apart.
    assert query_anchors(torch.zeros(1, 14), _mask([14], 14), 3, 2).tolist() == [[0, 3, 6]]


def test_an_anchored_window_starts_on_its_anchor_and_spans_w():
    # raw = 0: centre = anchor, stride = W / (N - 1), width = W / N (1/2 + 3/2 sigmoid(0)).
    raw = torch.zeros(2, 3)
    params = anchored_parameters(raw, torch.tensor([[10, 40], [3, 0]]), num_filters=5, span=8)
    assert params.centre.tolist() == [[10.0, 40.0], [3.0, 0.0]]
    assert params.stride.tolist() == [2.0, 2.0]
    torch.testing.assert_close(params.width, torch.tensor([2.0, 2.0]))
    grid = anchored_grid(params, 5)  # (b, A N): anchor 0's points, then anchor 1's
    assert grid[0].tolist() == [6.0, 8.0, 10.0, 12.0, 14.0, 36.0, 38.0, 40.0, 42.0, 44.0]
    # The centre moves at most W/2 = 4 from its anchor; the grid spans at most 3W/2 (stride
    # 3), the width at most two strides of the start (3.2).
    far = anchored_parameters(torch.tensor([[50.0, 50.0, 50.0]]), torch.tensor([[10]]), 5, 8)
    assert far.centre.tolist() == [[14.0]] and far.stride.tolist() == [3.0]
    torch.testing.assert_close(far.width, torch.tensor([3.2]))
    # ... and at least W/2 (stride 1) with filters half a stride wide (0.8): the window cannot
    # shrink to a few point reads.
    near = anchored_parameters(torch.tensor([[-50.0, -50.0, -50.0]]), torch.tensor([[10]]), 5, 8)
    assert near.centre.tolist() == [[6.0]] and near.stride.tolist() == [1.0]
    torch.testing.assert_close(near.width, torch.tensor([0.8]))
    with pytest.raises(ValueError, match="raw must be"):
        anchored_parameters(torch.zeros(1, 5), torch.tensor([[1]]), 5, 8)


def test_gradients_reach_the_anchored_window_and_padding_gets_nothing():
    states = torch.arange(8.0).view(1, 8, 1)  # s(t) = t; tokens 6, 7 are padding
    mask = _mask([6], 8)
    raw = torch.tensor([[0.2, -0.1, 0.0]], requires_grad=True)
    params = anchored_parameters(raw, torch.tensor([[5]]), num_filters=3, span=4)
    mu = anchored_grid(params, 3)  # points near 3, 5, 7: the last one beyond the end
    filters = gaussian_filterbank(mu, params.width, mask)
    assert torch.equal(filters[..., 6:], torch.zeros(1, 3, 2))
    torch.bmm(filters, states)[0, 0, 0].backward()  # the first point reads further right
    grad = raw.grad[0]  # as the centre moves right or the stride shrinks
    assert grad[0] > 0 and grad[1] < 0 and grad[2] != 0
