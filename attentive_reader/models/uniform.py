"""The Uniform Reader (Hermann et al. 2015): the Attentive Reader with uniform attention, the
control that shows what learned attention adds."""

from __future__ import annotations

from typing import Any

import torch

from attentive_reader.data.batching import ClozeBatch
from attentive_reader.models.output import ReaderOutput
from attentive_reader.models.parts import PairReader, Readout, ReadoutName
from attentive_reader.nn.answer import AnswerInput, AnswerLayerName
from attentive_reader.nn.attention import Attention


class UniformReader(PairReader):
    """The Attentive Reader with uniform attention: ``s(t) = 1 / |d|`` on every real token.

    ``r`` is the mean of the document states ``y_d``; the encoder pair, read-out and answer
    layer are the Attentive Reader's parts. It shows how much the learned attention adds.

    Args:
        readout: ``paper`` (the default) or ``linear`` (``Readout``).
        answer_layer: ``tied`` (the default) or ``output`` (the paper's); ``pointer`` would
            only count mentions (the maximum-frequency baseline).
        **options: ``PairReader``'s and ``ClozeReader``'s.
    """

    answer_layers = ("output", "tied")

    def __init__(
        self,
        *,
        readout: ReadoutName = "paper",
        answer_layer: AnswerLayerName = "tied",
        **options: Any,
    ) -> None:
        super().__init__(**options)
        states = self.encoders.output_dim  # 2h
        self.build_answer_layer(
            answer_layer,
            states,
            why=" (uniform attention summed per entity is the maximum-frequency baseline)",
        )
        self.readout = Readout(readout, states)

    def forward(self, batch: ClozeBatch) -> ReaderOutput:
        """Read a batch.

        Returns:
            ``ReaderOutput`` with ``logits`` (b, e) and ``attention`` (b, n), uniform over
            each example's real tokens.
        """
        encoded = self.encode(batch)
        y_d, u = encoded.document, encoded.query_final  # (b, n, 2h), (b, 2h)
        # Equal scores: their attention is uniform over the real tokens.
        s = Attention.of(y_d.new_zeros(y_d.shape[:2]), batch.context_mask).weights  # (b, n)
        r = torch.bmm(s.unsqueeze(1), y_d).squeeze(1)  # (b, 2h): the mean state
        given = AnswerInput(vector=r, query=u, weights=s)
        return ReaderOutput(self.answer_scores(batch, given), attention=s)  # (b, e), (b, n)
