"""Compare the attention families on the generated toy cloze task.

Trains, with the same encoder sizes and data, the soft Attentive Reader, the hard-attention
reader (when ``attentive_reader/models/hard.py`` is present), and the Gaussian and
spatial-transformer glimpse readers; then reports for each: test accuracy, training
examples per second, and document tokens read per example:

- soft: every real token (the mean context length);
- hard: the ``k`` selected positions;
- Gaussian: the filterbank's effective support (positions where some filter's weight
  exceeds 1e-3), measured;
- transformer: the distinct tokens its sampling points interpolate between (at most 2N per
  glimpse), measured.

Prints a Markdown table and writes the same numbers as JSON.

    python scripts/compare_attention.py --num-train 2000 --epochs 6 --output compare.json

The defaults (2000 examples, 6 epochs, encoders of size 32) run in about a minute on one
thread; the hard reader uses its tested toy-task setting (Adam at 3e-3), the others Adam
at ``--lr``.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import pytorch_lightning as pl
import torch

from attentive_reader.corpus.synthetic.toy import write_toy_dataset
from attentive_reader.data.datamodule import ClozeDataModule
from attentive_reader.models import AttentiveReader, ClozeReader
from attentive_reader.models.glimpse import GaussianGlimpseReader, TransformerGlimpseReader

Builder = Callable[[int, int], ClozeReader]


def readers(args: argparse.Namespace) -> dict[str, tuple[str, Builder]]:
    """The readers to compare: name -> (family, builder(vocab_size, num_entities))."""
    # The paper's output layer over the toy task's 8 entity ids, as the README's table was
    # measured (scripts/learning_curves.py compares the answer layers).
    sizes = {
        "embedding_dim": args.dim,
        "hidden_dim": args.dim,
        "dropout": 0.0,
        "answer_layer": "output",
    }
    adam = {"optimizer": "adam", "lr": args.lr}
    glimpse = {"num_filters": args.num_filters, "num_glimpses": args.num_glimpses}
    chosen: dict[str, tuple[str, Builder]] = {
        "soft (Attentive Reader)": (
            "soft",
            lambda v, e: AttentiveReader(vocab_size=v, num_entities=e, **sizes, **adam),
        ),
    }
    if importlib.util.find_spec("attentive_reader.models.hard") is not None:
        from attentive_reader.models.hard import HardAttentionReader

        chosen[f"hard (REINFORCE, k={args.k})"] = (
            "hard",
            # Its tested toy-task setting: Adam at 3e-3.
            lambda v, e: HardAttentionReader(
                vocab_size=v, num_entities=e, **sizes, k=args.k, optimizer="adam", lr=3e-3
            ),
        )
    chosen[f"Gaussian glimpse (N={args.num_filters}, K={args.num_glimpses})"] = (
        "gaussian",
        lambda v, e: GaussianGlimpseReader(
            vocab_size=v, num_entities=e, **sizes, **glimpse, **adam
        ),
    )
    chosen[f"transformer glimpse (N={args.num_filters}, K={args.num_glimpses})"] = (
        "transformer",
        lambda v, e: TransformerGlimpseReader(
            vocab_size=v, num_entities=e, **sizes, **glimpse, **adam
        ),
    )
    return chosen


def tokens_read(reader: ClozeReader, family: str, data: ClozeDataModule) -> tuple[float, float]:
    """Mean tokens read per test example and mean test context length."""
    reader.eval()
    read = length = count = 0.0
    with torch.no_grad():
        for batch in data.test_dataloader():
            output = reader(batch)
            lengths = batch.context_mask.sum(1).float()  # (b,)
            if family == "soft":
                per_example = lengths
            elif family == "hard":
                per_example = (output.selected >= 0).sum(1).float()  # (b,)
            else:
                per_example = output.extras.tokens_read.float()  # (b,)
            read += float(per_example.sum())
            length += float(lengths.sum())
            count += len(batch)
    return read / count, length / count


def compare(args: argparse.Namespace, directory: Path) -> list[dict]:
    """Train and measure every reader; returns one result row per reader."""
    path = write_toy_dataset(
        directory / "toy",
        num_train=args.num_train,
        num_validation=8,
        num_test=args.num_test,
        seed=args.seed,
    )
    rows = []
    for name, (family, build) in readers(args).items():
        pl.seed_everything(args.seed, verbose=False)
        data = ClozeDataModule(str(path), batch_size=args.batch_size, num_entities=8)
        reader = build(data.vocab_size, data.num_entities)
        trainer = pl.Trainer(
            max_epochs=args.epochs,
            accelerator="cpu",
            logger=False,
            enable_checkpointing=False,
            enable_progress_bar=False,
            enable_model_summary=False,
            use_distributed_sampler=False,
            limit_val_batches=0,
            num_sanity_val_steps=0,
            gradient_clip_val=10,
        )
        start = time.perf_counter()
        trainer.fit(reader, data)
        seconds = time.perf_counter() - start
        accuracy = trainer.test(reader, data, verbose=False)[0]["test_acc"]
        read, length = tokens_read(reader, family, data)
        row = {
            "reader": name,
            "family": family,
            "test_accuracy": round(accuracy, 4),
            "train_examples_per_s": round(args.num_train * args.epochs / seconds, 1),
            "tokens_read_per_example": round(read, 2),
            "context_length": round(length, 2),
            "train_seconds": round(seconds, 1),
        }
        print(json.dumps(row), file=sys.stderr, flush=True)
        rows.append(row)
    return rows


def markdown(rows: list[dict]) -> str:
    """The rows as a Markdown table."""
    lines = [
        "| reader | test accuracy | training examples/s | tokens read / example |",
        "|---|---:|---:|---:|",
    ]
    for row in rows:
        lines.append(
            f"| {row['reader']} | {row['test_accuracy']:.3f} | "
            f"{row['train_examples_per_s']:.0f} | "
            f"{row['tokens_read_per_example']:.1f} of {row['context_length']:.1f} |"
        )
    return "\n".join(lines)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--num-train", type=int, default=2000, help="training examples")
    parser.add_argument("--num-test", type=int, default=200, help="test examples")
    parser.add_argument("--epochs", type=int, default=6, help="training epochs per reader")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--dim", type=int, default=32, help="embedding and hidden size")
    parser.add_argument("--lr", type=float, default=1e-2, help="Adam's learning rate")
    parser.add_argument("--k", type=int, default=1, help="positions the hard reader reads")
    parser.add_argument("--num-filters", type=int, default=8, help="glimpse filters/points N")
    parser.add_argument("--num-glimpses", type=int, default=1, help="glimpses K")
    parser.add_argument("--threads", type=int, default=1, help="torch threads")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--output", type=Path, default=Path("compare_attention.json"))
    args = parser.parse_args(argv)
    for name in ("num_train", "num_test", "epochs", "batch_size", "dim", "k", "threads"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be at least 1")
    if args.num_filters < 1 or args.num_glimpses < 1:
        parser.error("--num-filters and --num-glimpses must be at least 1")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    torch.set_num_threads(args.threads)
    with tempfile.TemporaryDirectory() as directory:
        rows = compare(args, Path(directory))
    table = markdown(rows)
    print(table)
    args.output.write_text(
        json.dumps(
            {"options": vars(args) | {"output": str(args.output)}, "results": rows}, indent=2
        )
        + "\n"
    )
    print(f"wrote {args.output}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
