"""``evaluate(...) -> Report``: exact cloze accuracy of checkpoints beside the paper's baselines.

Every example of the split is read exactly once, in one process, in stored order, by every
checkpoint (whatever the batch size); the non-neural baselines are computed from the same
examples (expected accuracy under a random tie-break, and with ties broken by first
occurrence). Each checkpoint file is read once (its hash, reader and vocabulary come from the
same bytes). The ``Report`` holds every figure and the inputs; ``Report.to_json()`` is the
JSON report of ``attentive-reader evaluate --out``, ``Report.markdown()`` its tables and
``Report.write_predictions`` the per-example file of ``--predictions``.
"""

from __future__ import annotations

import datetime
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from attentive_reader.common.checkpoint_file import check_checkpoint_file
from attentive_reader.common.checks import check_positive_options
from attentive_reader.common.errors import UserError
from attentive_reader.common.fileio import write_json_atomic
from attentive_reader.corpus.baselines import BaselineName, BaselineScores, score_baselines
from attentive_reader.corpus.manifest import read_manifest
from attentive_reader.corpus.records import SPLITS, ClozeExample, Split, load_split
from attentive_reader.eval.checkpoints import CheckpointInfo, read_checkpoints
from attentive_reader.eval.predictions_file import PredictionLine, write_predictions
from attentive_reader.eval.report import (
    DEFAULT_CANDIDATE_EDGES,
    DEFAULT_LENGTH_EDGES,
    Accuracy,
    Reading,
    SystemKind,
    build_report,
    markdown_tables,
)
from attentive_reader.version import __version__


@dataclass(frozen=True)
class SystemResult:
    """One system's figures in a report.

    Attributes:
        name: the baseline's name or the checkpoint's name in the tables.
        kind: ``"baseline"`` or ``"model"``.
        overall: accuracy over every example (a baseline's: expected under a random
            tie-break).
        by_context_length: bucket label -> accuracy.
        by_num_candidates: bucket label -> accuracy.
        first_occurrence: a baseline's accuracy with ties broken by first occurrence
            (``None`` for a model).
        reading: the tokens it read per question and the document tokens it was given
            (means; ``None`` in a report made before they were counted).
    """

    name: str
    kind: SystemKind
    overall: Accuracy
    by_context_length: dict[str, Accuracy]
    by_num_candidates: dict[str, Accuracy]
    first_occurrence: Accuracy | None = None
    reading: Reading | None = None

    def to_json(self) -> dict[str, Any]:
        data = {
            "name": self.name,
            "kind": self.kind,
            "overall": self.overall.to_dict(),
            "by_context_length": {k: v.to_dict() for k, v in self.by_context_length.items()},
            "by_num_candidates": {k: v.to_dict() for k, v in self.by_num_candidates.items()},
        }
        if self.first_occurrence is not None:
            data["first_occurrence"] = self.first_occurrence.to_dict()
        if self.reading is not None:
            data["reading"] = self.reading.to_dict()
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> SystemResult:
        first, reading = data.get("first_occurrence"), data.get("reading")
        return cls(
            name=data["name"],
            kind=data["kind"],
            overall=Accuracy(**data["overall"]),
            by_context_length={k: Accuracy(**v) for k, v in data["by_context_length"].items()},
            by_num_candidates={k: Accuracy(**v) for k, v in data["by_num_candidates"].items()},
            first_occurrence=None if first is None else Accuracy(**first),
            reading=None if reading is None else Reading(**reading),
        )


