"""Every curve of ``attentive-reader curves``: read from its files, tabled and drawn.

Four kinds, each a ``CurveSet`` (its tables and its figure): ``validation_curves`` (the
validation accuracy per epoch of training runs, from their CSV logs), ``size_curves`` (test
accuracy against the share of the training stories, from ``evaluate --out`` files),
``learning_curves`` (the record of ``attentive-reader learning --output``) and
``reading_curves`` (accuracy against the tokens each system read, from ``evaluate --out``
files). The figures put
each non-neural baseline of the same questions as a grey horizontal line across every panel.
matplotlib's Agg canvas is used directly (no global pyplot state), as for the heatmap PNGs.
"""

from __future__ import annotations

import io
import itertools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from attentive_reader.common.fileio import replacing
from attentive_reader.viz.curve_data import (
    ReadingCurves,
    SizePoint,
    read_learning,
    read_reading,
    read_runs,
    read_size_points,
    validation_baselines,
)
from attentive_reader.viz.curve_tables import (
    SIZES_PANEL,
    Table,
    learning_tables,
    reading_table,
    runs_table,
    size_table,
)

if TYPE_CHECKING:
    from matplotlib.figure import Figure

PANEL_WIDTH, PANEL_HEIGHT = 8.0, 4.4
"""Inches per panel (its legend beside it) and the figure's height."""

BASELINE_STYLES = ("--", ":", "-.")
"""Line styles of the baselines, in order (all grey, so the runs keep the colours)."""


def learning_curves_figure(
    panels: Mapping[str, Mapping[str, Sequence[float]]],
    baselines: Mapping[str, float],
    *,
    title: str = "",
    sizes: Mapping[str, Sequence[tuple[int, float]]] | None = None,
) -> Figure:
    """A figure with one panel per table of runs, and one of accuracy against training-set
    size when ``sizes`` has points.

    Args:
        panels: panel title -> run name -> validation accuracy after each epoch (in [0, 1]);
            panels without runs are left out.
        baselines: baseline name -> its accuracy on the same split, drawn in every panel.
        title: the figure's title (e.g. the corpus).
        sizes: reader -> (training questions, best validation accuracy) at each size.

    Raises:
        ValueError: if no run has a single epoch to draw.
    """
    from matplotlib import colormaps
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator

    shown = {name: runs for name, runs in panels.items() if any(runs.values())}
    sizes = {reader: points for reader, points in (sizes or {}).items() if points}
    if not shown and not sizes:
        raise ValueError("no learning curve to draw: every run is empty")
    count = len(shown) + bool(sizes)
    figure = Figure(figsize=(PANEL_WIDTH * count, PANEL_HEIGHT), layout="constrained")
    axes = figure.subplots(1, count, squeeze=False)[0]
    if sizes:
        _size_panel(axes[-1], sizes, baselines)
    for ax, (panel, runs) in zip(axes, shown.items()):
        # matplotlib's default cycle repeats after 10 colours; past that, tab20's 20.
        colours = colormaps["tab20" if len(runs) > 10 else "tab10"].colors
        for (run, accuracy), colour in zip(runs.items(), itertools.cycle(colours)):
            epochs = range(1, len(accuracy) + 1)
            ax.plot(epochs, list(accuracy), marker="o", markersize=3, label=run, color=colour)
        _finish_panel(ax, baselines, "epoch", "validation accuracy")
        ax.set_title(panel)
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    if title:
        figure.suptitle(title)
    return figure


def _size_panel(
    ax, sizes: Mapping[str, Sequence[tuple[int, float]]], baselines: Mapping[str, float]
) -> None:
    """Best validation accuracy against training questions (log 2 axis), a line per reader."""
    for reader, points in sizes.items():
        points = sorted(points)
        ax.plot(
            [q for q, _ in points], [a for _, a in points], marker="o", markersize=4, label=reader
        )
    _finish_panel(ax, baselines, "training questions (log scale)", "best validation accuracy")
    ax.set_xscale("log", base=2)
    ticks = sorted({q for points in sizes.values() for q, _ in points})
    ax.set_xticks(ticks, [f"{q:,}" for q in ticks])
    ax.minorticks_off()
    ax.set_title("Training-set size")


