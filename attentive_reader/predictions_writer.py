"""``attentive-reader predict`` writes its answers: ``predictions.jsonl`` in the run's folder.

One JSON object per example of the data module's ``predict_split`` (``test`` by default), in
stored order: the records of ``evaluate --predictions`` (``eval.predictions_file``), so that a
program reads either file the same way. The file goes to the run's log folder
(``runs/lightning_logs/version_N/predictions.jsonl`` by default; ``trainer.log_dir``), written
whole through a rename; the command ends with one line naming it. Only rank 0 writes (the
predict loader gives every rank the whole split).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pytorch_lightning import Callback, LightningModule, Trainer

from attentive_reader.common.errors import UserError
from attentive_reader.corpus.records import ClozeExample, load_split
from attentive_reader.data.entity_block import example_fit
from attentive_reader.eval.predictions_file import (
    PredictionLine,
    prediction_line,
    write_predictions,
)

PREDICTIONS_FILE = "predictions.jsonl"


class PredictionsWriter(Callback):
    """Writes ``predictions.jsonl`` at the end of ``predict`` (see the module docstring)."""

    def __init__(self) -> None:
        self._examples: list[ClozeExample] = []
        self._lines: list[PredictionLine] = []

    def on_predict_start(self, trainer: Trainer, pl_module: LightningModule) -> None:
        datamodule = trainer.datamodule
        rows = load_split(Path(datamodule.path), datamodule.predict_split)
        self._examples = [ClozeExample.from_row(row) for row in rows]
        self._lines = []

    def on_predict_batch_end(
        self,
        trainer: Trainer,
        pl_module: LightningModule,
        outputs: Any,
        batch: Any,
        batch_idx: int,
        dataloader_idx: int = 0,
    ) -> None:
        name = str(trainer.ckpt_path or "")
        for record in outputs.records():
            position = len(self._lines)
            if position >= len(self._examples) or self._examples[position].id != record.id:
                raise UserError(
                    f"predict: the reader's rows differ from the stored order at row {position} "
                    f"(example {record.id}); is it the same dataset?"
                )
            example = self._examples[position]
            fit = example_fit(example, pl_module.num_entities)
            self._lines.append(prediction_line(name, example, record, fit))

    def on_predict_end(self, trainer: Trainer, pl_module: LightningModule) -> None:
        if trainer.global_rank != 0:
            return
        folder = Path(trainer.log_dir or trainer.default_root_dir)
        path = write_predictions(folder / PREDICTIONS_FILE, self._lines)
        print(f"predictions: {len(self._lines)} lines written to {path}", flush=True)
