"""The Attentive Reader (Hermann et al. 2015), with Chen et al. (2016)'s variants as options."""

from __future__ import annotations

from typing import Any

import torch

from attentive_reader.data.batching import ClozeBatch
from attentive_reader.models.output import ReaderOutput
from attentive_reader.models.parts import (
    PairReader,
    ReadoutName,
    build_readout,
)
from attentive_reader.nn.answer import AnswerInput, AnswerLayerName
from attentive_reader.nn.attention import ScorerName, build_scorer


class AttentiveReader(PairReader):
    """Attention over the document, guided by the whole query.

    ``y_d(t)`` are the bidirectional document states (2h), ``u`` the query's final states
    (last forward, first backward; 2h). Then::

        s(t) = masked softmax over real tokens of score(y_d(t), u)
        r    = sum_t s(t) y_d(t)
        g    = tanh(W_rg r + W_ug u)   (readout="paper", Hermann et al.)
             | r                       (readout="linear", Chen et al.)

    and ``g`` and ``s`` answer through the ``answer_layer`` (``ClozeReader``). With
    ``scorer="additive"``, ``readout="paper"`` and ``answer_layer="output"`` this is the
    paper's model; with ``scorer="bilinear"`` and ``readout="linear"`` it is Chen et al.'s;
    with ``scorer="dot"`` and ``answer_layer="pointer"`` (no read-out) Kadlec et al.'s AS
    Reader.

    Args:
        scorer: ``additive``, ``dot``, ``cosine`` or ``bilinear`` (``nn/attention.py``).
        attention_dim: hidden size of the additive scorer (default ``2h``).
        answer_layer: ``tied`` (the default), ``output`` or ``pointer``.
        readout: ``paper`` or ``linear`` (``Readout``); unused by ``pointer``.
        **options: ``PairReader``'s and ``ClozeReader``'s.
    """

    def __init__(
        self,
        *,
        scorer: ScorerName = "bilinear",
        attention_dim: int | None = None,
        answer_layer: AnswerLayerName = "tied",
        readout: ReadoutName = "linear",
        **options: Any,
    ) -> None:
        super().__init__(**options)
        states = self.encoders.output_dim  # 2h
        self.scorer = build_scorer(scorer, states, states, attention_dim)
        self.build_answer_layer(answer_layer, states)
        self.readout = build_readout(readout, states, self.answer)

    def forward(self, batch: ClozeBatch) -> ReaderOutput:
        """Read a batch.

        Returns:
            ``ReaderOutput`` with ``logits`` (b, e) and ``attention`` (b, n).
        """
        encoded = self.encode(batch)
        y_d, u = encoded.document, encoded.query_final  # (b, n, 2h), (b, 2h)
        attention = self.scorer(y_d, u, batch.context_mask)  # scores, s: (b, n)
        s = attention.weights  # (b, n)
        r = torch.bmm(s.unsqueeze(1), y_d).squeeze(1)  # (b, 2h)
        given = AnswerInput(vector=r, query=u, weights=s, token_scores=attention.scores)
        return ReaderOutput(logits=self.answer_scores(batch, given), attention=s)  # (b, e), (b, n)
