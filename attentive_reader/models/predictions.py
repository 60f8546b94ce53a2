"""Typed prediction records: what ``ClozeReader.predict_step`` returns, batch and example.

Letters as in ``ClozeBatch``: ``b`` batch, ``n`` context length, ``m`` query length, ``e``
entity ids, ``k`` selected positions. Evaluation, heatmaps and the prediction-writer callback
read these records; nothing indexes a dictionary by string.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
from torch import Tensor

from attentive_reader.data.batching import ClozeBatch
from attentive_reader.markers import entity_marker
from attentive_reader.models.output import ReaderOutput


@dataclass(frozen=True)
class Prediction:
    """One example's prediction, on the CPU, cut to the example's real lengths.

    Attributes:
        id: the example id.
        prediction: the predicted entity id (``@entity<prediction>``).
        answer: the gold entity id of the batch (after any permutation; none outside train).
        probs: (e,) probabilities over entity ids (0 for non-candidates).
        attention: (n,) the weights over the real context tokens, (m, n) one row per real
            query token (Impatient Reader), or ``None``.
        selected: (k,) the positions a hard-attention reader selected (-1: an empty slot), or
            ``None``.
        context_length: the number of real context tokens the reader read (``n``).
        query_length: the number of real query tokens (``m``).
        extras: the reader's ``extras`` for this example, cut to the real lengths where the
            name says the shape (``hop_attention``: (K - 1, n, m)); others as the reader made
            them, padded to the batch.
    """

    id: str
    prediction: int
    answer: int
    probs: Tensor
    attention: Tensor | None
    selected: Tensor | None
    context_length: int
    query_length: int
    extras: dict[str, Tensor] = field(default_factory=dict)

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
        return self.extras.get("hop_attention")


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
        extras: the reader's ``ReaderOutput.extras`` tensors, each (b, ...).
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
    extras: dict[str, Tensor] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.ids)

    @classmethod
    def of(cls, batch: ClozeBatch, output: ReaderOutput) -> BatchPrediction:
        """The records of a reader's ``output`` on ``batch``, moved to the CPU."""
        logits = output.logits.detach().float()  # (b, e); float even under bf16 autocast

        def cpu(tensor: Tensor | None) -> Tensor | None:
            if tensor is None:
                return None
            tensor = tensor.detach()
            return (tensor.float() if tensor.is_floating_point() else tensor).cpu()

        extras = {
            key: cpu(value)
            for key, value in output.extras.items()
            if isinstance(value, Tensor) and value.dim() > 0 and value.shape[0] == len(batch)
        }
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
            extras=extras,  # type: ignore[arg-type]
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
            extras = {key: value[i] for key, value in self.extras.items()}
            if "hop_attention" in extras:
                extras["hop_attention"] = extras["hop_attention"][:, :n, :m]  # (K - 1, n, m)
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
                )
            )
        return out
