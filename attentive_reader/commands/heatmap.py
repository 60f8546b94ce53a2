"""``attentive-reader heatmap``: per-token attention heatmaps of a checkpoint on a split.

For each chosen example: a self-contained HTML page, a JSON sidecar with the raw weights and
(unless ``--no-png``) a PNG; then ``index.html`` linking them all.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from attentive_reader.corpus.records import SPLITS, ClozeExample
from attentive_reader.errors import UserError
from attentive_reader.faults import writing
from attentive_reader.viz.heatmap import SCALES


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
        help="linear: full colour = the largest weight; normalized: weight x context length "
        "(1 = uniform attention), clipped at --clip",
    )
    parser.add_argument(
        "--clip",
        type=float,
        default=10.0,
        help="normalized scale: the multiple of the uniform weight shown at full colour",
    )
    parser.add_argument("--no-png", action="store_true", help="skip the PNG figures")
    parser.add_argument("--batch-size", type=int, default=32, help="examples per forward pass")
    parser.add_argument(
        "--device", default="auto", help="auto (GPU when available), cpu, cuda or cuda:N"
    )
    return parser


def select_rows(ids_in_split: list[str], ids: list[str] | None, limit: int) -> list[int]:
    """Row indices of the requested ids (in the given order) or of the first ``limit`` rows.

    Raises:
        UserError: naming the ids that are not in the split.
    """
    if ids is None:
        return list(range(min(limit, len(ids_in_split))))
    position = {example_id: i for i, example_id in enumerate(ids_in_split)}
    missing = [i for i in ids if i not in position]
    if missing:
        shown = ", ".join(missing[:5]) + (" ..." if len(missing) > 5 else "")
        raise UserError(f"{len(missing)} example id(s) not in the split: {shown}")
    return [position[i] for i in dict.fromkeys(ids)]


def main(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    with writing(args.out, "heatmap"):  # a second run on --out stops before any work
        return _heatmap(args)


def _heatmap(args: argparse.Namespace) -> int:
    limit = 20 if args.limit is None else args.limit
    if limit < 1:
        raise UserError(f"--limit must be positive, got {limit}")
    if args.batch_size < 1:
        raise UserError(f"--batch-size must be positive, got {args.batch_size}")
    if args.clip <= 0:
        raise UserError(f"--clip must be positive, got {args.clip}")

    from attentive_reader.eval.inference import iterate_predictions, load_for_split, resolve_device
    from attentive_reader.viz.heatmap import heatmap_examples, write_heatmaps

    device = resolve_device(args.device)
    reader, datamodule = load_for_split(args.ckpt, args.data, device)
    rows_table = datamodule.examples(args.split)
    indices = select_rows(list(rows_table["id"]), args.ids, limit)
    if not indices:
        raise UserError(f"{args.data} [{args.split}] holds no examples")
    rows = {
        row.id: row for row in (ClozeExample.from_row(rows_table[i]) for i in indices)
    }  # id -> stored example
    pages = []
    for batch, output in iterate_predictions(
        reader, datamodule, args.split, indices=indices, batch_size=args.batch_size, device=device
    ):
        pages += heatmap_examples(output, rows, batch=batch, model=str(args.ckpt))
    if all(page.attention is None for page in pages):
        print(
            f"note: {type(reader).__name__} has no attention; the pages show its predictions only",
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
