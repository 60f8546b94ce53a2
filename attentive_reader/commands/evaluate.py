"""``attentive-reader evaluate``: accuracy report with confidence intervals and baselines.

Every example of the split is read exactly once, in one process, by every checkpoint (each
``--ckpt`` on its own, each ``--ensemble`` as one system answering by the mean of its
readers' probabilities); the paper's non-neural baselines are computed from the same examples. The report is a Markdown
table on the terminal and, with ``--out``, a JSON file holding every figure and the inputs
(checkpoint paths and SHA-256 hashes, the dataset manifest, the split, the options); with
``--predictions``, a JSON Lines file with each checkpoint's answer to each example. With
``--eval-mode``, each checkpoint is read once per mode (a hard-attention reader's greedy,
sampled or expected reading), each one more system.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from pathlib import Path

from attentive_reader.commands import add_device_argument
from attentive_reader.common.errors import UserError
from attentive_reader.common.faults import writing
from attentive_reader.corpus.records import SPLITS
from attentive_reader.eval.evaluation import evaluate
from attentive_reader.eval.progress import QuestionProgress
from attentive_reader.eval.report import DEFAULT_CANDIDATE_EDGES, DEFAULT_LENGTH_EDGES


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="attentive-reader evaluate",
        description=(
            "Exact cloze accuracy of one or more checkpoints on every example of a split, "
            "with Wilson 95% intervals, breakdowns by context length and number of "
            "candidates, and the non-neural baselines of Hermann et al. (2015), scored as "
            "their expected accuracy when ties are broken at random."
        ),
    )
    _add_systems(parser)
    parser.add_argument("--data", required=True, help="processed dataset directory")
    parser.add_argument("--split", default="test", choices=SPLITS, help="split (default: test)")
    parser.add_argument("--out", help="write the JSON report here (e.g. report.json)")
    parser.add_argument(
        "--predictions",
        metavar="FILE",
        help="write each checkpoint's (and ensemble's) answer to each example here, one JSON "
        "object a line (e.g. predictions.jsonl; needs --ckpt or --ensemble)",
    )
    parser.add_argument(
        "--batch-size",
        type=int,
        default=64,
        help="examples per forward pass (default: %(default)s)",
    )
    add_device_argument(parser, "the readers run")
    parser.add_argument(
        "--length-buckets",
        type=int,
        nargs="+",
        default=list(DEFAULT_LENGTH_EDGES),
        metavar="N",
        help="lower bounds of the context-length buckets, in tokens (default: %(default)s)",
    )
    parser.add_argument(
        "--candidate-buckets",
        type=int,
        nargs="+",
        default=list(DEFAULT_CANDIDATE_EDGES),
        metavar="N",
        help="lower bounds of the number-of-candidates buckets (default: %(default)s)",
    )
    parser.add_argument(
        "--max-penalty",
        type=int,
        default=8,
        help="word-distance baseline: the most one query word can cost (default: "
        "%(default)s, the paper's)",
    )
    parser.add_argument(
        "--window",
        type=int,
        default=None,
        help="word-distance baseline: count only query words this close to the placeholder "
        "(default: every query word, as in the paper)",
    )
    return parser


def _add_systems(parser: argparse.ArgumentParser) -> None:
    """The options that say which systems read: checkpoints, ensembles, and their modes."""
    parser.add_argument(
        "--ckpt",
        nargs="+",
        default=[],
        metavar="CKPT",
        help="reader checkpoints to compare, each evaluated on its own (omit, with no "
        "--ensemble, for a baselines-only report)",
    )
    parser.add_argument(
        "--ensemble",
        nargs="+",
        action="append",
        default=[],
        metavar="CKPT",
        help="checkpoints of one vocabulary and entity range that answer together, by the mean "
        "of their answer probabilities: one more system, named ensemble(CKPT, ...); repeat "
        "--ensemble for several ensembles",
    )
    parser.add_argument(
        "--eval-mode",
        nargs="+",
        default=[],
        metavar="MODE",
        help="read each --ckpt once per mode, each one more system named 'CKPT "
        "[eval_mode=MODE]': the modes of a hard-attention reader (greedy, sample, expected, "
        "uniform); set on the loaded reader, nothing else changes (default: each checkpoint "
        "once, in the mode it was saved with)",
    )
    parser.add_argument(
        "--seed",
        type=int,
        default=0,
        help="every reading of the split starts from torch's generators seeded with it, so "
        "a sampled mode draws the same selections in every run with the same batch size and "
        "device (default: %(default)s)",
    )


def main(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    if args.predictions is not None and not (args.ckpt or args.ensemble):
        raise UserError(
            "--predictions needs a checkpoint (--ckpt or --ensemble): the file holds its answers"
        )
    outputs = [path for path in (args.out, args.predictions) if path is not None]
    if len(outputs) == 2 and Path(args.out).resolve() == Path(args.predictions).resolve():
        raise UserError(f"--out and --predictions are the same file ({args.out}); name two files")
    with contextlib.ExitStack() as stack:
        for path in outputs:  # one run per output file
            stack.enter_context(writing(path, "evaluate"))
        return _evaluate(args)


def _evaluate(args: argparse.Namespace) -> int:
    report = evaluate(
        args.data,
        args.ckpt,
        split=args.split,
        batch_size=args.batch_size,
        device=args.device,
        length_edges=args.length_buckets,
        candidate_edges=args.candidate_buckets,
        max_penalty=args.max_penalty,
        window=args.window,
        progress=QuestionProgress(sys.stderr),
        ensembles=args.ensemble,
        eval_modes=args.eval_mode,
        seed=args.seed,
    )
    print(f"{args.split}: {report.num_examples} examples of {args.data}\n")
    print(report.markdown())
    if args.predictions:
        lines = report.write_predictions(Path(args.predictions))
        count = sum(len(v) for v in report.lines.values())
        print(f"\n{count} predictions written to {lines}", file=sys.stderr)
    if args.out:
        out = report.write(Path(args.out))
        print(f"\nreport written to {out}", file=sys.stderr)
    return 0
