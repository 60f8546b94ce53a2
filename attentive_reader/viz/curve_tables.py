"""The tables beside the curves: Markdown for the terminal, and a ``.md`` or ``.csv`` file.

One builder per kind of curve (``runs_table``, ``size_table``, ``learning_tables``,
``reading_table``), each over
the records of ``curve_data``; the baselines are rows of their own, after the runs.
"""

from __future__ import annotations

import csv
import io
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from attentive_reader.common.errors import UserError
from attentive_reader.common.fileio import replacing
from attentive_reader.viz.curve_data import LearningCurves, ReadingCurves, RunCurve, SizeCurves


@dataclass(frozen=True)
class Table:
    """A titled table of text cells.

    Attributes:
        title: what the table shows.
        head: the column names.
        rows: the cells, one list per row, as long as ``head``.
    """

    title: str
    head: list[str]
    rows: list[list[str]]

    def markdown(self) -> str:
        """The title, then the table in Markdown."""
        lines = [f"### {self.title}", "", "| " + " | ".join(self.head) + " |"]
        lines.append("|" + " --- |" * len(self.head))
        lines += ["| " + " | ".join(row) + " |" for row in self.rows]
        return "\n".join(lines)


def markdown(tables: Sequence[Table]) -> str:
    """The tables in Markdown, a blank line between them."""
    return "\n\n".join(table.markdown() for table in tables)


def to_csv(tables: Sequence[Table]) -> str:
    """The tables as one CSV; with several, a first column names each row's table."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    several = len(tables) > 1
    for index, table in enumerate(tables):
        if index == 0 or not several:
            writer.writerow(["table", *table.head] if several else table.head)
        elif table.head != tables[0].head:
            writer.writerow(["table", *table.head])
        for row in table.rows:
            writer.writerow([table.title, *row] if several else row)
    return buffer.getvalue()


TABLE_SUFFIXES = (".md", ".csv")
"""The table files ``write_tables`` writes: Markdown, CSV."""


def check_table_path(path: str | Path) -> Path:
    """``path`` if ``write_tables`` can write it (``.md`` or ``.csv``).

    Raises:
        UserError: for another suffix.
    """
    path = Path(path)
    if path.suffix.lower() not in TABLE_SUFFIXES:
        raise UserError(f"--table {path}: give a .md or a .csv file")
    return path


def write_tables(path: str | Path, tables: Sequence[Table]) -> Path:
    """Write the tables to ``path`` (whole): Markdown for ``.md``, CSV for ``.csv``.

    Raises:
        UserError: for another suffix.
    """
    path = check_table_path(path)
    text = to_csv(tables) if path.suffix.lower() == ".csv" else markdown(tables) + "\n"
    with replacing(path) as tmp:
        tmp.write_text(text, encoding="utf-8")
    return path


def _baseline_rows(baselines: Mapping[str, float], width: int, cell: str) -> list[list[str]]:
    """One row per baseline: its name, ``cell`` (its value, formatted) and empty cells."""
    return [
        [f"{name.replace('_', ' ')} (baseline)", cell.format(value)] + [""] * (width - 2)
        for name, value in baselines.items()
    ]


def runs_table(runs: Sequence[RunCurve], baselines: Mapping[str, float]) -> Table:
    """Validation accuracy per epoch of each run, its best epoch and (where the run logged
    its wall time) the median minutes per epoch and the minutes to its best epoch."""
    epochs = max(len(run.val_acc) for run in runs)
    head = ["run", *(f"epoch {k + 1}" for k in range(epochs)), "best", "min/epoch", "min to best"]
    rows = []
    for run in runs:
        accuracy = run.val_acc
        cells = [f"{a:.3f}" for a in accuracy] + [""] * (epochs - len(accuracy))
        per_epoch, to_best = _timing(run, _best_epoch(accuracy))
        rows.append([run.name, *cells, _best(accuracy), _minutes(per_epoch), _minutes(to_best)])
    rows += _baseline_rows(baselines, len(head), "{:.3f}")
    return Table("validation accuracy per epoch", head, rows)


def _timing(run: RunCurve, best: int) -> tuple[float | None, float | None]:
    """(median seconds per epoch, seconds to the end of epoch ``best``) from the run's wall
    time; None where an epoch lacks it (a run from before the time was logged)."""
    if len(run.wall_s) != len(run.val_acc):
        return None, None
    durations = [b - a for a, b in zip([0.0, *run.wall_s], run.wall_s)]
    return statistics.median(durations), run.wall_s[best]


def _minutes(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds / 60:.1f}"


def size_table(curves: SizeCurves) -> Table:
    """Each reader's test accuracy and its 95% interval (in %) at each share."""
    head = ["reader", "share of the training stories", "test", "95% interval"]
    rows = [
        [name, f"{share:.0%}", f"{100 * accuracy:.1f}", f"{100 * low:.1f}-{100 * high:.1f}"]
        for name, points in curves.readers.items()
        for share, accuracy, low, high in points
    ]
    baselines = {name: 100 * value for name, value in curves.baselines.items()}
    rows += [[name, "", value, ""] for name, value, *_ in _baseline_rows(baselines, 3, "{:.1f}")]
    title = f"test accuracy against training-set size ({curves.questions} test questions)"
    return Table(title, head, rows)


