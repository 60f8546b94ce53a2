"""Heatmap data and shading: what a page shows, as plain data, and how strong each colour is.

``HeatmapExample`` (tokens, weights, prediction, answer, probabilities, entity map, the
Gated-Attention Reader's hops) is rendered by ``viz/html.py`` and ``viz/png.py`` and written
by ``viz/files.py``; ``heatmap_examples`` turns a reader's ``BatchPrediction`` into it;
``viz/callback.py`` holds the Lightning prediction writer (the only viz module that imports
Lightning).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from attentive_reader.common.markers import entity_index, entity_marker
from attentive_reader.corpus.records import ClozeExample
from attentive_reader.data.entity_block import example_fit

if TYPE_CHECKING:
    from attentive_reader.models.predictions import BatchPrediction, Prediction

Scale = Literal["linear", "normalized"]
SCALES: tuple[Scale, ...] = ("linear", "normalized")

# The shading colour (an orange that keeps black text readable at full strength).
RGB = (245, 130, 32)


# --------------------------------------------------------------------------------------------
# Plain data


@dataclass(frozen=True)
class HeatmapExample:
    """Everything one heatmap page shows, as plain data.

    Attributes:
        id: the example id.
        context: the context tokens the reader read (after any truncation).
        query: the query tokens, with ``@placeholder``.
        answer: the gold marker, or ``None`` for a document without one (a question asked
            with ``attentive-reader answer``): the page then shows no verdict.
        prediction: the predicted marker.
        probabilities: marker -> the reader's probability, for every candidate.
        candidates: the candidate markers (entities in the context).
        entities: marker -> real name (the entity map); markers without a name show as is.
        attention: the weights over ``context``: one list (one attention, e.g. the Attentive
            Reader), a list of lists with one row per query token (the Impatient Reader), or
            ``None`` for a reader without attention.
        selected: context positions a hard-attention reader selected.
        hop_attention: the Gated-Attention Reader's query attention of each gated hop,
            ``(K - 1, n, m)``: ``hop_attention[k][t][i]`` is the weight context token ``t``
            gave query token ``i`` at hop ``k + 1`` (each ``[k][t]`` sums to 1); ``None`` for
            other readers.
        context_length: the stored context length; more than ``len(context)`` marks a
            truncated context.
        model: what made the prediction (checkpoint path or reader name), for the page header.
    """

    id: str
    context: tuple[str, ...]
    query: tuple[str, ...]
    answer: str | None
    prediction: str
    probabilities: dict[str, float] = field(default_factory=dict)
    candidates: tuple[str, ...] = ()
    entities: dict[str, str] = field(default_factory=dict)
    attention: tuple[float, ...] | tuple[tuple[float, ...], ...] | None = None
    selected: tuple[int, ...] = ()
    hop_attention: tuple[tuple[tuple[float, ...], ...], ...] | None = None
    context_length: int | None = None
    model: str = ""

    def __post_init__(self) -> None:
        n = len(self.context)
        if self.attention is not None:
            rows = self.attention_rows
            if any(len(row) != n for row in rows):
                raise ValueError(
                    f"example {self.id}: attention rows must have one weight per context "
                    f"token ({n}); got lengths {sorted({len(r) for r in rows})}"
                )
            if self.per_query_token and len(rows) != len(self.query):
                raise ValueError(
                    f"example {self.id}: {len(rows)} attention rows for a query of "
                    f"{len(self.query)} tokens; give one row per query token"
                )
        if self.hop_attention is not None:
            m = len(self.query)
            shapes = {(len(hop), *{len(row) for row in hop}) for hop in self.hop_attention}
            if any(shape[0] != n or shape[1:] not in ((m,), ()) for shape in shapes):
                raise ValueError(
                    f"example {self.id}: hop_attention must hold, per hop, one row of {m} query "
                    f"weights per context token ({n}); got (rows, widths) {sorted(shapes)}"
                )
        bad = [i for i in self.selected if not 0 <= i < n]
        if bad:
            raise ValueError(f"example {self.id}: selected positions {bad} outside 0..{n - 1}")
        if self.context_length is not None and self.context_length < n:
            raise ValueError(
                f"example {self.id}: context_length {self.context_length} < {n} tokens shown"
            )

    @property
    def per_query_token(self) -> bool:
        """True for one attention row per query token (Impatient Reader)."""
        return bool(self.attention) and isinstance(self.attention[0], (tuple, list))

    @property
    def attention_rows(self) -> list[tuple[float, ...]]:
        """The attention as a list of rows (one row for a single attention)."""
        if self.attention is None:
            return []
        if self.per_query_token:
            return [tuple(r) for r in self.attention]  # type: ignore[arg-type]
        return [tuple(self.attention)]  # type: ignore[arg-type]

    @property
    def weights(self) -> tuple[float, ...] | None:
        """The weights of the main view: the single attention, or the Impatient Reader's
        last row (its attention after reading the whole query)."""
        rows = self.attention_rows
        return rows[-1] if rows else None

    @property
    def hop_query_attention(self) -> list[tuple[float, ...]]:
        """Per gated hop, the attention each query token received, averaged over the context
        tokens (``(K - 1, m)``, each row sums to 1): what the document read of the query."""
        if not self.hop_attention:
            return []
        n = len(self.context)
        return [
            tuple(sum(row[i] for row in hop) / n if n else 0.0 for i in range(len(self.query)))
            for hop in self.hop_attention
        ]

    @property
    def correct(self) -> bool | None:
        """Whether the prediction is the gold answer; ``None`` without a gold answer."""
        return None if self.answer is None else self.prediction == self.answer

    @property
    def truncated(self) -> bool:
        return self.context_length is not None and self.context_length > len(self.context)

    def name(self, marker: str) -> str:
        """The real name of a marker (the marker itself when the map has none)."""
        return self.entities.get(marker, marker)

    def to_json(self) -> dict:
        """The JSON sidecar: raw weights, tokens, prediction, probabilities."""
        return {
            "id": self.id,
            "model": self.model,
            "context": list(self.context),
            "query": list(self.query),
            "attention": (
                None
                if self.attention is None
                else [list(r) for r in self.attention_rows]
                if self.per_query_token
                else list(self.attention)  # type: ignore[arg-type]
            ),
            "attention_kind": (
                "none"
                if self.attention is None
                else "per_query_token"
                if self.per_query_token
                else "single"
            ),
            "selected": list(self.selected),
            "hop_attention": (
                None
                if self.hop_attention is None
                else [[list(row) for row in hop] for hop in self.hop_attention]
            ),
            "hop_query_attention": [list(row) for row in self.hop_query_attention],
            "prediction": self.prediction,
            "answer": self.answer,
            "correct": self.correct,
            "probabilities": dict(self.probabilities),
            "candidates": list(self.candidates),
            "entities": dict(self.entities),
            "context_length": self.context_length
            if self.context_length is not None
            else len(self.context),
            "truncated": self.truncated,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> HeatmapExample:
        """Inverse of ``to_json``."""
        attention = data.get("attention")
        if attention is not None:
            attention = (
                tuple(tuple(r) for r in attention)
                if data.get("attention_kind") == "per_query_token"
                else tuple(attention)
            )
        return cls(
            id=data["id"],
            model=data.get("model", ""),
            context=tuple(data["context"]),
            query=tuple(data["query"]),
            attention=attention,
            selected=tuple(data.get("selected", ())),
            hop_attention=(
                None
                if data.get("hop_attention") is None
                else tuple(tuple(tuple(row) for row in hop) for hop in data["hop_attention"])
            ),
            prediction=data["prediction"],
            answer=data.get("answer"),
            probabilities=dict(data.get("probabilities", {})),
            candidates=tuple(data.get("candidates", ())),
            entities=dict(data.get("entities", {})),
            context_length=data.get("context_length"),
        )


def heatmap_example(record: Prediction, row: ClozeExample, model: str = "") -> HeatmapExample:
    """Plain heatmap data for one example's prediction record.

    An example that numbers entities beyond the reader's block was read fitted into it
    (``data/entity_block.py``): the page shows the stored markers and names, and only the
    entities the reader could answer with as candidates.

    Args:
        record: the reader's prediction for the example (``BatchPrediction.records()``).
        row: the stored example (its tokens and entity map).
        model: shown in the page header.

    Raises:
        ValueError: if the record's answer is not the stored one (permuted entity ids).
    """
    fit = example_fit(row, len(record.probs))  # the reader's block: one probability an id
    if record.answer != fit.answer_id(entity_index(row.answer)):
        raise ValueError(
            f"example {record.id}: the batch's answer {record.answer_marker} is not the "
            f"stored {row.answer}; heatmaps need data without entity permutation"
        )
    n = min(record.context_length, len(row.context))
    m = min(record.query_length, len(row.query))
    probs = _as_list(record.probs)  # (e,)
    read = {c: fit.reader_number(entity_index(c)) for c in row.candidates}
    candidates = tuple(c for c in row.candidates if read[c] is not None)
    return HeatmapExample(
        id=record.id,
        model=model,
        context=tuple(row.context[:n]),
        query=tuple(row.query[:m]),
        attention=record.weights(n, m),  # (n,) or (m, n)
        selected=record.selected_positions(n),
        hop_attention=record.hops(n, m),  # (K - 1, n, m)
        prediction=entity_marker(fit.stored_number(record.prediction)),
        answer=row.answer,
        probabilities={c: float(probs[read[c]]) for c in candidates},  # type: ignore[index]
        candidates=candidates,
        entities=dict(row.entities),
        context_length=len(row.context),
    )


def heatmap_examples(
    prediction: BatchPrediction, rows: Mapping[str, ClozeExample], model: str = ""
) -> list[HeatmapExample]:
    """Plain heatmap data for one prediction batch of a reader (``predict_step``'s output).

    Args:
        prediction: the batch's predictions; their lengths come from the batch's masks.
        rows: example id -> stored example (its tokens and entity map).
        model: shown in the page header.

    Raises:
        KeyError: if an id of the batch is not in ``rows``.
    """
    return [heatmap_example(r, rows[r.id], model=model) for r in prediction.records()]


def _as_list(value: Any) -> list:
    """A tensor (any device) or a sequence as nested Python lists."""
    if hasattr(value, "detach"):
        return value.detach().cpu().tolist()
    return list(value)


# --------------------------------------------------------------------------------------------
# Shading


def intensities(
    weights: Sequence[float],
    scale: Scale = "linear",
    *,
    top: float | None = None,
    clip: float = 10.0,
) -> list[float]:
    """Colour strengths in [0, 1] for ``weights``.

    Args:
        weights: attention weights over the real context tokens.
        scale: ``"linear"``: ``w / top`` (the strongest token is full colour);
            ``"normalized"``: ``min(w * n, clip) / clip`` with ``n = len(weights)``, i.e. in
            multiples of the uniform weight ``1 / n``, so documents of different lengths
            compare (a token at the uniform weight is ``1 / clip`` strong).
        top: the weight shown at full colour on the linear scale (default: the largest).
        clip: the multiple of the uniform weight shown at full colour (normalized scale).

    Raises:
        ValueError: for an unknown scale or a non-positive ``clip``.
    """
    if scale not in SCALES:
        raise ValueError(f"unknown scale {scale!r}; choose one of {', '.join(SCALES)}")
    if clip <= 0:
        raise ValueError(f"clip must be positive, got {clip}")
    if not weights:
        return []
    if scale == "linear":
        top = max(weights) if top is None else top
        return [0.0 if top <= 0 else min(1.0, max(0.0, w / top)) for w in weights]
    n = len(weights)
    return [min(1.0, max(0.0, w * n / clip)) for w in weights]


def colour(alpha: float) -> str:
    """The CSS colour of a shading strength in [0, 1]."""
    r, g, b = RGB
    return f"rgba({r},{g},{b},{alpha:.3f})"


def format_probability(p: float | None) -> str:
    """``0.6 -> "0.600"``; ``None`` (no such candidate) -> ``"n/a"``."""
    return "n/a" if p is None else f"{p:.3f}"
