#!/usr/bin/env python
"""The real-news learning curves: validation accuracy per epoch of every run under a folder.

Reads the CSV metrics that the real-news configs (``configs/real_news/*.yaml``) write under
``runs/real_news/NAME/version_N/metrics.csv``, joins the versions of a run that was resumed
from its ``last.ckpt`` (a resumed run writes a new version; each epoch is taken from the
latest version that logged it), and prints one row per run beside the non-neural baselines
of the same validation split. Where the run logged its wall time (``train_wall_s``, which the
training commands log at every epoch's end: ``attentive_reader/training/wall_clock.py``), the row also
gives the median minutes per epoch and the minutes to its best validation accuracy. ``--plot`` draws the curves (the baselines as lines);
``--output`` writes the figures as JSON::

    python scripts/real_news_report.py runs/real_news --data data/cnn_real \\
        --plot curves.png --output curves.json

A run's folder name is its row's name; ``--runs`` picks and orders them.
"""

from __future__ import annotations

import argparse
import csv
import json
import statistics
import sys
from pathlib import Path

from bench.report import cpu_model  # scripts/ is on sys.path when a script runs
from learning_curves import baselines

from attentive_reader.training.wall_clock import METRIC as WALL


def epochs_of(run: Path) -> dict[str, list[float]]:
    """Validation accuracy, mean training loss and the run's wall time (seconds, where it was
    logged) at the end of each epoch of one run (all its versions)."""
    columns = (("val_acc", "val_acc"), ("train_loss", "train_loss_epoch"), ("wall_s", WALL))
    per_epoch: dict[str, dict[int, float]] = {key: {} for key, _ in columns}
    versions = sorted(run.glob("version_*/metrics.csv"), key=lambda p: int(p.parent.name[8:]))
    for metrics in versions:
        with metrics.open(newline="") as handle:
            for row in csv.DictReader(handle):
                for key, column in columns:
                    if row.get(column):
                        per_epoch[key][int(row["epoch"])] = float(row[column])
    return {key: [values[k] for k in sorted(values)] for key, values in per_epoch.items()}


def collect(root: Path, names: list[str] | None) -> dict[str, dict]:
    """Every run under ``root`` (or those named) with at least one validated epoch."""
    folders = [root / name for name in names] if names else sorted(root.iterdir())
    runs = {}
    for folder in folders:
        if not folder.is_dir():
            raise SystemExit(f"{folder}: no such run folder under {root}")
        figures = epochs_of(folder)
        if figures["val_acc"]:
            runs[folder.name] = figures
    return runs


def table(runs: dict[str, dict], base: dict[str, float]) -> str:
    """A Markdown table: validation accuracy per epoch, the best epoch, then the baselines."""
    epochs = max(len(run["val_acc"]) for run in runs.values())
    head = ["run", *(f"epoch {k + 1}" for k in range(epochs)), "best", "min/epoch", "min to best"]
    lines = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    for name, run in runs.items():
        accuracy = run["val_acc"]
        cells = [f"{a:.3f}" for a in accuracy] + [""] * (epochs - len(accuracy))
        best = max(range(len(accuracy)), key=accuracy.__getitem__)
        cells.append(f"{accuracy[best]:.3f} (epoch {best + 1})")
        per_epoch, to_best = timing(run, best)
        cells += [_minutes(per_epoch), _minutes(to_best)]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    for name, value in base.items():
        lines.append(f"| {name.replace('_', ' ')} (baseline) | {value:.3f} |" + " |" * (epochs + 2))
    return "\n".join(lines)


def timing(run: dict, best: int) -> tuple[float | None, float | None]:
    """(median seconds per epoch, seconds to the end of epoch ``best``) from the run's logged
    wall time; None where the run did not log it (every epoch up to ``best`` is needed)."""
    wall = run.get("wall_s") or []
    if len(wall) != len(run["val_acc"]):
        return None, None  # an epoch without its time: a run from before the clock was logged
    durations = [b - a for a, b in zip([0.0, *wall], wall)]
    return statistics.median(durations), wall[best]


def _minutes(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds / 60:.1f}"


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    parser.add_argument("runs", type=Path, help="the folder of runs, e.g. runs/real_news")
    parser.add_argument("--data", type=Path, required=True, help="the processed dataset")
    parser.add_argument("--runs", dest="names", nargs="+", metavar="NAME", help="runs to show")
    parser.add_argument("--plot", metavar="FILE.png", help="draw the curves here")
    parser.add_argument("--output", metavar="FILE.json", help="write the figures here")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    runs = collect(args.runs, args.names)
    if not runs:
        raise SystemExit(f"{args.runs}: no run has validated an epoch yet")
    base = baselines(args.data)
    print(table(runs, base))
    figures = {"cpu": cpu_model(), "data": str(args.data), "baselines": base, "runs": runs}
    if args.output:
        Path(args.output).write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")
    if args.plot:
        from attentive_reader.viz.curves import write_learning_curves

        title = f"{args.data.name}: validation accuracy per epoch"
        panels = {"Readers": {name: run["val_acc"] for name, run in runs.items()}}
        print(f"plot written to {write_learning_curves(args.plot, panels, base, title=title)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
