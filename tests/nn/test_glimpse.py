"""The Gaussian filterbank and the linear-interpolation sampler, checked by hand."""

import math

import pytest
import torch

from attentive_reader.nn.glimpse import (
    clamp_to_document,
    gaussian_filterbank,
    glimpse_parameters,
    grid_points,
    interpolation_weights,
    linear_sample,
    position_weights,
    sampled_mask,
    support_mask,
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
