"""``attentive-reader synth``: write the built-in synthetic news corpus.

    attentive-reader synth OUT_DIR --stories 2000 --seed 0 [--shape compact|long]

writes ``OUT_DIR/stories/<sha1>.story`` (CNN format), ``OUT_DIR/url_lists/all_{train,val,
test}.txt`` (fixed splits), ``OUT_DIR/synthetic.json`` (seed, counts) and
``OUT_DIR/entity_ruler/`` (a spaCy pipeline that tags the generator's names, for machines
without a statistical spaCy model). ``--shape compact`` (or ``--compact``) writes the demo's
short stories (~80 tokens, ~7.5 candidates per question), ``--shape long`` stories as long as
real news (~850 tokens, ~35 candidates), instead of the default ~220-token ones. Never imports
torch.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

DEFAULT_STORIES = 2000
SHAPE_NAMES = ("default", "compact", "long")  # corpus.synthetic.SHAPES, named without importing it


def _positive(value: str) -> int:
    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {value!r}") from None
    if number < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {value!r}")
    return number


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``attentive-reader synth``."""
    parser = argparse.ArgumentParser(
        prog="attentive-reader synth",
        description="Write the built-in synthetic news corpus as CNN-style .story files, with "
        "url lists that fix the train/validation/test splits (8:1:1).",
        epilog="next: attentive-reader preprocess OUT_DIR/stories --url-lists OUT_DIR/url_lists "
        "--output DATA_DIR  (add --spacy-model OUT_DIR/entity_ruler when no statistical spaCy "
        "model is installed)",
    )
    parser.add_argument("out_dir", metavar="OUT_DIR", help="output folder (created if missing)")
    parser.add_argument(
        "--stories",
        type=_positive,
        default=DEFAULT_STORIES,
        metavar="N",
        help="number of stories (default: %(default)s)",
    )
    parser.add_argument(
        "--seed", type=int, default=0, metavar="S", help="random seed (default: %(default)s)"
    )
    parser.add_argument(
        "--shape",
        choices=SHAPE_NAMES,
        default="default",
        help="the stories' size: default (~220 tokens, ~12 entities), compact (~80 tokens, ~7 "
        "entities; the demo's corpus) or long (~850 tokens, ~35 entities, as long as real "
        "news stories) (default: %(default)s)",
    )
    parser.add_argument(
        "--compact",
        action="store_const",
        const="compact",
        dest="shape",
        help="the same as --shape compact",
    )
    parser.add_argument(
        "--overwrite",
        action="store_true",
        help="replace the .story files, url lists and entity ruler of an earlier run in OUT_DIR",
    )
    return parser


def main(argv: list[str]) -> int:
    """Run ``attentive-reader synth`` with ``argv`` (without the command name)."""
    args = build_parser().parse_args(argv)
    from attentive_reader.corpus.synthetic import SHAPES, synthesize

    out = Path(args.out_dir)
    started = time.perf_counter()
    shape = SHAPES[args.shape]
    info = synthesize(out, args.stories, args.seed, shape, overwrite=args.overwrite)
    splits = ", ".join(f"{split} {count}" for split, count in info["splits"].items())
    size = "" if args.shape == "default" else f"{args.shape} "
    print(
        f"wrote {info['stories']} {size}synthetic stories "
        f"(seed {args.seed}) to {out / 'stories'} "
        f"in {time.perf_counter() - started:.1f} s ({splits})"
    )
    print(f"url lists: {out / 'url_lists'}; entity ruler pipeline: {out / 'entity_ruler'}")
    print(
        f"next: attentive-reader preprocess {out / 'stories'} --url-lists {out / 'url_lists'} "
        f"--output DATA_DIR"
    )
    return 0