@dataclass(frozen=True)
class EvaluationOptions:
    """The options a report was made with.

    Attributes:
        batch_size: examples per forward pass.
        device: the device asked for (``auto``, ``cpu``, ``cuda``, ``cuda:N``).
        max_penalty: the word-distance baseline's largest cost of one query word.
        window: the word-distance baseline's window around the placeholder (``None``: all).
        baseline_seconds: the time the baselines took.
        seed: the seed every reading of the split starts from (a sampled ``eval_mode``'s
            draws).
        eval_modes: the modes each checkpoint was read in (``--eval-mode``; empty: each in
            its own).
    """

    batch_size: int = 64
    device: str = "auto"
    max_penalty: int = 8
    window: int | None = None
    baseline_seconds: float = 0.0
    seed: int = 0
    eval_modes: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "batch_size": self.batch_size,
            "device": self.device,
            "word_distance": {"max_penalty": self.max_penalty, "window": self.window},
            "baseline_seconds": self.baseline_seconds,
            "seed": self.seed,
            "eval_modes": list(self.eval_modes),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> EvaluationOptions:
        distance = data.get("word_distance", {})
        return cls(
            batch_size=data["batch_size"],
            device=data["device"],
            max_penalty=distance.get("max_penalty", 8),
            window=distance.get("window"),
            baseline_seconds=data.get("baseline_seconds", 0.0),
            seed=data.get("seed", 0),
            eval_modes=tuple(data.get("eval_modes", ())),
        )


