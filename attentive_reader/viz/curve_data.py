"""The figures ``attentive-reader curves`` draws, read from the files that hold them.

Three kinds of file:

- a training run's log folder as the CSV logger writes it (``runs/NAME/version_N/metrics.csv``):
  validation accuracy, mean training loss and wall time per epoch; a run resumed from its
  ``last.ckpt`` writes a new version, and each epoch is taken from the latest version that
  logged it;
- ``attentive-reader evaluate --out`` files, one per checkpoint trained on a share of the
  training stories: test accuracy over training-set size;
- the JSON that ``attentive-reader learning --output`` writes: learning curves of shipped
  configs on a (generated) corpus;
- ``attentive-reader evaluate --out`` files of any number of systems on the same questions:
  accuracy against the document tokens each system read per question.

A file a user can get wrong stops with one ``UserError`` line that names it and says what to do.
"""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from attentive_reader.common.errors import UserError

WALL_METRIC = "train_wall_s"
"""The wall-time column the training commands log (``wall_clock.METRIC``, named here because
that module loads Lightning and the viz modules do not)."""

COLUMNS = {"val_acc": "val_acc", "train_loss": "train_loss_epoch", "wall_s": WALL_METRIC}
"""A run's figure -> the ``metrics.csv`` column it is read from."""

SizePoint = tuple[float, float, float, float]
"""(share of the training stories, test accuracy, its interval's low and high end)."""


@dataclass(frozen=True)
class RunCurve:
    """One training run's figures at the end of each epoch (all its versions joined).

    Attributes:
        name: the run's name (its folder's).
        val_acc: validation accuracy per epoch.
        train_loss: mean training loss per epoch.
        wall_s: the run's wall time at each epoch's end, in seconds (empty where not logged).
    """

    name: str
    val_acc: list[float]
    train_loss: list[float]
    wall_s: list[float]


def _versions(folder: Path) -> list[Path]:
    def number(path: Path) -> int:
        suffix = path.parent.name.removeprefix("version_")
        return int(suffix) if suffix.isdigit() else -1

    return sorted(folder.glob("version_*/metrics.csv"), key=number)


def read_run(folder: Path, name: str | None = None) -> RunCurve:
    """The figures of the run logged under ``folder`` (``runs/NAME``, or one ``version_N``).

    Raises:
        UserError: as ``read_columns``.
    """
    return RunCurve(name or folder.name, **read_columns(folder, COLUMNS))


def read_columns(folder: Path, columns: Mapping[str, str]) -> dict[str, list[float]]:
    """Each figure's value at the end of each epoch of the run logged under ``folder``, its
    versions joined (the latest version that logged an epoch wins).

    Args:
        folder: the run's log folder (``runs/NAME``, or one ``version_N``).
        columns: figure name -> the ``metrics.csv`` column it is read from.

    Raises:
        UserError: if no ``metrics.csv`` is there, or one is not the CSV logger's.
    """
    files = [folder / "metrics.csv"] if (folder / "metrics.csv").is_file() else _versions(folder)
    if not files:
        raise _no_metrics(folder)
    per_epoch: dict[str, dict[int, float]] = {key: {} for key in columns}
    for metrics in files:
        for line, row in _rows(metrics):
            logged = [key for key, column in columns.items() if row.get(column)]
            epoch = int(_number(row, "epoch", metrics, line)) if logged else 0
            for key in logged:
                per_epoch[key][epoch] = _number(row, columns[key], metrics, line)
    return {key: [values[k] for k in sorted(values)] for key, values in per_epoch.items()}


def _rows(metrics: Path) -> list[tuple[int, dict[str, str]]]:
    """(line number, row) of a ``metrics.csv``, which must have an ``epoch`` column."""
    try:
        with metrics.open(newline="", encoding="utf-8") as handle:
            reader = csv.DictReader(handle)
            rows = [(reader.line_num, row) for row in reader]
            fields = reader.fieldnames or []
    except (OSError, UnicodeDecodeError, csv.Error) as error:
        raise UserError(f"{metrics}: cannot read it ({error})") from None
    if "epoch" not in fields:
        raise UserError(
            f"{metrics}: no 'epoch' column: not a metrics file of Lightning's CSV logger"
        )
    return rows


def _number(row: dict[str, str], column: str, metrics: Path, line: int) -> float:
    text = row.get(column) or ""
    try:
        value = float(text)
    except ValueError:
        raise UserError(
            f"{metrics}, line {line}: {column} is {text!r}, not a number: is the file whole?"
        ) from None
    return value