def reading_table(curves: ReadingCurves) -> Table:
    """Each checkpoint's tokens read per question, of its document tokens, and its accuracy
    with the 95% interval (in %), fewest tokens first; the baselines after."""
    head = ["system", "tokens read / question", "document tokens", "accuracy", "95% interval"]
    rows = [
        [
            point.name,
            f"{point.tokens_read:.1f}",
            f"{point.document_tokens:.1f}",
            f"{100 * point.accuracy:.1f}",
            f"{100 * point.ci_low:.1f}-{100 * point.ci_high:.1f}",
        ]
        for point in sorted(curves.points, key=lambda point: point.tokens_read)
    ]
    for name, value in curves.baselines.items():
        document = f"{curves.document_tokens:.1f}"
        rows.append(
            [f"{name.replace('_', ' ')} (baseline)", document, document, f"{100 * value:.1f}", ""]
        )
    title = (
        f"{curves.split} accuracy against the document tokens read per question "
        f"({curves.questions} questions)"
    )
    return Table(title, head, rows)


def reading(run: Mapping[str, Any]) -> str:
    """The last epoch's tokens read at full resolution per validation example, of the mean
    document length (and those read only inside pooled windows, and the share of examples
    whose answer a glimpse read), or "" for a reader that reads everything."""
    if "val_tokens_read" not in run:
        return ""
    text = f"{run['val_tokens_read'][-1]:.1f} of {run['val_doc_tokens'][-1]:.1f}"
    if "val_tokens_pooled" in run:
        text += f" (+{run['val_tokens_pooled'][-1]:.1f} pooled)"
    if "val_answer_read" in run:
        text += f", answer read in {run['val_answer_read'][-1]:.0%}"
    return text


def learning_tables(curves: LearningCurves) -> list[Table]:
    """One table per panel with runs: validation accuracy per epoch, the run's time and the
    tokens a glimpse reader read; then the baselines. With runs over training-set sizes, their
    per-epoch table too and, first, each reader's best validation accuracy at each size."""
    panels = curves.panels | ({SIZES_PANEL: curves.size_runs()} if curves.sizes else {})
    tables = [size_learning_table(curves)] if curves.sizes else []
    head = ["run", *(f"epoch {k + 1}" for k in range(curves.epochs)), "time", "tokens read"]
    for title, runs in panels.items():
        if not runs:
            continue
        rows = []
        for name, run in runs.items():
            cells = [f"{a:.3f}" for a in run["val_acc"]][: curves.epochs]
            cells += [""] * (curves.epochs - len(cells))
            seconds = run.get("seconds")
            time = "" if seconds is None else f"{seconds:.0f} s"
            rows.append([name, *cells, time, reading(run)])
        rows += _baseline_rows(curves.baselines, len(head), "{:.3f}")
        tables.append(Table(f"{title}: validation accuracy", head, rows))
    return tables


SIZES_PANEL = "Training-set sizes"
"""The title of the per-epoch table of ``learning --sizes`` runs."""


def size_learning_table(curves: LearningCurves) -> Table:
    """Each reader's best validation accuracy (and its epoch) at each training-set size."""
    sizes = sorted({run["questions"] for runs in curves.sizes.values() for run in runs})
    head = ["reader", *(f"{size:,} questions" for size in sizes)]
    rows = []
    for reader, runs in curves.sizes.items():
        by_size = {run["questions"]: run["val_acc"] for run in runs}
        rows.append([reader, *(_best(by_size.get(size, [])) for size in sizes)])
    rows += _baseline_rows(curves.baselines, len(head), "{:.3f}")
    title = f"best validation accuracy against training-set size (at most {curves.epochs} epochs)"
    return Table(title, head, rows)


def _best_epoch(accuracy: Sequence[float]) -> int:
    """The index of the best epoch (the first of equals)."""
    return max(range(len(accuracy)), key=accuracy.__getitem__)


def _best(accuracy: Sequence[float]) -> str:
    """``0.634 (epoch 5)``: the best accuracy and its epoch, from 1 (empty: no epoch)."""
    if not accuracy:
        return ""
    best = _best_epoch(accuracy)
    return f"{accuracy[best]:.3f} (epoch {best + 1})"
