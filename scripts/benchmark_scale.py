#!/usr/bin/env python
"""Benchmark sections ``scale`` (the data module at corpus scale, in fresh processes) and
``answer`` (the answer layers' share of a training step), used by ``scripts/benchmark.py``;
see docs/scale.md.

    python scripts/benchmark_scale.py child --data DIR [--cache-dir DIR] [--num-proc N]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from bench.report import print_results, print_table
from bench.settings import DEEP_LSTM_SHIPPED

CHILD_BATCHES = 200
CNN_TRAIN_QUESTIONS = 380_298
CNN_DM_TRAIN_QUESTIONS = 380_298 + 879_450  # CNN + Daily Mail
_QUANTILES = 1 << 22


@dataclass(frozen=True)
class CorpusShape:
    """What a generated corpus looks like."""

    mean_context: float = 761.8
    max_context: int = 2000
    sigma: float = 0.5
    mean_query: float = 12.5
    entities_per_example: int = 26
    num_entities: int = 600
    num_words: int = 100_000
    chunk: int = 10_000


# --- the generated corpus ------------------------------------------------------------------


def generate_corpus(folder: Path, count: int, shape: CorpusShape, seed: int = 0) -> Path:
    """A processed dataset directory of ``count`` train examples (and 1,000 validation,
    1,000 test) of CNN-like lengths, written with ``save_to_disk``."""
    import datasets
    import pyarrow as pa

    from attentive_reader.corpus.records import CLOZE_FEATURES

    rng = np.random.default_rng(seed)
    ranks = np.arange(1, shape.num_words + 1)
    cdf = np.cumsum(1.0 / ranks)
    cdf /= cdf[-1]
    # Zipf draws by table lookup: word of each of 2^22 equal quantiles (a word rarer than
    # 2^-22 is drawn at that rate); much faster than a search per draw.
    zipf = np.searchsorted(cdf, (np.arange(_QUANTILES) + 0.5) / _QUANTILES).astype(np.int32)
    dictionary = pa.array(
        [f"w{k}" for k in range(shape.num_words)]
        + [f"@entity{e}" for e in range(shape.num_entities)]
        + ["@placeholder"]
    )
    splits = {}
    for split, size in (("train", count), ("validation", 1000), ("test", 1000)):
        tables = [
            _chunk(rng, split, start, min(shape.chunk, size - start), shape, zipf, dictionary)
            for start in range(0, size, shape.chunk)
        ]
        table = pa.concat_tables(tables).cast(CLOZE_FEATURES.arrow_schema)
        splits[split] = datasets.Dataset(table, info=datasets.DatasetInfo(features=CLOZE_FEATURES))
    path = folder / f"corpus-{count}"
    datasets.DatasetDict(splits).save_to_disk(str(path))
    return path


def _chunk(rng, split, start, count, shape, zipf, dictionary):
    """``count`` rows as an Arrow table (token codes index ``dictionary``)."""
    import pyarrow as pa

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from bench.data import sample_lengths

    k = shape.entities_per_example
    words, placeholder = shape.num_words, shape.num_words + shape.num_entities
    lengths = sample_lengths(rng, count, shape.mean_context, shape.sigma, shape.max_context, k)
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    codes = zipf[rng.integers(0, _QUANTILES, int(offsets[-1]))]  # Zipf words
    entities = np.argsort(rng.random((count, shape.num_entities)), axis=1)[:, :k]  # (c, k)
    row = np.repeat(np.arange(count), lengths)
    mention = rng.random(len(codes)) < 1 / 11  # more mentions, of the row's own entities
    codes[mention] = words + entities[row[mention], rng.integers(0, k, int(mention.sum()))]
    for j in range(k):  # every candidate occurs at least once
        codes[offsets[:-1] + j * lengths // k] = words + entities[:, j]
    q_lengths = sample_lengths(rng, count, shape.mean_query, 0.3, 40)
    q_offsets = np.concatenate([[0], np.cumsum(q_lengths)])
    q_codes = zipf[rng.integers(0, _QUANTILES, int(q_offsets[-1]))]
    q_codes[q_offsets[:-1] + rng.integers(0, q_lengths)] = placeholder

    def strings(values: np.ndarray, bounds: np.ndarray) -> pa.ListArray:
        tokens = pa.DictionaryArray.from_arrays(pa.array(values), dictionary).cast(pa.string())
        return pa.ListArray.from_arrays(pa.array(bounds.astype(np.int32)), tokens)

    marker_codes = (words + entities).ravel().astype(np.int32)
    marker_bounds = np.arange(0, count * k + 1, k)
    markers = strings(marker_codes, marker_bounds)
    ids = pa.array([f"{split}-{start + i}" for i in range(count)])
    names = pa.ListArray.from_arrays(
        pa.array(marker_bounds.astype(np.int32)),
        pa.array([f"Name {e}" for e in marker_codes - words]),
    )
    return pa.table(
        {
            "id": ids,
            "story_id": ids,
            "url": pa.array([""] * count),
            "context": strings(codes, offsets),
            "query": strings(q_codes, q_offsets),
            "answer": markers.flatten().take(pa.array(marker_bounds[:-1])),
            "candidates": markers,
            "entity_markers": markers,
            "entity_names": names,
        }
    )


# --- one process's setup -------------------------------------------------------------------


def anonymous_kib() -> int:
    """This process's anonymous memory (``/proc/self/smaps_rollup``), KiB; -1 elsewhere."""
    try:
        for line in Path("/proc/self/smaps_rollup").read_text().splitlines():
            if line.startswith("Anonymous:"):
                return int(line.split()[1])
    except OSError:
        pass
    return -1


