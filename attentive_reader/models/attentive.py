"""The Attentive Reader (Hermann et al. 2015), with Chen et al. (2016)'s variants as options."""

from __future__ import annotations

from typing import Literal

import torch
from torch import Tensor, nn

from attentive_reader.data.batching import ClozeBatch
from attentive_reader.models.base import ClozeReader, OptimizerName
from attentive_reader.models.output import ReaderOutput
from attentive_reader.nn.attention import SCORER_NAMES, ScorerName, build_scorer
from attentive_reader.nn.encoders import RnnName, SequenceEncoder

ReadoutName = Literal["paper", "linear"]


class AttentiveReader(ClozeReader):
    """Attention over the document, guided by the whole query.

    ``y_d(t)`` are the bidirectional document states (2h), ``u`` the query's final states
    (last forward, first backward; 2h). Then::

        s(t) = masked softmax over real tokens of score(y_d(t), u)
        r    = sum_t s(t) y_d(t)
        g    = tanh(W_rg r + W_ug u)   (readout="paper", Hermann et al.)
             | r                       (readout="linear", Chen et al.)
        p(a | d, q) = softmax over the candidate entities of W_a g

    With ``scorer="additive"`` and ``readout="paper"`` this is the paper's model; with
    ``scorer="bilinear"`` and ``readout="linear"`` (the defaults) it is Chen et al.'s.

    Args:
        vocab_size: number of token ids (linked from the data module).
        num_entities: number of entity ids ``e`` (linked from the data module).
        embedding_dim: word embedding size ``d``, shared by document and query.
        hidden_dim: hidden size ``h`` of each direction of each encoder.
        num_layers: stacked recurrent layers in each encoder.
        dropout: dropout on the embeddings (and between stacked layers).
        rnn: ``lstm`` or ``gru`` for both encoders.
        scorer: attention scorer: ``additive``, ``dot``, ``cosine`` or ``bilinear``.
        attention_dim: hidden size of the additive scorer (default ``2h``).
        readout: ``paper`` (``g = tanh(W_rg r + W_ug u)``) or ``linear`` (``g = r``).
        word_vectors: optional GloVe-format file to initialise the embeddings.
        optimizer: default optimiser (``sgd``, ``adam``, ``rmsprop``).
        lr: its learning rate (``None``: the optimiser's default, see ``ClozeReader``).
        weight_decay: L2 penalty of the default optimiser.
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
        scorer: ScorerName = "bilinear",
        attention_dim: int | None = None,
        readout: ReadoutName = "linear",
        word_vectors: str | None = None,
        optimizer: OptimizerName = "sgd",
        lr: float | None = None,
        weight_decay: float = 0.0,
    ) -> None:
        super().__init__(
            vocab_size,
            num_entities,
            embedding_dim=embedding_dim,
            word_vectors=word_vectors,
            optimizer=optimizer,
            lr=lr,
            weight_decay=weight_decay,
        )
        if scorer not in SCORER_NAMES:
            raise ValueError(f"scorer must be one of {', '.join(SCORER_NAMES)}, got {scorer!r}")
        if readout not in ("paper", "linear"):
            raise ValueError(f"readout must be 'paper' or 'linear', got {readout!r}")
        if not 0.0 <= dropout < 1.0:
            raise ValueError(f"dropout must be in [0, 1), got {dropout}")
        self.dropout = nn.Dropout(dropout)
        self.document_encoder = SequenceEncoder(
            embedding_dim, hidden_dim, num_layers=num_layers, rnn=rnn, dropout=dropout
        )
        self.query_encoder = SequenceEncoder(
            embedding_dim, hidden_dim, num_layers=num_layers, rnn=rnn, dropout=dropout
        )
        states = self.document_encoder.output_dim  # 2h
        self.scorer = build_scorer(scorer, states, states, attention_dim)
        self.readout = readout
        if readout == "paper":
            self.read_proj = nn.Linear(states, states, bias=False)  # W_rg
            self.query_proj = nn.Linear(states, states)  # W_ug (and the bias)
        self.output = nn.Linear(states, num_entities)  # W_a

    def forward(self, batch: ClozeBatch) -> ReaderOutput:
        """Read a batch.

        Returns:
            ``ReaderOutput`` with ``logits`` (b, e) and ``attention`` (b, n).
        """
        document = self.dropout(self.embedding(batch.context))  # (b, n, d)
        query = self.dropout(self.embedding(batch.query))  # (b, m, d)
        y_d, _ = self.document_encoder(document, batch.context_mask)  # (b, n, 2h)
        _, u = self.query_encoder(query, batch.query_mask)  # (b, 2h)
        s = self.attend(y_d, u, batch.context_mask)  # (b, n)
        r = torch.bmm(s.unsqueeze(1), y_d).squeeze(1)  # (b, 2h)
        if self.readout == "paper":
            g = torch.tanh(self.read_proj(r) + self.query_proj(u))  # (b, 2h)
        else:
            g = r
        logits = self.answer_logits(self.output(g), batch.candidates)  # (b, e)
        return ReaderOutput(logits=logits, attention=s)

    def attend(self, y_d: Tensor, u: Tensor, mask: Tensor) -> Tensor:
        """Attention weights (b, n) over the document states (b, n, 2h) given ``u`` (b, 2h)."""
        return self.scorer(y_d, u, mask)
