"""The per-example file of ``attentive-reader evaluate --predictions FILE.jsonl`` (and of
``attentive-reader predict``: ``predictions_writer.PredictionsWriter``).

One JSON object per line, per checkpoint and example: the checkpoints in the order given, the
examples of each in stored order, every example exactly once. ``correct`` is decided as the
report decides it (the predicted marker is the stored answer), so the mean of ``correct``
over a checkpoint's lines is its accuracy in the report, exactly. The file is written whole
through a temporary file and a rename (``fileio.write_text_atomic``): a full disk
never leaves half a file that looks like a whole one.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from attentive_reader.common.fileio import write_text_atomic
from attentive_reader.common.markers import entity_index, entity_marker
from attentive_reader.corpus.records import ClozeExample

if TYPE_CHECKING:
    from attentive_reader.data.entity_block import EntityFit
    from attentive_reader.models.predictions import Prediction


@dataclass(frozen=True)
class PredictionLine:
    """One checkpoint's answer to one example (a line of the predictions file).

    Attributes:
        checkpoint: the checkpoint's name in the report (its path, made unique).
        id: the example id.
        story_id: the story the example was made from.
        prediction: the predicted marker (``@entity3``).
        prediction_name: the predicted entity's name from the example's entity map
            (``None`` when the map does not name it).
        gold: the stored answer's marker.
        gold_name: the answer's name (``None`` without an entity map).
        prediction_probability: the reader's probability of its prediction.
        gold_probability: the reader's probability of the answer.
        correct: whether the prediction is the answer.
        num_candidates: the example's candidate entities (as in the report's breakdown).
        tokens_read: the document tokens the answer was computed from
            (``ClozeReader.reading_mask``; ``None`` where the reader did not say).
        document_tokens: the document tokens the reader was given (its context cap applied).
    """

    checkpoint: str
    id: str
    story_id: str
    prediction: str
    prediction_name: str | None
    gold: str
    gold_name: str | None
    prediction_probability: float
    gold_probability: float
    correct: bool
    num_candidates: int
    tokens_read: int | None = None
    document_tokens: int | None = None

    @classmethod
    def of(
        cls,
        checkpoint: str,
        example: ClozeExample,
        prediction: str,
        prediction_probability: float,
        gold_probability: float,
        tokens_read: int | None = None,
        document_tokens: int | None = None,
    ) -> PredictionLine:
        """The line of ``example`` answered ``prediction`` with these probabilities, having
        read ``tokens_read`` of the ``document_tokens`` it was given."""
        return cls(
            checkpoint=checkpoint,
            id=example.id,
            story_id=example.story_id,
            prediction=prediction,
            prediction_name=example.entities.get(prediction),
            gold=example.answer,
            gold_name=example.entities.get(example.answer),
            prediction_probability=_probability(prediction_probability),
            gold_probability=_probability(gold_probability),
            correct=prediction == example.answer,
            num_candidates=len(example.candidates),
            tokens_read=tokens_read,
            document_tokens=document_tokens,
        )

    def to_json(self) -> dict:
        return asdict(self)


def _probability(value: float) -> float:
    """A probability to 6 significant digits (the reader computes in float32 at best)."""
    return float(f"{float(value):.6g}")


def prediction_line(
    name: str, example: ClozeExample, record: Prediction, fit: EntityFit
) -> PredictionLine:
    """The line of one example, the reader's entity ids mapped back to the stored markers
    (``fit``: how the example was fitted into the reader's entity block)."""
    predicted = entity_marker(fit.stored_number(record.prediction))
    answer = fit.reader_number(entity_index(example.answer))
    gold = 0.0 if answer is None else float(record.probs[answer])
    return PredictionLine.of(
        name,
        example,
        predicted,
        float(record.probs[record.prediction]),
        gold,
        tokens_read=record.tokens_read,
        document_tokens=record.context_length,
    )


def write_predictions(path: str | Path, lines: Iterable[PredictionLine]) -> Path:
    """Write ``lines`` to ``path`` as JSON Lines, whole or not at all.

    Returns:
        The path written.
    """
    path = Path(path)
    text = "".join(json.dumps(line.to_json(), ensure_ascii=False) + "\n" for line in lines)
    write_text_atomic(path, text)
    return path
