"""The Impatient Reader's query recurrence (Hermann et al. 2015): the document re-read at every
query token.

Letters: ``b`` batch, ``n`` context length, ``m`` query length, ``d`` state size (2h), ``a``
the additive scorer's hidden size.

For each real query token ``i = 1..|q|``::

    m(i, t) = tanh(W_dm y_d(t) + W_rm r(i-1) + W_qm y_q(i))
    s(i, t) = masked softmax over real tokens t of w_ms^T m(i, t)
    r(i)    = y_d^T s(i) + tanh(W_rr r(i-1))

with ``r(0)`` a learned vector. The parameters are the reader's (``ImpatientReader``): the
part is handed them at each call, so their names in a checkpoint are the reader's own.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor, nn

from attentive_reader.nn.attention import AdditiveScorer, Attention, AttentionScorer, PreparedKeys


@dataclass
class QuerySteps:
    """What the query recurrence gives the answer layer.

    Attributes:
        r: ``r(|q|)``, the document representation after each example's last real query
            token (b, d).
        attention: ``s(i)`` for every query position (b, m, n); rows of padding are 0.
        scores: ``w_ms^T m(i, t)`` (the additive scorer's; another scorer's scores) for every
            query position (b, m, n).
        last_scores: the scores of each example's last real step (b, n).
        last_weights: its attention ``s(|q|)`` (b, n).
    """

    r: Tensor
    attention: Tensor
    scores: Tensor
    last_scores: Tensor
    last_weights: Tensor


class ImpatientSteps(nn.Module):
    """The module docstring's recurrence, one query token at a time; no parameters of its own.

    With the additive scorer (the paper's) its ``W_q`` acts on ``[r(i-1); y_q(i)]``: it is
    ``[W_rm, W_qm]``. With another scorer, ``step_query`` (``[W_rm, W_qm]``) makes the step's
    query vector ``W_rm r(i-1) + W_qm y_q(i)`` (d), which that scorer scores against
    ``y_d(t)``.

    Query padding: a padded query position leaves ``r`` unchanged and its attention row is
    all zeros, so ``r(|q|)`` is the state after each example's own last query token.
    """

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
        """Run the recurrence.

        Args:
            y_d: document states (b, n, d).
            y_q: query states (b, m, d).
            context_mask: (b, n) and query_mask: (b, m), True on real tokens.
            scorer: scores ``y_d(t)`` against the step's query.
            recurrent: ``W_rr`` (d -> d).
            initial: ``r(0)`` (d,).
            step_query: ``[W_rm, W_qm]`` (2d -> d) for a scorer other than the additive one.
        """
        keys = scorer.prepare(y_d)  # W_dm y_d(t), the same for every i: (b, n, a | d)
        r = initial.to(y_d.dtype).expand(y_d.shape[0], -1)  # r(0): (b, d)
        attention, scores = [], []
        for i in range(y_q.shape[1]):
            real = query_mask[:, i, None]  # (b, 1) True where token i is real
            query = torch.cat([r, y_q[:, i]], dim=-1)  # [r(i-1); y_q(i)]: (b, 2d)
            if step_query is not None:
                query = step_query(query)  # W_rm r(i-1) + W_qm y_q(i): (b, d)
            score = step_scores(scorer, keys, query)  # (b, n)
            s = Attention.of(score, context_mask & real).weights  # (b, n), 0 on a padded step
            r_i = torch.bmm(s.unsqueeze(1), y_d).squeeze(1) + torch.tanh(recurrent(r))
            r = torch.where(real, r_i, r)  # r(i) = y_d^T s(i) + tanh(W_rr r(i-1)): (b, d)
            attention.append(s)
            scores.append(score)
        return query_steps(r, torch.stack(attention, dim=1), torch.stack(scores, dim=1), query_mask)


def step_scores(scorer: AttentionScorer, keys: PreparedKeys, query: Tensor) -> Tensor:
    """One step's scores (b, n) of the prepared ``keys`` against ``query`` (b, 2d | d).

    The additive scorer's are written out: ``w_ms^T m(i, t)``,
    ``m(i, t) = tanh(W_dm y_d(t) + W_rm r(i-1) + W_qm y_q(i))``.
    """
    if isinstance(scorer, AdditiveScorer):
        m = torch.tanh(keys.keys + scorer.query_proj(query).unsqueeze(1))  # m(i, t): (b, n, a)
        return scorer.vector(m).squeeze(-1)  # w_ms^T m(i, t): (b, n)
    return scorer.score_prepared(keys, query)  # (b, n)


def query_steps(r: Tensor, attention: Tensor, scores: Tensor, query_mask: Tensor) -> QuerySteps:
    """``QuerySteps`` from ``r(|q|)`` (b, d) and every step's ``s(i)`` and scores (b, m, n)."""
    return QuerySteps(
        r=r,
        attention=attention,
        scores=scores,
        last_scores=_last_real_step(scores, query_mask),
        last_weights=_last_real_step(attention, query_mask),
    )


def _last_real_step(rows: Tensor, query_mask: Tensor) -> Tensor:
    """Each example's row (b, n) of ``rows`` (b, m, n) at its last real query token; 0 for a
    query without one. ``query_mask`` (b, m)."""
    positions = torch.arange(query_mask.shape[1], device=query_mask.device)  # (m,)
    last = torch.where(query_mask, positions, -1).amax(dim=1)  # (b,), -1: no real token
    picked = rows[torch.arange(rows.shape[0], device=rows.device), last.clamp(min=0)]  # (b, n)
    return torch.where((last >= 0).unsqueeze(-1), picked, 0.0)
