"""The ``eval`` section: ``trainer.test`` over the synthetic test split against the
reference's forward passes."""

from __future__ import annotations

import time
from pathlib import Path

import torch

from bench.measure import peak_mib, peak_reset, toolkit_trainer
from bench.reference import reference_inference
from bench.settings import Settings
from bench.train import Entry, build_reader


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
        peak_reset()
        start, cpu = time.perf_counter(), time.process_time()
        toolkit_trainer(precision).test(reader, datamodule=datamodule, verbose=False)
        seconds = time.perf_counter() - start
        name = f"Attentive (bilinear) trainer.test, {precision}"
        results[name] = {
            "seconds": seconds,
            "cpu_seconds": time.process_time() - cpu,
            "examples_per_second": len(examples) / seconds,
            "peak_rss_mib": peak_mib(),
        }
        say(f"eval: {name}: {seconds:.1f} s for {len(examples)} examples")
    peak_reset()
    sample = examples[: 10 * settings.batch_size]  # its rate, on a sample (it is slow)
    timed = reference_inference(settings, sample)
    results[f"Reference forward passes, fp32 ({len(sample)} examples)"] = {
        "seconds": timed.seconds,
        "cpu_seconds": timed.cpu_seconds,
        "examples_per_second": timed.rate,
        "peak_rss_mib": peak_mib(),
    }
    return {"examples": len(examples), "results": results}