def _finish_panel(ax, baselines: Mapping[str, float], xlabel: str, ylabel: str) -> None:
    """Each baseline as a grey horizontal line, the axes' labels, accuracy from 0 to 1, a
    grid, and the legend beside the panel, where it hides no curve and no baseline."""
    for style, (name, value) in zip(itertools.cycle(BASELINE_STYLES), baselines.items()):
        label = f"{name.replace('_', ' ')} (baseline)"
        ax.axhline(value, color="0.45", linestyle=style, linewidth=1.2, label=label)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_ylim(0.0, 1.02)
    ax.grid(alpha=0.3)
    ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.02, 1.0))


def _png(figure: Figure, dpi: int) -> bytes:
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    FigureCanvasAgg(figure)
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=dpi)
    return buffer.getvalue()


def _write(path: str | Path, png: bytes) -> Path:
    """``png`` to ``path``, whole: a temporary file beside it, then a rename."""
    path = Path(path)
    with replacing(path) as tmp:
        tmp.write_bytes(png)
    return path


def size_curve_figure(
    readers: Mapping[str, Sequence[SizePoint]],
    baselines: Mapping[str, float],
    *,
    title: str = "",
) -> Figure:
    """Test accuracy against the share of the training stories: one line per reader, its
    intervals as error bars, the x axis in doublings (log 2), each baseline of the same test
    questions a horizontal line.

    Raises:
        ValueError: if no reader has a point.
    """
    from matplotlib.figure import Figure

    if not any(readers.values()):
        raise ValueError("no point to draw: every reader is empty")
    figure = Figure(figsize=(PANEL_WIDTH, PANEL_HEIGHT), layout="constrained")
    ax = figure.subplots()
    shares = sorted({point[0] for points in readers.values() for point in points})
    for name, points in readers.items():
        points = sorted(points)
        x = [p[0] for p in points]
        y = [p[1] for p in points]
        below = [p[1] - p[2] for p in points]
        above = [p[3] - p[1] for p in points]
        ax.errorbar(x, y, yerr=[below, above], marker="o", markersize=4, capsize=3, label=name)
    _finish_panel(ax, baselines, "share of the training stories", "test accuracy")
    ax.set_xscale("log", base=2)
    ax.set_xticks(shares, [f"{share:.0%}" for share in shares])
    ax.minorticks_off()
    if title:
        figure.suptitle(title)
    return figure


def reading_figure(curves: ReadingCurves, *, title: str = "") -> Figure:
    """Accuracy against the document tokens read per question (log x axis): one point per
    system with its 95% interval, the mean document length as a light vertical band (where
    the readers that read every token sit), each baseline a horizontal line. Points at the
    same number of tokens are spread a little sideways (``DODGE``) so that no interval hides
    another.

    Raises:
        ValueError: if there is no point.
    """
    from matplotlib import colormaps
    from matplotlib.figure import Figure
    from matplotlib.ticker import FuncFormatter

    if not curves.points:
        raise ValueError("no point to draw")
    figure = Figure(figsize=(PANEL_WIDTH, PANEL_HEIGHT), layout="constrained")
    ax = figure.subplots()
    ax.axvline(
        curves.document_tokens,
        color="0.85",
        linewidth=6,
        label=f"mean document ({curves.document_tokens:.0f} tokens)",
    )
    colours = colormaps["tab20" if len(curves.points) > 10 else "tab10"].colors
    shared = [
        [q for q in curves.points if _same_x(q.tokens_read, p.tokens_read)] for p in curves.points
    ]
    for point, beside, colour in zip(curves.points, shared, itertools.cycle(colours)):
        offset = beside.index(point) - (len(beside) - 1) / 2
        below, above = point.accuracy - point.ci_low, point.ci_high - point.accuracy
        ax.errorbar(
            [point.tokens_read * DODGE**offset],
            [point.accuracy],
            yerr=[[below], [above]],
            marker="o",
            markersize=5,
            capsize=3,
            color=colour,
            label=point.name,
        )
    _finish_panel(
        ax,
        curves.baselines,
        "document tokens read per question (mean, log scale)",
        f"{curves.split} accuracy",
    )
    ax.set_xscale("log")
    xs = [p.tokens_read for p in curves.points] + [curves.document_tokens]
    ax.set_xlim(min(xs) / 1.6, max(xs) * 1.6)
    ax.xaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}"))
    if title:
        figure.suptitle(title)
    return figure


