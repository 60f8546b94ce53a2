"""The Impatient Reader (Hermann et al. 2015): re-reads the document at every query token."""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Any

import torch
from torch import Tensor, nn

from attentive_reader.data.batching import ClozeBatch
from attentive_reader.models.output import ReaderOutput
from attentive_reader.models.parts import PairReader, build_readout
from attentive_reader.nn.answer import AnswerInput, AnswerLayerName
from attentive_reader.nn.attention import ScorerName, build_scorer
from attentive_reader.nn.impatient_fused import FusedAdditiveSteps
from attentive_reader.nn.masking import masked_softmax
from attentive_reader.nn.precision import bf16_is_emulated


class ImpatientReader(PairReader):
    """Attention recomputed for each query token, accumulating a document representation.

    ``y_d(t)`` are the bidirectional document states, ``y_q(i)`` the bidirectional query
    states and ``u`` the query's final states (all 2h). For each real query token
    ``i = 1..|q|``::

        m(i, t) = tanh(W_dm y_d(t) + W_rm r(i-1) + W_qm y_q(i))
        s(i, t) = masked softmax over real tokens t of w_ms^T m(i, t)
        r(i)    = y_d^T s(i) + tanh(W_rr r(i-1))
    and then::

        g = tanh(W_rg r(|q|) + W_qg u)

    and ``g`` and ``s(|q|)`` answer through the ``answer_layer`` (``ClozeReader``).

    ``r(0)`` is a learned vector. That is ``scorer="additive"`` (the paper's, the default):
    its query side is ``W_q [r(i-1); y_q(i)] = W_rm r(i-1) + W_qm y_q(i)``. With ``dot``,
    ``cosine`` or ``bilinear`` the step's query vector ``W_rm r(i-1) + W_qm y_q(i)`` (2h) is
    scored against ``y_d(t)`` by that scorer instead.

    Query padding: a padded query position leaves ``r`` unchanged and its attention row is
    all zeros, so ``r(|q|)`` is the state after each example's own last query token.

    :meth:`recurrence` is these equations, one query token at a time. Training on the CPU
    with the additive scorer runs the same steps through ``FusedAdditiveSteps``
    (``nn/impatient_fused.py``: the same values and gradients, fewer memory passes) wherever it
    applies.

    Args:
        **options: the encoder pair's options (``hidden_dim``, ``num_layers``, ``dropout``,
            ``rnn``; ``PairReader``) and every reader's (``ClozeReader``).
        scorer: ``additive`` (the paper's), ``dot``, ``cosine`` or ``bilinear``.
        attention_dim: hidden size of ``m(i, t)`` for the additive scorer (default ``2h``).
        answer_layer: ``tied`` (the default), ``output`` (the paper's) or ``pointer`` (on
            the attention of each example's last query token).
    """

    def __init__(
        self,
        *,
        scorer: ScorerName = "additive",
        attention_dim: int | None = None,
        answer_layer: AnswerLayerName = "tied",
        **options: Any,
    ) -> None:
        super().__init__(**options)
        states = self.encoders.output_dim  # 2h
        if scorer == "additive":
            # W_q of the additive scorer acting on [r(i-1); y_q(i)] is [W_rm, W_qm].
            self.step_query = None
            self.scorer = build_scorer(scorer, states, 2 * states, attention_dim)
        else:
            self.step_query = nn.Linear(2 * states, states, bias=False)  # [W_rm, W_qm]
            self.scorer = build_scorer(scorer, states, states)
        self.initial_read = nn.Parameter(torch.zeros(states))  # r(0)
        self.recurrent_proj = nn.Linear(states, states, bias=False)  # W_rr
        self.fused = FusedAdditiveSteps() if scorer == "additive" else None
        self.build_answer_layer(answer_layer, states)
        self.readout = build_readout("paper", states, self.answer)  # W_rg, W_qg

    def forward(self, batch: ClozeBatch) -> ReaderOutput:
        """Read a batch.

        Returns:
            ``ReaderOutput`` with ``logits`` (b, e) and ``attention`` (b, m, n): row ``i`` is
            ``s(i)``; rows of padded query positions are all 0.
        """
        if self.fused is not None and torch.is_grad_enabled():
            # The fused steps read the examples longest query first: sorted before the
            # encoders, the batch costs a few small copies; sorted after, the states big ones.
            order = torch.argsort(batch.query_mask.sum(dim=1), descending=True, stable=True)
            out = self.read(_take(batch, order))
            inverse = torch.argsort(order)  # (b,)
            return ReaderOutput(logits=out.logits[inverse], attention=out.attention[inverse])
        return self.read(batch)

    def read(self, batch: ClozeBatch) -> ReaderOutput:
        """:meth:`forward` on the batch in the order given."""
        encoded = self.encode(batch)
        y_d, y_q, u = encoded.document, encoded.query, encoded.query_final  # (b, n|m, 2h), (b, 2h)
        if bf16_is_emulated(y_d):  # many small steps: faster in float32 there
            with torch.autocast("cpu", enabled=False):
                steps = self.query_steps(y_d.float(), y_q.float(), batch)
        else:
            steps = self.query_steps(y_d, y_q, batch)
        given = AnswerInput(steps.r, u, steps.last_weights, steps.last_scores)  # r(|q|), s(|q|)
        return ReaderOutput(self.answer_scores(batch, given), attention=steps.attention)

    def query_steps(self, y_d: Tensor, y_q: Tensor, batch: ClozeBatch) -> QuerySteps:
        """``r(|q|)`` and ``s(i)`` for ``i = 1..m``: through ``self.fused`` where it applies,
        else :meth:`recurrence`. ``y_d`` (b, n, 2h), ``y_q`` (b, m, 2h)."""
        fused = None
        if self.fused is not None and self.fused.applies(y_d):
            masks = batch.context_mask, batch.query_mask
            parameters = self.scorer, self.recurrent_proj, self.initial_read
            fused = self.fused(*parameters, y_d, y_q, *masks)
        r, attention, scores = fused or self.recurrence(y_d, y_q, batch)  # (b, 2h), (b, m, n) x 2
        return QuerySteps(
            r=r,
            attention=attention,
            last_scores=_last_real_step(scores, batch.query_mask),
            last_weights=_last_real_step(attention, batch.query_mask),
        )

    def recurrence(
        self, y_d: Tensor, y_q: Tensor, batch: ClozeBatch
    ) -> tuple[Tensor, Tensor, Tensor]:
        """The class docstring's equations, one query token ``i`` at a time.

        Args:
            y_d: document states (b, n, 2h).
            y_q: query states (b, m, 2h).
            batch: the batch read (its masks).

        Returns:
            ``r(|q|)`` (b, 2h), ``s(i)`` (b, m, n) and the scores ``w_ms^T m(i, t)`` (b, m, n).
        """
        keys = self.scorer.prepare(y_d)  # W_dm y_d(t), the same for every i: (b, n, a | 2h)
        r = self.initial_read.to(y_d.dtype).expand(y_d.shape[0], -1)  # r(0): (b, 2h)
        attention, scores = [], []
        for i in range(y_q.shape[1]):
            real = batch.query_mask[:, i, None]  # (b, 1) True where token i is real
            query = torch.cat([r, y_q[:, i]], dim=-1)  # [r(i-1); y_q(i)]: (b, 4h)
            if self.step_query is not None:  # the other scorers score W_rm r(i-1) + W_qm y_q(i)
                query = self.step_query(query)  # (b, 2h)
            # additive: w_ms^T m(i, t), m(i, t) = tanh(W_dm y_d(t) + W_rm r(i-1) + W_qm y_q(i))
            score = self.scorer.score_prepared(keys, query)  # (b, n)
            s = masked_softmax(score, batch.context_mask & real)  # (b, n), 0 on a padded step
            r_i = torch.bmm(s.unsqueeze(1), y_d).squeeze(1) + torch.tanh(self.recurrent_proj(r))
            r = torch.where(real, r_i, r)  # r(i) = y_d^T s(i) + tanh(W_rr r(i-1)): (b, 2h)
            attention.append(s)
            scores.append(score)
        return r, torch.stack(attention, dim=1), torch.stack(scores, dim=1)


