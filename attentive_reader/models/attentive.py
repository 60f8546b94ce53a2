"""The Attentive Reader (Hermann et al. 2015), with Chen et al. (2016)'s variants as options."""

from __future__ import annotations

from typing import Literal

import torch
from torch import Tensor, nn

from attentive_reader.data.batching import ClozeBatch
from attentive_reader.models.base import ClozeReader, OptimizerName
from attentive_reader.models.output import ReaderOutput
from attentive_reader.nn.answer import AnswerLayerName
from attentive_reader.nn.attention import SCORER_NAMES, ScorerName, build_scorer
from attentive_reader.nn.encoders import RnnName, SequenceEncoder
from attentive_reader.nn.masking import masked_softmax

ReadoutName = Literal["paper", "linear"]


class AttentiveReader(ClozeReader):
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
        vocab_size: number of token ids (linked from the data module).
        num_entities: number of entity ids ``e`` (linked from the data module).
        embedding_dim: word embedding size ``d``, shared by document and query.
        hidden_dim: hidden size ``h`` of each direction of each encoder.
        num_layers: stacked recurrent layers in each encoder.
        dropout: dropout on the embeddings (and between stacked layers).
        rnn: ``lstm`` or ``gru`` for both encoders.
        scorer: attention scorer: ``additive``, ``dot``, ``cosine`` or ``bilinear``.
        attention_dim: hidden size of the additive scorer (default ``2h``).
        readout: ``paper`` (``g = tanh(W_rg r + W_ug u)``) or ``linear`` (``g = r``); unused
            by the ``pointer`` answer layer.
        answer_layer: ``tied`` (the default), ``output`` (the paper's) or ``pointer``.
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
        scorer: ScorerName = "bilinear",
        attention_dim: int | None = None,
        readout: ReadoutName = "linear",
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
        if scorer not in SCORER_NAMES:
            raise ValueError(f"scorer must be one of {', '.join(SCORER_NAMES)}, got {scorer!r}")
        if readout not in ("paper", "linear"):
            raise ValueError(f"readout must be 'paper' or 'linear', got {readout!r}")
        if not 0.0 <= dropout < 1.0:
            raise ValueError(f"dropout must be in [0, 1), got {dropout}")
        self.dropout = nn.Dropout(dropout)
        self.document_encoder = SequenceEncoder(
            self.input_dim, hidden_dim, num_layers=num_layers, rnn=rnn, dropout=dropout
        )
        self.query_encoder = SequenceEncoder(
            self.input_dim, hidden_dim, num_layers=num_layers, rnn=rnn, dropout=dropout
        )
        states = self.document_encoder.output_dim  # 2h
        self.scorer = build_scorer(scorer, states, states, attention_dim)
        self.readout = readout
        self.build_answer_layer(answer_layer, states, ("output", "tied", "pointer"))
        if readout == "paper" and answer_layer != "pointer":
            self.read_proj = nn.Linear(states, states, bias=False)  # W_rg
            self.query_proj = nn.Linear(states, states)  # W_ug (and the bias)

    def forward(self, batch: ClozeBatch) -> ReaderOutput:
        """Read a batch.

        Returns:
            ``ReaderOutput`` with ``logits`` (b, e) and ``attention`` (b, n).
        """
        document, query = self.embed(batch, self.dropout)  # (b, n, d'), (b, m, d')
        y_d, _ = self.document_encoder(document, batch.context_mask)  # (b, n, 2h)
        _, u = self.query_encoder(query, batch.query_mask)  # (b, 2h)
        scores = self.attention_scores(y_d, u)  # (b, n)
        s = masked_softmax(scores, batch.context_mask)  # (b, n)
        if self.answer_layer == "pointer":
            logits = self.answer_scores(batch, token_scores=scores)  # (b, e)
            return ReaderOutput(logits=logits, attention=s)
        r = torch.bmm(s.unsqueeze(1), y_d).squeeze(1)  # (b, 2h)
        if self.readout == "paper":
            g = torch.tanh(self.read_proj(r) + self.query_proj(u))  # (b, 2h)
        else:
            g = r
        logits = self.answer_scores(batch, g=g, weights=s)  # (b, e)
        return ReaderOutput(logits=logits, attention=s)

    def attention_scores(self, y_d: Tensor, u: Tensor) -> Tensor:
        """Unnormalised attention scores (b, n) of the document states (b, n, 2h) given
        ``u`` (b, 2h)."""
        return self.scorer.score(y_d, u)
