"""The checkpoints an evaluation reads: each file read once, its reader's answer to every
example of the split in stored order, and what the report records of it (``CheckpointInfo``).
An ensemble (``--ensemble``) is one more system: its members' checkpoints, each read once,
checked to read alike (``eval/ensemble.py``), answering by the mean of their probabilities.

With ``eval_modes`` (``--eval-mode``), each checkpoint is one system per mode: the file is read
once, and before each reading of the split the loaded reader's ``eval_mode`` attribute is set
(nothing else changes: the same weights, examples and batches). Every reading of the split
starts from torch's random generators seeded with ``seed`` (and restores them after), so a
sampled mode draws the same selections in every run with the same seed, batch size and device,
whatever the order of the systems.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
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
    from attentive_reader.data.datamodule import ClozeDataModule
    from attentive_reader.data.entity_block import EntityFit
    from attentive_reader.eval.inference import LoadedCheckpoint
    from attentive_reader.models.base import ClozeReader
    from attentive_reader.models.ensemble import Ensemble


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
        members: an ensemble's checkpoints, each as a single one is recorded (their
            ``seconds`` are 0: the ensemble's time is its own); empty for one checkpoint.
            An ensemble's ``path`` joins its members' with `` + ``, its ``sha256`` is the
            SHA-256 of their hashes in order, its ``reader`` the ``Ensemble`` class, and its
            ``hyper_parameters`` and ``optimizer`` are empty.
        eval_mode: the ``eval_mode`` the reader was set to read with (``--eval-mode``);
            ``None``: the one it was saved with (``hyper_parameters`` hold that one).
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
    members: tuple[CheckpointInfo, ...] = ()
    eval_mode: str | None = None

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
            "members": [member.to_json() for member in self.members],
            "eval_mode": self.eval_mode,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> CheckpointInfo:
        fields = {key: data[key] for key in cls.__dataclass_fields__ if key in data}
        fields["members"] = tuple(cls.from_json(m) for m in data.get("members") or ())
        return cls(**fields)


def read_checkpoints(
    checkpoints: Sequence[str | Path],
    data: Path,
    split: Split,
    examples: Sequence[ClozeExample],
    batch_size: int,
    device: str,
    taken: set[str],
    progress: Callable[[str], None] | None,
    ensembles: Sequence[Sequence[str | Path]] = (),
    *,
    eval_modes: Sequence[str] = (),
    seed: int = 0,
) -> tuple[dict[str, tuple[PredictionLine, ...]], list[CheckpointInfo]]:
    """Each checkpoint's (once per mode of ``eval_modes``, named ``CKPT [eval_mode=MODE]``)
    and then each ensemble's lines (by its unique name; ``taken``: names already used) and
    infos; every reading of the split starts from ``seed``.

    Raises:
        UserError: a bad checkpoint, a mode its reader cannot read with, or an ensemble
            whose members read differently.
    """
    lines: dict[str, tuple[PredictionLine, ...]] = {}
    infos: list[CheckpointInfo] = []
    if not checkpoints and not ensembles:
        return lines, infos
    from attentive_reader.eval.inference import load_checkpoint, resolve_device

    resolved = resolve_device(device)
    _check_later_modes(checkpoints, eval_modes)
    # a QuestionProgress (eval/progress.py) also counts the questions as they are read
    reading = getattr(progress, "reading", lambda total: contextlib.nullcontext(None))
    for ckpt in checkpoints:
        loaded = load_checkpoint(ckpt, data, resolved)  # the file is read here, once
        for asked in eval_modes:  # every mode checked before the first is read
            set_eval_mode(loaded.reader, asked, ckpt)
        modes: list[str | None] = [*eval_modes] or [None]
        for mode in modes:
            label = str(ckpt) if mode is None else f"{ckpt} [eval_mode={mode}]"
            if progress is not None:
                progress(f"evaluating {label} on {len(examples)} examples ({resolved})")
            name = _unique_name(label, taken)
            if mode is not None:
                set_eval_mode(loaded.reader, mode, ckpt)
            with reading(len(examples)) as advance:
                lines[name], read = _read_split(
                    loaded.reader, loaded.datamodule, str(ckpt), name, data, split, examples,
                    batch_size, seed, advance,
                )  # fmt: skip
            info = _checkpoint_info(loaded, name, str(ckpt))
            infos.append(dataclasses.replace(info, eval_mode=mode, **read))
    for members in ensembles:
        name = _unique_name(ensemble_name(members), taken)
        if progress is not None:
            progress(f"evaluating {name} on {len(examples)} examples ({resolved})")
        with reading(len(examples)) as advance:
            lines[name], info = _ensemble_predictions(
                members, name, data, split, examples, batch_size, resolved, seed, advance
            )
        infos.append(info)
    return lines, infos


def set_eval_mode(reader: ClozeReader, mode: str, source: str | Path) -> None:
    """Set the loaded ``reader`` to read with ``mode`` (its ``eval_mode`` attribute, which
    checks the mode and chooses its part).

    Raises:
        UserError: naming ``source``, for a reader that reads one way (no ``eval_modes``) or a
            mode it cannot read with.
    """
    if not reader.eval_modes:
        raise UserError(
            f"--eval-mode {mode}: {source} holds a reader that reads one way "
            f"({type(reader).__name__}, no eval_mode); evaluate it without --eval-mode, in a "
            "call of its own"
        )
    try:
        reader.eval_mode = mode  # type: ignore[assignment]
    except ValueError as error:
        raise UserError(f"--eval-mode {mode}: {source}: {error}") from None


def _check_later_modes(checkpoints: Sequence[str | Path], eval_modes: Sequence[str]) -> None:
    """Every mode set on the reader of each checkpoint after the first (mapped from its file,
    not read whole), so that a mistake is told before anything is read; the first is checked
    as it is loaded.

    Raises:
        UserError: as ``set_eval_mode``.
    """
    from attentive_reader.common.checkpoint_file import read_checkpoint
    from attentive_reader.models.loading import reader_from_checkpoint

    for ckpt in list(checkpoints)[1:] if eval_modes else []:
        reader = reader_from_checkpoint(read_checkpoint(ckpt, "cpu", mmap=True), ckpt)
        for mode in eval_modes:
            set_eval_mode(reader, mode, ckpt)


def ensemble_name(members: Sequence[str | Path]) -> str:
    """An ensemble's name in the tables: ``ensemble(a.ckpt, b.ckpt)``, its members as given."""
    return f"ensemble({', '.join(str(member) for member in members)})"


