"""The one-command demo: the whole toolkit on the built-in synthetic corpus.

generate stories -> preprocess them with the real pipeline (spaCy NER) -> fit a reader with the
Lightning CLI and a shipped config -> test it -> the evaluation report (with the paper's
baselines) -> attention heatmaps; all into one output directory, with a closing summary.

Every step calls the library function the matching ``attentive-reader`` subcommand calls
(``preprocess``, ``training.run_cli``, ``eval.evaluate``, ``viz.checkpoint_heatmaps`` and
``viz.write_heatmaps``), so what the demo shows is what a user gets on a real corpus.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.table import Table

from attentive_reader.common.errors import UserError
from attentive_reader.training.errors import quiet_lightning
from attentive_reader.training.shipped_configs import (
    config_path,
    configs_dir,
    is_config_name,
    shipped_readers,
)

if TYPE_CHECKING:
    from attentive_reader.eval import Report

MARKER_FILE = "demo.json"


@dataclass(frozen=True)
class DemoOptions:
    """Options of ``attentive-reader demo``.

    Attributes:
        out_dir: where everything goes (corpus, dataset, checkpoints, report, heatmaps).
        reader: a shipped reader config (``attentive_reader``, ``impatient_reader``, ...; see
            ``configs/``) or the path of a YAML config.
        stories: number of synthetic stories to generate.
        epochs: training epochs.
        seed: seed of the corpus and of training.
        num_proc: preprocessing processes.
        heatmaps: number of test examples to draw heatmaps for.
        spacy_model: spaCy pipeline for NER; ``None``: an installed statistical model, else
            an entity ruler built from the generator's own names; ``"ruler"``: that ruler
            (fast, exact on this corpus).
    """

    out_dir: str = "runs/demo"
    reader: str = "attentive_reader"
    stories: int = 4000
    epochs: int = 4
    seed: int = 0
    num_proc: int = 2
    heatmaps: int = 10
    spacy_model: str | None = None

    def __post_init__(self) -> None:
        for name in ("stories", "epochs", "num_proc", "heatmaps"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise UserError(
                    f"--{name.replace('_', '-')} must be a positive integer, got {value!r}"
                )
        if self.stories < 50:
            raise UserError(
                f"--stories must be at least 50 (the test split gets 1 in 10), got {self.stories}"
            )


def reader_config(reader: str) -> Path:
    """The YAML config for ``reader``: a shipped reader config's name or a path."""
    if not is_config_name(reader):
        return config_path(reader)
    if reader not in shipped_readers():
        raise UserError(
            f"unknown reader {reader!r}; choose one of {', '.join(shipped_readers())} "
            "or pass the path of a YAML config"
        )
    return config_path(reader)


def _prepare_out_dir(out: Path) -> None:
    """Create ``out``; an earlier demo's output there is replaced, anything else is kept."""
    if out.exists() and any(out.iterdir()):
        if not (out / MARKER_FILE).is_file():
            raise UserError(
                f"{out} exists and is not the output of an earlier demo; "
                "choose another --out-dir or empty it"
            )
        shutil.rmtree(out)
    out.mkdir(parents=True, exist_ok=True)


def _ner_model(options: DemoOptions, ruler_dir: Path, console: Console) -> str:
    """The spaCy pipeline to preprocess with (name or directory)."""
    from attentive_reader.corpus.pipeline import resolve_model

    if options.spacy_model == "ruler":
        return str(ruler_dir)
    if options.spacy_model is not None:
        return resolve_model(options.spacy_model)
    try:
        return resolve_model(None)
    except UserError:
        console.print(
            "[yellow]No statistical spaCy model is installed: using an entity ruler built from "
            "the generator's own names (pip install 'attentive-reader[ner]' for the real NER).[/]"
        )
        return str(ruler_dir)


