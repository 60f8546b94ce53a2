"""The Gated-Attention Reader (Dhingra et al. 2017): K hops, each gating the document by the query."""

from __future__ import annotations

from typing import Any, Literal, get_args

import torch
from torch import Tensor, nn
from torch.nn import Dropout

from attentive_reader.common.checks import check_dropout, check_positive
from attentive_reader.data.batching import ClozeBatch
from attentive_reader.data.vocab import Vocabulary
from attentive_reader.models.base import ClozeReader
from attentive_reader.models.output import GatedExtras, ReaderOutput
from attentive_reader.models.parts import check_choice
from attentive_reader.nn.answer import AnswerInput, AnswerLayerName
from attentive_reader.nn.attention import Attention
from attentive_reader.nn.encoders import SequenceEncoder

GateName = Literal["mul", "sum", "concat"]
GATES: tuple[str, ...] = get_args(GateName)


def gated_attention(
    document: Tensor,
    query: Tensor,
    document_mask: Tensor,
    query_mask: Tensor,
    gate: GateName = "mul",
) -> tuple[Tensor, Tensor]:
    """One gated-attention step: every document token attends over the query tokens and is
    gated by what it read.

    ``alpha(t) = masked softmax_i (q_i . d_t)``, ``q~_t = sum_i alpha(t, i) q_i``, and the gated
    state is ``d_t * q~_t`` (``mul``), ``d_t + q~_t`` (``sum``) or ``[d_t ; q~_t]`` (``concat``).

    Args:
        document: document states (b, n, c), 0 on padding.
        query: query states (b, m, c).
        document_mask: True on real document tokens (b, n).
        query_mask: True on real query tokens (b, m).
        gate: ``mul``, ``sum`` or ``concat``.

    Returns:
        The gated states (b, n, c), or (b, n, 2c) with ``concat``, exactly 0 on padded document
        tokens; and the query attention ``alpha`` (b, n, m), 0 on padded query tokens and on
        the rows of padded document tokens.
    """
    scores = torch.bmm(document, query.transpose(1, 2))  # (b, n, m)
    mask = document_mask.bool().unsqueeze(2) & query_mask.bool().unsqueeze(1)  # (b, n, m)
    alpha = Attention.of(scores, mask).weights  # (b, n, m)
    attended = torch.bmm(alpha, query)  # (b, n, c): 0 on padded document rows
    if gate == "mul":
        gated = document * attended  # (b, n, c)
    elif gate == "sum":
        gated = document + attended  # (b, n, c)
    else:
        gated = torch.cat([document, attended], dim=-1)  # (b, n, 2c)
    return gated, alpha


def placeholder_states(states: Tensor, final: Tensor, query: Tensor, mask: Tensor) -> Tensor:
    """The query state at each query's ``@placeholder``; its final state if it has none.

    Args:
        states: query states (b, m, c).
        final: the encoder's final query state (b, c), the fallback.
        query: query token ids (b, m).
        mask: True on real query tokens (b, m).

    Returns:
        (b, c); for a query with several placeholders, the first one's state.
    """
    is_placeholder = (query == Vocabulary.PLACEHOLDER) & mask.bool()  # (b, m)
    position = is_placeholder.long().argmax(dim=1)  # (b,) first placeholder, or 0
    index = position.view(-1, 1, 1).expand(-1, 1, states.shape[-1])  # (b, 1, c)
    at_placeholder = torch.gather(states, 1, index).squeeze(1)  # (b, c)
    return torch.where(is_placeholder.any(dim=1, keepdim=True), at_placeholder, final)