@dataclass(frozen=True)
class Report:
    """An evaluation report: the figures of the baselines and the checkpoints on one split.

    Attributes:
        tool: what made it (``attentive-reader <version> evaluate``).
        created: when (ISO 8601, UTC).
        data: the dataset directory (absolute).
        split: the evaluated split.
        manifest: the dataset's ``manifest.json`` (``None`` when it has none).
        checkpoints: the evaluated checkpoints, in the order given.
        options: the options used.
        num_examples: the number of examples, each read once by each system.
        length_edges: lower bounds of the context-length buckets (tokens).
        candidate_edges: lower bounds of the number-of-candidates buckets.
        systems: the baselines first, then the checkpoints.
        predictions: system name -> the predicted marker of each example, in stored order
            (a baseline's with ties broken by first occurrence; not part of the JSON report).
        lines: checkpoint name -> its per-example lines, in stored order (what
            ``write_predictions`` writes; not part of the JSON report).
    """

    tool: str
    created: str
    data: str
    split: str
    manifest: dict[str, Any] | None
    checkpoints: tuple[CheckpointInfo, ...]
    options: EvaluationOptions
    num_examples: int
    length_edges: tuple[int, ...]
    candidate_edges: tuple[int, ...]
    systems: tuple[SystemResult, ...]
    predictions: dict[str, tuple[str, ...]] = field(default_factory=dict, compare=False)
    lines: dict[str, tuple[PredictionLine, ...]] = field(default_factory=dict, compare=False)

    def system(self, name: str) -> SystemResult:
        """The figures of the system called ``name``.

        Raises:
            KeyError: naming the systems the report holds.
        """
        for system in self.systems:
            if system.name == name:
                return system
        raise KeyError(f"no system {name!r}; the report has {[s.name for s in self.systems]}")

    def to_json(self) -> dict[str, Any]:
        """The JSON report (the keys of ``attentive-reader evaluate --out``)."""
        return {
            "tool": self.tool,
            "created": self.created,
            "inputs": {
                "data": self.data,
                "split": self.split,
                "manifest": self.manifest,
                "checkpoints": [c.to_json() for c in self.checkpoints],
                "options": self.options.to_json(),
            },
            "num_examples": self.num_examples,
            "buckets": {
                "context_length": {"unit": "tokens", "lower_bounds": list(self.length_edges)},
                "num_candidates": {
                    "unit": "entities",
                    "lower_bounds": list(self.candidate_edges),
                },
            },
            "systems": [s.to_json() for s in self.systems],
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Report:
        """A report read back from its JSON (``predictions`` are not stored there)."""
        inputs, buckets = data["inputs"], data["buckets"]
        return cls(
            tool=data["tool"],
            created=data["created"],
            data=inputs["data"],
            split=inputs["split"],
            manifest=inputs.get("manifest"),
            checkpoints=tuple(CheckpointInfo.from_json(c) for c in inputs["checkpoints"]),
            options=EvaluationOptions.from_json(inputs["options"]),
            num_examples=data["num_examples"],
            length_edges=tuple(buckets["context_length"]["lower_bounds"]),
            candidate_edges=tuple(buckets["num_candidates"]["lower_bounds"]),
            systems=tuple(SystemResult.from_json(s) for s in data["systems"]),
        )

    def markdown(self) -> str:
        """The overall table, then one table per breakdown (accuracies in percent)."""
        return markdown_tables(self.to_json())

    def write(self, path: str | Path) -> Path:
        """Write the JSON report atomically (a full disk never leaves half a report)."""
        path = Path(path)
        write_json_atomic(path, self.to_json())
        return path

    def write_predictions(self, path: str | Path) -> Path:
        """Write the per-example JSON Lines file of ``--predictions``, atomically: one line
        per checkpoint and example (checkpoints in the order given, examples in stored
        order), each ``PredictionLine.to_json()``.

        Raises:
            UserError: if the report holds no checkpoint (baselines only).
        """
        if not self.lines:
            raise UserError(
                "--predictions needs a checkpoint (--ckpt or --ensemble): the file holds its answers"
            )
        return write_predictions(path, (line for lines in self.lines.values() for line in lines))


def load_examples(data: str | Path, split: Split) -> list[ClozeExample]:
    """The stored examples of ``split`` in stored order.

    Raises:
        UserError: if ``data`` is not a processed dataset or lacks the split.
    """
    return [ClozeExample.from_row(row) for row in load_split(Path(data), split)]


def evaluate(
    data: str | Path,
    checkpoints: Sequence[str | Path] = (),
    *,
    split: Split = "test",
    batch_size: int = 64,
    device: str = "auto",
    length_edges: Sequence[int] = DEFAULT_LENGTH_EDGES,
    candidate_edges: Sequence[int] = DEFAULT_CANDIDATE_EDGES,
    max_penalty: int = 8,
    window: int | None = None,
    progress: Callable[[str], None] | None = None,
    ensembles: Sequence[Sequence[str | Path]] = (),
    eval_modes: Sequence[str] = (),
    seed: int = 0,
) -> Report:
    """Evaluate checkpoints and ensembles (and the paper's baselines) on every example of a
    split.

    Args:
        data: a processed dataset directory.
        checkpoints: reader checkpoints, each evaluated on its own; none (and no ensemble)
            gives a baselines-only report.
        split: ``train``, ``validation`` or ``test``.
        batch_size: examples per forward pass.
        device: ``auto`` (a GPU when there is one), ``cpu``, ``cuda`` or ``cuda:N``.
        length_edges: ascending lower bounds of the context-length buckets (tokens).
        candidate_edges: ascending lower bounds of the number-of-candidates buckets.
        max_penalty: word-distance baseline: the most one query word can cost (paper: 8).
        window: word-distance baseline: count only query words this close to the
            placeholder (``None``: every query word, as in the paper).
        progress: called with a line before each checkpoint is read (e.g. ``print``); a
            ``QuestionProgress`` (``eval/progress.py``) also shows the questions read.
        ensembles: lists of checkpoints of one vocabulary, each one more system (after the
            checkpoints) answering by the mean of its readers' probabilities.
        eval_modes: read each checkpoint once per mode (its reader's ``eval_mode``, set after
            loading), each a system ``CKPT [eval_mode=MODE]`` (ensembles: their own modes).
        seed: every reading of the split starts from torch's generators seeded with it.

    Returns:
        The report; ``report.to_json()`` is what ``attentive-reader evaluate --out`` writes.

    Raises:
        UserError: for a bad option, a missing checkpoint, a dataset that is not one or
            an empty split, a checkpoint whose data order differs from the dataset's, a mode
            its reader cannot read with, or an ensemble whose checkpoints read differently.
    """
    _check_options(split, batch_size, max_penalty, length_edges, candidate_edges)
    _check_checkpoints(checkpoints, ensembles, eval_modes, seed)
    data = Path(data)
    examples = load_examples(data, split)
    if not examples:
        raise UserError(f"{data} [{split}] holds no examples")
    baselines, baseline_seconds = _timed_baselines(examples, max_penalty, window)
    lines, infos = read_checkpoints(
        checkpoints, data, split, examples, batch_size, device, set(baselines), progress,
        ensembles, eval_modes=eval_modes, seed=seed,
    )  # fmt: skip
    models = {name: tuple(line.prediction for line in rows) for name, rows in lines.items()}
    reading = {name: read for name, rows in lines.items() if (read := _reading(rows))}
    edges = {"length_edges": length_edges, "candidate_edges": candidate_edges}
    figures = build_report(examples, models, baselines=baselines, reading=reading, **edges)
    return Report(
        tool=f"attentive-reader {__version__} evaluate",
        created=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        data=str(data.resolve()),
        split=split,
        manifest=read_manifest(data),
        checkpoints=tuple(infos),
        options=EvaluationOptions(
            batch_size, device, max_penalty, window, baseline_seconds, seed, tuple(eval_modes)
        ),
        num_examples=figures["num_examples"],
        length_edges=tuple(length_edges),
        candidate_edges=tuple(candidate_edges),
        systems=tuple(SystemResult.from_json(s) for s in figures["systems"]),
        predictions={**{name: s.first_occurrence for name, s in baselines.items()}, **models},
        lines=lines,
    )


def _timed_baselines(
    examples: Sequence[ClozeExample], max_penalty: int, window: int | None
) -> tuple[dict[BaselineName, BaselineScores], float]:
    """The baselines' scores (``score_baselines``) and the seconds they took."""
    started = time.perf_counter()
    baselines = score_baselines(examples, max_penalty=max_penalty, window=window)
    return baselines, round(time.perf_counter() - started, 3)


def _reading(lines: Sequence[PredictionLine]) -> Reading | None:
    """What a system read per question, from its lines (``None`` where a line does not say)."""
    read = [line.tokens_read for line in lines]
    given = [line.document_tokens for line in lines]
    if not lines or None in read or None in given:
        return None
    return Reading.of(read, given)  # type: ignore[arg-type]


def _check_checkpoints(
    checkpoints: Sequence[str | Path],
    ensembles: Sequence[Sequence[str | Path]],
    eval_modes: Sequence[str],
    seed: int,
) -> None:
    """Raise a ``UserError`` naming the first missing or unreadable checkpoint or an empty
    ensemble (``check_checkpoint_file``: without loading torch), for ``--eval-mode`` without
    a checkpoint or a mode given twice, or a negative seed (whether each reader has the mode
    is told once it is loaded)."""
    for ckpt in [*checkpoints, *(member for members in ensembles for member in members)]:
        check_checkpoint_file(ckpt)
    if any(not members for members in ensembles):
        raise UserError("an ensemble needs at least one checkpoint")
    if eval_modes and not checkpoints:
        raise UserError("--eval-mode sets how each --ckpt reads; give a checkpoint (--ckpt)")
    twice = sorted({mode for mode in eval_modes if list(eval_modes).count(mode) > 1})
    if twice:
        raise UserError(f"--eval-mode names {', '.join(twice)} twice; name each mode once")
    if seed < 0:
        raise UserError(f"--seed must be >= 0, got {seed}")


def _check_options(
    split: str,
    batch_size: int,
    max_penalty: int,
    length_edges: Sequence[int],
    candidate_edges: Sequence[int],
) -> None:
    """Raise a ``UserError`` naming the first bad option of ``evaluate``."""
    if split not in SPLITS:
        raise UserError(f"split must be one of {', '.join(SPLITS)}, got {split!r}")
    check_positive_options(batch_size=batch_size, max_penalty=max_penalty)
    for flag, edges in (
        ("--length-buckets", length_edges),
        ("--candidate-buckets", candidate_edges),
    ):
        if not edges or any(b <= a for a, b in zip(edges, edges[1:])):
            raise UserError(f"{flag} must be strictly ascending, got {list(edges)}")
