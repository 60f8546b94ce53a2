"""The benchmark's modes (``Settings``: ``FULL``, ``QUICK``), its sections' names, and
where every tensor goes (``WHERE.device``, set once by ``benchmark.py``'s ``main``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Section = Literal["train", "encoder", "eval", "preprocess", "scale", "answer"]
SECTIONS: tuple[str, ...] = ("train", "encoder", "eval", "preprocess", "scale", "answer")
Device = Literal["cpu", "cuda"]
CNN_MEAN_CONTEXT = 761.8
CNN_TEST_SIZE = 3198
DENSE = "Dense limit (reference maths, equal-length unpadded), fp32"
# The dense limit under bf16 autocast: measured on CUDA only (the yardstick of bf16 entries).
DENSE_BF16 = "Dense limit (reference maths, equal-length unpadded), bf16-mixed"
REFERENCE = "Reference (plain loop), fp32"
# The Deep LSTM Reader at configs/deep_lstm_reader.yaml's sizes (the targets table reads it).
DEEP_LSTM_SHIPPED = "Deep LSTM (shipped config: 2 x 256, query first), fp32"


@dataclass
class Where:
    """Where every tensor goes (``--device``): a script-wide setting, set once by ``main``."""

    device: Device = "cpu"
    # The toolkit's entries train with the fast parts of CpuSpeedups (--cpu-speedups off: plain).
    cpu_speedups: bool = True


WHERE = Where()


@dataclass(frozen=True)
class Settings:
    """Sizes of one benchmark mode."""

    vocab_size: int = 50_000
    num_entities: int = 600
    embedding_dim: int = 100
    hidden_dim: int = 128
    batch_size: int = 32
    train_batches: int = 6  # an epoch: one to warm up, one timed
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
