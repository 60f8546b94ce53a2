"""The ``train`` section: every reader trained by the toolkit against the reference and
the dense limit, in interleaved rounds."""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from pathlib import Path

import torch

from bench.measure import (
    Timed,
    gpu_peak_mib,
    peak_mib,
    peak_reset,
    process_threads,
    timer_callback,
    toolkit_trainer,
)
from bench.reference import dense_examples, time_reference
from bench.settings import DEEP_LSTM_SHIPPED, DENSE, DENSE_BF16, REFERENCE, WHERE, Settings


@dataclass(frozen=True)
class Entry:
    """One training configuration of the toolkit."""

    name: str
    reader: str  # class name in attentive_reader.models
    init: dict
    precision: str = "32-true"
    bucketing: bool = True
    threads: int | None = None  # None: the benchmark's --threads


# configs/deep_lstm_reader.yaml's reader (its embedding, 100, is the benchmark's).
DEEP_LSTM_CONFIG = {
    "hidden_dim": 256,
    "num_layers": 2,
    "dropout": 0.1,
    "query_match": True,
    "forget_bias": 1.0,
    "order": "query_first",
    "answer_layer": "tied",
}


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
        Entry(DEEP_LSTM_SHIPPED, "DeepLSTMReader", DEEP_LSTM_CONFIG),
        Entry("Uniform, fp32", "UniformReader", {}),
        Entry("Gated-Attention (K=3), fp32", "GatedAttentionReader", {"answer_layer": "pointer"}),
        Entry("Gated-Attention (K=3), bf16-mixed", "GatedAttentionReader", {"answer_layer": "pointer"}, "bf16-mixed"),
    ]  # fmt: skip
    if threads > 1:
        entries.append(
            Entry("Attentive (bilinear), fp32, 1 thread", "AttentiveReader", bilinear, threads=1)
        )
    return entries  # fmt: skip


# A shipped config's learning-rate schedule watches val_acc, which the benchmark's epochs do
# not compute (no validation); it does not change a step's work, so it is left out.
SCHEDULE_OPTIONS = ("lr_schedule", "lr_factor", "lr_patience", "lr_decay_start")


def shipped_entries() -> list[Entry]:
    """Every shipped reader config (``configs/NAME.yaml``) in fp32 and bf16-mixed: its reader
    class with the config's own options (sizes and optimizer included), learning-rate schedule
    left out (``SCHEDULE_OPTIONS``)."""
    import yaml

    from attentive_reader.training.shipped_configs import configs_dir, shipped_readers

    entries = []
    for name in shipped_readers():
        model = yaml.safe_load((configs_dir() / f"{name}.yaml").read_text())["model"]
        init = {
            key: value
            for key, value in (model.get("init_args") or {}).items()
            if key not in SCHEDULE_OPTIONS
        }
        reader = model["class_path"].rsplit(".", 1)[-1]
        for precision, label in (("32-true", "fp32"), ("bf16-mixed", "bf16-mixed")):
            entries.append(Entry(f"configs/{name}.yaml, {label}", reader, init, precision))
    return entries


def build_reader(entry: Entry, settings: Settings, vocab_size: int, num_entities: int):
    """``entry``'s reader; what its options leave open is the benchmark's (its sizes, SGD at
    0.1, and the output matrix that the plain reference answers with: like with like)."""
    import attentive_reader.models as models

    init = {
        "embedding_dim": settings.embedding_dim,
        "hidden_dim": settings.hidden_dim,
        "answer_layer": "output",
        "optimizer": "sgd",
        "lr": 0.1,
        **entry.init,
    }
    return getattr(models, entry.reader)(vocab_size=vocab_size, num_entities=num_entities, **init)


def time_toolkit(entry: Entry, settings: Settings, data: Path, vocab: Path, seed: int) -> Timed:
    """``entry`` through ``ClozeDataModule`` and the Lightning ``Trainer``, with the fast parts
    a shipped config's ``CpuSpeedups`` swaps in: a warm-up epoch (every buffer reaches the
    size the longest batch needs), then the timed epoch."""
    import pytorch_lightning as pl

    from attentive_reader.cpu_speedups import CpuSpeedups
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
    timer = timer_callback()
    # The allocator and the denormal flush are run_sections's, for the whole section.
    on = WHERE.cpu_speedups
    speedups = CpuSpeedups(
        allocator=False, denormals=False, gru=on, impatient_steps=on, dropout=on, bf16_fallback=on
    )
    trainer = toolkit_trainer(
        entry.precision,
        max_epochs=2,
        limit_val_batches=0,
        gradient_clip_val=10,
        callbacks=[timer, speedups],
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
    shipped: bool = False,
) -> dict:
    """Every entry (or those whose name holds one of ``only``; with ``shipped``, the shipped
    configs' readers instead of the benchmark's) and the reference, in interleaved rounds. On
    CUDA the dense limit runs in bf16-mixed too."""
    from attentive_reader.data.datamodule import ClozeDataModule

    examples = (
        ClozeDataModule(str(data), vocab=str(vocab), entity_ids="first_occurrence")
        .dataset("train")
        .examples
    )
    dense = dense_examples(examples)
    candidates = shipped_entries() if shipped else train_entries(threads)
    entries = [e for e in candidates if not only or any(part in e.name for part in only)]
    references = [REFERENCE, DENSE, *([DENSE_BF16] if WHERE.device == "cuda" else [])]
    names = [*references, *(e.name for e in entries)]
    rates: dict[str, list[float]] = {name: [] for name in names}
    cpu_rates: dict[str, list[float]] = {name: [] for name in names}
    tokens: dict[str, list[float]] = {name: [] for name in names}
    cpu_tokens: dict[str, list[float]] = {name: [] for name in names}
    data_share: dict[str, list[float]] = {name: [] for name in names}
    real_share: dict[str, list[float]] = {name: [] for name in names}
    peaks: dict[str, float] = dict.fromkeys(names, 0.0)
    gpu_peaks: dict[str, float | None] = dict.fromkeys(names)
    threads_after: dict[str, list[int | None]] = {name: [] for name in names}
    for round_ in range(settings.rounds):
        for name, entry in zip(names, [*(None for _ in references), *entries]):
            torch.set_num_threads(
                threads if entry is None or entry.threads is None else entry.threads
            )
            peak_reset()
            if entry is None:
                chosen = examples if name == REFERENCE else dense
                precision = "bf16-mixed" if name == DENSE_BF16 else "32-true"
                timed = time_reference(settings, chosen, seed=round_, precision=precision)
            else:
                timed = time_toolkit(entry, settings, data, vocab, seed=round_)
            peaks[name] = max(peaks[name], peak_mib())
            if (gpu := gpu_peak_mib()) is not None:
                gpu_peaks[name] = max(gpu_peaks[name] or 0.0, gpu)
            threads_after[name].append(process_threads())
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
            # On CUDA: the same against the dense limit in bf16-mixed (the yardstick of the
            # bf16 entries); None elsewhere.
            "share_of_dense_bf16": (
                statistics.median(t / d for t, d in zip(tokens[name], tokens[DENSE_BF16]))
                if DENSE_BF16 in tokens
                else None
            ),
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
            # On CUDA: the most GPU memory torch's tensors held (torch.cuda.max_memory_allocated).
            "peak_gpu_mib": gpu_peaks[name],
            # The process's threads after the entry, each round: a count that grows after
            # one entry (a team of threads it left) would slow the entries after it.
            "process_threads_after": threads_after[name],
        }
        for name in names
    }
