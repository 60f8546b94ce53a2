"""``attentive-reader export``: write a processed dataset in another format.

    attentive-reader export DATASET_DIR --format question --output DIR

``question`` writes DeepMind ``.question`` files, one per example, under
``DIR/{training,validation,test}/``; ``attentive-reader preprocess DIR`` reads them back as
the same examples.
"""

from __future__ import annotations

import argparse
from typing import Literal

ExportFormat = Literal["question"]
FORMATS: tuple[ExportFormat, ...] = ("question",)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="attentive-reader export",
        description="Write a processed dataset (from 'attentive-reader preprocess') in another "
        "format.",
    )
    parser.add_argument("dataset_dir", metavar="DATASET_DIR", help="a processed dataset folder")
    parser.add_argument(
        "--format",
        choices=FORMATS,
        default="question",
        help="question: DeepMind .question files, one per example, under "
        "OUTPUT/{training,validation,test}/ (default: %(default)s)",
    )
    parser.add_argument(
        "--output", "-o", required=True, metavar="DIR", help="output folder (new or empty)"
    )
    return parser


def main(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    from attentive_reader.corpus.questions import export_questions

    counts = export_questions(args.dataset_dir, args.output)
    per_split = ", ".join(f"{split} {count}" for split, count in counts.items())
    print(f"wrote {sum(counts.values())} .question files to {args.output} ({per_split})")
    return 0
