"""The Impatient Reader's additive query steps for training, fast: the same values and
gradients as the plain recurrence (``nn/impatient.py``), fewer memory passes.

Letters: ``b`` batch, ``n`` context length, ``m`` query length, ``d`` state size (2h),
``a`` the additive scorer's hidden size.

The reader's loop scores step ``i`` as ``w^T tanh(W_d y_d + W_q [r(i-1); y_q(i)])``. Here the
same scores are ``H(i) @ 2w - sum(w)`` with ``H(i) = sigmoid(P + u(i))``, ``P = 2 W_d y_d``
(once) and ``u(i) = 2 W_q [r(i-1); y_q(i)]``, since ``tanh(z) = 2 sigmoid(2z) - 1``: the
backward then needs only ``H(1 - H)``, and a CPU's sigmoid is cheaper than its tanh. Autograd
would run each step as a few freshly allocated (b, n, a) tensors and add the steps' gradients
of ``P`` and ``y_d`` one step at a time; ``AdditiveSteps`` makes the memory passes it needs and
no more:

- the forward writes every step's ``H(i)`` into one workspace, kept for the backward and
  reused from batch to batch (fresh memory of that size costs page faults every batch);
- a step's (k, n, a) values are visited in blocks of about 1 MiB that stay in the core's
  cache: each pass after the first (the forward's sigmoid and product with ``2w``, the
  backward's ``H(1 - H)`` and its sums) reads the block from the cache, not from memory;
- the steps' gradients of ``P`` are summed before the factor ``2w``: ``dP = 2w * sum_i g(i)
  H(i)(1 - H(i))``;
- the steps' gradients of ``y_d`` through the reads ``s(i)^T y_d`` become one product
  ``S^T dR`` after the loop, instead of an outer product per step;
- the examples are taken longest query first, so step ``i`` reads only the first ``k(i)``
  rows (those whose query has an ``i``-th token): the work is the sum of the query lengths,
  not the batch size times the longest query.

``FusedImpatientSteps`` is the one entry: the reader's plain part (``nn/impatient.py``) with
these steps where they are the fast path (training on the CPU with the additive scorer, in
float32/float64 outside autocast, the query's padding after its tokens); elsewhere the plain
recurrence runs. Not on CUDA: a GPU has no per-core cache to keep a block in, and the blocks
become thousands of small kernels a batch (docs/scale.md).
"""

from __future__ import annotations

import weakref
from collections.abc import Iterator
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch.autograd.function import once_differentiable

from attentive_reader.cpu_speedups.precision import bf16_is_emulated
from attentive_reader.nn.attention import AdditiveScorer, AttentionScorer
from attentive_reader.nn.impatient import ImpatientSteps, QuerySteps, query_steps
from attentive_reader.nn.masking import masked_softmax


class FusedImpatientSteps(ImpatientSteps):
    """``ImpatientSteps`` (the same values and gradients) through ``AdditiveSteps`` where they
    apply (:meth:`applies`), and in float32 where the CPU only emulates bf16.

    ``CpuSpeedups`` turns a reader's steps into this class in place (:meth:`swap_in`).

    Attributes:
        fused: use ``AdditiveSteps`` where they apply.
        bf16_fallback: leave CPU bf16 autocast where the CPU emulates bf16 (many small steps:
            faster in float32 there).
        workspace: where ``AdditiveSteps`` keeps its activations, batch after batch.
    """

    fused: bool = True
    bf16_fallback: bool = True

    @classmethod
    def swap_in(cls, steps: ImpatientSteps, fused: bool, bf16_fallback: bool) -> None:
        """Turn the plain ``steps`` into this class in place, with the given switches."""
        steps.__class__ = cls
        steps.fused, steps.bf16_fallback = fused, bf16_fallback
        steps.workspace = Workspace()

    def train(self, mode: bool = True) -> FusedImpatientSteps:
        if not mode:
            self.workspace.clear()  # evaluation keeps no activations
        return super().train(mode)

    def applies(self, scorer: AttentionScorer, y_d: Tensor) -> bool:
        """Whether ``AdditiveSteps`` are the fast path for this scorer and document states
        ``y_d``: the additive scorer, training (gradients on) on the CPU, in float32 or
        float64 outside autocast."""
        return (
            self.fused
            and isinstance(scorer, AdditiveScorer)
            and y_d.device.type == "cpu"
            and torch.is_grad_enabled()
            and y_d.requires_grad
            and y_d.dtype in (torch.float32, torch.float64)
            and not torch.is_autocast_enabled("cpu")
        )

    def forward(
        self,
        y_d: Tensor,
        y_q: Tensor,
        context_mask: Tensor,
        query_mask: Tensor,
        *,
        scorer: AttentionScorer,
        recurrent: nn.Linear,
        initial: Tensor,
        step_query: nn.Linear | None = None,
    ) -> QuerySteps:
        """``ImpatientSteps.forward``, fast where it can be."""
        parameters = {"scorer": scorer, "recurrent": recurrent, "initial": initial}
        if self.bf16_fallback and bf16_is_emulated(y_d):
            with torch.autocast("cpu", enabled=False):
                return self.forward(
                    y_d.float(), y_q.float(), context_mask, query_mask,
                    step_query=step_query, **parameters,
                )  # fmt: skip
        if self.applies(scorer, y_d):
            fused = additive_steps(
                y_d, y_q, context_mask, query_mask, workspace=self.workspace, **parameters
            )
            if fused is not None:
                return query_steps(*fused, query_mask)
        return super().forward(
            y_d, y_q, context_mask, query_mask, step_query=step_query, **parameters
        )


