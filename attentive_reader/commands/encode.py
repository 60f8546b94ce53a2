"""``attentive-reader encode``: build a dataset's memory-mapped token-id cache ahead of training.

    attentive-reader encode DATASET_DIR [--vocab FILE] [--max-words N] [--num-entities N]

Does once, from one machine, what every rank of a training run does on first use: counts the
vocabulary (or reads ``--vocab``) and the entity ids, and encodes every split into
``DATASET_DIR/.encoded`` (``data/encoded.py``). The ranks of a multi-node run then only open
those files, so they never write to the dataset folder nor rely on a file lock that a shared
file system may not honour. The options must be the training run's ``--data.*`` options.
"""

from __future__ import annotations

import argparse

from attentive_reader.corpus.records import SPLITS
from attentive_reader.data.vocab import DEFAULT_NUM_ENTITIES


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``attentive-reader encode``."""
    parser = argparse.ArgumentParser(
        prog="attentive-reader encode",
        description="Encode a processed dataset's token ids once (DATASET_DIR/.encoded), so that "
        "the ranks of a training run only read them. Give the training run's data options.",
    )
    parser.add_argument("dataset_dir", metavar="DATASET_DIR", help="a processed dataset folder")
    parser.add_argument(
        "--vocab",
        metavar="FILE",
        help="a vocab.json or checkpoint whose vocabulary to use (--data.vocab; default: count "
        "it from the train split)",
    )
    parser.add_argument(
        "--max-words",
        type=int,
        default=50_000,
        metavar="N",
        help="words in a counted vocabulary (--data.max_words; default: %(default)s)",
    )
    parser.add_argument(
        "--num-entities",
        type=int,
        metavar="N",
        help=f"entity ids (--data.num_entities; default: {DEFAULT_NUM_ENTITIES}, or what the "
        "data needs if more)",
    )
    parser.add_argument(
        "--cache-dir",
        metavar="DIR",
        help="where to keep the ids (--data.cache_dir; default: DATASET_DIR/.encoded)",
    )
    parser.add_argument(
        "--num-proc",
        type=int,
        default=1,
        metavar="N",
        help="worker processes for a large split (--data.num_proc; default: 1)",
    )
    return parser


def main(argv: list[str]) -> int:
    """Run ``attentive-reader encode`` with ``argv`` (without the command name)."""
    args = build_parser().parse_args(argv)
    from attentive_reader.common.errors import UserError
    from attentive_reader.data.datamodule import ClozeDataModule

    try:
        module = ClozeDataModule(
            args.dataset_dir,
            max_words=args.max_words,
            num_entities=args.num_entities,
            vocab=args.vocab,
            cache_dir=args.cache_dir,
            num_proc=args.num_proc,
        )
    except ValueError as error:
        raise UserError(str(error)) from None
    for split in SPLITS:
        encoded = module.dataset(split)
        print(f"{split}: {len(encoded):,} examples in {encoded.columns.folder}")
    # the exclusive-frequency baseline every checkpoint records, cached beside the ids
    baseline = module.provenance()["exclusive_frequency"]
    if baseline is not None:
        print(f"validation exclusive-frequency baseline: {100 * baseline:.1f}%")
    print(
        f"vocabulary: {module.vocab_size:,} ids ({module.num_entities} entity ids); training "
        f"runs with the same data options read these files and write nothing to {args.dataset_dir}"
    )
    return 0
