"""``attentive-reader merge``: join the parts of a multi-machine preprocessing run."""

from __future__ import annotations

import argparse

from rich.console import Console

from attentive_reader.corpus.console import print_report
from attentive_reader.corpus.preprocess import merge


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``attentive-reader merge``."""
    parser = argparse.ArgumentParser(
        prog="attentive-reader merge",
        description="Join the part directories written by `attentive-reader preprocess "
        "--num-shards K --shard-index I` (I = 0..K-1) into one dataset, the same as a single "
        "run would write.",
    )
    parser.add_argument("parts", nargs="+", metavar="PART_DIR", help="the K part directories")
    parser.add_argument("--output", "-o", required=True, metavar="DIR", help="output directory")
    parser.add_argument(
        "--overwrite", action="store_true", help="replace an existing output directory"
    )
    parser.add_argument("--quiet", "-q", action="store_true", help="print no tables")
    return parser


def main(argv: list[str]) -> int:
    """Run ``attentive-reader merge`` with ``argv`` (without the command name)."""
    args = build_parser().parse_args(argv)
    result = merge(args.parts, args.output, overwrite=args.overwrite)
    print_report(result, Console(quiet=args.quiet))
    return 0