@dataclass
class QuerySteps:
    """What the Impatient Reader's query steps give the answer layer.

    Attributes:
        r: ``r(|q|)``, the document representation after each example's last real query
            token (b, 2h).
        attention: ``s(i)`` for every query position (b, m, n); rows of padding are 0.
        last_scores: the scores of each example's last real step (b, n).
        last_weights: its attention ``s(|q|)`` (b, n).
    """

    r: Tensor
    attention: Tensor
    last_scores: Tensor
    last_weights: Tensor


def _last_real_step(rows: Tensor, query_mask: Tensor) -> Tensor:
    """Each example's row (b, n) of ``rows`` (b, m, n) at its last real query token; 0 for a
    query without one. ``query_mask`` (b, m)."""
    positions = torch.arange(query_mask.shape[1], device=query_mask.device)  # (m,)
    last = torch.where(query_mask, positions, -1).amax(dim=1)  # (b,), -1: no real token
    picked = rows[torch.arange(rows.shape[0], device=rows.device), last.clamp(min=0)]  # (b, n)
    return torch.where((last >= 0).unsqueeze(-1), picked, 0.0)


def _take(batch: ClozeBatch, order: Tensor) -> ClozeBatch:
    """The examples of ``batch`` in the order ``order`` (b,): every field, reordered."""
    rows = order.tolist()
    taken = {}
    for item in fields(batch):
        value = getattr(batch, item.name)
        taken[item.name] = value[order] if isinstance(value, Tensor) else [value[i] for i in rows]
    return replace(batch, **taken)