def run_demo(options: DemoOptions, console: Console | None = None) -> dict:
    """Run the demo; returns the summary that is also written to ``OUT_DIR/demo.json``.

    Raises:
        UserError: a bad option or an output directory that holds something else.
    """
    console = console or Console()
    started = time.perf_counter()
    timings: dict[str, float] = {}
    config = reader_config(options.reader)
    out = Path(options.out_dir)
    _prepare_out_dir(out)
    (out / MARKER_FILE).write_text(json.dumps({"options": asdict(options), "complete": False}))
    step = _Steps(console, timings)
    stories = f"{options.stories} synthetic news stories (seed {options.seed})"
    with step(1, "generate", f"Generating {stories}"):
        _generate(options, out, console)
    with step(2, "preprocess", "Preprocessing: spaCy NER, anonymization, cloze questions"):
        data, model, examples = _preprocess_corpus(options, out, console)
    with step(3, "fit", f"Training {config.stem} for {options.epochs} epochs"):
        cli, checkpoint = _train(options, config, data, out)
    with step(4, "test", "Testing the best checkpoint"), quiet_lightning():
        tested = cli.trainer.test(cli.model, datamodule=cli.datamodule, ckpt_path=checkpoint)
        test_acc = float(tested[0]["test_acc"]) if tested else float("nan")
    with step(5, "evaluate", "Evaluation report with the paper's baselines"):
        report, report_path = _report(data, checkpoint, out, console)
    with step(6, "heatmaps", f"Attention heatmaps for {options.heatmaps} test examples"):
        heatmaps = _heatmaps(options, checkpoint, data, out, console)
    timings["total"] = time.perf_counter() - started
    logger = cli.trainer.logger
    metrics = Path(logger.log_dir) / "metrics.csv" if logger is not None else None

    summary = {
        "options": asdict(options),
        "complete": True,
        "reader_config": str(config),
        "spacy_model": model,
        "examples": examples,
        "test_acc": test_acc,
        "systems": _system_accuracies(report),
        "checkpoint": checkpoint,
        "metrics": str(metrics) if metrics is not None and metrics.is_file() else None,
        "report": str(report_path),
        "heatmaps": str(heatmaps / "index.html"),
        "seconds": {k: round(v, 1) for k, v in timings.items()},
    }
    (out / MARKER_FILE).write_text(json.dumps(summary, indent=2))
    _print_summary(summary, console)
    return summary


class _Steps:
    """``with step(number, key, title):`` prints the step's rule and times it into
    ``timings[key]``."""

    def __init__(self, console: Console, timings: dict[str, float]) -> None:
        self.console, self.timings = console, timings

    @contextmanager
    def __call__(self, number: int, key: str, title: str) -> Iterator[None]:
        self.console.rule(f"[bold]{number}/6 {title}")
        started = time.perf_counter()
        yield
        self.timings[key] = time.perf_counter() - started


def _generate(options: DemoOptions, out: Path, console: Console) -> None:
    """1. The synthetic corpus and its entity-ruler pipeline, under ``out/corpus``."""
    from attentive_reader.corpus.synthetic import COMPACT_SHAPE, build_ruler_pipeline, write_corpus
    from attentive_reader.corpus.synthetic.story import generate_corpus

    corpus = out / "corpus"
    # Compact stories (~80 tokens, ~7.5 candidates): a small reader learns them on 2 CPU cores.
    stories = generate_corpus(options.stories, options.seed, COMPACT_SHAPE)
    info = write_corpus(corpus, stories, options.seed, COMPACT_SHAPE)
    build_ruler_pipeline().to_disk(corpus / "entity_ruler")
    console.print(f"wrote {info['stories']} stories to {corpus / 'stories'}")


