"""Differentiable windows over a sequence: DRAW's Gaussian filterbank and the spatial
transformer's linear-interpolation sampler, brought from image rows to token positions.

Both place ``N`` points on a grid given by a centre ``g`` and a stride ``delta``::

    mu_i = g + (i - N/2 - 0.5) * delta,    i = 1..N

(DRAW's grid: symmetric about ``g``, spacing ``delta``). Positions are token indices
``t = 0..L-1`` of each example's real tokens (``L`` its true length), so padding is never
read. The Gaussian filterbank turns each point into a normalised bump over the real tokens;
the sampler reads the two real tokens nearest to each point, weighted by distance, so the
gradient reaches ``g`` and ``delta`` through the interpolation weights only.

:func:`glimpse_parameters` maps unconstrained network outputs to ``g``, ``delta``, ``sigma``
and the intensity ``gamma``, scaled to each example's length. On long documents a window
placed from the query alone rarely lands on the sentence a question is about, so windows can
also start at *anchors*, the places where the query's words occur densest
(:func:`match_weights`, :func:`window_sums`, :func:`query_anchors`), and the network then moves
and sizes each window around its anchor (:func:`anchored_parameters`, in tokens).

Letters: ``b`` batch, ``n`` padded length, ``N`` filters (sampling points), ``o`` state size.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from attentive_reader.common.checks import check_positive
from attentive_reader.nn.features import query_match
from attentive_reader.nn.masking import masked_softmax


@dataclass
class GlimpseParameters:
    """One glimpse's parameters per example, in token units. Each field is (b,).

    Attributes:
        centre: ``g``, the grid's centre (0 = the first token).
        stride: ``delta``, the distance between neighbouring grid points.
        width: ``sigma``, the Gaussian filters' standard deviation (unused by the sampler).
        intensity: ``gamma``, a multiplier of the read-out (1 for the sampler).
    """

    centre: Tensor
    stride: Tensor
    width: Tensor
    intensity: Tensor


def glimpse_parameters(raw: Tensor, lengths: Tensor, num_filters: int) -> GlimpseParameters:
    """Scale unconstrained outputs to a glimpse over each example's real tokens.

    With ``raw = (g~, delta~, sigma~, gamma~)`` and ``L`` the true length::

        g     = (L - 1) * sigmoid(g~)                 in [0, L-1]: always on the document
        delta = (L - 1) / max(N - 1, 1) * sigmoid(delta~)  the grid spans at most the document
        sigma = max(L, 1) / N * exp(sigma~)           at sigma~ = 0, N filters tile the document
        gamma = exp(gamma~)

    All zeros give a grid over the middle half of the document whose filters overlap.

    Args:
        raw: (b, c) unconstrained values: ``c = 4`` as above, ``c = 3`` without the
            intensity (``gamma = 1``), ``c = 2`` centre and stride only (``sigma = gamma = 1``).
        lengths: (b,) true lengths (number of real tokens).
        num_filters: ``N``.

    Returns:
        The parameters, float32 (positions need the precision even under bf16 autocast).
    """
    if raw.dim() != 2 or raw.shape[1] not in (2, 3, 4):
        raise ValueError(f"raw must be (b, 2), (b, 3) or (b, 4), got shape {tuple(raw.shape)}")
    check_positive(num_filters=num_filters)
    raw = raw.float()
    span = (lengths.float() - 1).clamp_min(0)  # (b,) distance from first to last real token
    centre = span * torch.sigmoid(raw[:, 0])  # (b,)
    stride = span / max(num_filters - 1, 1) * torch.sigmoid(raw[:, 1])  # (b,)
    width = torch.ones_like(centre)
    intensity = torch.ones_like(centre)
    if raw.shape[1] >= 3:
        width = lengths.float().clamp_min(1) / num_filters * torch.exp(raw[:, 2])  # (b,)
    if raw.shape[1] == 4:
        intensity = torch.exp(raw[:, 3])  # (b,)
    return GlimpseParameters(centre, stride, width, intensity)


def grid_points(centre: Tensor, stride: Tensor, num_filters: int) -> Tensor:
    """The grid ``mu_i = g + (i - N/2 - 0.5) * delta``, ``i = 1..N``.

    Args:
        centre: (b,) ``g``.
        stride: (b,) ``delta``.
        num_filters: ``N``.

    Returns:
        (b, N) positions.
    """
    i = torch.arange(1, num_filters + 1, device=centre.device, dtype=centre.dtype)  # (N,)
    offsets = i - num_filters / 2 - 0.5  # (N,), symmetric about 0
    return centre.unsqueeze(-1) + offsets * stride.unsqueeze(-1)  # (b, N)


def gaussian_filterbank(mu: Tensor, sigma: Tensor, mask: Tensor) -> Tensor:
    """Gaussian filters over the real positions of each example.

    ``F[i, t] = exp(-(t - mu_i)^2 / (2 sigma^2)) / Z_i`` with ``Z_i`` the sum over real
    positions ``t``. The normalisation is a masked softmax of the exponent, so it is exact
    for any ``sigma > 0`` (no underflow to 0/0 when a narrow filter sits between tokens or off
    the document), padding gets exactly 0, and an example without real tokens gets zeros.

    Args:
        mu: (b, N) filter centres, in token positions.
        sigma: (b,) or (b, N) widths, > 0.
        mask: (b, n) bool, True on real tokens.

    Returns:
        (b, N, n) weights; each row of an example with real tokens sums to 1 over them.
    """
    if sigma.dim() == 1:
        sigma = sigma.unsqueeze(-1)  # (b, 1)
    t = torch.arange(mask.shape[1], device=mu.device, dtype=mu.dtype)  # (n,)
    distance = t.view(1, 1, -1) - mu.unsqueeze(-1)  # (b, N, n)
    exponent = -distance.pow(2) / (2 * sigma.unsqueeze(-1).pow(2))  # (b, N, n)
    return masked_softmax(exponent, mask.unsqueeze(1))  # (b, N, n)


def clamp_to_document(points: Tensor, lengths: Tensor) -> Tensor:
    """Points moved into ``[0, L-1]`` (the sampler's border rule: the edge token repeats).

    Args:
        points: (b, N) positions.
        lengths: (b,) true lengths.

    Returns:
        (b, N) positions; the gradient passes for points inside, and is 0 for points outside.
    """
    last = (lengths.to(points.dtype) - 1).clamp_min(0).unsqueeze(-1)  # (b, 1)
    return torch.minimum(points.clamp_min(0), last)  # (b, N)


def interpolation_weights(points: Tensor, lengths: Tensor, n: int) -> Tensor:
    """The sampler as a dense matrix: ``W[i, t] = max(0, 1 - |t - p_i|)`` with ``p_i`` clamped.

    The triangle kernel gives weight ``1 - frac`` to ``floor(p)`` and ``frac`` to
    ``floor(p) + 1``: linear interpolation between the two nearest real tokens (the spatial
    transformer's bilinear kernel in one dimension). Rows sum to 1 for examples with real
    tokens; padding, and every position of an empty example, get 0.

    Args:
        points: (b, N) sampling positions.
        lengths: (b,) true lengths.
        n: the padded length.

    Returns:
        (b, N, n) weights. ``bmm(W, states)`` equals :func:`linear_sample`.
    """
    p = clamp_to_document(points, lengths)  # (b, N)
    t = torch.arange(n, device=points.device, dtype=p.dtype)  # (n,)
    weights = (1 - (t.view(1, 1, -1) - p.unsqueeze(-1)).abs()).clamp_min(0)  # (b, N, n)
    nonempty = (lengths > 0).view(-1, 1, 1).to(weights.dtype)  # (b, 1, 1)
    return weights * nonempty


def sample_indices(points: Tensor, lengths: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """The two real tokens each point reads and the weight of the second.

    Args:
        points: (b, N) sampling positions.
        lengths: (b,) true lengths.

    Returns:
        ``low`` (b, N) long: ``floor(p)``; ``high`` (b, N) long: ``min(low + 1, L - 1)``;
        ``frac`` (b, N): ``p - low``, differentiable in ``p`` (the weight of ``high``).
    """
    p = clamp_to_document(points, lengths)  # (b, N)
    low = p.detach().floor()  # (b, N); only frac carries the gradient
    last = (lengths - 1).clamp_min(0).unsqueeze(-1)  # (b, 1)
    high = torch.minimum(low.long() + 1, last)  # (b, N)
    return low.long(), high, p - low


def linear_sample(states: Tensor, points: Tensor, lengths: Tensor) -> Tensor:
    """Read ``states`` at fractional positions by linear interpolation.

    ``read_i = (1 - frac_i) * states[floor(p_i)] + frac_i * states[floor(p_i) + 1]`` with
    ``p_i`` clamped to the real tokens; only these two tokens per point are touched.

    Args:
        states: (b, n, o) per-token states.
        points: (b, N) positions.
        lengths: (b,) true lengths.

    Returns:
        (b, N, o) the sampled states (zeros for an example without real tokens).
    """
    low, high, frac = sample_indices(points, lengths)  # (b, N) each
    o = states.shape[-1]
    at_low = states.gather(1, low.unsqueeze(-1).expand(-1, -1, o))  # (b, N, o)
    at_high = states.gather(1, high.unsqueeze(-1).expand(-1, -1, o))  # (b, N, o)
    frac = frac.unsqueeze(-1).to(states.dtype)  # (b, N, 1)
    read = (1 - frac) * at_low + frac * at_high  # (b, N, o)
    nonempty = (lengths > 0).view(-1, 1, 1).to(states.dtype)  # (b, 1, 1)
    return read * nonempty


def position_weights(filters: Tensor, mask: Tensor) -> Tensor:
    """Per-position weights for heatmaps: the filters summed over filters (and glimpses),
    normalised to sum to 1 over each example's real tokens.

    Args:
        filters: (b, ..., n) non-negative weights (e.g. (b, N, n) or (b, K, N, n)).
        mask: (b, n) bool.

    Returns:
        (b, n); 0 on padding, and all zeros for an example without real tokens.
    """
    total = filters.reshape(filters.shape[0], -1, filters.shape[-1]).sum(1)  # (b, n)
    total = total * mask.to(total.dtype)
    return total / total.sum(-1, keepdim=True).clamp_min(torch.finfo(total.dtype).tiny)


def support_mask(filters: Tensor, threshold: float = 1e-3) -> Tensor:
    """The positions some filter weighs above ``threshold`` (the filters' effective support).

    Args:
        filters: (b, ..., n) normalised filter weights.
        threshold: the smallest weight that counts as reading a token.

    Returns:
        (b, n) bool.
    """
    flat = filters.reshape(filters.shape[0], -1, filters.shape[-1])  # (b, F, n)
    return (flat > threshold).any(1)  # (b, n)


def sampled_mask(points: Tensor, lengths: Tensor, n: int) -> Tensor:
    """The tokens :func:`linear_sample` reads (both neighbours of every point).

    Args:
        points: (b, N) positions.
        lengths: (b,) true lengths.
        n: the padded length.

    Returns:
        (b, n) bool; all False for an example without real tokens.
    """
    low, high, _ = sample_indices(points, lengths)  # (b, N) each
    read = torch.zeros(points.shape[0], n, dtype=torch.bool, device=points.device)  # (b, n)
    read.scatter_(1, torch.cat([low, high], dim=1), True)
    return read & (lengths > 0).unsqueeze(-1)


@dataclass
class CoarseView:
    """The document at low resolution: token states mean-pooled over fixed chunks.

    Letters: ``J = ceil(n / C)`` chunks of ``C`` positions.

    Attributes:
        states: (b, J, o) the mean state of each chunk's real tokens (0 for an empty chunk).
        match: (b, J) float32, the fraction of each chunk's real tokens that also occur in
            the query.
        centres: (b, J) float32, the mean position of each chunk's real tokens (0 for an
            empty chunk).
        mask: (b, J) bool, True on chunks holding at least one real token.
    """

    states: Tensor
    match: Tensor
    centres: Tensor
    mask: Tensor


def coarse_view(states: Tensor, mask: Tensor, in_query: Tensor, chunk: int) -> CoarseView:
    """Pool ``states`` over chunks of ``chunk`` positions, padding excluded.

    Chunk ``j`` covers positions ``jC .. jC + C - 1``; its state is the mean over the real
    tokens among them, its match fraction the share of those tokens with the query-match bit,
    its centre their mean position. A chunk without real tokens is masked out.

    Args:
        states: (b, n, o) token states.
        mask: (b, n) bool, True on real tokens.
        in_query: (b, n) bool, True on tokens that also occur in the query.
        chunk: ``C``, positions per chunk (>= 1).

    Returns:
        The :class:`CoarseView`.
    """
    if chunk < 1:
        raise ValueError(f"chunk must be at least 1, got {chunk}")
    b, n, o = states.shape
    pad = -n % chunk
    real = mask.float()  # (b, n); positions and fractions in float32, even under bf16
    if pad:
        states = torch.nn.functional.pad(states, (0, 0, 0, pad))  # (b, JC, o)
        real = torch.nn.functional.pad(real, (0, pad))  # (b, JC)
        in_query = torch.nn.functional.pad(in_query, (0, pad))
    j = states.shape[1] // chunk
    real = real.view(b, j, chunk)  # (b, J, C)
    counts = real.sum(-1)  # (b, J)
    safe = counts.clamp_min(1)  # (b, J)
    weights = (real / safe.unsqueeze(-1)).to(states.dtype)  # (b, J, C): 1/count on real tokens
    pooled = (states.view(b, j, chunk, o) * weights.unsqueeze(-1)).sum(2)  # (b, J, o)
    match = (in_query.view(b, j, chunk).float() * real).sum(-1) / safe  # (b, J)
    positions = torch.arange(j * chunk, device=states.device, dtype=real.dtype).view(j, chunk)
    centres = (positions * real).sum(-1) / safe  # (b, J)
    return CoarseView(pooled, match, centres, counts > 0)


def window_weights(points: Tensor, lengths: Tensor, mask: Tensor, width: int) -> Tensor:
    """Pooled windows of ``width`` tokens around each point (one ring of the retina).

    ``w[i, t] = clamp(width/2 + 1/2 - |t - p_i|, 0, 1)`` over the real tokens, normalised to
    sum to 1: a box of ``width`` tokens around an integer point, with linear edges so that
    the read is differentiable in ``p_i``. ``width = 1`` is :func:`interpolation_weights`.
    Points are clamped to the document first; padding gets 0.

    Args:
        points: (b, N) positions.
        lengths: (b,) true lengths.
        mask: (b, n) bool, True on real tokens.
        width: the window's width in tokens (>= 1).

    Returns:
        (b, N, n) weights; each row of an example with real tokens sums to 1.
    """
    if width < 1:
        raise ValueError(f"width must be at least 1, got {width}")
    p = clamp_to_document(points, lengths)  # (b, N)
    t = torch.arange(mask.shape[1], device=points.device, dtype=p.dtype)  # (n,)
    reach = width / 2 + 0.5
    weights = (reach - (t.view(1, 1, -1) - p.unsqueeze(-1)).abs()).clamp(0, 1)  # (b, N, n)
    weights = weights * mask.unsqueeze(1).to(weights.dtype)
    return weights / weights.sum(-1, keepdim=True).clamp_min(torch.finfo(weights.dtype).tiny)


def retina_read(
    states: Tensor, points: Tensor, lengths: Tensor, mask: Tensor, widths: tuple[int, ...]
) -> tuple[Tensor, Tensor]:
    """RAM's glimpse sensor on a sequence: around each point, the interpolated token and
    pooled windows of growing width (lower resolution, more context).

    Args:
        states: (b, n, o) token states.
        points: (b, N) positions.
        lengths: (b,) true lengths.
        mask: (b, n) bool.
        widths: the pooled windows' widths, e.g. ``(3, 9)``.

    Returns:
        ``read`` (b, N, (1 + R) o): ``[interpolated; window_1; ...; window_R]`` per point;
        ``pooled`` (b, n) bool: the tokens some window weighs (read at low resolution).
    """
    parts = [linear_sample(states, points, lengths)]  # (b, N, o)
    pooled = torch.zeros_like(mask)  # (b, n)
    for width in widths:
        weights = window_weights(points, lengths, mask, width)  # (b, N, n)
        parts.append(torch.bmm(weights.to(states.dtype), states))  # (b, N, o)
        pooled = pooled | (weights > 0).any(1)
    return torch.cat(parts, dim=-1), pooled


def chunk_any(flags: Tensor, chunk: int) -> Tensor:
    """Which chunks of ``chunk`` positions (as in :func:`coarse_view`) hold a True flag.

    Args:
        flags: (b, n) bool.
        chunk: ``C``.

    Returns:
        (b, J) bool, ``J = ceil(n / C)``.
    """
    pad = -flags.shape[1] % chunk
    if pad:
        flags = torch.nn.functional.pad(flags, (0, pad))
    return flags.view(flags.shape[0], -1, chunk).any(-1)  # (b, J)


def chunk_locator_loss(chunk_weights: Tensor, target: Tensor) -> Tensor:
    """``-log sum_{j in target} a_j``, averaged over the examples with a target chunk.

    The marginal likelihood of landing on any target chunk: the locator may choose which
    of them (e.g. which of the answer's mentions) to place the glimpse on.

    Args:
        chunk_weights: (b, J) the locator's weights over the chunks (rows sum to 1).
        target: (b, J) bool.

    Returns:
        A scalar (0 when no example has a target chunk).
    """
    mass = (chunk_weights.float() * target.float()).sum(-1)  # (b,)
    has = target.any(-1)  # (b,)
    if not has.any():
        return chunk_weights.new_zeros(()).float()
    return -mass[has].clamp_min(1e-12).log().mean()


def match_weights(
    context: Tensor, context_mask: Tensor, query: Tensor, query_mask: Tensor
) -> Tensor:
    """How much each document token says "the query is about here": ``1 / c(t)`` on a real
    token that also occurs in the query, ``c(t)`` the number of times that token occurs in the
    document (a word the document repeats everywhere, e.g. "the", points nowhere); 0 elsewhere.

    Args:
        context: (b, n) token ids; context_mask: (b, n) bool, True on real tokens.
        query: (b, m) token ids; query_mask: (b, m) bool.

    Returns:
        (b, n) float32; 0 on padding.
    """
    in_query, _ = query_match(context, context_mask, query, query_mask)  # (b, n)
    real = context_mask.bool()
    ids = context.long().masked_fill(~real, 0)  # (b, n)
    vocab = int(ids.max()) + 1 if ids.numel() else 1
    counts = torch.zeros(ids.shape[0], vocab, device=ids.device)  # (b, V)
    counts.scatter_add_(1, ids, real.float())
    per_token = counts.gather(1, ids).clamp_min(1)  # (b, n): c(t)
    return in_query.float() / per_token  # (b, n)


def window_sums(values: Tensor, radius: int) -> Tensor:
    """``out[t] = sum of values[s]`` over ``|s - t| <= radius`` (a box of ``2 radius + 1``
    positions, cut at the ends).

    Args:
        values: (b, n).
        radius: >= 0.

    Returns:
        (b, n), float32.
    """
    if radius < 0:
        raise ValueError(f"radius must be >= 0, got {radius}")
    n = values.shape[1]
    running = torch.nn.functional.pad(values.double().cumsum(1), (1, 0))  # (b, n + 1)
    t = torch.arange(n, device=values.device)  # (n,)
    high = (t + radius + 1).clamp_max(n)  # (n,)
    low = (t - radius).clamp_min(0)  # (n,)
    return (running[:, high] - running[:, low]).float()  # (b, n)


def query_anchors(weights: Tensor, mask: Tensor, count: int, radius: int) -> Tensor:
    """``count`` anchors, each at the middle of a cluster of the query's words (greedy):
    the box of ``2 radius + 1`` tokens holding the most match weight not yet claimed
    (``window_sums``; ties go to the earliest box), its anchor the weighted mean position of
    that weight (rounded half up), and its weight then claimed. A later box is centred more
    than ``radius`` from every box and anchor before it, and an anchor whose box holds no
    weight sits at the box's centre: the earliest free position once no weight is left.
    Once every real position is taken, the remaining anchors repeat position 0.

    The box's centre alone would be a poor anchor: the sums are flat wherever one box holds
    the whole cluster, and the earliest of those centres sits up to ``radius`` tokens before
    it; claiming the weight keeps a later box from anchoring on the same cluster's edge.

    Args:
        weights: (b, n) non-negative match weights (``match_weights``), 0 on padding.
        mask: (b, n) bool, True on real tokens.
        count: ``A`` anchors.
        radius: the boxes' half-width.

    Returns:
        (b, A) long, positions in ``[0, L - 1]`` (0 for an empty document).
    """
    check_positive(count=count)
    left = weights.detach().double() * mask  # (b, n): the weight not yet claimed
    taken = ~mask.bool()  # (b, n): positions no box may be centred on
    t = torch.arange(weights.shape[1], device=weights.device)  # (n,)
    chosen = []
    for _ in range(count):
        sums = window_sums(left, radius).masked_fill(taken, float("-inf"))  # (b, n)
        best = sums.argmax(-1)  # (b,)
        best = best.masked_fill(sums.max(-1).values == float("-inf"), 0)
        box = (t.unsqueeze(0) - best.unsqueeze(-1)).abs() <= radius  # (b, n)
        inside = left * box  # (b, n)
        mass = inside.sum(-1)  # (b,)
        mean = (inside * t).sum(-1) / mass.clamp_min(1e-12)  # (b,)
        anchor = torch.where(mass > 0, torch.floor(mean + 0.5).long(), best)  # (b,)
        chosen.append(anchor)
        left = left.masked_fill(box, 0.0)
        near = (t.unsqueeze(0) - anchor.unsqueeze(-1)).abs() <= radius  # (b, n)
        taken = taken | box | near
    return torch.stack(chosen, dim=1)  # (b, A)


def anchored_parameters(
    raw: Tensor, anchors: Tensor, num_filters: int, span: int
) -> GlimpseParameters:
    """One window per anchor, placed by the locator *relative to* it, in tokens.

    With ``raw = (g~, delta~[, sigma~[, gamma~]])`` shared by the ``A`` anchors ``a`` and ``W``
    the span::

        g_a   = a + W/2 tanh(g~)                  the centre moves at most W/2 from its anchor
        delta = W / max(N - 1, 1) (1/2 + sigmoid(delta~))  the N points span W/2 to 3W/2 tokens,
                                                  W at delta~ = 0
        sigma = W / N (1/2 + 3/2 sigmoid(sigma~)) half a stride to two
        gamma = exp(gamma~)

    Every size is bounded above, so the window cannot widen into a blurred view of the whole
    document (an unbounded width did, in training: with the answer outside the windows, the
    widest filters were the cheapest way to reach it), and below, so that it cannot shrink to
    a few point reads that no gradient moves (without the floors it did, on real news:
    ``docs/glimpse-readers.md``, "Long documents").

    Args:
        raw: (b, c) unconstrained values, ``c`` in 2..4 as in :func:`glimpse_parameters`.
        anchors: (b, A) anchor positions.
        num_filters: ``N`` points per window.
        span: ``W``, tokens the window spans at the start.

    Returns:
        ``centre`` (b, A); ``stride``, ``width``, ``intensity`` (b,); float32.
    """
    if raw.dim() != 2 or raw.shape[1] not in (2, 3, 4):
        raise ValueError(f"raw must be (b, 2), (b, 3) or (b, 4), got shape {tuple(raw.shape)}")
    check_positive(num_filters=num_filters, span=span)
    raw = raw.float()
    centre = anchors.float() + span / 2 * torch.tanh(raw[:, :1])  # (b, A)
    stride = span / max(num_filters - 1, 1) * (0.5 + torch.sigmoid(raw[:, 1]))  # (b,)
    width = torch.ones_like(stride)
    intensity = torch.ones_like(stride)
    if raw.shape[1] >= 3:
        width = span / num_filters * (0.5 + 1.5 * torch.sigmoid(raw[:, 2]))  # (b,)
    if raw.shape[1] == 4:
        intensity = torch.exp(raw[:, 3])  # (b,)
    return GlimpseParameters(centre, stride, width, intensity)


def anchored_grid(params: GlimpseParameters, num_filters: int) -> Tensor:
    """The ``N`` grid points of each anchor's window, windows one after another.

    Returns:
        (b, A N) positions: anchor 0's ``N`` points, then anchor 1's, ...
    """
    centre = params.centre  # (b, A)
    stride = params.stride.unsqueeze(-1).expand_as(centre)  # (b, A)
    b, a = centre.shape
    points = grid_points(centre.reshape(-1), stride.reshape(-1), num_filters)  # (b A, N)
    return points.view(b, a * num_filters)  # (b, A N)