def child(data: str, cache_dir: str | None, num_proc: int, batches: int) -> dict:
    """What a training run does before its first step, timed (run in a fresh process)."""
    import torch

    from attentive_reader.data import encoded
    from attentive_reader.data.datamodule import ClozeDataModule

    torch.set_num_threads(1)
    build_seconds: list[float] = []
    build_cpu: list[float] = []
    original = encoded._build

    def timed_build(*args, **kwargs):
        started, cpu = time.perf_counter(), time.process_time()
        original(*args, **kwargs)
        build_seconds.append(time.perf_counter() - started)
        build_cpu.append(time.process_time() - cpu)

    encoded._build = timed_build
    before = anonymous_kib()
    started = time.perf_counter()
    datamodule = ClozeDataModule(data, batch_size=32, cache_dir=cache_dir, num_proc=num_proc)
    constructed = time.perf_counter()
    datamodule.setup("fit")
    setup = time.perf_counter()
    loader = datamodule.train_dataloader()
    drawn = 0
    for drawn, _batch in enumerate(loader, start=1):
        if drawn == batches:
            break
    done = time.perf_counter()
    tokens = 0
    for split in ("train", "validation"):
        columns = datamodule.dataset(split).columns
        tokens += len(columns.array("context")) + len(columns.array("query"))
    return {
        "examples": len(datamodule.dataset("train")),
        "tokens": tokens,
        "construct_seconds": constructed - started,
        "setup_seconds": setup - started,
        "batches": drawn,
        "batches_seconds": done - setup,
        "encode_seconds": sum(build_seconds),
        "encode_cpu_seconds": sum(build_cpu),  # this process only (not its workers)
        "anonymous_mib": (anonymous_kib() - before) / 1024,
        "num_proc": num_proc,
    }


def run_child(data: Path, cache_dir: Path | None = None, num_proc: int = 1) -> dict:
    command = [sys.executable, str(Path(__file__).resolve()), "child", "--data", str(data)]
    if cache_dir is not None:
        command += ["--cache-dir", str(cache_dir)]
    command += ["--num-proc", str(num_proc)]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    done = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"the scale child failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def run_scale(sizes: list[int], folder: Path, shape: CorpusShape, num_proc: int, say) -> dict:
    """Setup time and memory at each corpus size, first run and after (fresh processes)."""
    results = {}
    for size in sizes:
        started = time.perf_counter()
        data = generate_corpus(folder, size, shape)
        generated = time.perf_counter() - started
        say(f"scale: generated {size:,} examples in {generated:.0f} s")
        first = run_child(data)
        say(
            f"scale {size:,}: first run setup {first['setup_seconds']:.1f} s (encoding "
            f"{first['encode_seconds']:.1f} s), anonymous +{first['anonymous_mib']:.0f} MiB"
        )
        again = run_child(data)
        say(
            f"scale {size:,}: after the first run setup {again['setup_seconds']:.2f} s, "
            f"anonymous +{again['anonymous_mib']:.0f} MiB"
        )
        workers = run_child(data, cache_dir=folder / f"cache-{size}-p{num_proc}", num_proc=num_proc)
        say(f"scale {size:,}: encoding with {num_proc} workers {workers['encode_seconds']:.1f} s")
        results[str(size)] = {
            "generate_seconds": generated,
            "first": first,
            "again": again,
            "workers": workers,
            "encode_tokens_per_second": first["tokens"] / first["encode_seconds"],
            "encode_tokens_per_cpu_second": first["tokens"] / first["encode_cpu_seconds"],
            "workers_tokens_per_second": workers["tokens"] / workers["encode_seconds"],
        }
        shutil.rmtree(data, ignore_errors=True)
    return {"sizes": results, "num_proc": num_proc}


