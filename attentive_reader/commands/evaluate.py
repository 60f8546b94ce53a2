"""``attentive-reader evaluate``: accuracy report with confidence intervals and baselines.

Every example of the split is read exactly once, in one process, by every checkpoint; the
paper's non-neural baselines are computed from the same examples. The report is a Markdown
table on the terminal and, with ``--out``, a JSON file holding every figure and the inputs
(checkpoint paths and SHA-256 hashes, the dataset manifest, the split, the options).
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import sys
import time
from pathlib import Path

from attentive_reader import __version__
from attentive_reader.corpus.manifest import write_json_atomic
from attentive_reader.corpus.records import SPLITS, ClozeExample, Split, entity_marker, load_split
from attentive_reader.errors import UserError
from attentive_reader.eval.report import (
    DEFAULT_CANDIDATE_EDGES,
    DEFAULT_LENGTH_EDGES,
    baseline_predictions,
    build_report,
    markdown_tables,
)
from attentive_reader.faults import writing


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="attentive-reader evaluate",
        description=(
            "Exact cloze accuracy of one or more checkpoints on every example of a split, "
            "with Wilson 95%% intervals, breakdowns by context length and number of "
            "candidates, and the non-neural baselines of Hermann et al. (2015)."
        ),
    )
    parser.add_argument(
        "--ckpt",
        nargs="+",
        default=[],
        metavar="CKPT",
        help="reader checkpoints to compare (omit for a baselines-only report)",
    )
    parser.add_argument("--data", required=True, help="processed dataset directory")
    parser.add_argument("--split", default="test", choices=SPLITS, help="split (default: test)")
    parser.add_argument("--out", help="write the JSON report here (e.g. report.json)")
    parser.add_argument("--batch-size", type=int, default=64, help="examples per forward pass")
    parser.add_argument(
        "--device", default="auto", help="auto (GPU when available), cpu, cuda or cuda:N"
    )
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
        help="word-distance baseline: the most one query word can cost (paper: 8)",
    )
    parser.add_argument(
        "--window",
        type=int,
        default=None,
        help="word-distance baseline: count only query words this close to the placeholder "
        "(default: every query word, as in the paper)",
    )
    return parser


def sha256_of(path: str | Path) -> str:
    """The SHA-256 hex digest of a file, read in chunks."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def load_examples(data: Path, split: Split) -> list[ClozeExample]:
    """The stored examples of ``split`` in stored order.

    Raises:
        UserError: if ``data`` is not a processed dataset or lacks the split.
    """
    return [ClozeExample.from_row(row) for row in load_split(data, split)]


def read_manifest(data: Path) -> dict | None:
    path = data / "manifest.json"
    if not path.is_file():
        return None
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as err:
        raise UserError(f"{path}: not valid JSON ({err}); preprocess the dataset again") from None


def model_predictions(
    ckpt: str, data: Path, split: str, examples: list[ClozeExample], batch_size: int, device
) -> tuple[list[str], dict]:
    """One checkpoint's predicted marker for every example, and facts about the checkpoint."""
    from attentive_reader.eval.inference import iterate_predictions, load_for_split

    reader, datamodule = load_for_split(ckpt, data, device)
    predictions: list[str] = []
    started = time.perf_counter()
    for batch, output in iterate_predictions(
        reader, datamodule, split, batch_size=batch_size, device=device
    ):
        for example_id, k in zip(batch.ids, output["prediction"].tolist()):
            position = len(predictions)
            if position >= len(examples) or examples[position].id != example_id:
                raise UserError(
                    f"{ckpt}: the reader's data order differs from {data} [{split}] at row "
                    f"{position} (example {example_id}); is it the same dataset?"
                )
            predictions.append(entity_marker(int(k)))
    if len(predictions) != len(examples):
        raise UserError(
            f"{ckpt}: {len(predictions)} predictions for {len(examples)} examples of {split}"
        )
    info = {
        "path": str(ckpt),
        "sha256": sha256_of(ckpt),
        "reader": f"{type(reader).__module__}.{type(reader).__qualname__}",
        "hyper_parameters": {k: v for k, v in reader.hparams.items() if not k.startswith("_")},
        # What trained the reader (its own arguments, with the learning rate resolved).
        "optimizer": {
            "name": reader.optimizer_name,
            "lr": reader.lr,
            "weight_decay": reader.weight_decay,
            **reader.optimizer_options,
        },
        "max_context_tokens": datamodule.max_context_tokens,
        "seconds": round(time.perf_counter() - started, 3),
    }
    return predictions, info


def _unique_name(name: str, taken: set[str]) -> str:
    candidate, k = name, 2
    while candidate in taken:
        candidate, k = f"{name} ({k})", k + 1
    taken.add(candidate)
    return candidate


def main(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    if args.out is None:
        return _evaluate(args)
    with writing(args.out, "evaluate"):  # one run per report file
        return _evaluate(args)


def _evaluate(args: argparse.Namespace) -> int:
    if args.batch_size < 1:
        raise UserError(f"--batch-size must be positive, got {args.batch_size}")
    if args.max_penalty < 1:
        raise UserError(f"--max-penalty must be positive, got {args.max_penalty}")
    for flag, edges in (
        ("--length-buckets", args.length_buckets),
        ("--candidate-buckets", args.candidate_buckets),
    ):
        if any(b <= a for a, b in zip(edges, edges[1:])):
            raise UserError(f"{flag} must be strictly ascending, got {edges}")
    data = Path(args.data)
    for ckpt in args.ckpt:
        if not Path(ckpt).is_file():
            raise UserError(f"checkpoint not found: {ckpt}")
    examples = load_examples(data, args.split)
    if not examples:
        raise UserError(f"{data} [{args.split}] holds no examples")

    started = time.perf_counter()
    baselines = baseline_predictions(examples, max_penalty=args.max_penalty, window=args.window)
    baseline_seconds = round(time.perf_counter() - started, 3)

    models: dict[str, list[str]] = {}
    checkpoints = []
    if args.ckpt:
        from attentive_reader.eval.inference import resolve_device

        device = resolve_device(args.device)
        taken: set[str] = set(baselines)
        for ckpt in args.ckpt:
            print(f"evaluating {ckpt} on {len(examples)} examples ({device})", file=sys.stderr)
            predictions, info = model_predictions(
                ckpt, data, args.split, examples, args.batch_size, device
            )
            info["name"] = _unique_name(ckpt, taken)
            models[info["name"]] = predictions
            checkpoints.append(info)

    figures = build_report(
        examples,
        models,
        baselines=baselines,
        length_edges=args.length_buckets,
        candidate_edges=args.candidate_buckets,
    )
    report = {
        "tool": f"attentive-reader {__version__} evaluate",
        "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "inputs": {
            "data": str(data.resolve()),
            "split": args.split,
            "manifest": read_manifest(data),
            "checkpoints": checkpoints,
            "options": {
                "batch_size": args.batch_size,
                "device": args.device,
                "word_distance": {"max_penalty": args.max_penalty, "window": args.window},
                "baseline_seconds": baseline_seconds,
            },
        },
        **figures,
    }
    print(f"{args.split}: {len(examples)} examples of {data}\n")
    print(markdown_tables(report))
    if args.out:
        out = Path(args.out)
        write_json_atomic(out, report)  # a full disk never leaves half a report
        print(f"\nreport written to {out}", file=sys.stderr)
    return 0
