"""``attentive-reader demo``: the whole toolkit in one command on the built-in corpus.

attentive-reader demo [--reader attentive_reader] [--stories 4000] [--epochs 4] [--seed 0]
                      [--out-dir runs/demo]
"""

from __future__ import annotations

import argparse

from attentive_reader.demo import DemoOptions, run_demo

_DEFAULTS = DemoOptions()


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="attentive-reader demo",
        description=(
            "Generate synthetic news stories, preprocess them with the real pipeline, train a "
            "reader, test it, write the evaluation report and attention heatmaps, all into "
            "one output directory."
        ),
    )
    parser.add_argument(
        "--reader",
        default=_DEFAULTS.reader,
        help="a shipped reader config (attentive_reader, impatient_reader, uniform_reader, "
        "hard_attention_reader, ...; see configs/) or a YAML path (default: %(default)s)",
    )
    parser.add_argument(
        "--stories", type=int, default=_DEFAULTS.stories, help="default: %(default)s"
    )
    parser.add_argument("--epochs", type=int, default=_DEFAULTS.epochs, help="default: %(default)s")
    parser.add_argument("--seed", type=int, default=_DEFAULTS.seed, help="default: %(default)s")
    parser.add_argument("--out-dir", default=_DEFAULTS.out_dir, help="default: %(default)s")
    parser.add_argument(
        "--num-proc",
        type=int,
        default=_DEFAULTS.num_proc,
        help="preprocessing processes (default: %(default)s)",
    )
    parser.add_argument(
        "--heatmaps",
        type=int,
        default=_DEFAULTS.heatmaps,
        help="test examples to draw (default: %(default)s)",
    )
    parser.add_argument(
        "--spacy-model",
        default=None,
        help="spaCy pipeline for NER (default: an installed statistical model, else an entity "
        "ruler built from the generator's names; 'ruler': that ruler, which is faster)",
    )
    return parser


def main(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    options = DemoOptions(
        out_dir=args.out_dir,
        reader=args.reader,
        stories=args.stories,
        epochs=args.epochs,
        seed=args.seed,
        num_proc=args.num_proc,
        heatmaps=args.heatmaps,
        spacy_model=args.spacy_model,
    )
    run_demo(options)
    return 0
