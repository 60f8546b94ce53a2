"""``attentive-reader curves``: every curve the toolkit draws, as a table and a PNG.

One kind per call: the validation curves of training runs (run log folders as arguments), test
accuracy over training-set size (``--size``), the learning curves of a generated corpus
(``--learning``), or accuracy against the tokens each system read (``--reading``). The table goes to the terminal (and to ``--table``), the figure to
``--output`` (``viz.curves`` does the work).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from attentive_reader.common.errors import UserError
from attentive_reader.common.faults import writing
from attentive_reader.viz.curve_tables import check_table_path, markdown, write_tables
from attentive_reader.viz.curves import (
    CurveSet,
    learning_curves,
    reading_curves,
    size_curves,
    validation_curves,
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="attentive-reader curves",
        description=(
            "Print a curve's figures as a Markdown table and draw it as a PNG, one kind per "
            "call: validation accuracy per epoch of training runs (give their log folders), "
            "test accuracy over training-set size (--size), the learning curves of "
            "attentive-reader learning (--learning), or accuracy against the document tokens "
            "each system read per question (--reading); the non-neural baselines as lines."
        ),
    )
    parser.add_argument(
        "runs",
        nargs="*",
        metavar="RUN",
        help="a run's log folder as the CSV logger writes it (runs/real_news/NAME, holding "
        "version_N/metrics.csv; resumed versions are joined), or a folder of such runs",
    )
    parser.add_argument(
        "--data",
        help="with RUN: the processed dataset the runs validated on, for the baselines of its "
        "validation split",
    )
    parser.add_argument(
        "--size",
        nargs=3,
        action="append",
        default=[],
        metavar=("READER", "SHARE", "FILE.json"),
        help="a point of the curve over training-set size: the reader's name, the share of "
        "the training stories it was trained on (0.25) and its `evaluate --out` file; once "
        "per point",
    )
    parser.add_argument(
        "--learning",
        metavar="FILE.json",
        help="the learning curves that `attentive-reader learning --output` wrote",
    )
    parser.add_argument(
        "--reading",
        nargs="+",
        default=[],
        metavar="FILE.json",
        help="`evaluate --out` files of the same questions: each checkpoint (and each "
        "--eval-mode of one) a point, its accuracy against the document tokens it read per "
        "question",
    )
    parser.add_argument("--output", metavar="FILE.png", help="draw the curves here")
    parser.add_argument(
        "--table", metavar="FILE", help="also write the table here (.md: Markdown, .csv: CSV)"
    )
    parser.add_argument(
        "--title",
        default="",
        help="the figure's title (default: the dataset's or the corpus's, if known)",
    )
    return parser


def _curves(args: argparse.Namespace) -> CurveSet:
    given = (("RUN", args.runs), ("--size", args.size), ("--reading", args.reading))
    kinds = [kind for kind, value in given if value]
    kinds += ["--learning"] if args.learning else []
    if len(kinds) != 1:
        raise UserError(
            "give one kind of curve: run folders (RUN ...), --size points, --learning FILE or "
            "--reading FILE ..." + (f", not {' and '.join(kinds)}" if kinds else "")
        )
    if args.data and not args.runs:
        raise UserError("--data gives the baselines of run folders (RUN ...); give them too")
    if args.runs:
        return validation_curves(args.runs, data=args.data, title=args.title)
    if args.size:
        return size_curves(args.size, title=args.title)
    if args.reading:
        return reading_curves(args.reading, title=args.title)
    return learning_curves(args.learning, title=args.title)


def main(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    if args.table and args.output and args.table == args.output:
        raise UserError(f"--table and --output are the same file ({args.output}); name two")
    for flag, path in (("--output", args.output), ("--table", args.table)):
        if path and Path(path).is_dir():
            raise UserError(f"{flag} {path} is a folder; give the file to write")
    if args.table:
        check_table_path(args.table)
    curves = _curves(args)
    for note in curves.notes:
        print(f"note: {note}", file=sys.stderr)
    print(markdown(curves.tables))
    if args.table:
        with writing(args.table, "curves"):
            print(f"\ntable written to {write_tables(args.table, curves.tables)}", file=sys.stderr)
    if args.output:
        with writing(args.output, "curves"):
            print(f"\ncurves drawn in {curves.write_png(args.output)}", file=sys.stderr)
    return 0
