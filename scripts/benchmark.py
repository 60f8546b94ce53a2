#!/usr/bin/env python
"""Benchmark: training and evaluation throughput of the readers, against a plain reference.

Sections (``--sections``): train, encoder, eval (modules of ``scripts/bench/``), preprocess
(``benchmark_preprocess.py``), scale and answer (``benchmark_scale.py``). What each measures,
its columns and the synthetic data: docs/performance.md ("What the benchmark measures").

    python scripts/benchmark.py --quick       # tiny sizes, a few minutes
    python scripts/benchmark.py --threads 1 --output benchmark.json
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import platform
import sys
import tempfile
import time
import warnings
from collections.abc import Callable, Iterator
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

import torch
from rich.console import Console

sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchmark_scale as bs  # noqa: E402  (beside this script)
from bench.data import write_dataset  # noqa: E402
from bench.encoder import run_encoder  # noqa: E402
from bench.evaluate import run_eval  # noqa: E402
from bench.report import print_tables  # noqa: E402
from bench.settings import FULL, PAPER_SIZES, QUICK, SECTIONS, WHERE, Settings  # noqa: E402
from bench.train import run_train  # noqa: E402
from benchmark_preprocess import run_preprocess  # noqa: E402

from attentive_reader.common.machine import cpu_model  # noqa: E402
from attentive_reader.cpu_speedups.allocator import freed_memory_kept  # noqa: E402
from attentive_reader.cpu_speedups.denormals import denormals_flushed  # noqa: E402


def build_parser() -> argparse.ArgumentParser:
    """The options of the benchmark."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="tiny sizes (a few minutes)")
    parser.add_argument(
        "--threads",
        type=int,
        default=len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 2,
        help="torch intra-op threads (default: the CPUs this process may use)",
    )
    parser.add_argument(
        "--sections",
        nargs="+",
        choices=SECTIONS,
        default=None,
        help="what to measure (default: all; --quick leaves out preprocess)",
    )
    parser.add_argument("--rounds", type=int, default=None, help="override the rounds")
    parser.add_argument(
        "--paper-sizes",
        action="store_true",
        help="the paper configs' sizes (configs/*_paper.yaml: embedding 200, hidden 256) for "
        "every entry, the reference and the dense limit included (default: embedding 100, "
        "hidden 128, the sizes of configs/attentive_reader.yaml)",
    )
    parser.add_argument(
        "--device",
        choices=("cpu", "cuda"),
        default="cpu",
        help="where every section runs (cuda: one GPU; prints full-epoch estimates)",
    )
    parser.add_argument(
        "--scale-sizes",
        type=int,
        nargs="+",
        default=None,
        metavar="N",
        help="train examples of the generated corpora of the scale section "
        "(default: 100000 400000; --quick 2000 4000)",
    )
    parser.add_argument(
        "--entries",
        nargs="+",
        default=None,
        metavar="TEXT",
        help="train section: only the readers whose name holds one of these texts "
        "(e.g. 'Attentive (bilinear)' Impatient); the reference and the dense limit always run",
    )
    parser.add_argument(
        "--shipped",
        action="store_true",
        help="train section: the reader of every shipped config (configs/NAME.yaml, its own "
        "sizes and optimizer; its learning-rate schedule left out), fp32 and bf16-mixed, "
        "instead of the benchmark's entries (--entries filters them too)",
    )
    parser.add_argument(
        "--train-batches",
        type=int,
        default=None,
        metavar="N",
        help="train section: batches in an epoch (one warm-up epoch, one timed; default 6, "
        "--quick 4); a GPU runs a batch in milliseconds and wants more",
    )
    parser.add_argument(
        "--allocator",
        choices=("keep", "system"),
        default="keep",
        help="training steps (train and answer sections): keep: freed memory stays in the "
        "process, as in attentive-reader fit (the default); system: malloc as it is. With "
        "keep, an entry's peak memory includes what earlier entries kept",
    )
    parser.add_argument(
        "--cpu-speedups",
        choices=("on", "off"),
        default="on",
        help="train section: the toolkit's readers train with the fast parts that a shipped "
        "config's CpuSpeedups swaps in (on, the default) or with the plain parts (off)",
    )
    parser.add_argument("--output", type=Path, default=Path("benchmark.json"))
    return parser


@contextlib.contextmanager
def _allocator(choice: str) -> Iterator[dict[str, str]]:
    """``keep``: freed memory kept inside the block (as ``CpuSpeedups(allocator=True)`` does
    through a training loop); ``system``: malloc as it is. Yields what was done."""
    if choice == "system":
        yield {"outcome": "system", "reason": "--allocator system"}
        return
    with freed_memory_kept() as setting:
        yield asdict(setting)