def run_folders(path: Path) -> list[Path]:
    """The runs ``path`` names: itself when it holds ``version_N/metrics.csv`` (or is a
    version folder), else each of its folders that does (a folder of runs, in name order).

    Raises:
        UserError: if ``path`` is no folder, or holds no run.
    """
    if not path.is_dir():
        raise UserError(
            f"{path}: no such folder; give a run's log folder (runs/NAME, holding "
            "version_N/metrics.csv) or a folder of runs"
        )
    if (path / "metrics.csv").is_file() or _versions(path):
        return [path]
    runs = [folder for folder in sorted(path.iterdir()) if folder.is_dir() and _versions(folder)]
    if not runs:
        raise _no_metrics(path)
    return runs


def _no_metrics(folder: Path) -> UserError:
    return UserError(
        f"{folder}: no version_N/metrics.csv in it: give the log folder of a run trained "
        "with the CSV logger (a real-news config, or --config configs/logger/csv.yaml)"
    )


def read_runs(paths: Sequence[Path]) -> tuple[list[RunCurve], list[str]]:
    """Every run the paths name (``run_folders``) with at least one validated epoch, and a
    note for each run of a folder of runs that has none yet (a run named on its own must
    have one). A name given twice is told apart by its path.

    Raises:
        UserError: as ``run_folders`` and ``read_run``; if a run named on its own, or every
            run, has no validated epoch.
    """
    runs: list[RunCurve] = []
    notes: list[str] = []
    found = [(path, run_folders(path)) for path in paths]
    names = [folder.name for _, folders in found for folder in folders]
    for path, folders in found:
        for folder in folders:
            clash = names.count(folder.name) > 1
            run = read_run(folder, str(folder) if clash else None)
            if run.val_acc:
                runs.append(run)
            elif folders == [path]:
                raise UserError(
                    f"{folder}: no val_acc in its metrics.csv yet: the run has not finished "
                    "a validation epoch"
                )
            else:
                notes.append(f"{folder}: no validated epoch yet, left out")
    if not runs:
        raise UserError(f"{', '.join(map(str, paths))}: no run has validated an epoch yet")
    return runs, notes


def validation_baselines(data: str | Path) -> dict[str, float]:
    """The paper's non-neural baselines on the validation split of ``data``: expected accuracy
    under a random tie-break, as ``attentive-reader evaluate`` reports them.

    Raises:
        UserError: if ``data`` is not a processed dataset.
    """
    from attentive_reader.corpus.baselines import score_baselines
    from attentive_reader.eval.evaluation import load_examples

    scores = score_baselines(load_examples(data, "validation"))
    return {name: result.accuracy for name, result in scores.items()}


def _json(path: Path, what: str) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except OSError as error:
        raise UserError(f"{path}: cannot read it ({error.strerror}); give {what}") from None
    except ValueError as error:
        raise UserError(f"{path}: not JSON ({error}); give {what}") from None


def read_evaluation(path: Path) -> tuple[dict[str, float], dict[str, float], int]:
    """The one reader's overall figures, the baselines and the number of questions of an
    ``attentive-reader evaluate --out`` file.

    Raises:
        UserError: if the file cannot be read, is not such a file, or holds several readers.
    """
    what = "an `attentive-reader evaluate --out` file of one checkpoint"
    result = _json(path, what)
    try:
        systems = result["systems"]
        readers = [s["overall"] for s in systems if s["kind"] != "baseline"]
        base = {
            s["name"]: float(s["overall"]["accuracy"]) for s in systems if s["kind"] == "baseline"
        }
        n = int(result["num_examples"])
        if len(readers) != 1:
            raise UserError(
                f"{path}: holds {len(readers)} checkpoints' results; evaluate one checkpoint "
                "per file"
            )
        overall = {key: float(readers[0][key]) for key in ("accuracy", "ci_low", "ci_high")}
    except (KeyError, TypeError, ValueError) as error:
        raise UserError(f"{path}: not {what} ({type(error).__name__}: {error})") from None
    return overall, base, n


@dataclass(frozen=True)
class SizeCurves:
    """Test accuracy over training-set size.

    Attributes:
        readers: reader name -> its points, by share.
        baselines: baseline name -> accuracy on the test questions every point shares.
        questions: the number of test questions.
    """

    readers: dict[str, list[SizePoint]]
    baselines: dict[str, float]
    questions: int


def _share(name: str, share_text: str, file: str) -> float:
    try:
        share = float(share_text)
    except ValueError:
        share = math.nan
    if not 0.0 < share <= 1.0:
        raise UserError(
            f"--size {name!r} {share_text} {file}: the share must be a number in (0, 1], "
            "e.g. 0.25 for a quarter of the training stories"
        )
    return share


