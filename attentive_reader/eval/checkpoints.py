"""The checkpoints an evaluation reads: each file read once, its reader's answer to every
example of the split in stored order, and what the report records of it (``CheckpointInfo``).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from attentive_reader.common.errors import UserError
from attentive_reader.common.markers import entity_index
from attentive_reader.corpus.records import ClozeExample, Split
from attentive_reader.eval.predictions_file import PredictionLine, prediction_line

if TYPE_CHECKING:
    from attentive_reader.data.entity_block import EntityFit
    from attentive_reader.eval.inference import LoadedCheckpoint


@dataclass(frozen=True)
class CheckpointInfo:
    """What a report records about one evaluated checkpoint.

    Attributes:
        name: its name in the tables (its path; made unique when a path repeats).
        path: the checkpoint file as given.
        sha256: the SHA-256 of the file.
        reader: the reader class (``module.Class``).
        hyper_parameters: the reader's init arguments.
        optimizer: what trained it: ``name``, ``lr`` (resolved), ``weight_decay`` and the
            optimiser's further options.
        max_context_tokens: the context cap the data module applies.
        seconds: the time spent reading the split.
        num_entities: the reader's block of entity ids.
        relabelled: the examples that numbered entities beyond the block, read fitted into
            it (``data/entity_block.py``).
        unanswerable: those of them whose answer the block left out (counted wrong).
    """

    name: str
    path: str
    sha256: str
    reader: str
    hyper_parameters: dict[str, Any]
    optimizer: dict[str, Any]
    max_context_tokens: int | None
    seconds: float
    num_entities: int = 0
    relabelled: int = 0
    unanswerable: int = 0

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "sha256": self.sha256,
            "reader": self.reader,
            "hyper_parameters": dict(self.hyper_parameters),
            "optimizer": dict(self.optimizer),
            "max_context_tokens": self.max_context_tokens,
            "seconds": self.seconds,
            "name": self.name,
            "num_entities": self.num_entities,
            "relabelled": self.relabelled,
            "unanswerable": self.unanswerable,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> CheckpointInfo:
        return cls(**{key: data[key] for key in cls.__dataclass_fields__ if key in data})


def read_checkpoints(
    checkpoints: Sequence[str | Path],
    data: Path,
    split: Split,
    examples: Sequence[ClozeExample],
    batch_size: int,
    device: str,
    taken: set[str],
    progress: Callable[[str], None] | None,
) -> tuple[dict[str, tuple[PredictionLine, ...]], list[CheckpointInfo]]:
    """Each checkpoint's lines (by its unique name; ``taken``: names already used) and infos."""
    lines: dict[str, tuple[PredictionLine, ...]] = {}
    infos: list[CheckpointInfo] = []
    if not checkpoints:
        return lines, infos
    from attentive_reader.eval.inference import resolve_device

    resolved = resolve_device(device)
    for ckpt in checkpoints:
        if progress is not None:
            progress(f"evaluating {ckpt} on {len(examples)} examples ({resolved})")
        name = _unique_name(str(ckpt), taken)
        lines[name], info = _model_predictions(
            ckpt, name, data, split, examples, batch_size, resolved
        )
        infos.append(info)
    return lines, infos


def _model_predictions(
    ckpt: str | Path,
    name: str,
    data: Path,
    split: Split,
    examples: Sequence[ClozeExample],
    batch_size: int,
    device: Any,
) -> tuple[tuple[PredictionLine, ...], CheckpointInfo]:
    """One checkpoint's line for every example, in stored order, and what the report records.

    An example that numbers entities beyond the reader's block is read fitted into it
    (``data/entity_block.py``); its line names the stored markers.

    Raises:
        UserError: if the reader's rows are not the examples, each once, in stored order.
    """
    from attentive_reader.data.entity_block import example_fit
    from attentive_reader.eval.inference import iterate_predictions, load_checkpoint

    loaded = load_checkpoint(ckpt, data, device)  # the file is read here, once
    reader, datamodule = loaded.reader, loaded.datamodule
    started = time.perf_counter()
    predictions: list[PredictionLine] = []
    fits: list[EntityFit] = []
    for _, batch_prediction in iterate_predictions(
        reader, datamodule, split, batch_size=batch_size, device=device
    ):
        for record in batch_prediction.records():
            position = len(predictions)
            if position >= len(examples) or examples[position].id != record.id:
                raise UserError(
                    f"{ckpt}: the reader's data order differs from {data} [{split}] at row "
                    f"{position} (example {record.id}); is it the same dataset?"
                )
            fits.append(example_fit(examples[position], reader.num_entities))
            predictions.append(prediction_line(name, examples[position], record, fits[-1]))
    if len(predictions) != len(examples):
        raise UserError(
            f"{ckpt}: {len(predictions)} predictions for {len(examples)} examples of {split}"
        )
    info = _checkpoint_info(loaded, name, str(ckpt), time.perf_counter() - started)
    unanswerable = sum(
        fit.reader_number(entity_index(example.answer)) is None
        for fit, example in zip(fits, examples)
    )
    info = dataclasses.replace(
        info, relabelled=sum(fit.relabelled for fit in fits), unanswerable=unanswerable
    )
    return tuple(predictions), info


def _checkpoint_info(
    loaded: LoadedCheckpoint, name: str, path: str, seconds: float
) -> CheckpointInfo:
    """What the report records about a checkpoint (``path``: as given) read in ``seconds``."""
    reader = loaded.reader
    return CheckpointInfo(
        name=name,
        path=path,
        sha256=loaded.sha256,
        reader=f"{type(reader).__module__}.{type(reader).__qualname__}",
        hyper_parameters={k: v for k, v in reader.hparams.items() if not k.startswith("_")},
        # What trained the reader (its own arguments, with the learning rate resolved).
        optimizer={
            "name": reader.optimizer_name,
            "lr": reader.lr,
            "weight_decay": reader.weight_decay,
            **reader.optimizer_options,
        },
        max_context_tokens=loaded.datamodule.max_context_tokens,
        seconds=round(seconds, 3),
        num_entities=reader.num_entities,
    )


def _unique_name(name: str, taken: set[str]) -> str:
    candidate, k = name, 2
    while candidate in taken:
        candidate, k = f"{name} ({k})", k + 1
    taken.add(candidate)
    return candidate