def additive_steps(
    y_d: Tensor,
    y_q: Tensor,
    context_mask: Tensor,
    query_mask: Tensor,
    *,
    scorer: AdditiveScorer,
    recurrent: nn.Linear,
    initial: Tensor,
    workspace: Workspace | None = None,
) -> tuple[Tensor, Tensor, Tensor] | None:
    """The additive steps in any dtype: the examples sorted longest query first, the steps,
    the results in the given order.

    Args:
        y_d: document states (b, n, d); y_q: query states (b, m, d).
        context_mask: (b, n) and query_mask: (b, m), True on real tokens.
        scorer: the steps' additive scorer (``W_d``, ``W_q`` on ``[r(i-1); y_q(i)]``, ``w``).
        recurrent: ``W_rr``.
        initial: ``r(0)`` (d,).
        workspace: where the activations are kept (``None``: a fresh tensor).

    Returns:
        ``r(|q|)`` (b, d), ``s(i)`` (b, m, n) and the scores (b, m, n) of every step, rows
        of padded steps all 0; ``None`` for a query with padding between its tokens.
    """
    m = query_mask.shape[1]
    lengths = query_mask.sum(dim=1)  # (b,)
    positions = torch.arange(m, device=query_mask.device)  # (m,)
    if not torch.equal(query_mask, positions < lengths.unsqueeze(-1)):
        return None
    if not bool((lengths[:-1] >= lengths[1:]).all()):  # longest query first
        order = torch.argsort(lengths, descending=True, stable=True)  # (b,)
        steps = additive_steps(
            y_d[order], y_q[order], context_mask[order], query_mask[order],
            scorer=scorer, recurrent=recurrent, initial=initial, workspace=workspace,
        )  # fmt: skip
        inverse = torch.argsort(order)  # (b,)
        return tuple(value[inverse] for value in steps)  # type: ignore[union-attr,return-value]
    active = tuple((lengths.unsqueeze(-1) > positions).sum(dim=0).tolist())  # k(i)
    vector = scorer.vector.weight.squeeze(0)  # w: (a,)
    return AdditiveSteps.apply(
        F.linear(y_d, 2.0 * scorer.key_proj.weight), y_d, y_q,
        initial.to(y_d.dtype).expand(len(lengths), -1), 2.0 * scorer.query_proj.weight,
        2.0 * vector, vector.sum(), recurrent.weight, context_mask, active, workspace,
    )  # (b, d), (b, m, n), (b, m, n)  # fmt: skip


class _Lease:
    """Held by the graph of one forward that uses the workspace; the workspace is free again
    when the graph (and with it this object) is gone."""


class Workspace:
    """One flat buffer reused from batch to batch for the activations ``AdditiveSteps`` keeps.

    Lent to one graph at a time: while a graph that holds it is alive (a forward whose
    backward has not run), another forward gets a fresh tensor.
    """

    def __init__(self) -> None:
        self._buffer: Tensor | None = None
        self._lease: weakref.ref[_Lease] | None = None

    def take(self, numel: int, like: Tensor) -> tuple[Tensor, _Lease | None]:
        """A flat tensor of ``numel`` elements of ``like``'s dtype and device, and the lease
        to keep with the graph (``None`` for a fresh tensor)."""
        if self._lease is not None and self._lease() is not None:  # lent out
            return like.new_empty(numel), None
        buffer = self._buffer
        if (
            buffer is None
            or buffer.numel() < numel
            or buffer.dtype != like.dtype
            or buffer.device != like.device
        ):
            buffer = self._buffer = like.new_empty(numel)
        lease = _Lease()
        self._lease = weakref.ref(lease)
        return buffer[:numel], lease

    def clear(self) -> None:
        """Let the buffer go (a graph still holding it keeps its own reference)."""
        self._buffer, self._lease = None, None

    def __getstate__(self) -> dict:
        return {}  # a copy of the module starts with an empty workspace

    def __setstate__(self, state: dict) -> None:
        self.__init__()


