"""Parts the readers compose: the document / query encoder pair and the read-out.

``PairReader`` is the base of the readers that read with the encoder pair (all but the Deep
LSTM and the Gated-Attention Reader): it takes the pair's options and builds
``self.encoders``. The embedding and the answer layer are every reader's own
(``ClozeReader.embed``, ``ClozeReader.build_answer_layer``): the tied answer layer scores
against the embedding.

Letters as in ``models/base.py``: ``b`` batch, ``n`` context length, ``m`` query length,
``d'`` encoder input size, ``h`` hidden size per direction.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, get_args

import torch
from torch import Tensor, nn

from attentive_reader.common.checks import check_dropout
from attentive_reader.data.batching import ClozeBatch
from attentive_reader.models.base import ClozeReader
from attentive_reader.nn.answer import AnswerHead
from attentive_reader.nn.encoders import RnnName, SequenceEncoder

ReadoutName = Literal["paper", "linear"]
READOUTS: tuple[str, ...] = get_args(ReadoutName)


def check_choice(name: str, value: object, choices: tuple[str, ...]) -> None:
    """Raise a ``ValueError`` naming the choices when ``value`` is not one of them."""
    if value not in choices:
        raise ValueError(f"{name} must be one of {', '.join(choices)}, got {value!r}")


@dataclass
class EncodedPair:
    """What the encoder pair read. Letters as in the module docstring.

    Attributes:
        document: ``y_d``, the document states (b, n, 2h), 0 on padding.
        query: ``y_q``, the query states (b, m, 2h), 0 on padding.
        query_final: ``u``, the query's final states (last forward, first backward) (b, 2h).
    """

    document: Tensor
    query: Tensor
    query_final: Tensor


class EncoderPair(nn.Module):
    """Dropout on the embeddings, then a document encoder and a query encoder.

    A reader keeps the pair as ``encoders``: its parameters are ``encoders.document.*`` and
    ``encoders.query.*``.

    Args:
        document: the document's encoder.
        query: the query's encoder, with the same output size.
        dropout: dropout on the embeddings (``embed`` applies ``self.dropout``).
    """

    def __init__(self, document: SequenceEncoder, query: SequenceEncoder, dropout: float) -> None:
        super().__init__()
        if document.output_dim != query.output_dim:
            raise ValueError(
                f"the document and query encoders must have one output size, got "
                f"{document.output_dim} and {query.output_dim}"
            )
        self.dropout = nn.Dropout(dropout)
        self.document = document
        self.query = query
        self.output_dim = document.output_dim  # 2h

    def forward(self, document: Tensor, query: Tensor, batch: ClozeBatch) -> EncodedPair:
        """Encode the embedded ``document`` (b, n, d') and ``query`` (b, m, d') of ``batch``."""
        y_d, _ = self.document(document, batch.context_mask)  # (b, n, 2h)
        y_q, u = self.query(query, batch.query_mask)  # (b, m, 2h), (b, 2h)
        return EncodedPair(document=y_d, query=y_q, query_final=u)


class PairReader(ClozeReader):
    """A reader that encodes the document and the query with an ``EncoderPair``.

    Args:
        hidden_dim: hidden size ``h`` of each direction of each encoder.
        num_layers: stacked recurrent layers in each encoder.
        dropout: dropout on the embeddings (and between stacked layers).
        rnn: ``lstm`` or ``gru`` for both encoders.
        **options: ``ClozeReader``'s.
    """

    def __init__(
        self,
        *,
        hidden_dim: int = 128,
        num_layers: int = 1,
        dropout: float = 0.2,
        rnn: RnnName = "lstm",
        **options: Any,
    ) -> None:
        super().__init__(**options)
        check_dropout(dropout)

        def encoder() -> SequenceEncoder:
            return SequenceEncoder(
                self.input_dim, hidden_dim, num_layers=num_layers, rnn=rnn, dropout=dropout
            )

        self.encoders = EncoderPair(document=encoder(), query=encoder(), dropout=dropout)

    def encode(self, batch: ClozeBatch) -> EncodedPair:
        """Embed (with dropout) and encode ``batch``: ``y_d`` (b, n, 2h), ``y_q`` (b, m, 2h),
        ``u`` (b, 2h)."""
        return self.encoders(*self.embed(batch, self.encoders.dropout), batch)


class Readout(nn.Module):
    """The vector ``g`` a reader answers from, given its reading ``r`` and the query ``u``;
    a reader keeps it as ``readout`` and ``ClozeReader.answer_scores`` applies it.

    ``paper``: ``g = tanh(W_rg r + W_ug u)`` (Hermann et al. 2015); ``linear``: ``g = r``
    (Chen et al. 2016), no parameters.

    Args:
        name: ``paper`` or ``linear``.
        dim: size of ``r``, ``u`` and ``g`` (2h).
    """

    def __init__(self, name: ReadoutName, dim: int) -> None:
        super().__init__()
        check_choice("readout", name, READOUTS)
        self.name: ReadoutName = name
        if name == "paper":
            self.read_proj = nn.Linear(dim, dim, bias=False)  # W_rg
            self.query_proj = nn.Linear(dim, dim)  # W_ug (and the bias)

    def forward(self, r: Tensor, u: Tensor) -> Tensor:
        """``g`` (b, 2h) from ``r`` (b, 2h) and ``u`` (b, 2h)."""
        if self.name == "paper":
            return torch.tanh(self.read_proj(r) + self.query_proj(u))  # (b, 2h)
        return r


def build_readout(name: ReadoutName, dim: int, answer: AnswerHead) -> Readout | None:
    """The read-out of a reader answering with the head ``answer``: ``None`` for a head that
    reads the token attention itself (``pointer``), no ``g`` (``name`` is checked all the
    same)."""
    check_choice("readout", name, READOUTS)
    return None if answer.reads_tokens else Readout(name, dim)