class GatedAttentionReader(ClozeReader):
    """Multi-hop reading: each hop gates every document token by the query it attends to.

    Hops ``k = 1 .. K``, with ``x^(1)`` the document embeddings and ``y`` the query embeddings
    (each with the query-match bit when ``query_match``)::

        d^(k) = BiGRU_D^(k)(x^(k))                                  (b, n, 2h)
        q^(k) = BiGRU_Q^(k)(y)                                      (b, m, 2h)
        alpha^(k)(t) = masked softmax_i q^(k)_i . d^(k)_t           (b, n, m),  k < K
        x^(k+1)(t) = dropout(d^(k)_t (.) sum_i alpha^(k)(t, i) q^(k)_i)          k < K
        s(t) = masked softmax over real tokens of d^(K)_t . q^(K)_placeholder     (b, n)
        g    = sum_t s(t) d^(K)_t                                   (b, 2h)

    ``(.)`` is the gate: the element-wise product (``mul``, the paper's), the sum (``sum``) or
    the concatenation (``concat``, the next hop then reads ``4h``-vectors), the paper's
    ablation. Every hop has its own query GRU, reading the query embeddings (as in the
    authors' code); ``q^(K)_placeholder`` is the last query GRU's state at ``@placeholder``, or
    its final state for a query without one; ``g`` and ``s`` answer through the
    ``answer_layer`` (``ClozeReader``), by default ``pointer``, the paper's attention sum.
    ``query_match`` is the paper's ``qe-comm`` feature.

    Args:
        num_hops: ``K``, the number of document GRUs (``K - 1`` gated-attention steps).
        hidden_dim: hidden size ``h`` of each direction of every GRU.
        dropout: dropout on the embeddings and on each hop's gated states.
        gate: ``mul`` (the default, the paper's), ``sum`` or ``concat``.
        answer_layer: ``pointer`` (the default), ``tied`` or ``output``.
        **options: ``ClozeReader``'s.
    """

    def __init__(
        self,
        *,
        num_hops: int = 3,
        hidden_dim: int = 128,
        dropout: float = 0.2,
        gate: GateName = "mul",
        answer_layer: AnswerLayerName = "pointer",
        **options: Any,
    ) -> None:
        super().__init__(**options)
        check_positive(num_hops=num_hops)
        check_choice("gate", gate, GATES)
        check_dropout(dropout)
        self.num_hops = num_hops
        self.gate: GateName = gate
        self.dropout = Dropout(dropout)
        states = 2 * hidden_dim
        gated = 2 * states if gate == "concat" else states  # what hop k + 1 reads
        self.document_encoders = nn.ModuleList(
            SequenceEncoder(self.input_dim if k == 0 else gated, hidden_dim, rnn="gru")
            for k in range(num_hops)
        )
        self.query_encoders = nn.ModuleList(
            SequenceEncoder(self.input_dim, hidden_dim, rnn="gru") for _ in range(num_hops)
        )
        self.build_answer_layer(answer_layer, states)

    def forward(self, batch: ClozeBatch) -> ReaderOutput:
        """Read a batch. Letters: ``b`` batch, ``n`` context length, ``m`` query length, ``h``
        hidden size, ``K`` hops, ``e`` entity ids.

        Returns:
            ``ReaderOutput`` with ``logits`` (b, e), ``attention`` (b, n) the final document
            attention, and ``extras`` (``GatedExtras``) holding ``hop_attention``
            (b, K - 1, n, m), the query attention of each gated hop.
        """
        x, y = self.embed(batch, self.dropout)  # (b, n, d'), (b, m, d')
        hop_attention = []
        for k in range(self.num_hops - 1):
            d, _ = self.document_encoders[k](x, batch.context_mask)  # (b, n, 2h)
            q, _ = self.query_encoders[k](y, batch.query_mask)  # (b, m, 2h)
            gated, alpha = gated_attention(
                d, q, batch.context_mask, batch.query_mask, self.gate
            )  # (b, n, 2h | 4h), (b, n, m)
            x = self.dropout(gated)  # (b, n, 2h | 4h)
            hop_attention.append(alpha)
        d, _ = self.document_encoders[-1](x, batch.context_mask)  # (b, n, 2h)
        q, q_final = self.query_encoders[-1](y, batch.query_mask)  # (b, m, 2h), (b, 2h)
        u = placeholder_states(q, q_final, batch.query, batch.query_mask)  # (b, 2h)
        scores = torch.bmm(d, u.unsqueeze(-1)).squeeze(-1)  # (b, n)
        s = Attention.of(scores, batch.context_mask).weights  # (b, n)
        b, n, m = d.shape[0], d.shape[1], q.shape[1]
        extras = GatedExtras(
            torch.stack(hop_attention, dim=1)  # (b, K - 1, n, m)
            if hop_attention
            else d.new_zeros(b, 0, n, m)
        )
        g = torch.bmm(s.unsqueeze(1), d).squeeze(1)  # (b, 2h)
        given = AnswerInput(vector=g, weights=s, token_scores=scores)
        return ReaderOutput(self.answer_scores(batch, given), attention=s, extras=extras)
