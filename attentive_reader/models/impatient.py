"""The Impatient Reader (Hermann et al. 2015): re-reads the document at every query token."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from attentive_reader.data.batching import ClozeBatch
from attentive_reader.models.output import ReaderOutput
from attentive_reader.models.parts import PairReader, build_readout
from attentive_reader.nn.answer import AnswerInput, AnswerLayerName
from attentive_reader.nn.attention import ScorerName, build_scorer
from attentive_reader.nn.impatient import ImpatientSteps


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

    The recurrence is the part ``self.steps`` (``nn/impatient.py``), handed the reader's
    parameters.

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
        self.steps = ImpatientSteps()
        self.build_answer_layer(answer_layer, states)
        self.readout = build_readout("paper", states, self.answer)  # W_rg, W_qg

    def forward(self, batch: ClozeBatch) -> ReaderOutput:
        """Read a batch.

        Returns:
            ``ReaderOutput`` with ``logits`` (b, e) and ``attention`` (b, m, n): row ``i`` is
            ``s(i)``; rows of padded query positions are all 0.
        """
        encoded = self.encode(batch)
        y_d, y_q, u = encoded.document, encoded.query, encoded.query_final  # (b, n|m, 2h), (b, 2h)
        steps = self.steps(
            y_d, y_q, batch.context_mask, batch.query_mask,
            scorer=self.scorer, step_query=self.step_query,
            recurrent=self.recurrent_proj, initial=self.initial_read,
        )  # r(|q|) (b, 2h), s(i) (b, m, n)  # fmt: skip
        given = AnswerInput(steps.r, u, steps.last_weights, steps.last_scores)  # r(|q|), s(|q|)
        return ReaderOutput(self.answer_scores(batch, given), attention=steps.attention)