def _check_same_questions(
    file: str | Path,
    n: int,
    base: Mapping[str, float],
    first: tuple[Path, Mapping[str, float], int],
    what: str = "test questions",
) -> None:
    """Raise a ``UserError`` if a file of ``n`` questions and these baselines holds other
    questions than ``first`` (its path, baselines and count)."""
    if (
        n != first[2]
        or base.keys() != first[1].keys()
        or any(abs(base[k] - first[1][k]) > 1e-9 for k in base)
    ):
        raise UserError(
            f"{file}: its {what} differ from those of {first[0]} ({n} against {first[2]} "
            "questions, or other baselines): evaluate every checkpoint on the same dataset "
            "and split"
        )


def read_size_points(points: Sequence[tuple[str, str, str]]) -> SizeCurves:
    """Each reader's points from ``(reader, share, evaluate --out file)`` triples; every file
    must hold one checkpoint's results on the same test questions.

    Raises:
        UserError: as ``read_evaluation``; for a share outside (0, 1], a point given twice,
            or a file of other questions (another count or other baselines).
    """
    readers: dict[str, list[SizePoint]] = {}
    shared: tuple[Path, dict[str, float], int] | None = None
    for name, share_text, file in points:
        share = _share(name, share_text, file)
        overall, base, n = read_evaluation(Path(file))
        if shared is None:
            shared = (Path(file), base, n)
        else:
            _check_same_questions(file, n, base, shared)
        if any(point[0] == share for point in readers.get(name, [])):
            raise UserError(f"--size {name!r} {share_text}: given twice for this reader")
        point = (share, overall["accuracy"], overall["ci_low"], overall["ci_high"])
        readers.setdefault(name, []).append(point)
    if shared is None:
        raise UserError("no --size point given")
    return SizeCurves({k: sorted(v) for k, v in readers.items()}, shared[1], shared[2])


@dataclass(frozen=True)
class ReadingPoint:
    """One system of an ``evaluate --out`` file: its accuracy and what it read.

    Attributes:
        name: the system's name (its checkpoint's, with ``[eval_mode=MODE]``; the file's
            name added where two files hold the same name).
        tokens_read: the document tokens it read per question (mean).
        document_tokens: the document tokens it was given per question (mean).
        accuracy: its accuracy, and the low and high end of its Wilson 95% interval.
    """

    name: str
    tokens_read: float
    document_tokens: float
    accuracy: float
    ci_low: float
    ci_high: float


@dataclass(frozen=True)
class ReadingCurves:
    """Accuracy against the tokens read, of every checkpoint of some ``evaluate --out`` files.

    Attributes:
        points: one per checkpoint (or mode of one), in the order of the files.
        baselines: baseline name -> accuracy on the questions every file shares.
        document_tokens: the stored documents' mean length in tokens (what a baseline and an
            uncapped soft reader read).
        questions: the number of questions.
        split: the split they come from.
    """

    points: list[ReadingPoint]
    baselines: dict[str, float]
    document_tokens: float
    questions: int
    split: str


EVALUATE_FILE = "an `attentive-reader evaluate --out` file"


def _reading_systems(path: Path) -> tuple[list[ReadingPoint], dict[str, float], float, int, str]:
    """The checkpoints' points, the baselines, the mean document length, the number of
    questions and the split of one ``evaluate --out`` file.

    Raises:
        UserError: if the file cannot be read, is not such a file, holds no checkpoint, or
            was written before ``evaluate`` counted the tokens read.
    """
    result = _json(path, EVALUATE_FILE)
    try:
        systems = result["systems"]
        points = []
        for system in systems:
            if system["kind"] == "baseline":
                continue
            if "reading" not in system:
                raise UserError(
                    f"{path}: {system['name']} has no tokens read: the report was written "
                    "before evaluate counted them; evaluate the checkpoint again"
                )
            overall, read = system["overall"], system["reading"]
            points.append(
                ReadingPoint(
                    system["name"],
                    float(read["tokens_read"]),
                    float(read["document_tokens"]),
                    *(float(overall[key]) for key in ("accuracy", "ci_low", "ci_high")),
                )
            )
        baselines = [s for s in systems if s["kind"] == "baseline"]
        base = {s["name"]: float(s["overall"]["accuracy"]) for s in baselines}
        lengths = [float(s["reading"]["document_tokens"]) for s in baselines if "reading" in s]
        n, split = int(result["num_examples"]), str(result["inputs"]["split"])
    except (KeyError, TypeError, ValueError) as error:
        raise UserError(f"{path}: not {EVALUATE_FILE} ({type(error).__name__}: {error})") from None
    if not points:
        raise UserError(f"{path}: holds no checkpoint's results; evaluate with --ckpt")
    document = lengths[0] if lengths else max(point.document_tokens for point in points)
    return points, base, document, n, split