def _preprocess_corpus(options: DemoOptions, out: Path, console: Console) -> tuple[Path, str, dict]:
    """2. Preprocessing with the real pipeline: the dataset folder, the NER model used and
    the examples per split."""
    from attentive_reader.corpus.preprocess import PreprocessOptions, preprocess

    corpus, data = out / "corpus", out / "data"
    model = _ner_model(options, corpus / "entity_ruler", console)
    num_proc = max(1, min(options.num_proc, os.cpu_count() or 1))
    result = preprocess(
        [str(corpus / "stories")],
        data,
        PreprocessOptions(
            spacy_model=model,
            url_lists=str(corpus / "url_lists"),
            num_proc=num_proc,
            shard_size=max(16, options.stories // (4 * num_proc)),
        ),
        console=console,
    )
    examples = result.manifest.get("examples", {})
    console.print(
        f"{data}: " + ", ".join(f"{split} {count:,}" for split, count in examples.items())
    )
    return data, model, examples


def _train(options: DemoOptions, config: Path, data: Path, out: Path) -> tuple[Any, str]:
    """3. Training through the Lightning CLI with the shipped config and the demo piece: the
    CLI (its trainer, model and data module) and the best checkpoint."""
    from attentive_reader.training.run import run_cli

    cli = run_cli(
        [
            "fit",
            "--config", str(config),
            "--config", str(configs_dir() / "demo" / "demo.yaml"),
            "--data.path", str(data),
            "--trainer.default_root_dir", str(out / "train"),
            "--trainer.max_epochs", str(options.epochs),
            "--seed_everything", str(options.seed),
        ]
    )  # fmt: skip
    checkpoint = cli.trainer.checkpoint_callback.best_model_path
    if not checkpoint:
        raise UserError("training wrote no checkpoint (was the validation split empty?)")
    return cli, checkpoint


def _report(data: Path, checkpoint: str, out: Path, console: Console) -> tuple[Report, Path]:
    """5. The evaluation report (exact accuracy, interval, breakdowns, baselines)."""
    from attentive_reader.eval import evaluate

    report = evaluate(data, [checkpoint], split="test", progress=console.print)
    report_path = report.write(out / "report.json")
    console.print(f"{report.split}: {report.num_examples} examples of {data}\n")
    console.print(report.markdown(), markup=False, highlight=False)
    return report, report_path


def _heatmaps(
    options: DemoOptions, checkpoint: str, data: Path, out: Path, console: Console
) -> Path:
    """6. Attention heatmaps of the first test examples, under ``out/heatmaps``."""
    from attentive_reader.viz import checkpoint_heatmaps, write_heatmaps

    heatmaps = out / "heatmaps"
    pages = checkpoint_heatmaps(checkpoint, data, split="test", limit=options.heatmaps)
    entries = write_heatmaps(
        pages, heatmaps, title=f"Attention heatmaps: {Path(checkpoint).name} on test"
    )
    right = sum(e.correct for e in entries)
    console.print(f"{len(entries)} examples ({right} correct) written to {heatmaps / 'index.html'}")
    return heatmaps


def _system_accuracies(report: Report) -> dict[str, dict]:
    """System name -> {kind, accuracy, low, high, count} from an evaluation report."""
    return {
        system.name: {
            "kind": system.kind,
            "accuracy": system.overall.accuracy,
            "low": system.overall.ci_low,
            "high": system.overall.ci_high,
            "count": system.overall.n,
        }
        for system in report.systems
    }


def _print_summary(summary: dict, console: Console) -> None:
    console.rule("[bold]Demo summary")
    table = Table(title="Test accuracy (95% Wilson interval)")
    table.add_column("system")
    table.add_column("accuracy", justify="right")
    table.add_column("interval", justify="right")
    for name, figures in summary["systems"].items():
        reader = Path(summary["reader_config"]).stem
        label = f"{name} (baseline)" if figures["kind"] == "baseline" else f"{reader} (reader)"
        interval = f"{figures['low']:.3f}-{figures['high']:.3f}"
        table.add_row(label, f"{figures['accuracy']:.3f}", interval)
    console.print(table)
    seconds = summary["seconds"]
    console.print(
        "time: "
        + ", ".join(f"{k} {v:.0f} s" for k, v in seconds.items() if k != "total")
        + f"; total {seconds['total'] / 60:.1f} min"
    )
    out = Path(summary["options"]["out_dir"])
    console.print(f"checkpoint: {summary['checkpoint']}")
    console.print(f"report:     {summary['report']}")
    console.print(f"heatmaps:   {summary['heatmaps']}")
    if summary["metrics"]:
        console.print(f"metrics:    {summary['metrics']}")
    console.print(
        "\nGo further:\n"
        + (
            f"  attentive-reader curves {Path(summary['metrics']).parents[1]} --output "
            f"{out / 'curve.png'}    # the validation curve\n"
            if summary["metrics"]
            else ""
        )
        + f"  attentive-reader demo --reader impatient_reader --out-dir {out.parent / 'impatient'}\n"
        "  attentive-reader download cnn --dest corpora    # DeepMind's CNN questions\n"
        "  attentive-reader preprocess corpora/cnn.tgz --output data/cnn\n"
        "  attentive-reader fit --config configs/attentive_reader_paper.yaml --data.path data/cnn\n"
        "  attentive-reader evaluate --ckpt CKPT --data data/cnn --split test --out report.json\n"
        "  (the whole path to the paper's table: docs/reproduce.md)"
    )
