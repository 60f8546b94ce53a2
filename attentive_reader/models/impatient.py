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
from attentive_reader.nn.attention import (
    AdditiveScorer,
    ScorerName,
    bf16_is_emulated,
    build_scorer,
)
from attentive_reader.nn.impatient_steps import AdditiveSteps, Workspace
from attentive_reader.nn.masking import masked_softmax


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
        self.steps_workspace = Workspace()  # the fused steps' activations, batch to batch
        self.recurrent_proj = nn.Linear(states, states, bias=False)  # W_rr
        self.build_answer_layer(answer_layer, states)
        self.readout = build_readout("paper", states, self.answer)  # W_rg, W_qg

    def train(self, mode: bool = True) -> ImpatientReader:
        if not mode:
            self.steps_workspace.clear()  # evaluation keeps no activations
        return super().train(mode)

    def forward(self, batch: ClozeBatch) -> ReaderOutput:
        """Read a batch.

        Returns:
            ``ReaderOutput`` with ``logits`` (b, e) and ``attention`` (b, m, n): row ``i`` is
            ``s(i)``; rows of padded query positions are all 0.
        """
        order = self.query_order(batch)
        if order is None:
            return self.read(batch)
        # The fused steps read the examples longest query first: sorting the batch before
        # it is encoded costs a few small copies, sorting the encoder's states two big ones.
        out = self.read(_take(batch, order))
        inverse = torch.argsort(order)  # (b,)
        return ReaderOutput(logits=out.logits[inverse], attention=out.attention[inverse])

    def query_order(self, batch: ClozeBatch) -> Tensor | None:
        """The examples by query length, longest first, when the fused steps will read them
        and they are not in that order yet; else ``None``."""
        if not (isinstance(self.scorer, AdditiveScorer) and torch.is_grad_enabled()):
            return None
        return _longest_first(batch.query_mask.sum(dim=1))

    def read(self, batch: ClozeBatch) -> ReaderOutput:
        """:meth:`forward` on a batch in the order given."""
        encoded = self.encode(batch)
        y_d, y_q, u = encoded.document, encoded.query, encoded.query_final  # (b, n|m, 2h), (b, 2h)
        if bf16_is_emulated(y_d):
            with torch.autocast("cpu", enabled=False):
                steps = self.read_steps(y_d.float(), y_q.float(), batch)
        else:
            steps = self.read_steps(y_d, y_q, batch)
        given = AnswerInput(steps.read, u, steps.last_weights, steps.last_scores)  # r(|q|), s(|q|)
        return ReaderOutput(self.answer_scores(batch, given), attention=steps.attention)

    def read_steps(self, y_d: Tensor, y_q: Tensor, batch: ClozeBatch) -> ImpatientSteps:
        """The reading over the query tokens: ``r(i)`` and ``s(i)`` for ``i = 1..m``.

        Args:
            y_d: document states (b, n, 2h).
            y_q: query states (b, m, 2h).
            batch: the batch read (its masks).
        """
        if self.fused_steps_apply(y_d):
            fused = self.fused_steps(y_d, y_q, batch)
            if fused is not None:
                return fused
        # The keys' side of every step's scores (W_dm y_d(t) for the additive scorer) does
        # not depend on the step: project it once, score each step's query against it.
        keys = self.scorer.prepare(y_d)  # (b, n, a | 2h)
        r = self.initial_read.to(y_d.dtype).expand(y_d.shape[0], -1)  # (b, 2h)
        last_scores = y_d.new_zeros(y_d.shape[:2])  # (b, n) scores of the last real step
        last_weights = y_d.new_zeros(y_d.shape[:2])  # (b, n) its attention
        attention = []
        for i in range(y_q.shape[1]):
            step = batch.query_mask[:, i]  # (b,) True where token i is real
            step_query = torch.cat([r, y_q[:, i]], dim=-1)  # (b, 4h)
            if self.step_query is not None:
                step_query = self.step_query(step_query)  # (b, 2h)
            # Masking the whole row of a padded step gives it all-zero weights.
            mask = batch.context_mask & step.unsqueeze(-1)  # (b, n)
            scores = self.scorer.score_prepared(keys, step_query)  # (b, n)
            s = masked_softmax(scores, mask)  # (b, n)
            last_scores = torch.where(step.unsqueeze(-1), scores, last_scores)  # (b, n)
            last_weights = torch.where(step.unsqueeze(-1), s, last_weights)  # (b, n)
            r_next = torch.bmm(s.unsqueeze(1), y_d).squeeze(1) + torch.tanh(
                self.recurrent_proj(r)
            )  # (b, 2h)
            r = torch.where(step.unsqueeze(-1), r_next, r)  # (b, 2h)
            attention.append(s)
        return ImpatientSteps(
            read=r,
            attention=torch.stack(attention, dim=1),  # (b, m, n)
            last_scores=last_scores,
            last_weights=last_weights,
        )

    def fused_steps_apply(self, y_d: Tensor) -> bool:
        """Whether :meth:`fused_steps` computes these steps: training the additive scorer
        in float32/float64 outside autocast (else the step-by-step loop below)."""
        return (
            isinstance(self.scorer, AdditiveScorer)
            and torch.is_grad_enabled()
            and y_d.requires_grad
            and y_d.dtype in (torch.float32, torch.float64)
            and not torch.is_autocast_enabled(y_d.device.type)
        )

    def fused_steps(self, y_d: Tensor, y_q: Tensor, batch: ClozeBatch) -> ImpatientSteps | None:
        """The same steps as the loop of :meth:`read_steps`, through ``AdditiveSteps``
        (``nn/impatient_steps.py``: the same maths with fewer memory passes); ``None`` when
        a query's padding is not all after its tokens."""
        assert isinstance(self.scorer, AdditiveScorer)
        b, m = batch.query_mask.shape
        lengths = batch.query_mask.sum(dim=1)  # (b,)
        positions = torch.arange(m, device=y_q.device)  # (m,)
        if not torch.equal(batch.query_mask, positions < lengths.unsqueeze(-1)):
            return None
        # Longest query first: step i reads the first active[i] rows (``forward`` sorts the
        # batch before encoding it; any other order is sorted here).
        order = _longest_first(lengths)  # (b,) | None: already in that order
        context_mask, sorted_lengths = batch.context_mask, lengths
        if order is not None:
            y_d, y_q, context_mask = y_d[order], y_q[order], context_mask[order]
            sorted_lengths = lengths[order]
        active = tuple((sorted_lengths.unsqueeze(-1) > positions).sum(dim=0).tolist())  # k(i)
        keys = self.scorer.prepare(y_d).keys  # 2 W_dm y_d: (b, n, a)
        step = self.scorer.step_parameters()
        initial = self.initial_read.to(y_d.dtype).expand(b, -1)  # (b, 2h)
        read, attention, scores = AdditiveSteps.apply(
            keys, y_d, y_q, initial, step.query_weight, step.vector, step.shift,
            self.recurrent_proj.weight, context_mask, active, self.steps_workspace,
        )  # (b, 2h), (b, m, n), (b, m, n)  # fmt: skip
        if order is not None:
            inverse = torch.argsort(order)  # (b,)
            read, attention, scores = read[inverse], attention[inverse], scores[inverse]
        rows = torch.arange(b, device=y_q.device)
        last = (lengths - 1).clamp(min=0)  # (b,) each example's last real step
        some = (lengths > 0).unsqueeze(-1)  # (b, 1)
        last_scores = torch.where(some, scores[rows, last], 0.0)  # (b, n)
        last_weights = torch.where(some, attention[rows, last], 0.0)  # (b, n)
        return ImpatientSteps(read, attention, last_scores, last_weights)


@dataclass
class ImpatientSteps:
    """What the Impatient Reader's query steps read.

    Attributes:
        read: ``r(|q|)``, the reading after each example's last real query token (b, 2h).
        attention: ``s(i)`` for every query position (b, m, n); rows of padding are 0.
        last_scores: the scores of each example's last real step (b, n).
        last_weights: its attention ``s(|q|)`` (b, n).
    """

    read: Tensor
    attention: Tensor
    last_scores: Tensor
    last_weights: Tensor


def _longest_first(lengths: Tensor) -> Tensor | None:
    """The order (b,) that sorts ``lengths`` (b,) longest first, ``None`` when they are."""
    if bool((lengths[:-1] >= lengths[1:]).all()):
        return None
    return torch.argsort(lengths, descending=True, stable=True)


def _take(batch: ClozeBatch, order: Tensor) -> ClozeBatch:
    """The examples of ``batch`` in the order ``order`` (b,): every field, reordered."""
    rows = order.tolist()
    taken = {}
    for item in fields(batch):
        value = getattr(batch, item.name)
        taken[item.name] = value[order] if isinstance(value, Tensor) else [value[i] for i in rows]
    return replace(batch, **taken)