class AdditiveSteps(torch.autograd.Function):
    """``r(m)``, ``s(1..m)`` and the scores of the Impatient Reader's additive steps.

    The examples must be sorted by query length, longest first, with each query's padding
    after its tokens: ``active[i]`` is the number of examples whose query has an ``i``-th
    token (non-increasing).

    Inputs (in this order):
        keys: ``P = 2 W_d y_d`` (b, n, a).
        states: ``y_d`` (b, n, d).
        queries: ``y_q`` (b, m, d).
        initial: ``r(0)`` (b, d).
        query_weight: ``2 W_q`` acting on ``[r(i-1); y_q(i)]`` (a, 2d).
        vector: ``2w`` (a,).
        shift: ``sum(w)`` (a 0-dim tensor): ``score = H @ 2w - sum(w)``.
        recurrent_weight: ``W_rr`` (d, d).
        context_mask: True on real context tokens (b, n).
        active: ``k(i)`` for ``i = 0..m-1`` (a tuple of ints).
        workspace: where the activations are kept (``None``: a fresh tensor).

    Returns:
        ``(read, weights, scores)``: ``r(|q|)`` (b, d); ``s(i)`` for every step (b, m, n),
        rows of padded steps all 0; the unnormalised scores of every step (b, m, n), rows of
        padded steps all 0.
    """

    @staticmethod
    def forward(  # type: ignore[override]
        ctx: Any,
        keys: Tensor,
        states: Tensor,
        queries: Tensor,
        initial: Tensor,
        query_weight: Tensor,
        vector: Tensor,
        shift: Tensor,
        recurrent_weight: Tensor,
        context_mask: Tensor,
        active: tuple[int, ...],
        workspace: Workspace | None = None,
    ) -> tuple[Tensor, Tensor, Tensor]:
        b, n, a = keys.shape
        m, d = queries.shape[1], states.shape[2]
        # H(i) of the active rows of every step, one after the other, kept for the backward.
        if workspace is None:
            hidden, ctx.lease = keys.new_empty(sum(active) * n * a), None
        else:
            hidden, ctx.lease = workspace.take(sum(active) * n * a, keys)
        reads = keys.new_empty((m + 1, b, d))  # r(0..m)
        recurrent = keys.new_zeros((m, b, d))  # tanh(W_rr r(i-1))
        scores = keys.new_zeros((b, m, n))
        weights = keys.new_zeros((b, m, n))
        reads[0] = initial
        offset = 0
        for i, k in enumerate(active):
            reads[i + 1] = reads[i]
            if k == 0:
                continue
            r = reads[i, :k]  # (k, d)
            u = torch.cat([r, queries[:k, i]], dim=-1) @ query_weight.t()  # (k, a)
            h = hidden[offset : offset + k * n * a].view(k, n, a)
            offset += k * n * a
            z = _step_scores(keys[:k], u, h, vector).sub_(shift)  # (k, n)
            s = masked_softmax(z, context_mask[:k])  # (k, n)
            t = torch.tanh(r @ recurrent_weight.t())  # (k, d)
            reads[i + 1, :k] = torch.bmm(s.unsqueeze(1), states[:k]).squeeze(1).add_(t)
            scores[:k, i], weights[:k, i], recurrent[i, :k] = z, s, t
        ctx.active = active
        ctx.save_for_backward(
            hidden, reads, recurrent, weights, states, queries,
            query_weight, vector, recurrent_weight,
        )  # fmt: skip
        return reads[m].clone(), weights, scores

    @staticmethod
    @once_differentiable
    def backward(  # type: ignore[override]
        ctx: Any, d_read: Tensor, d_weights: Tensor, d_scores: Tensor
    ) -> tuple[Tensor | None, ...]:
        (
            hidden, reads, recurrent, weights, states, queries,
            query_weight, vector, recurrent_weight,
        ) = ctx.saved_tensors  # fmt: skip
        active: tuple[int, ...] = ctx.active
        b, n, d = states.shape
        a = vector.shape[0]
        dr = d_read.clone()  # gradient of r(i), from i = m down: (b, d)
        summed = hidden.new_zeros((b, n, a))  # sum_i g(i) H(i)(1 - H(i))
        d_reads = states.new_zeros((b, len(active), d))  # gradient of each read s(i)^T y_d
        d_queries = torch.zeros_like(queries)
        d_query_weight = torch.zeros_like(query_weight)
        d_vector = torch.zeros_like(vector)
        d_recurrent_weight = torch.zeros_like(recurrent_weight)
        d_shift = hidden.new_zeros(())
        offset = hidden.numel()
        scratch = hidden.new_empty(BLOCK)  # H(1 - H), block by block
        for i in reversed(range(len(active))):
            k = active[i]
            if k == 0:
                continue
            # r(i) = r_next on the active rows: all of their gradient goes through the step.
            d_next = dr[:k].clone()  # (k, d)
            dr[:k] = 0.0
            d_reads[:k, i] = d_next
            s = weights[:k, i]  # (k, n)
            ds = d_weights[:k, i] + torch.bmm(
                d_next.unsqueeze(1), states[:k].transpose(1, 2)
            ).squeeze(1)  # (k, n)
            g = s * (ds - (s * ds).sum(-1, keepdim=True)) + d_scores[:k, i]  # dz: (k, n)
            r = reads[i, :k]  # r(i-1): (k, d)
            d_pre = d_next * (1 - recurrent[i, :k] ** 2)  # through tanh(W_rr r): (k, d)
            d_recurrent_weight += d_pre.t() @ r
            dr[:k].add_(d_pre @ recurrent_weight)
            offset -= k * n * a
            h = hidden[offset : offset + k * n * a].view(k, n, a)
            read_h, read_slope = _step_sums(h, g, summed[:k], scratch)  # (k, a), (k, a)
            d_vector += read_h.sum(0)  # (a,): sum_{k,n} g H
            d_shift -= g.sum()
            du = read_slope * vector  # (k, a)
            step_query = torch.cat([r, queries[:k, i]], dim=-1)  # (k, 2d)
            d_query_weight += du.t() @ step_query
            d_step_query = du @ query_weight  # (k, 2d)
            dr[:k].add_(d_step_query[:, :d])
            d_queries[:k, i] = d_step_query[:, d:]
        d_keys = summed.mul_(vector)  # (b, n, a)
        d_states = torch.bmm(weights.transpose(1, 2), d_reads)  # sum_i s(i) dR(i)^T: (b, n, d)
        return (
            d_keys, d_states, d_queries, dr, d_query_weight, d_vector, d_shift,
            d_recurrent_weight, None, None, None,
        )  # fmt: skip


