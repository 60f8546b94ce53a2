"""Parts the readers compose: the document / query encoder pair and the read-out.

The embedding and the answer layer are the reader's own (``ClozeReader.embed``,
``ClozeReader.build_answer_layer``): the tied answer layer scores against the embedding.

Letters as in ``models/base.py``: ``b`` batch, ``n`` context length, ``m`` query length,
``d'`` encoder input size, ``h`` hidden size per direction.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, get_args

import torch
from torch import Tensor, nn

from attentive_reader.data.batching import ClozeBatch
from attentive_reader.nn.encoders import RnnName, SequenceEncoder

ReadoutName = Literal["paper", "linear"]
READOUTS: tuple[str, ...] = get_args(ReadoutName)


def check_choice(name: str, value: object, choices: tuple[str, ...]) -> None:
    """Raise a ``ValueError`` naming the choices when ``value`` is not one of them."""
    if value not in choices:
        raise ValueError(f"{name} must be one of {', '.join(choices)}, got {value!r}")


def check_dropout(dropout: float) -> None:
    """Raise a ``ValueError`` unless ``0 <= dropout < 1``."""
    if not 0.0 <= dropout < 1.0:
        raise ValueError(f"dropout must be in [0, 1), got {dropout}")


def check_positive(**values: object) -> None:
    """Raise a ``ValueError`` naming the first value that is not a positive integer."""
    for name, value in values.items():
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise ValueError(f"{name} must be a positive integer, got {value!r}")


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
    """Dropout on the embeddings, then a document encoder and a query encoder of one shape.

    The state-dict keys are ``document.*`` and ``query.*`` (a reader keeps the pair as
    ``encoders``; checkpoints from before, with ``document_encoder.*`` / ``query_encoder.*``,
    are renamed on load, see ``models/base.py``).

    Args:
        input_dim: size ``d'`` of each input vector (embedding, plus the query-match bit).
        hidden_dim: hidden size ``h`` of each direction of each encoder.
        num_layers: stacked recurrent layers in each encoder.
        rnn: ``lstm`` or ``gru`` for both encoders.
        dropout: dropout on the embeddings (and between stacked layers).
    """

    def __init__(
        self,
        input_dim: int,
        hidden_dim: int,
        *,
        num_layers: int = 1,
        rnn: RnnName = "lstm",
        dropout: float = 0.0,
    ) -> None:
        super().__init__()
        check_dropout(dropout)
        self.dropout = nn.Dropout(dropout)
        self.document = SequenceEncoder(
            input_dim, hidden_dim, num_layers=num_layers, rnn=rnn, dropout=dropout
        )
        self.query = SequenceEncoder(
            input_dim, hidden_dim, num_layers=num_layers, rnn=rnn, dropout=dropout
        )
        self.output_dim = self.document.output_dim  # 2h

    def forward(self, document: Tensor, query: Tensor, batch: ClozeBatch) -> EncodedPair:
        """Encode the embedded ``document`` (b, n, d') and ``query`` (b, m, d') of ``batch``."""
        y_d, _ = self.document(document, batch.context_mask)  # (b, n, 2h)
        y_q, u = self.query(query, batch.query_mask)  # (b, m, 2h), (b, 2h)
        return EncodedPair(document=y_d, query=y_q, query_final=u)


class Readout(nn.Module):
    """The vector ``g`` a reader answers from, given its reading ``r`` and the query ``u``.

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