def _ensemble_predictions(
    members: Sequence[str | Path],
    name: str,
    data: Path,
    split: Split,
    examples: Sequence[ClozeExample],
    batch_size: int,
    device: Any,
    seed: int,
    advance: Callable[[int], None] | None = None,
) -> tuple[tuple[PredictionLine, ...], CheckpointInfo]:
    """An ensemble's line for every example, in stored order, and what the report records.

    Raises:
        UserError: a bad member, or members that read differently (``check_members``).
    """
    from attentive_reader.eval.ensemble import MemberData, check_members
    from attentive_reader.eval.inference import load_checkpoint
    from attentive_reader.models.ensemble import Ensemble

    if not members:
        raise UserError("--ensemble needs at least one checkpoint")
    loaded = [load_checkpoint(member, data, device) for member in members]  # each read once
    check_members([MemberData.of_loaded(one, path) for one, path in zip(loaded, members)])
    ensemble = Ensemble([one.reader for one in loaded])
    predictions, read = _read_split(
        ensemble, loaded[0].datamodule, name, name, data, split, examples, batch_size, seed,
        advance,
    )  # fmt: skip
    member_infos = tuple(
        _checkpoint_info(one, str(path), str(path)) for one, path in zip(loaded, members)
    )
    info = CheckpointInfo(
        name=name,
        path=" + ".join(str(member) for member in members),
        sha256=hashlib.sha256("".join(m.sha256 for m in member_infos).encode()).hexdigest(),
        reader=f"{Ensemble.__module__}.{Ensemble.__qualname__}",
        hyper_parameters={},
        optimizer={},
        max_context_tokens=loaded[0].datamodule.max_context_tokens,
        num_entities=ensemble.num_entities,
        members=member_infos,
        **read,
    )
    return predictions, info


def _read_split(
    reader: ClozeReader | Ensemble,
    datamodule: ClozeDataModule,
    source: str,
    name: str,
    data: Path,
    split: Split,
    examples: Sequence[ClozeExample],
    batch_size: int,
    seed: int,
    advance: Callable[[int], None] | None = None,
) -> tuple[tuple[PredictionLine, ...], dict[str, Any]]:
    """A reader's line for every example, in stored order, and the report's counts of the
    reading (``seconds``, ``relabelled``, ``unanswerable``); ``source`` names the reader in
    errors, ``name`` in the lines; ``advance(n)`` is told each batch's ``n`` questions.

    torch's random generators are seeded with ``seed`` for the reading and restored after
    (a sampled ``eval_mode`` draws its selections from them).

    An example that numbers entities beyond the reader's block is read fitted into it
    (``data/entity_block.py``); its line names the stored markers.

    Raises:
        UserError: if the reader's rows are not the examples, each once, in stored order.
    """
    import torch

    from attentive_reader.data.entity_block import example_fit
    from attentive_reader.eval.inference import iterate_predictions

    started = time.perf_counter()
    predictions: list[PredictionLine] = []
    fits: list[EntityFit] = []
    device = next(reader.parameters()).device
    with torch.random.fork_rng(devices=[device] if device.type == "cuda" else []):
        torch.manual_seed(seed)
        for _, batch_prediction in iterate_predictions(
            reader, datamodule, split, batch_size=batch_size, device=device
        ):
            for record in batch_prediction.records():
                position = len(predictions)
                if position >= len(examples) or examples[position].id != record.id:
                    raise UserError(
                        f"{source}: the reader's data order differs from {data} [{split}] at "
                        f"row {position} (example {record.id}); is it the same dataset?"
                    )
                fits.append(example_fit(examples[position], reader.num_entities))
                predictions.append(prediction_line(name, examples[position], record, fits[-1]))
            if advance is not None:
                advance(len(batch_prediction.ids))
    if len(predictions) != len(examples):
        raise UserError(
            f"{source}: {len(predictions)} predictions for {len(examples)} examples of {split}"
        )
    unanswerable = sum(
        fit.reader_number(entity_index(example.answer)) is None
        for fit, example in zip(fits, examples)
    )
    return tuple(predictions), {
        "seconds": round(time.perf_counter() - started, 3),
        "relabelled": sum(fit.relabelled for fit in fits),
        "unanswerable": unanswerable,
    }


def _checkpoint_info(loaded: LoadedCheckpoint, name: str, path: str) -> CheckpointInfo:
    """What the report records about a checkpoint (``path``: as given), before reading."""
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
        seconds=0.0,
        num_entities=reader.num_entities,
    )


def _unique_name(name: str, taken: set[str]) -> str:
    candidate, k = name, 2
    while candidate in taken:
        candidate, k = f"{name} ({k})", k + 1
    taken.add(candidate)
    return candidate