# Floats in a block of the steps' (k, n, a) work: 1 MiB, so that the passes over a block after
# the first read it from the core's cache instead of memory.
BLOCK = 1 << 18


def _blocks(k: int, n: int, a: int) -> Iterator[tuple[slice, slice]]:
    """(rows, tokens) blocks of a (k, n, a) tensor of about ``BLOCK`` floats each: whole
    rows when a row fits, else pieces of one row."""
    if n * a <= BLOCK:
        rows = max(1, BLOCK // (n * a))
        for start in range(0, k, rows):
            yield slice(start, min(start + rows, k)), slice(0, n)
        return
    tokens = max(1, BLOCK // a)
    for row in range(k):
        for start in range(0, n, tokens):
            yield slice(row, row + 1), slice(start, min(start + tokens, n))


def _step_scores(keys: Tensor, u: Tensor, hidden: Tensor, vector: Tensor) -> Tensor:
    """``H = sigmoid(keys + u)`` into ``hidden`` (k, n, a) and ``H @ vector`` (k, n), block by
    block.

    Args:
        keys: ``P`` of the active rows (k, n, a); u: their step query (k, a).
        hidden: where ``H`` goes (k, n, a).
        vector: ``2w`` (a,).
    """
    k, n, a = hidden.shape
    scores = keys.new_empty(k, n)
    for rows, tokens in _blocks(k, n, a):
        h = hidden[rows, tokens]  # (r, t, a)
        torch.add(keys[rows, tokens], u[rows].unsqueeze(1), out=h).sigmoid_()
        scores[rows, tokens] = h @ vector  # (r, t)
    return scores


def _step_sums(hidden: Tensor, g: Tensor, summed: Tensor, scratch: Tensor) -> tuple[Tensor, Tensor]:
    """One step's sums over the tokens, block by block: ``sum_t g H`` and
    ``sum_t g H(1 - H)`` (k, a) each; ``g H(1 - H)`` is added to ``summed`` (k, n, a).

    Args:
        hidden: ``H`` of the step (k, n, a).
        g: the gradient of the step's scores (k, n).
        summed: the sum over the later steps (k, n, a), added to in place.
        scratch: at least ``BLOCK`` floats.
    """
    k, n, a = hidden.shape
    read_h = hidden.new_zeros(k, 1, a)
    read_slope = hidden.new_zeros(k, 1, a)
    for rows, tokens in _blocks(k, n, a):
        h = hidden[rows, tokens]  # (r, t, a)
        weights = g[rows, tokens].unsqueeze(1)  # (r, 1, t)
        read_h[rows].baddbmm_(weights, h)
        slope = torch.addcmul(h, h, h, value=-1.0, out=scratch[: h.numel()].view(h.shape))
        read_slope[rows].baddbmm_(weights, slope)
        summed[rows, tokens].addcmul_(slope, weights.transpose(1, 2))
    return read_h.squeeze(1), read_slope.squeeze(1)
