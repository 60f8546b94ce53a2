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
from attentive_reader.nn.answer import AnswerLayerName
from attentive_reader.nn.attention import ScorerName, build_scorer
from attentive_reader.nn.masking import masked_softmax


class AttentiveReader(PairReader):
    """Attention over the document, guided by the whole query.

    ``y_d(t)`` are the bidirectional document states (2h), ``u`` the query's final states
    (last forward, first backward; 2h). Then::

        s(t) = masked softmax over real tokens of score(y_d(t), u)
        r    = sum_t s(t) y_d(t)
        g    = tanh(W_rg r + W_ug u)   (readout="paper", Hermann et al.)
             | r                       (readout="linear", Chen et al.)
        p(a | d, q) = softmax over the candidate entities of W_a g   (answer_layer="output")
                    | ... of (W g + c) . E[@entity_a]                    (answer_layer="tied")
                    | sum_{t: d_t = a} s(t), renormalised                (answer_layer="pointer")

    With ``scorer="additive"``, ``readout="paper"`` and ``answer_layer="output"`` this is the
    paper's model; with ``scorer="bilinear"`` and ``readout="linear"`` it is Chen et al.'s.
    The ``tied`` answer layer (the default) scores each candidate against its own marker's
    embedding, so the reader learns under the per-example entity permutation on a small
    corpus too (see ``nn/answer.py``); ``pointer`` answers with the attention itself
    (Kadlec et al.'s attention sum) and needs no read-out.

    Args:
        **options: the encoder pair's options (``hidden_dim``, ``num_layers``, ``dropout``,
            ``rnn``; ``PairReader``) and every reader's (``ClozeReader``).
        scorer: attention scorer: ``additive``, ``dot``, ``cosine`` or ``bilinear``.
        attention_dim: hidden size of the additive scorer (default ``2h``).
        readout: ``paper`` (``g = tanh(W_rg r + W_ug u)``) or ``linear`` (``g = r``); unused
            by the ``pointer`` answer layer.
        answer_layer: ``tied`` (the default), ``output`` (the paper's) or ``pointer``.
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
        scores = self.scorer.score(y_d, u)  # (b, n)
        s = masked_softmax(scores, batch.context_mask)  # (b, n)
        if self.readout is None:  # answer_layer="pointer"
            logits = self.answer_scores(batch, token_scores=scores)  # (b, e)
            return ReaderOutput(logits=logits, attention=s)
        r = torch.bmm(s.unsqueeze(1), y_d).squeeze(1)  # (b, 2h)
        g = self.readout(r, u)  # (b, 2h)
        logits = self.answer_scores(batch, g=g, weights=s)  # (b, e)
        return ReaderOutput(logits=logits, attention=s)
