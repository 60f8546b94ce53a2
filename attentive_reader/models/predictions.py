"""Typed prediction records: what ``ClozeReader.predict_step`` returns, batch and example.

Letters as in ``ClozeBatch``: ``b`` batch, ``n`` context length, ``m`` query length, ``e``
entity ids, ``k`` selected positions. Evaluation, heatmaps and the prediction-writer callback
read these records; nothing indexes a dictionary by string.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from attentive_reader.common.markers import entity_marker
from attentive_reader.data.batching import ClozeBatch
from attentive_reader.models.output import GatedExtras, ReaderExtras, ReaderOutput


@dataclass(frozen=True)
class Prediction:
    """One example's prediction, on the CPU, cut to the example's real lengths.

    Attributes:
        id: the example id.
        prediction: the predicted entity id (``@entity<prediction>``).
        answer: the gold entity id of the batch (after any permutation, which only training
            applies, or fitting into the block; ``UNANSWERABLE`` when outside the block).
        probs: (e,) probabilities over entity ids (0 for non-candidates).
        attention: (n,) the weights over the real context tokens, (m, n) one row per real
            query token (Impatient Reader), or ``None``.
        selected: (k,) the positions a hard-attention reader selected (-1: an empty slot), or
            ``None``.
        context_length: the number of real context tokens the reader read (``n``).
        query_length: the number of real query tokens (``m``).
        extras: the reader's typed extras for this example (``ReaderExtras.example``: cut to
            the real lengths where the record knows the shape, e.g. ``hop_attention``
            (K - 1, n, m); others as the reader made them, padded to the batch), or ``None``.
        tokens_read: the context tokens the answer was computed from
            (``ClozeReader.reading_mask``), or ``None`` where the batch did not say.
    """

    id: str
    prediction: int
    answer: int
    probs: Tensor
    attention: Tensor | None
    selected: Tensor | None
    context_length: int
    query_length: int
    extras: ReaderExtras | None = None
    tokens_read: int | None = None

    @property
    def marker(self) -> str:
        """The predicted marker, e.g. ``"@entity3"``."""
        return entity_marker(self.prediction)

    @property
    def answer_marker(self) -> str:
        """The gold marker."""
        return entity_marker(self.answer)

    @property
    def correct(self) -> bool:
        return self.prediction == self.answer

    @property
    def hop_attention(self) -> Tensor | None:
        """(K - 1, n, m) each gated hop's query attention (Gated-Attention Reader), or None."""
        return self.extras.hop_attention if isinstance(self.extras, GatedExtras) else None

    def weights(self, n: int, m: int) -> tuple[float, ...] | tuple[tuple[float, ...], ...] | None:
        """The attention as plain numbers over the first ``n`` context tokens: (n,), or
        (m, n) for one row per query token (the first ``m``); ``None`` without attention."""
        if self.attention is None:
            return None
        if self.attention.dim() == 1:
            return tuple(float(w) for w in self.attention[:n].tolist())
        return tuple(tuple(float(w) for w in row[:n]) for row in self.attention[:m].tolist())

    def hops(self, n: int, m: int) -> tuple[tuple[tuple[float, ...], ...], ...] | None:
        """``hop_attention`` as plain numbers, (K - 1, n, m) cut to ``n`` and ``m``, or None."""
        if self.hop_attention is None:
            return None
        return tuple(
            tuple(tuple(float(w) for w in r[:m]) for r in hop[:n])
            for hop in self.hop_attention.tolist()
        )

    def selected_positions(self, n: int) -> tuple[int, ...]:
        """The distinct context positions below ``n`` a hard-attention reader selected, in
        order (its empty slots, ``-1``, left out); empty for other readers."""
        if self.selected is None:
            return ()
        return tuple(sorted({int(p) for p in self.selected.tolist() if 0 <= p < n}))


@dataclass  # not frozen: Lightning's predict loop moves collections (apply_to_collection)
class BatchPrediction:
    """A batch's predictions, on the CPU (``predict_step``'s return value).

    Attributes:
        ids: the example ids, length b.
        logits: (b, e) candidate-masked scores.
        probs: (b, e) their softmax (0 for non-candidates).
        prediction: (b,) the predicted entity ids.
        answer: (b,) the batch's gold entity ids.
        attention: (b, n) | (b, m, n) the attention weights, or ``None``.
        selected: (b, k) hard-attention positions, or ``None``.
        context_lengths: (b,) real context tokens per example.
        query_lengths: (b,) real query tokens per example.
        extras: the reader's ``ReaderOutput.extras`` (each tensor (b, ...)), or ``None``.
        read: (b, n) bool, the context positions the answer was computed from
            (``ClozeReader.reading_mask``), or ``None``.
    """

    ids: list[str]
    logits: Tensor
    probs: Tensor
    prediction: Tensor
    answer: Tensor
    attention: Tensor | None
    selected: Tensor | None
    context_lengths: Tensor
    query_lengths: Tensor
    extras: ReaderExtras | None = None
    read: Tensor | None = None

    def __len__(self) -> int:
        return len(self.ids)

    @classmethod
    def of(
        cls, batch: ClozeBatch, output: ReaderOutput, read: Tensor | None = None
    ) -> BatchPrediction:
        """The records of a reader's ``output`` on ``batch`` (and ``read``, the positions it
        read, (b, n) bool), moved to the CPU."""
        logits = output.logits.detach().float()  # (b, e); float even under bf16 autocast

        def cpu(tensor: Tensor | None) -> Tensor | None:
            if tensor is None:
                return None
            tensor = tensor.detach()
            return (tensor.float() if tensor.is_floating_point() else tensor).cpu()

        return cls(
            ids=list(batch.ids),
            logits=logits.cpu(),
            probs=torch.softmax(logits, dim=-1).cpu(),
            prediction=logits.argmax(dim=-1).cpu(),
            answer=batch.answer.detach().cpu(),
            attention=cpu(output.attention),
            selected=cpu(output.selected),
            context_lengths=batch.context_mask.sum(-1).cpu(),
            query_lengths=batch.query_mask.sum(-1).cpu(),
            extras=None if output.extras is None else output.extras.map(cpu),
            read=cpu(read),
        )

    def records(self) -> list[Prediction]:
        """One ``Prediction`` per example, in batch order (views, no copies)."""
        out = []
        for i, example_id in enumerate(self.ids):
            n, m = int(self.context_lengths[i]), int(self.query_lengths[i])
            attention = None
            if self.attention is not None:
                weights = self.attention[i]  # (n,) or (m, n), padded
                attention = weights[:n] if weights.dim() == 1 else weights[:m, :n]
            extras = None if self.extras is None else self.extras.example(i, n, m)
            out.append(
                Prediction(
                    id=example_id,
                    prediction=int(self.prediction[i]),
                    answer=int(self.answer[i]),
                    probs=self.probs[i],
                    attention=attention,
                    selected=None if self.selected is None else self.selected[i],
                    context_length=n,
                    query_length=m,
                    extras=extras,
                    tokens_read=None if self.read is None else int(self.read[i].sum()),
                )
            )
        return out
