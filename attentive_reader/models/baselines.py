"""The neural baselines of Hermann et al. 2015: the Deep LSTM Reader and the Uniform Reader."""

from __future__ import annotations

from typing import Literal

import torch
from torch import Tensor, nn

from attentive_reader.data.batching import ClozeBatch
from attentive_reader.models.attentive import AttentiveReader, ReadoutName
from attentive_reader.models.base import ClozeReader, OptimizerName
from attentive_reader.models.output import ReaderOutput
from attentive_reader.nn.answer import AnswerLayerName, check_answer_layer
from attentive_reader.nn.encoders import RnnName, SequenceEncoder

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
        p(a | d, q) = softmax over the candidate entities of W_a g     (answer_layer="output")
                    | ... of (W g + c) . E[@entity_a]                     (answer_layer="tied")

    ``ReaderOutput.attention`` is ``None``.

    Args:
        vocab_size: number of token ids (linked from the data module).
        num_entities: number of entity ids ``e`` (linked from the data module).
        embedding_dim: word embedding size ``d``.
        hidden_dim: hidden size ``h`` of each layer.
        num_layers: depth ``K`` of the LSTM.
        dropout: dropout on the embeddings and on each layer's output.
        order: ``document_first`` (``document ||| query``) or ``query_first``.
        answer_layer: ``tied`` (the default) or ``output`` (the paper's); this reader has no
            token attention for ``pointer``.
        query_match: add the bit "this token also occurs in the query / the context" to
            every token's embedding (see ``ClozeReader``).
        word_vectors: optional GloVe-format file to initialise the embeddings.
        optimizer: ``sgd``, ``adam`` or ``rmsprop``.
        lr: its learning rate (``None``: the optimiser's default, see ``ClozeReader``).
        weight_decay: L2 penalty.
        optimizer_options: further optimiser arguments (see ``ClozeReader``).
    """

    def __init__(
        self,
        vocab_size: int,
        num_entities: int,
        embedding_dim: int = 100,
        hidden_dim: int = 256,
        num_layers: int = 2,
        dropout: float = 0.1,
        order: DeepLSTMOrder = "document_first",
        answer_layer: AnswerLayerName = "tied",
        query_match: bool = False,
        word_vectors: str | None = None,
        optimizer: OptimizerName = "adam",
        lr: float | None = None,
        weight_decay: float = 0.0,
        optimizer_options: dict[str, float] | None = None,
    ) -> None:
        super().__init__(
            vocab_size,
            num_entities,
            embedding_dim=embedding_dim,
            query_match=query_match,
            word_vectors=word_vectors,
            optimizer=optimizer,
            lr=lr,
            weight_decay=weight_decay,
            optimizer_options=optimizer_options,
        )
        if num_layers < 1:
            raise ValueError(f"num_layers must be at least 1, got {num_layers}")
        if order not in ("document_first", "query_first"):
            raise ValueError(f"order must be 'document_first' or 'query_first', got {order!r}")
        self.order = order
        if not 0.0 <= dropout < 1.0:
            raise ValueError(f"dropout must be in [0, 1), got {dropout}")
        self.dropout = nn.Dropout(dropout)
        self.delimiter = nn.Parameter(torch.randn(self.input_dim) * 0.1)  # the "|||" token
        self.layers = nn.ModuleList(
            SequenceEncoder(
                self.input_dim + (hidden_dim if k > 0 else 0), hidden_dim, bidirectional=False
            )
            for k in range(num_layers)
        )
        self.build_answer_layer(
            answer_layer, num_layers * hidden_dim, ("output", "tied"), " (it has no attention)"
        )

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
        logits = self.answer_scores(batch, g=g)  # (b, e)
        return ReaderOutput(logits=logits, attention=None)

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


class UniformReader(AttentiveReader):
    """The Attentive Reader with uniform attention: ``s(t) = 1 / |d|`` on every real token.

    ``r`` is the mean of the document states; everything else (encoders, readout, answer
    layer) is the Attentive Reader's. It shows how much the learned attention adds.

    Args:
        vocab_size: number of token ids (linked from the data module).
        num_entities: number of entity ids ``e`` (linked from the data module).
        embedding_dim: word embedding size ``d``.
        hidden_dim: hidden size ``h`` of each direction of each encoder.
        num_layers: stacked recurrent layers in each encoder.
        dropout: dropout on the embeddings (and between stacked layers).
        rnn: ``lstm`` or ``gru``.
        readout: ``paper`` (``g = tanh(W_rg r + W_ug u)``, the default) or ``linear``.
        answer_layer: ``tied`` (the default) or ``output`` (the paper's); ``pointer`` would
            only count mentions (the maximum-frequency baseline).
        query_match: add the bit "this token also occurs in the query / the context" to
            every token's embedding (see ``ClozeReader``).
        word_vectors: optional GloVe-format file to initialise the embeddings.
        optimizer: ``sgd``, ``adam`` or ``rmsprop``.
        lr: its learning rate (``None``: the optimiser's default, see ``ClozeReader``).
        weight_decay: L2 penalty.
        optimizer_options: further optimiser arguments (see ``ClozeReader``).
    """

    def __init__(
        self,
        vocab_size: int,
        num_entities: int,
        embedding_dim: int = 100,
        hidden_dim: int = 128,
        num_layers: int = 1,
        dropout: float = 0.2,
        rnn: RnnName = "lstm",
        readout: ReadoutName = "paper",
        answer_layer: AnswerLayerName = "tied",
        query_match: bool = False,
        word_vectors: str | None = None,
        optimizer: OptimizerName = "adam",
        lr: float | None = None,
        weight_decay: float = 0.0,
        optimizer_options: dict[str, float] | None = None,
    ) -> None:
        check_answer_layer(
            answer_layer,
            ("output", "tied"),
            "UniformReader",
            " (uniform attention summed per entity is the maximum-frequency baseline)",
        )
        super().__init__(
            vocab_size,
            num_entities,
            embedding_dim=embedding_dim,
            hidden_dim=hidden_dim,
            num_layers=num_layers,
            dropout=dropout,
            rnn=rnn,
            scorer="dot",  # replaced below; "dot" has no parameters
            readout=readout,
            answer_layer=answer_layer,
            query_match=query_match,
            word_vectors=word_vectors,
            optimizer=optimizer,
            lr=lr,
            weight_decay=weight_decay,
            optimizer_options=optimizer_options,
        )
        self.scorer = None  # uniform attention has nothing to learn

    def attention_scores(self, y_d: Tensor, u: Tensor) -> Tensor:
        """Equal scores (b, n): the masked softmax makes them uniform over the real tokens."""
        return y_d.new_zeros(y_d.shape[:2])  # (b, n)
