"""``attentive-reader vectors``: word vectors trained on a dataset's train split only.

    attentive-reader vectors --data DATA_DIR --output vectors.txt --dim 100

Trains word2vec (``gensim``, the ``vectors`` extra) on the train split's documents and
queries (``data/word2vec.py``: entity markers trained as one shared token and left out of the
file) and writes the word2vec text format, which ``fit --model.word_vectors vectors.txt``
reads into a reader of ``embedding_dim`` equal to ``--dim``.
"""

from __future__ import annotations

import argparse
import sys


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``attentive-reader vectors``."""
    parser = argparse.ArgumentParser(
        prog="attentive-reader vectors",
        description="Train word2vec on the train split of a processed dataset (never its "
        "validation or test text) and write the vectors as text, for --model.word_vectors. "
        "Needs gensim: pip install 'attentive-reader[vectors]'.",
    )
    parser.add_argument("--data", required=True, metavar="DIR", help="processed dataset directory")
    parser.add_argument(
        "--output", "-o", required=True, metavar="FILE", help="the vectors file (e.g. vectors.txt)"
    )
    parser.add_argument(
        "--dim",
        type=int,
        default=100,
        help="values per vector: the reader's embedding_dim (default: %(default)s)",
    )
    parser.add_argument(
        "--epochs", type=int, default=5, help="passes over the text (default: %(default)s)"
    )
    parser.add_argument(
        "--window",
        type=int,
        default=5,
        help="words on each side that count as a word's context (default: %(default)s)",
    )
    parser.add_argument(
        "--min-count",
        type=int,
        default=5,
        help="words seen fewer times get no vector (default: %(default)s)",
    )
    parser.add_argument(
        "--algorithm",
        choices=("skipgram", "cbow"),
        default="skipgram",
        help="word2vec's skip-gram or continuous bag of words (default: %(default)s)",
    )
    parser.add_argument(
        "--workers",
        type=int,
        default=1,
        help="training threads; with 1 the same seed gives the same vectors (default: %(default)s)",
    )
    parser.add_argument("--seed", type=int, default=0, help="random seed (default: %(default)s)")
    return parser


def main(argv: list[str]) -> int:
    """Run ``attentive-reader vectors`` with ``argv`` (without the command name)."""
    args = build_parser().parse_args(argv)
    from attentive_reader.common.checks import check_positive_options
    from attentive_reader.common.faults import writing
    from attentive_reader.data.word2vec import train_word_vectors

    check_positive_options(
        dim=args.dim,
        epochs=args.epochs,
        window=args.window,
        min_count=args.min_count,
        workers=args.workers,
    )
    with writing(args.output, "vectors"):
        summary = train_word_vectors(
            args.data,
            args.output,
            dim=args.dim,
            epochs=args.epochs,
            window=args.window,
            min_count=args.min_count,
            algorithm=args.algorithm,
            workers=args.workers,
            seed=args.seed,
        )
    print(
        f"{summary.words:,} words of {summary.dim} values, trained on {summary.sentences:,} "
        f"documents and queries ({summary.tokens:,} tokens) of the train split of {args.data}, "
        f"written to {summary.output}",
        file=sys.stderr,
    )
    print(
        f"use them with: attentive-reader fit ... --model.embedding_dim {summary.dim} "
        f"--model.word_vectors {summary.output}",
        file=sys.stderr,
    )
    return 0