DODGE = 1.15  # a factor a log axis shows: points at one x stand apart
"""The factor between the x positions of neighbouring points that read as many tokens."""


def _same_x(a: float, b: float) -> bool:
    return abs(a - b) <= 1e-9 * max(abs(a), abs(b), 1.0)


@dataclass(frozen=True)
class CurveSet:
    """One kind of curve, ready to print and draw.

    Attributes:
        tables: the figures as tables (``curve_tables.markdown`` prints them).
        draw: builds the figure (matplotlib is imported only when it is called).
        notes: what was left out and why (e.g. a run that has not validated yet).
    """

    tables: list[Table]
    draw: Callable[[], Figure]
    notes: list[str]

    def write_png(self, path: str | Path, *, dpi: int = 110) -> Path:
        """Write the figure as a PNG to ``path`` (whole) and return the path."""
        return _write(path, _png(self.draw(), dpi))


def validation_curves(
    runs: Sequence[str | Path], *, data: str | Path | None = None, title: str = ""
) -> CurveSet:
    """Validation accuracy per epoch of the runs under ``runs`` (run log folders, or folders
    of them), beside the baselines of ``data``'s validation split when it is given.

    Raises:
        UserError: for a missing folder, a run without metrics, or no validated epoch.
    """
    curves, notes = read_runs([Path(run) for run in runs])
    baselines = {} if data is None else validation_baselines(data)
    panels = {"Runs": {run.name: run.val_acc for run in curves}}
    default = f"{Path(data).name}: validation accuracy per epoch" if data else ""
    return CurveSet(
        [runs_table(curves, baselines)],
        lambda: learning_curves_figure(panels, baselines, title=title or default),
        notes,
    )


def size_curves(points: Sequence[Sequence[str]], *, title: str = "") -> CurveSet:
    """Test accuracy against the share of the training stories, from ``(reader, share,
    evaluate --out file)`` triples.

    Raises:
        UserError: as ``curve_data.read_size_points``.
    """
    curves = read_size_points([(name, share, file) for name, share, file in points])
    return CurveSet(
        [size_table(curves)],
        lambda: size_curve_figure(curves.readers, curves.baselines, title=title),
        [],
    )


def learning_curves(path: str | Path, *, title: str = "") -> CurveSet:
    """The learning curves of an ``attentive-reader learning --output`` file: one panel per
    table (the shipped configs, the answer layers) and one of accuracy against training-set
    size (``learning --sizes``).

    Raises:
        UserError: if the file cannot be read or is not such a file.
    """
    curves = read_learning(Path(path))
    panels = {
        name: {run: figures["val_acc"] for run, figures in runs.items()}
        for name, runs in curves.panels.items()
    }
    sizes = {
        reader: [(run["questions"], max(run["val_acc"])) for run in runs if run["val_acc"]]
        for reader, runs in curves.sizes.items()
    }
    if curves.sizes:  # and each size's run per epoch, beside
        panels[SIZES_PANEL] = {name: run["val_acc"] for name, run in curves.size_runs().items()}
    return CurveSet(
        learning_tables(curves),
        lambda: learning_curves_figure(
            panels, curves.baselines, title=title or curves.corpus, sizes=sizes
        ),
        [],
    )


def reading_curves(paths: Sequence[str | Path], *, title: str = "") -> CurveSet:
    """Accuracy against the document tokens each system read per question, from
    ``evaluate --out`` files of the same questions (every checkpoint, every mode).

    Raises:
        UserError: as ``curve_data.read_reading``.
    """
    curves = read_reading(paths)
    return CurveSet([reading_table(curves)], lambda: reading_figure(curves, title=title), [])