# --- the answer layers' share of a step ------------------------------------------------------


def run_answer(data: Path, vocab: Path, settings, rounds: int, device: str, say) -> dict:
    """Training-step seconds with each answer layer, and the answer layer's own seconds."""
    import torch
    import torch.nn.functional as F
    from bench.measure import sync

    from attentive_reader.data.datamodule import ClozeDataModule
    from attentive_reader.models import AttentiveReader

    datamodule = ClozeDataModule(str(data), vocab=str(vocab), entity_ids="first_occurrence")
    datamodule.setup("fit")
    batches = [
        batch.__class__(
            **{k: v.to(device) if hasattr(v, "to") else v for k, v in vars(batch).items()}
        )
        for _, batch in zip(range(3), datamodule.train_dataloader())
    ]
    layers = ("output", "tied", "pointer")
    step: dict[str, list[float]] = {name: [] for name in layers}
    alone: dict[str, list[float]] = {name: [] for name in layers}
    for _ in range(rounds):
        for name in layers:
            torch.manual_seed(0)
            reader = AttentiveReader(
                vocab_size=datamodule.vocab_size,
                num_entities=datamodule.num_entities,
                embedding_dim=settings.embedding_dim,
                hidden_dim=settings.hidden_dim,
                scorer="bilinear",
                readout="linear",
                answer_layer=name,
            ).to(device)
            optimizer = torch.optim.SGD(reader.parameters(), lr=0.1)
            for i, batch in enumerate(batches):
                sync()
                started = time.perf_counter()
                loss = F.cross_entropy(reader(batch).logits, batch.answer)
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                sync()
                if i > 0:  # the first is a warm-up
                    step[name].append(time.perf_counter() - started)
                alone_seconds = _answer_alone(reader, batch, name, settings, device)
                if i > 0:
                    alone[name].append(alone_seconds)
        say(
            "answer: "
            + ", ".join(
                f"{n} {statistics.median(alone[n]) / statistics.median(step[n]):.1%}"
                for n in layers
            )
        )
    b, n = batches[0].context.shape
    return {
        "batch": b,
        "padded_length": n,
        "num_entities": datamodule.num_entities,
        "results": {
            name: {
                "step_seconds": statistics.median(step[name]),
                "answer_seconds": statistics.median(alone[name]),
                "share_of_step": statistics.median(alone[name]) / statistics.median(step[name]),
            }
            for name in layers
        },
    }


def _answer_alone(reader, batch, name: str, settings, device: str) -> float:
    """Forward + backward of the answer layer alone, from random inputs of the reader's
    shapes (``g`` (b, 2h), attention weights and scores (b, n)) to the loss."""
    import torch
    import torch.nn.functional as F
    from bench.measure import sync

    from attentive_reader.nn.answer import AnswerInput
    from attentive_reader.nn.masking import mask_logits

    b, n = batch.context.shape
    g = torch.randn(b, 2 * settings.hidden_dim, device=device, requires_grad=True)
    scores = torch.randn(b, n, device=device, requires_grad=True)
    weights = torch.softmax(scores.detach().masked_fill(~batch.context_mask, -1e9), dim=-1)
    sync()
    started = time.perf_counter()
    given = AnswerInput(vector=g, weights=weights, token_scores=scores)  # the head takes its own
    logits = mask_logits(reader.answer.score(reader.answer_context(batch), given), batch.candidates)
    F.cross_entropy(logits, batch.answer).backward()
    sync()
    return time.perf_counter() - started


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    one = commands.add_parser("child", help="one process's setup, as JSON on stdout")
    one.add_argument("--data", required=True)
    one.add_argument("--cache-dir", default=None)
    one.add_argument("--num-proc", type=int, default=1)
    one.add_argument("--batches", type=int, default=CHILD_BATCHES)
    args = parser.parse_args(argv)
    import datasets

    datasets.disable_progress_bars()
    print(json.dumps(child(args.data, args.cache_dir, args.num_proc, args.batches)))
    return 0


