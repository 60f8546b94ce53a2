"""GRU layers trained on the CPU through one autograd function over length-sorted rows.

Letters: ``b`` batch, ``n`` padded length, ``d`` input size, ``h`` hidden size, ``K`` GRUs
read together (the two directions of a bidirectional layer), ``N`` real tokens in the batch
(the sum of the lengths), ``S`` the longest length, ``k(s)`` the sequences with an ``s``-th
token.

torch's ``nn.GRU`` computes, for each step (gates in the order r, z, n)::

    r = sigmoid(W_ir x + b_ir + W_hr h + b_hr)
    z = sigmoid(W_iz x + b_iz + W_hz h + b_hz)
    c = tanh(W_in x + b_in + r * (W_hn h + b_hn))
    h' = (1 - z) * c + z * h

oneDNN's fused recurrent kernels serve only the LSTM, so on the CPU ``nn.GRU`` runs its steps
one by one and autograd records a dozen operations for each, each one a node of the backward
graph. :class:`PackedGRU` computes the same recurrence with the passes it needs:

- the rows are packed time-major, the longest sequence first (as a ``PackedSequence``): step
  ``s`` reads only the ``k(s)`` sequences that have an ``s``-th token, so padding costs
  nothing, and a reversed GRU reads each sequence from its own last token;
- the input projections of every step are one matrix product per GRU before the loop, and
  the weight and input gradients one product each after it;
- in the backward loop only ``dL/dh`` is carried from step to step: the gradients of the
  gate pre-activations are ``dL/dh'`` times coefficients of the forward's saved gates,
  computed for all steps at once before the loop.

``cpu_speedups.encoders.FastSequenceEncoder`` uses it for GRUs trained on the CPU; tests
compare it with ``nn.GRU``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor, nn
from torch.autograd.function import once_differentiable

from attentive_reader.cpu_speedups.gru_parallel import loops as parallel_loops


@dataclass(frozen=True)
class Packing:
    """Where each packed row of a batch comes from (rows time-major, longest sequence first).

    Attributes:
        sizes: ``k(s)`` for every step ``s < S``.
        offsets: the first packed row of each step.
        forwards: (N,) the flat index ``i * n + t`` in the padded (b * n) rows of each packed
            row, reading each sequence from its first token.
        backwards: (N,) the same, reading each sequence from its last token.
        previous: (N,) the row of each row's previous state in the state buffer, whose first
            ``k(0)`` rows are the initial states (zeros) and whose row ``k(0) + j`` is the state
            after packed row ``j``.
    """

    sizes: tuple[int, ...]
    offsets: tuple[int, ...]
    forwards: Tensor
    backwards: Tensor
    previous: Tensor

    @property
    def first(self) -> int:
        """``k(0)``: the sequences with a token, and the initial states in the state buffer."""
        return self.sizes[0] if self.sizes else 0

    def index(self, reverse: bool) -> Tensor:
        """``backwards`` for a GRU reading each sequence from its end, else ``forwards``."""
        return self.backwards if reverse else self.forwards


def pack_rows(lengths: Tensor, n: int) -> Packing:
    """The packing of a batch whose sequence ``i`` has ``lengths[i]`` real tokens out of ``n``.

    Args:
        lengths: (b,) real tokens per sequence (padding after them).
        n: the padded length.
    """
    sorted_lengths, order = torch.sort(lengths, descending=True, stable=True)  # (b,)
    longest = int(sorted_lengths[0]) if len(lengths) else 0
    steps = torch.arange(longest, device=lengths.device).unsqueeze(1)  # (S, 1)
    real = steps < sorted_lengths.unsqueeze(0)  # (S, b)
    sizes = real.sum(dim=1)  # (S,)
    starts = torch.cumsum(sizes, dim=0) - sizes  # (S,)
    first = order * n  # (b,) flat index of each sequence's first token
    rank = torch.arange(len(lengths), device=lengths.device).expand_as(real)[real]  # (N,)
    step = steps.expand_as(real)[real]  # (N,)
    first_size = int(sizes[0]) if longest else 0
    # Step s continues the first k(s) sequences of step s - 1 (the initial states at s = 0).
    previous_start = torch.where(step > 0, first_size + starts[(step - 1).clamp(min=0)], 0)
    return Packing(
        sizes=tuple(sizes.tolist()),
        offsets=tuple(starts.tolist()),
        forwards=(first + steps)[real],  # (N,)
        backwards=(first + sorted_lengths - 1 - steps)[real],  # (N,)
        previous=previous_start + rank,  # (N,)
    )


def packed_gru(
    inputs: Tensor,
    lengths: Tensor,
    cells: Sequence[nn.GRU],
    reverse: Sequence[bool],
    parallel: bool = True,
) -> Tensor:
    """Run one-layer GRUs over the real tokens of a padded batch.

    Args:
        inputs: (b, n, d), real tokens first.
        lengths: (b,) real tokens per sequence.
        cells: ``K`` one-layer ``nn.GRU``s of one hidden size, each reading ``inputs``.
        reverse: for each cell, whether it reads each sequence from its last real token.
        parallel: run the cells' step loops each on its own core where that pays
            (``gru_parallel.loops``); ``False``: one loop over all of them.

    Returns:
        (b, n, K h): the states of cell ``j`` in features ``j h .. (j + 1) h``, each at the
        token it read; exactly 0 on padding.
    """
    packing = pack_rows(lengths, inputs.shape[1])
    weights = [
        torch.stack([getattr(cell, f"{name}_l0") for cell in cells])
        for name in ("weight_ih", "weight_hh", "bias_ih", "bias_hh")
    ]  # (K, 3h, d), (K, 3h, h), (K, 3h), (K, 3h)
    return PackedGRU.apply(inputs, packing, tuple(reverse), parallel, *weights)


class PackedGRU(torch.autograd.Function):
    """``K`` GRUs over packed rows, with the backward written out (module docstring)."""

    @staticmethod
    def forward(
        ctx: Any,
        inputs: Tensor,
        packing: Packing,
        reverse: tuple[bool, ...],
        parallel: bool,
        w_ih: Tensor,
        w_hh: Tensor,
        b_ih: Tensor,
        b_hh: Tensor,
    ) -> Tensor:
        b, n, d = inputs.shape
        K, three_h, h = w_hh.shape
        rows = inputs.reshape(b * n, d)  # (b n, d)
        packed = [rows.index_select(0, packing.index(back)) for back in reverse]  # K x (N, d)
        gi = inputs.new_empty(K, len(packing.forwards), three_h)  # (K, N, 3h)
        for j, x in enumerate(packed):
            torch.addmm(b_ih[j], x, w_ih[j].t(), out=gi[j])
        saved = _run_steps(gi, packing, w_hh, b_hh, parallel)
        ctx.save_for_backward(*packed, w_ih, w_hh, *saved)
        ctx.packing, ctx.reverse, ctx.shape = packing, reverse, (b, n, d)
        ctx.parallel = parallel
        states = saved[0][:, packing.first :]  # (K, N, h)
        return _unpack(states, packing, reverse, b * n).view(b, n, K * h)

    @staticmethod
    @once_differentiable
    def backward(ctx: Any, grad_states: Tensor) -> tuple[Tensor | None, ...]:
        *packed, w_ih, w_hh, states, gates, candidates, hidden = ctx.saved_tensors
        packing, reverse, (b, n, d) = ctx.packing, ctx.reverse, ctx.shape
        K, three_h, h = w_hh.shape
        flat = grad_states.reshape(b * n, K * h)
        grad_h = grad_states.new_empty(K, len(packing.forwards), h)  # (K, N, h): dL/dh'
        for j, back in enumerate(reverse):
            torch.index_select(flat[:, j * h : (j + 1) * h], 0, packing.index(back), out=grad_h[j])
        previous = states.index_select(1, packing.previous)  # (K, N, h)
        coefficients, update_share = _step_coefficients(previous, gates, candidates, hidden)
        grad_hidden = _carry_back(grad_h, coefficients, gates[..., h:], w_hh, packing, ctx.parallel)
        grad_w_hh = torch.bmm(grad_hidden.transpose(1, 2), previous)  # (K, 3h, h)
        grad_b_hh = grad_hidden.sum(dim=1)  # (K, 3h)
        # The input side's gates: r and z as the hidden side's, c without the factor r.
        grad_gi = grad_hidden
        torch.mul(grad_h, update_share, out=grad_gi[..., 2 * h :])  # (K, N, 3h)
        grad_w_ih = torch.stack([grad_gi[j].t() @ x for j, x in enumerate(packed)])  # (K, 3h, d)
        grad_b_ih = grad_gi.sum(dim=1)  # (K, 3h)
        grad_inputs = grad_states.new_zeros(b * n, d)
        for j, back in enumerate(reverse):
            grad_inputs.index_add_(0, packing.index(back), grad_gi[j] @ w_ih[j])  # (b n, d)
        return (
            grad_inputs.view(b, n, d),
            None,
            None,
            None,
            grad_w_ih,
            grad_w_hh,
            grad_b_ih,
            grad_b_hh,
        )


def _run_steps(
    gi: Tensor, packing: Packing, w_hh: Tensor, b_hh: Tensor, parallel: bool
) -> tuple[Tensor, ...]:
    """The recurrence over the packed steps.

    Every step's matrix product goes into one contiguous scratch block, and the hidden
    biases of r and z are added to ``gi`` once before the loop (they add to the gates'
    pre-activations just as ``b_i`` does), so that a step is a product and five element-wise
    operations, none of them a copy.

    Args:
        gi: ``W_i x + b_i`` of every packed row (K, N, 3h).
        packing: the batch's packing.
        w_hh: (K, 3h, h); b_hh: (K, 3h).
        parallel: each GRU's loop on its own core where that pays (``gru_parallel.loops``).

    Returns:
        ``states`` (K, k(0) + N, h): the initial states (0), then the state after each row;
        ``gates`` (K, N, 2h): r and z; ``candidates`` (K, N, h): c; ``hidden`` (K, N, h):
        ``W_hn h + b_hn`` of each row's previous state.
    """
    K, N, three_h = gi.shape
    h = three_h // 3
    first = packing.first
    sizes = list(packing.sizes)
    states = gi.new_empty(K, first + N, h)
    states[:, :first] = 0.0
    gates = gi.new_empty(K, N, 2 * h)
    candidates = gi.new_empty(K, N, h)
    hidden = gi.new_empty(K, N, h)
    if not sizes:  # no sequence has a token
        return states, gates, candidates, hidden
    input_rz = gi[..., : 2 * h] + b_hh[:, None, : 2 * h]  # (K, N, 2h): both biases of r, z
    w_hh_t = w_hh.transpose(1, 2)  # (K, h, 3h)
    scratch = gi.new_empty(K * first * three_h)  # the step's W_h h, contiguous
    loops = parallel_loops(K, len(sizes), h) if parallel else None
    if loops is not None:  # each direction on its own core
        loops.forward(
            states, gates, candidates, hidden, input_rz, gi[..., 2 * h :], b_hh[:, 2 * h :],
            w_hh_t, scratch.view(K, first * three_h), sizes, list(packing.offsets), first,
        )  # fmt: skip
        return states, gates, candidates, hidden
    bias_n = b_hh[:, None, 2 * h :]  # (K, 1, h)
    products = {k: scratch[: K * k * three_h].view(K, k, three_h) for k in set(sizes)}
    # Every step's views, made by one split each rather than by slicing in the loop.
    new_states = states[:, first:].split(sizes, dim=1)  # (K, k(s), h) each
    previous_states = (states[:, :first], *new_states[:-1])  # step s continues the first k(s)
    per_step = zip(
        sizes,
        previous_states,
        new_states,
        input_rz.split(sizes, dim=1),
        gi[..., 2 * h :].split(sizes, dim=1),
        gates.split(sizes, dim=1),
        hidden.split(sizes, dim=1),
        candidates.split(sizes, dim=1),
        strict=True,
    )
    for k, h_prev, h_next, in_rz, in_n, rz, hn, c in per_step:
        h_prev = h_prev[:, :k]  # (K, k, h)
        gh = torch.bmm(h_prev, w_hh_t, out=products[k])  # (K, k, 3h)
        torch.add(in_rz, gh[..., : 2 * h], out=rz).sigmoid_()  # (K, k, 2h)
        torch.add(gh[..., 2 * h :], bias_n, out=hn)  # (K, k, h)
        torch.addcmul(in_n, rz[..., :h], hn, out=c).tanh_()  # (K, k, h)
        torch.lerp(c, h_prev, rz[..., h:], out=h_next)
    return states, gates, candidates, hidden


def _step_coefficients(
    previous: Tensor, gates: Tensor, candidates: Tensor, hidden: Tensor
) -> tuple[Tensor, Tensor]:
    """What multiplies ``dL/dh'`` in each gate's gradient, for all rows at once.

    With ``g = dL/dh'``: ``dL/dc_pre = g (1 - z)(1 - c^2)``, ``dL/dz_pre = g (h - c) z (1 - z)``,
    ``dL/dr_pre = dL/dc_pre (W_hn h + b_hn) r (1 - r)``, and the hidden side's n block gets
    ``dL/dc_pre r``.

    Args:
        hidden: ``W_hn h + b_hn`` (K, N, h).

    Returns:
        ``coefficients`` (K, N, 3h) of the hidden side's gate gradients (r, z, n blocks) and
        ``update_share`` (K, N, h), that of the input side's n block.
    """
    h = candidates.shape[2]
    r, z = gates[..., :h], gates[..., h:]
    one = candidates.new_ones(()).expand_as(candidates)
    update_share = torch.addcmul(one, candidates, candidates, value=-1.0)  # 1 - c^2
    update_share.addcmul_(update_share, z, value=-1.0)  # (1 - z)(1 - c^2): (K, N, h)
    K, N = candidates.shape[:2]
    coefficients = candidates.new_empty(K, N, 3 * h)
    grad_r = torch.mul(update_share, hidden, out=coefficients[..., :h])
    grad_r.mul_(torch.addcmul(r, r, r, value=-1.0))  # ... r (1 - r)
    grad_z = torch.sub(previous, candidates, out=coefficients[..., h : 2 * h])
    grad_z.mul_(torch.addcmul(z, z, z, value=-1.0))  # (h - c) z (1 - z)
    torch.mul(update_share, r, out=coefficients[..., 2 * h :])
    return coefficients, update_share


def _carry_back(
    grad_h: Tensor,
    coefficients: Tensor,
    z: Tensor,
    w_hh: Tensor,
    packing: Packing,
    parallel: bool,
) -> Tensor:
    """The backward loop: ``dL/dh`` carried from each step to the one before.

    Args:
        grad_h: (K, N, h) ``dL/dh'`` from the outputs; on return, with what later steps add.
        coefficients: (K, N, 3h) from :func:`_step_coefficients`; overwritten, step by step,
            with the gradients it multiplies (the return value).
        z: (K, N, h) the update gates.
        w_hh: (K, 3h, h).
        packing: the batch's packing.
        parallel: each GRU's loop on its own core where that pays (``gru_parallel.loops``).

    Returns:
        The gradients of the hidden side's gate pre-activations ``W_h h + b_h`` (K, N, 3h).
    """
    K, _, h = grad_h.shape
    sizes = list(packing.sizes)
    if not sizes:  # no sequence has a token
        return coefficients
    loops = parallel_loops(K, len(sizes), h) if parallel else None
    if loops is not None:  # each direction on its own core
        return loops.backward(grad_h, coefficients, z, w_hh, sizes, list(packing.offsets))
    per_step = zip(
        reversed(sizes),
        reversed(grad_h.split(sizes, dim=1)),
        reversed(coefficients.split(sizes, dim=1)),
        reversed(z.split(sizes, dim=1)),
        strict=True,
    )
    carry: Tensor | None = None
    for k, g, step, z_step in per_step:  # (K, k, h), (K, k, 3h), (K, k, h)
        if carry is not None:  # the next step continues the first rows of this one
            g[:, : carry.shape[1]].add_(carry)  # (not +=, whose __setitem__ copies)
        step.view(K, k, 3, h).mul_(g.unsqueeze(2))  # the coefficients become the gradients
        carry = torch.bmm(step, w_hh).addcmul_(g, z_step)  # (K, k, h): dL/dh before
    grad_hidden = coefficients
    return grad_hidden


def _unpack(states: Tensor, packing: Packing, reverse: Sequence[bool], rows: int) -> Tensor:
    """(K, N, h) packed states -> (rows, K h) padded rows, 0 where no token is."""
    K, _, h = states.shape
    out = states.new_zeros(rows, K * h)
    for j, back in enumerate(reverse):
        index = packing.backwards if back else packing.forwards
        out[:, j * h : (j + 1) * h].index_copy_(0, index, states[j])
    return out