def run_sections(
    sections: list[str], settings: Settings, args: argparse.Namespace, say: Callable[[str], None]
) -> dict[str, Any]:
    """The measurements of ``sections``, by section (and ``train_allocator``)."""
    result: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        if {"train", "eval", "answer"} & set(sections):
            data = write_dataset(Path(tmp), settings)
            vocab = Path(tmp) / "vocab.json"
        if "train" in sections:
            # Training steps run as in attentive-reader fit with a shipped config (CpuSpeedups):
            # freed memory kept, subnormal floats flushed to zero, here for the whole section
            # (the reference's steps too); each toolkit entry swaps the fast parts in.
            with _allocator(args.allocator) as allocator, denormals_flushed():
                result["train_allocator"] = allocator
                result["train"] = run_train(
                    settings, data, vocab, args.threads, say, args.entries, args.shipped
                )
        if "encoder" in sections:
            result["encoder"] = run_encoder(settings, settings.rounds)
        if "eval" in sections:
            result["eval"] = run_eval(settings, data, vocab, say)
        if "answer" in sections:
            with _allocator(args.allocator), denormals_flushed():
                result["answer"] = bs.run_answer(
                    data, vocab, settings, settings.rounds, WHERE.device, say
                )
        if "scale" in sections:
            shape = bs.CorpusShape(
                mean_context=settings.scale_mean_context,
                num_words=2 * settings.vocab_size,
                num_entities=settings.num_entities,
                entities_per_example=settings.entities_per_example,
            )
            result["scale"] = bs.run_scale(
                list(settings.scale_sizes), Path(tmp), shape, settings.scale_num_proc, say
            )
    if "preprocess" in sections:
        result["preprocess"] = run_preprocess(settings, say)
    return result


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.threads < 1:
        parser.error("--threads must be at least 1")
    settings = QUICK if args.quick else FULL
    if args.device == "cuda" and not torch.cuda.is_available():
        parser.error(
            "--device cuda: torch sees no CUDA device here (torch.cuda.is_available() is "
            f"False; torch {torch.__version__}, CUDA build {torch.version.cuda or 'none'}); "
            "run on a machine with an NVIDIA GPU and a CUDA build of torch, or use --device cpu"
        )
    WHERE.device = args.device
    WHERE.cpu_speedups = args.cpu_speedups == "on"
    if args.scale_sizes is not None:
        if min(args.scale_sizes) < 100:
            parser.error("--scale-sizes must be at least 100 examples each")
        settings = replace(settings, scale_sizes=tuple(args.scale_sizes))
    if args.paper_sizes:
        settings = replace(settings, embedding_dim=PAPER_SIZES[0], hidden_dim=PAPER_SIZES[1])
    for key, least in (("train_batches", 2), ("rounds", 1)):
        if (value := getattr(args, key)) is not None:
            if value < least:
                parser.error(f"--{key.replace('_', '-')} must be at least {least}")
            settings = replace(settings, **{key: value})
    sections = args.sections or [s for s in SECTIONS if not (args.quick and s == "preprocess")]
    console = Console(width=None if sys.stdout.isatty() else 120)

    def say(message: str) -> None:
        console.print(message, soft_wrap=True)

    torch.set_num_threads(args.threads)
    torch.set_num_interop_threads(1)
    warnings.filterwarnings("ignore", ".*does not have many workers.*")
    warnings.filterwarnings("ignore", ".*bf16.*")
    import pytorch_lightning  # noqa: F401  (it sets its loggers' levels when imported)

    for name in ("pytorch_lightning", "lightning_fabric"):
        logging.getLogger(name).setLevel(logging.ERROR)
    import datasets

    datasets.disable_progress_bars()
    started = time.perf_counter()
    result: dict[str, Any] = {
        "mode": "quick" if args.quick else "full",
        "settings": asdict(settings),
        "threads": args.threads,
        "torch": torch.__version__,
        "python": platform.python_version(),
        "cpu": platform.processor() or platform.machine(),
        "cpu_model": cpu_model(),
        "device": args.device,
        "gpu": torch.cuda.get_device_name(0) if args.device == "cuda" else None,
        "cpu_count": os.cpu_count(),
        "load_average_1min_start": os.getloadavg()[0],
        "allocator": args.allocator,
        "cpu_speedups": args.cpu_speedups,
    }
    result |= run_sections(sections, settings, args, say)
    result["load_average_1min_end"] = os.getloadavg()[0]
    result["seconds"] = time.perf_counter() - started
    print_tables(console, result)
    bs.print_tables(console, result)
    say(
        f"torch threads {args.threads}, load average {result['load_average_1min_start']:.1f} -> "
        f"{result['load_average_1min_end']:.1f}, {result['seconds']:.0f} s in all; "
        f"training steps' allocator: {args.allocator}"
    )
    args.output.write_text(json.dumps(result, indent=2) + "\n")
    say(f"wrote {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