if __name__ == "__main__":
    sys.exit(main())


# --- issue 15's targets beside the measured values -------------------------------------------


@dataclass(frozen=True)
class Target:
    """One target (issues 15 and 39) and what this run measured (``met`` None: no target)."""

    name: str
    target: str
    measured: str
    met: bool | None


def targets(result: dict) -> list[Target]:
    """Every issue-15 target with this run's value (``result``: the benchmark's JSON)."""
    rows: list[Target] = []
    if result.get("scale"):
        rows += _scale_targets(result["scale"])
    for name, row in (result.get("answer") or {}).get("results", {}).items():
        share = row["share_of_step"]
        what = f"answer layer '{name}', share of a training step"
        rows.append(Target(what, "<= 5%", f"{share:.1%}", share <= 0.05))
    if result.get("train"):
        rows += _train_targets(result["train"], result.get("device"))
    return rows


def _scale_targets(scale: dict) -> list[Target]:
    rows: list[Target] = []
    sizes = scale["sizes"]
    for size, row in sizes.items():
        setup, memory = row["again"]["setup_seconds"], row["again"]["anonymous_mib"]
        what = f"setup after the first run, {int(size):,} examples"
        rows.append(Target(what, "< 10 s", f"{setup:.2f} s", setup < 10))
        what = f"anonymous memory of the data, {int(size):,} examples"
        rows.append(Target(what, "< 300 MiB", f"{memory:.0f} MiB", memory < 300))
    memory = [row["again"]["anonymous_mib"] for row in sizes.values()]
    if len(memory) > 1:
        small, large = min(memory), max(memory)
        counts = [int(size) for size in sizes]
        same = f"same at {min(counts):,} and {max(counts):,}"
        measured = f"{small:.0f} vs {large:.0f} MiB"
        rows.append(Target("memory independent of corpus size", same, measured, large - small < 30))
    largest = sizes[max(sizes, key=int)]
    rate = largest["encode_tokens_per_cpu_second"]
    what = "first encoding, one core (tokens per CPU second)"
    rows.append(Target(what, ">= 5M tokens/s", f"{rate / 1e6:.1f}M tokens/s", rate >= 5e6))
    workers, first = largest["workers_tokens_per_second"], largest["encode_tokens_per_second"]
    measured = f"{workers / 1e6:.1f}M tokens/s ({workers / first:.2f}x one process's wall)"
    what = f"first encoding, {scale['num_proc']} workers (wall)"
    rows.append(Target(what, "more than one process", measured, None))
    return rows


def _train_targets(train: dict, device: str | None) -> list[Target]:
    rows: list[Target] = []
    for attentive_name, other_name, label, wanted in TRAIN_COMPARISONS:
        attentive, other = train.get(attentive_name), train.get(other_name)
        if attentive and other:
            wall = _round_ratio(other["examples_per_second"], attentive["examples_per_second"])
            cpu = _round_ratio(
                other["examples_per_cpu_second"], attentive["examples_per_cpu_second"]
            )
            goal = "for comparison" if wanted is None else f">= {wanted}x"
            met = None if wanted is None else wall >= wanted
            rows.append(Target(label, goal, f"{wall:.2f}x (per CPU second {cpu:.2f}x)", met))
    attentive = train.get("Attentive (bilinear), fp32")
    if not attentive:
        return rows
    nan = float("nan")
    measured = (
        f"{attentive['share_of_dense']:.0%} (per CPU second {attentive.get('cpu_share_of_dense', nan):.0%}; "
        f"per token computed, padding included, {attentive.get('computed_share_of_dense', nan):.0%})"
    )
    what = "Attentive Reader, share of the dense limit (tokens/s)"
    rows.append(Target(what, "stay near 95%", measured, None))
    gpu = device == "cuda"
    for key in ("bf16-mixed", "fp32"):
        row = train.get(f"Attentive (bilinear), {key}")
        if row:
            cnn = CNN_TRAIN_QUESTIONS / row["median_examples_per_second"]
            both = CNN_DM_TRAIN_QUESTIONS / row["median_examples_per_second"]
            what = f"full training epoch, Attentive {key} ({device})"
            wanted = "< 2 min on one H200, bf16" if gpu else "GPU target; CPU shown"
            measured = f"CNN {_duration(cnn)}, CNN + Daily Mail {_duration(both)}"
            met = (cnn < 120) if gpu and key == "bf16-mixed" else None
            rows.append(Target(what, wanted, measured, met))
    return rows


