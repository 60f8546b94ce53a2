"""``attentive-reader heatmap``: per-token attention heatmaps of a checkpoint on a split.

For each chosen example: a self-contained HTML page, a JSON sidecar with the raw weights and
(unless ``--no-png``) a PNG; then ``index.html`` linking them all (``viz.checkpoint_heatmaps``
and ``viz.write_heatmaps`` do the work).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from attentive_reader.commands import add_device_argument
from attentive_reader.common.errors import UserError
from attentive_reader.common.faults import writing
from attentive_reader.corpus.records import SPLITS
from attentive_reader.viz import SCALES, checkpoint_heatmaps, write_heatmaps


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="attentive-reader heatmap",
        description=(
            "Write per-token attention heatmaps (HTML pages, PNGs, JSON sidecars and an "
            "index.html) for examples of a split."
        ),
    )
    parser.add_argument("--ckpt", required=True, help="reader checkpoint")
    parser.add_argument("--data", required=True, help="processed dataset directory")
    parser.add_argument("--split", default="test", choices=SPLITS, help="split (default: test)")
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--ids", nargs="+", metavar="ID", help="these example ids")
    which.add_argument(
        "--limit", type=int, default=None, help="the first N examples of the split (default 20)"
    )
    parser.add_argument("--out", required=True, help="output directory")
    parser.add_argument(
        "--scale",
        default="linear",
        choices=SCALES,
        help="linear (default): full colour = the largest weight; normalized: weight x "
        "context length (1 = uniform attention), clipped at --clip",
    )
    parser.add_argument(
        "--clip",
        type=float,
        default=10.0,
        help="normalized scale: the multiple of the uniform weight shown at full colour "
        "(default: %(default)s)",
    )
    parser.add_argument("--no-png", action="store_true", help="skip the PNG figures")
    parser.add_argument(
        "--batch-size", type=int, default=32, help="examples per forward pass (default: 32)"
    )
    add_device_argument(parser)
    return parser


def main(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    with writing(args.out, "heatmap"):  # a second run on --out stops before any work
        return _heatmap(args)


def _heatmap(args: argparse.Namespace) -> int:
    if args.clip <= 0:
        raise UserError(f"--clip must be positive, got {args.clip}")
    pages = checkpoint_heatmaps(
        args.ckpt,
        args.data,
        split=args.split,
        ids=args.ids,
        limit=20 if args.limit is None else args.limit,
        batch_size=args.batch_size,
        device=args.device,
    )
    if all(page.attention is None for page in pages):
        print(
            "note: this reader has no attention; the pages show its predictions only",
            file=sys.stderr,
        )
    out = Path(args.out)
    entries = write_heatmaps(
        pages,
        out,
        scale=args.scale,
        clip=args.clip,
        png=not args.no_png,
        title=f"Attention heatmaps: {Path(args.ckpt).name} on {args.split}",
    )
    right = sum(e.correct for e in entries)
    print(f"{len(entries)} examples ({right} correct) written to {out / 'index.html'}")
    return 0
