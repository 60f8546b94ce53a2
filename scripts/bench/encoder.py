"""The ``encoder`` section: the document BiLSTM, torch's ``PackedSequence`` against the
toolkit's ``SequenceEncoder``."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

import numpy as np
import torch
from torch import Tensor, nn

from bench.measure import peak_mib, peak_reset, sync
from bench.settings import WHERE, Settings


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
    mask = (torch.arange(n).unsqueeze(0) < lengths.unsqueeze(1)).to(WHERE.device)  # (b, n)
    inputs = torch.randn(b, n, d, device=WHERE.device)
    torch.manual_seed(0)
    encoder = SequenceEncoder(d, h).to(WHERE.device)
    # On CUDA also cuDNN's bidirectional LSTM over the padded batch (the plain reference's; its
    # backward direction starts in the padding).
    lstm = nn.LSTM(d, h, batch_first=True, bidirectional=True).to(WHERE.device)

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
    if WHERE.device == "cuda":
        runs["nn.LSTM bidirectional, padded (reads the padding)"] = lambda x: lstm(x)[0]
    seconds: dict[str, list[float]] = {name: [] for name in runs}
    peaks: dict[str, float] = dict.fromkeys(runs, 0.0)
    for _ in range(rounds):
        for name, run in runs.items():
            peak_reset()
            x = inputs.clone().requires_grad_()
            sync()
            start = time.perf_counter()
            run(x).sum().backward()
            sync()
            seconds[name].append(time.perf_counter() - start)
            peaks[name] = max(peaks[name], peak_mib())
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
