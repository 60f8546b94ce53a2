"""The Deep LSTM Reader (Hermann et al. 2015): the document and the query as one sequence, no
attention."""

from __future__ import annotations

from typing import Any, Literal

import torch
from torch import Tensor, nn

from attentive_reader.common.checks import check_dropout
from attentive_reader.data.batching import ClozeBatch
from attentive_reader.models.base import ClozeReader
from attentive_reader.models.output import ReaderOutput
from attentive_reader.models.parts import check_choice
from attentive_reader.nn.answer import AnswerInput, AnswerLayerName
from attentive_reader.nn.encoders import SequenceEncoder, set_forget_bias

DeepLSTMOrder = Literal["document_first", "query_first"]


class DeepLSTMReader(ClozeReader):
    """Reads ``document ||| query`` as one sequence with a deep LSTM, without attention.

    The input ``x(t)`` is the document's real tokens, a learned delimiter vector, then the
    query's real tokens (``order="document_first"``), or the query first and then the
    document (``order="query_first"``; Hermann et al. tried both: with the query first the
    LSTM knows what it is looking for while it reads). Layer ``k`` of the deep LSTM has skip connections from the input and
    to the output (Hermann et al. 2015, eq. for the Deep LSTM Reader)::

        x'(t, k) = x(t) || y'(t, k-1)          (x'(t, 1) = x(t))
        y'(t, k) = LSTM_k(x'(t, k), ...)
        g = y'(T, 1) || ... || y'(T, K)        T = |d| + 1 + |q|, each example's own end

    and ``g`` answers through the ``answer_layer`` (``ClozeReader``). ``attention`` is
    ``None``.

    Args:
        hidden_dim: hidden size ``h`` of each layer.
        num_layers: depth ``K`` of the LSTM.
        dropout: dropout on the embeddings and on each layer's output.
        order: ``document_first`` (``document ||| query``) or ``query_first``.
        forget_bias: start every forget gate's bias here (``set_forget_bias``); ``None``
            keeps torch's initialisation (gates near 0.5: what was read halves at every
            step until the gates learn otherwise).
        answer_layer: ``tied`` (the default) or ``output`` (the paper's); this reader has no
            token attention for ``pointer``.
        **options: ``ClozeReader``'s.
    """

    answer_layers = ("output", "tied")

    def __init__(
        self,
        *,
        hidden_dim: int = 256,
        num_layers: int = 2,
        dropout: float = 0.1,
        order: DeepLSTMOrder = "document_first",
        forget_bias: float | None = None,
        answer_layer: AnswerLayerName = "tied",
        **options: Any,
    ) -> None:
        super().__init__(**options)
        if num_layers < 1:
            raise ValueError(f"num_layers must be at least 1, got {num_layers}")
        check_choice("order", order, ("document_first", "query_first"))
        check_dropout(dropout)
        self.order = order
        self.dropout = nn.Dropout(dropout)
        self.delimiter = nn.Parameter(torch.randn(self.input_dim) * 0.1)  # the "|||" token
        self.layers = nn.ModuleList(
            SequenceEncoder(
                self.input_dim + (hidden_dim if k > 0 else 0), hidden_dim, bidirectional=False
            )
            for k in range(num_layers)
        )
        if forget_bias is not None:
            for layer in self.layers:
                set_forget_bias(layer, forget_bias)
        self.build_answer_layer(answer_layer, num_layers * hidden_dim, why=" (it has no attention)")

    def forward(self, batch: ClozeBatch) -> ReaderOutput:
        """Read a batch.

        Returns:
            ``ReaderOutput`` with ``logits`` (b, e) and no attention.
        """
        document, query = self.embed(batch, self.dropout)  # (b, n, d'), (b, m, d')
        if self.order == "document_first":
            x, mask = self.join(document, batch.context_mask, query, batch.query_mask)
        else:
            x, mask = self.join(query, batch.query_mask, document, batch.context_mask)
        # x: (b, T, d'), mask: (b, T)
        finals = []
        previous: Tensor | None = None
        for layer in self.layers:
            inputs = x if previous is None else torch.cat([x, previous], dim=-1)  # (b, T, d[+h])
            states, final = layer(inputs, mask)  # (b, T, h), (b, h)
            previous = self.dropout(states)
            finals.append(final)
        g = self.dropout(torch.cat(finals, dim=-1))  # (b, K h)
        return ReaderOutput(self.answer_scores(batch, AnswerInput(vector=g)), attention=None)

    def join(
        self, document: Tensor, document_mask: Tensor, query: Tensor, query_mask: Tensor
    ) -> tuple[Tensor, Tensor]:
        """Concatenate each example's real document tokens, the delimiter and its real query.

        Args:
            document: (b, n, d); document_mask: (b, n).
            query: (b, m, d); query_mask: (b, m).

        Returns:
            The joined vectors (b, n + 1 + m, d), zero after each example's end, and their mask.
        """
        b, n, d = document.shape
        m = query.shape[1]
        doc_len = document_mask.sum(dim=1, keepdim=True)  # (b, 1)
        query_len = query_mask.sum(dim=1, keepdim=True)  # (b, 1)
        position = torch.arange(n + 1 + m, device=document.device).unsqueeze(0)  # (1, T)
        in_document = position < doc_len  # (b, T)
        is_delimiter = position == doc_len  # (b, T)
        query_position = position - doc_len - 1  # (b, T) index into the query
        in_query = (query_position >= 0) & (query_position < query_len)  # (b, T)
        padded_document = torch.cat([document, document.new_zeros(b, 1 + m, d)], dim=1)
        gathered_query = torch.gather(
            query, 1, query_position.clamp(0, m - 1).unsqueeze(-1).expand(-1, -1, d)
        )  # (b, T, d)
        delimiter = self.delimiter.to(document.dtype).expand(b, n + 1 + m, d)
        joined = torch.where(
            in_document.unsqueeze(-1),
            padded_document,
            torch.where(
                is_delimiter.unsqueeze(-1),
                delimiter,
                torch.where(in_query.unsqueeze(-1), gathered_query, 0.0),
            ),
        )  # (b, T, d)
        return joined, in_document | is_delimiter | in_query
