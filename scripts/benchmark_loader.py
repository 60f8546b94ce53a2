#!/usr/bin/env python
"""What the data path can feed a GPU: collated training batches per second at CNN length,
from 0, 1, 2 and 4 loader workers over a generated corpus. See docs/scale.md ("Feeding a
GPU").

    python scripts/benchmark_loader.py [--examples 20000] [--workers 0 1 2 4] [--rounds 3]
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import sys
import tempfile
import time
import warnings
from pathlib import Path

import datasets
import torch
from benchmark_scale import CNN_TRAIN_QUESTIONS, CorpusShape, generate_corpus

from attentive_reader.common.machine import cpu_model
from attentive_reader.data.batching import ClozeBatch
from attentive_reader.data.datamodule import ClozeDataModule

EPOCH_SECONDS = 120  # the GPU target: one CNN epoch in 2 minutes
TARGET = CNN_TRAIN_QUESTIONS / EPOCH_SECONDS  # examples/s


def batch_bytes(batch: ClozeBatch) -> int:
    """Bytes of a batch's tensors (what is copied to the GPU)."""
    tensors = (batch.context, batch.context_mask, batch.query, batch.query_mask)
    tensors += (batch.candidates, batch.answer, batch.truncated)
    return sum(t.numel() * t.element_size() for t in tensors)


def draw(datamodule: ClozeDataModule, workers: int, warm_up: int, batches: int) -> dict:
    """One round: the time to the first batch, then ``batches`` batches after ``warm_up``."""
    datamodule.num_workers = workers
    started = time.perf_counter()
    loader = datamodule.train_dataloader()
    iterator = iter(loader)
    first = next(iterator)
    first_seconds = time.perf_counter() - started
    for _ in range(warm_up - 1):
        next(iterator)
    examples = size = 0
    started = time.perf_counter()
    for _ in range(batches):
        batch = next(iterator)
        examples += len(batch)
        size += batch_bytes(batch)
    seconds = time.perf_counter() - started
    del loader, iterator
    gc.collect()  # stops the workers (persistent ones are held by their loader)
    return {
        "first_batch_seconds": first_seconds,
        "examples_per_second": examples / seconds,
        "mb_per_second": size / seconds / 1e6,
        "pinned": bool(first.context.is_pinned()),
    }


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=20_000, help="train examples")
    parser.add_argument("--workers", type=int, nargs="+", default=[0, 1, 2, 4])
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--batches", type=int, default=300, help="timed batches a round")
    parser.add_argument("--warm-up", type=int, default=20, help="batches before the timing")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--output", metavar="FILE.json", help="write the figures here")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.examples < args.batch_size * (args.batches + args.warm_up):
        raise SystemExit("--examples must cover --warm-up + --batches batches of --batch-size")
    torch.set_num_threads(1)
    datasets.disable_progress_bars()
    # torch warns when the workers outnumber the cores: measuring that case is the point.
    warnings.filterwarnings("ignore", message="This DataLoader will create")
    rounds: dict[int, list[dict]] = {w: [] for w in args.workers}
    with tempfile.TemporaryDirectory(prefix="loader-bench-") as folder:
        data = generate_corpus(Path(folder), args.examples, CorpusShape())
        datamodule = ClozeDataModule(str(data), batch_size=args.batch_size)
        datamodule.pin_memory = torch.cuda.is_available()
        datamodule.setup("fit")  # encodes the ids once (memory-mapped from here on)
        for round_ in range(args.rounds):
            for workers in args.workers:
                figures = draw(datamodule, workers, args.warm_up, args.batches)
                rounds[workers].append(figures)
                print(
                    f"round {round_ + 1}/{args.rounds}: {workers} workers: "
                    f"{figures['examples_per_second']:,.0f} examples/s, "
                    f"{figures['mb_per_second']:.1f} MB/s, "
                    f"first batch {figures['first_batch_seconds']:.2f} s",
                    flush=True,
                )
    pinned = any(r["pinned"] for rs in rounds.values() for r in rs)
    print(
        f"\n{cpu_model()}, batch {args.batch_size}, {args.examples:,} CNN-length examples; "
        f"batches {'pinned' if pinned else 'not pinned (no GPU)'}; medians of {args.rounds} rounds"
    )
    print(f"target: {TARGET:,.0f} examples/s (a CNN epoch of {CNN_TRAIN_QUESTIONS:,} in 2 min)\n")
    print("| loader workers | examples/s | MB/s | x target | first batch (s) |")
    print("| ---: | ---: | ---: | ---: | ---: |")
    summary = {}
    for workers, figures in rounds.items():
        rate = statistics.median(r["examples_per_second"] for r in figures)
        mb = statistics.median(r["mb_per_second"] for r in figures)
        first = statistics.median(r["first_batch_seconds"] for r in figures)
        summary[workers] = {"examples_per_second": rate, "mb_per_second": mb, "first": first}
        print(f"| {workers} | {rate:,.0f} | {mb:.1f} | {rate / TARGET:.2f} | {first:.2f} |")
    if args.output:
        result = {"cpu": cpu_model(), "target": TARGET, "pinned": pinned, "rounds": rounds}
        Path(args.output).write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