def read_reading(paths: Sequence[str | Path]) -> ReadingCurves:
    """Every checkpoint's accuracy and tokens read, from ``evaluate --out`` files of the
    same questions; a name that two files hold gets the file's name added.

    Raises:
        UserError: as ``_reading_systems``; for a file given twice, or files of other
            questions (another split, count or other baselines).
    """
    if not paths:
        raise UserError("no --reading file given")
    found: list[tuple[Path, list[ReadingPoint]]] = []
    first: tuple[Path, dict[str, float], int] | None = None
    for file in map(Path, paths):
        if any(file.resolve() == seen.resolve() for seen, _ in found):
            raise UserError(f"--reading {file}: given twice")
        points, base, document, n, split = _reading_systems(file)
        if first is None:
            first, shared = (file, base, n), (document, split)
        elif split != shared[1]:
            raise UserError(
                f"{file}: its questions are of the {split} split, those of {first[0]} of "
                f"{shared[1]}: evaluate every checkpoint on the same dataset and split"
            )
        else:
            _check_same_questions(file, n, base, first, "questions")
        found.append((file, points))
    assert first is not None
    names = [point.name for _, points in found for point in points]
    points = [
        replace(point, name=f"{point.name} ({file.name})") if names.count(point.name) > 1 else point
        for file, file_points in found
        for point in file_points
    ]
    return ReadingCurves(points, first[1], shared[0], first[2], shared[1])


LEARNING_PANELS = {"readers": "Shipped configs", "plateau": "Answer layers (attentive_reader.yaml)"}
"""The tables of a learning-curves record -> their titles."""


@dataclass(frozen=True)
class LearningCurves:
    """What ``attentive-reader learning --output`` wrote.

    Attributes:
        panels: table title -> run name -> the run's figures (``val_acc`` per epoch,
            ``seconds``, and for the glimpse readers the tokens they read).
        baselines: baseline name -> accuracy on the same validation split.
        epochs: the epochs each run was asked for.
        corpus: what the curves were trained on, in a few words.
        sizes: reader -> its runs on training sets of several sizes (``learning --sizes``),
            each run's figures with ``questions`` (the training questions it had), by size.
    """

    panels: dict[str, dict[str, dict[str, Any]]]
    baselines: dict[str, float]
    epochs: int
    corpus: str
    sizes: dict[str, list[dict[str, Any]]] = field(default_factory=dict)

    def size_runs(self) -> dict[str, dict[str, Any]]:
        """Every ``learning --sizes`` run by name, ``READER, N questions``, reader by reader."""
        return {
            f"{reader}, {run['questions']:,} questions": run
            for reader, runs in self.sizes.items()
            for run in runs
        }


LEARNING_FILE = "the JSON file of `attentive-reader learning --output`"


def read_learning(path: Path) -> LearningCurves:
    """The learning curves of an ``attentive-reader learning --output`` file.

    Raises:
        UserError: if the file cannot be read or is not such a file.
    """
    return learning_record(_json(path, LEARNING_FILE), str(path))


def learning_record(record: Any, source: str) -> LearningCurves:
    """The learning curves of a record as ``attentive-reader learning`` makes it.

    Args:
        record: the record (what its ``--output`` writes, read).
        source: where the record comes from, for the error message.

    Raises:
        UserError: if the record lacks a field or holds no validated epoch.
    """
    try:
        panels = {title: dict(record[key]) for key, title in LEARNING_PANELS.items()}
        for runs in panels.values():
            for run in runs.values():
                run["val_acc"] = [float(a) for a in run["val_acc"]]
        sizes = {
            reader: sorted((dict(run) for run in runs), key=lambda run: int(run["questions"]))
            for reader, runs in record.get("sizes", {}).items()
        }
        for runs in sizes.values():
            for run in runs:
                run["val_acc"] = [float(a) for a in run["val_acc"]]
                run["questions"] = int(run["questions"])
        baselines = {name: float(value) for name, value in record["baselines"].items()}
        epochs = int(record["epochs"])
        curves = LearningCurves(panels, baselines, epochs, _corpus(record), sizes)
    except (KeyError, TypeError, ValueError, AttributeError) as error:
        raise UserError(
            f"{source}: not {LEARNING_FILE} ({type(error).__name__}: {error})"
        ) from None
    every = [run for runs in panels.values() for run in runs.values()]
    if not any(run["val_acc"] for run in every + [r for rs in sizes.values() for r in rs]):
        raise UserError(f"{source}: no run with a validated epoch in it")
    return curves


def _corpus(record: dict[str, Any]) -> str:
    """What the curves were trained on, in a few words."""
    generated = record.get("generated")
    ids = record.get("num_entities") or "the data's own"
    if generated:
        corpus = (
            f"{generated['stories']} {generated['shape']} synthetic stories "
            f"(seed {generated['seed']})"
        )
    else:
        corpus = Path(record["data"]).name
    return f"{corpus}, {ids} permuted entity ids"
