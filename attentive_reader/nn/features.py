"""Token features beside the word embeddings.

Letters: ``b`` batch, ``n`` context length, ``m`` query length.

``query_match``: whether each context token also occurs in the query, and each query token in
the context (Dhingra et al. 2017's ``qe-comm`` feature of the Gated-Attention Reader; Chen et
al. 2017's exact-match feature). Under the per-example entity permutation the entity markers'
embeddings are relabelled for every example, so telling *which* entity of the document the
query names is otherwise left to the encoders; one bit per token says it directly.
"""

from __future__ import annotations

from torch import Tensor


def query_match(
    context: Tensor, context_mask: Tensor, query: Tensor, query_mask: Tensor
) -> tuple[Tensor, Tensor]:
    """Which real tokens of each side also occur among the real tokens of the other.

    Args:
        context: token ids (b, n); context_mask: True on real tokens (b, n).
        query: token ids (b, m); query_mask: True on real tokens (b, m).

    Returns:
        ``in_query`` (b, n) and ``in_context`` (b, m), bool; padding is False.
    """
    same = context.unsqueeze(2) == query.unsqueeze(1)  # (b, n, m)
    same = same & context_mask.bool().unsqueeze(2) & query_mask.bool().unsqueeze(1)
    return same.any(dim=2), same.any(dim=1)  # (b, n), (b, m)