# (Attentive entry, other entry, target's name, the least ratio wanted or None): issue 15's
# Impatient target and issue 39's Gated-Attention and Deep LSTM targets.
TRAIN_COMPARISONS: list[tuple[str, str, str, float | None]] = [
    ("Attentive (bilinear), fp32", "Impatient, fp32", "Impatient / Attentive examples/s, fp32", 0.6),
    ("Attentive (bilinear), bf16-mixed", "Impatient, bf16-mixed", "Impatient / Attentive examples/s, bf16-mixed", 0.6),
    ("Attentive (additive, paper), fp32", "Impatient, fp32", "Impatient / Attentive (additive, its own scorer) examples/s, fp32", None),
    ("Attentive (bilinear), fp32", "Gated-Attention (K=3), fp32", "Gated-Attention / Attentive examples/s, fp32", 0.35),
    ("Attentive (bilinear), bf16-mixed", "Gated-Attention (K=3), bf16-mixed", "Gated-Attention / Attentive examples/s, bf16-mixed", None),
    ("Attentive (bilinear), fp32", DEEP_LSTM_SHIPPED, "Deep LSTM (shipped config) / Attentive examples/s, fp32", 0.2),
]  # fmt: skip


def _round_ratio(rates: list[float], references: list[float]) -> float:
    """The median over rounds of each round's ratio (both measured in the same round)."""
    return statistics.median(r / ref for r, ref in zip(rates, references))


def _duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"


def print_tables(console, result: dict) -> None:
    """The scale, answer-layer and targets tables of ``result``."""
    scale = result.get("scale")
    if scale:
        title = (
            "Training data at corpus scale: from constructing ClozeDataModule to "
            f"{CHILD_BATCHES} batches, fresh processes"
        )
        columns = ("examples", "run", "setup s", "encode s", "tokens/CPU s", "+ anon MiB")
        rows = []
        for size, row in scale["sizes"].items():
            for label, run in (
                ("first (encodes)", row["first"]),
                ("after the first", row["again"]),
                (f"{scale['num_proc']} workers, new cache", row["workers"]),
            ):
                cpu = run.get("encode_cpu_seconds") or 0
                rows.append((
                    f"{int(size):,}",
                    label,
                    f"{run['setup_seconds']:.2f}",
                    f"{run['encode_seconds']:.1f}",
                    f"{run['tokens'] / cpu / 1e6:.1f}M" if cpu and run["num_proc"] == 1 else "",
                    f"{run['anonymous_mib']:.0f}",
                    f"{run['batches_seconds']:.1f}",
                ))  # fmt: skip
        print_table(console, title, (*columns, f"{CHILD_BATCHES} batches s"), rows, left=0)
    answer = result.get("answer")
    if answer:
        title = (
            f"Answer layers at CNN scale (batch {answer['batch']}, padded length "
            f"{answer['padded_length']}, {answer['num_entities']} entity ids; median)"
        )
        specs = (
            ("training step s", "step_seconds", "{:.3f}"),
            ("answer layer s", "answer_seconds", "{:.4f}"),
            ("share", "share_of_step", "{:.1%}"),
        )
        print_results(console, title, answer["results"], specs, first="answer layer")
    rows = targets(result)
    if rows:
        title = f"Targets of issues 15 and 39 ({result.get('cpu_model')}, {result.get('device')})"
        shown = [
            (t.name, t.target, t.measured, "-" if t.met is None else ("yes" if t.met else "NO"))
            for t in rows
        ]
        print_table(console, title, ("target", "wanted", "measured", "met"), shown, left=4)
