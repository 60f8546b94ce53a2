"""Learning curves of the shipped reader configs, with the entity permutation on.

Trains every shipped default reader config (or those given) through the Lightning CLI, exactly
as ``attentive-reader fit --config configs/NAME.yaml`` does, on a processed dataset (``--data``)
or on a synthetic corpus generated and preprocessed here (``--stories``, ``--seed``,
``--shape``), and prints validation accuracy after every epoch beside the frequency and
word-distance baselines of the same validation split. ``--num-entities`` widens the entity-id
block the per-example permutation draws from (CNN needs 527 ids), so a small corpus is read
with the id range of a real one.

``--plateau`` adds the answer-layer comparison: the Attentive Reader config with the paper's
output matrix, the tied layer and the attention sum (``--model.answer_layer output | tied |
pointer``), each with and without the query-match bit, at the same id range.

    python scripts/learning_curves.py --stories 1500 --shape compact --epochs 5 \
        --num-entities 600 --plateau --output curves.json

Training runs where Lightning's ``accelerator: auto`` puts it (the CPU, or a GPU when one is
there; ``--set=--trainer.accelerator=gpu`` insists), with one torch thread unless ``--threads``
says otherwise. Writes the curves, the baselines, the CPU model and the settings as JSON with
``--output``, and draws them with ``--plot FILE.png`` (one panel per table, the baselines as horizontal lines);
``--from-json FILE`` prints and draws what an earlier ``--output`` wrote, without training.
The baselines are their expected accuracy under a random tie-break, as ``attentive-reader
evaluate`` reports them.
"""

from __future__ import annotations

import argparse
import csv
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch
from bench.report import cpu_model  # scripts/ is on sys.path when a script runs

ROOT = Path(__file__).resolve().parents[1]
CONFIGS = ROOT / "configs"
DEFAULT_READERS = (
    "attentive_reader",
    "impatient_reader",
    "deep_lstm_reader",
    "uniform_reader",
    "hard_attention_reader",
    "gaussian_glimpse_reader",
    "transformer_glimpse_reader",
    "gated_attention_reader",
)
# What the glimpse readers log per validation epoch (mean per example): tokens read at full
# resolution, tokens inside the retina's pooled windows, the document's length, and the share
# of examples whose answer the glimpses read.
READING = ("val_tokens_read", "val_tokens_pooled", "val_doc_tokens", "val_answer_read")
PLATEAU = (
    ("output", False),
    ("tied", False),
    ("pointer", False),
    ("output", True),
    ("tied", True),
    ("pointer", True),
)


def generate(out: Path, stories: int, seed: int, shape: str) -> Path:
    """Write a synthetic corpus and preprocess it with its entity ruler; return the dataset."""
    corpus, data = out / "corpus", out / "data"
    synth = ["synth", str(corpus), "--stories", str(stories), "--seed", str(seed)]
    if shape == "compact":
        synth.append("--compact")
    _attentive_reader(synth)
    _attentive_reader(
        [
            "preprocess",
            str(corpus / "stories"),
            "--url-lists",
            str(corpus / "url_lists"),
            "--spacy-model",
            str(corpus / "entity_ruler"),
            "--output",
            str(data),
            "--quiet",
        ]
    )
    return data


def _attentive_reader(argv: list[str]) -> None:
    command = [sys.executable, "-m", "attentive_reader.cli", *argv]
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)


def baselines(data: Path, split: str = "validation") -> dict[str, float]:
    """The paper's non-neural baselines on ``split`` of ``data``: expected accuracy under a
    random tie-break, as ``attentive-reader evaluate`` reports them."""
    from attentive_reader.corpus.baselines import score_baselines
    from attentive_reader.eval import load_examples

    scores = score_baselines(load_examples(data, split))
    return {name: result.accuracy for name, result in scores.items()}


def train(config: Path, data: Path, out: Path, epochs: int, seed: int, extra: list[str]) -> dict:
    """Fit ``config`` on ``data`` for ``epochs``; validation accuracy and loss per epoch."""
    from attentive_reader.training.run import run_cli

    started = time.perf_counter()
    run_cli(
        [
            "fit",
            "--config",
            str(config),
            "--data.path",
            str(data),
            "--seed_everything",
            str(seed),
            "--data.seed",
            str(seed),
            "--trainer.max_epochs",
            str(epochs),
            "--trainer.default_root_dir",
            str(out),
            "--trainer.enable_progress_bar",
            "false",
            "--trainer.enable_model_summary",
            "false",
            "--trainer.num_sanity_val_steps",
            "0",
            "--trainer.logger.class_path",
            "pytorch_lightning.loggers.CSVLogger",
            "--trainer.logger.init_args.save_dir",
            str(out),
            "--trainer.logger.init_args.name",
            "curve",
            *extra,
        ]
    )
    seconds = time.perf_counter() - started
    metrics = sorted((out / "curve").glob("version_*/metrics.csv"))[-1]
    columns = ("val_acc", "train_loss_epoch", *READING)
    per_epoch: dict[str, dict[int, float]] = {name: {} for name in columns}
    with metrics.open() as handle:
        for row in csv.DictReader(handle):
            for name in columns:
                if row.get(name):
                    per_epoch[name][int(row["epoch"])] = float(row[name])
    figures = {
        "val_acc": list(_by_epoch(per_epoch["val_acc"])),
        "train_loss": list(_by_epoch(per_epoch["train_loss_epoch"])),
        "seconds": round(seconds, 1),
    }
    for name in READING:  # the glimpse readers' tokens read per validation example
        if per_epoch[name]:
            figures[name] = list(_by_epoch(per_epoch[name]))
    return figures


def _by_epoch(values: dict[int, float]) -> list[float]:
    return [values[k] for k in sorted(values)]


def reading(run: dict) -> str:
    """The last epoch's tokens read at full resolution per validation example, of the mean
    document length (and those read only inside pooled windows, and the share of examples
    whose answer a glimpse read), or "" for other readers."""
    if "val_tokens_read" not in run:
        return ""
    text = f"{run['val_tokens_read'][-1]:.1f} of {run['val_doc_tokens'][-1]:.1f}"
    if "val_tokens_pooled" in run:
        text += f" (+{run['val_tokens_pooled'][-1]:.1f} pooled)"
    if "val_answer_read" in run:
        text += f", answer read in {run['val_answer_read'][-1]:.0%}"
    return text


def table(title: str, rows: dict[str, dict], base: dict[str, float], epochs: int) -> str:
    """A Markdown table: one row per run, validation accuracy per epoch, then the baselines."""
    head = ["run", *(f"epoch {k + 1}" for k in range(epochs)), "time", "tokens read"]
    lines = [f"### {title}", "", "| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    for name, run in rows.items():
        cells = [f"{a:.3f}" for a in run["val_acc"]] + [""] * (epochs - len(run["val_acc"]))
        cells += [f"{run['seconds']:.0f} s", reading(run)]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    for name, value in base.items():
        lines.append(f"| {name} (baseline) | {value:.3f} |" + " |" * (epochs + 1))
    return "\n".join(lines)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", help="a processed dataset (default: generate one)")
    parser.add_argument("--stories", type=int, default=1500, help="stories to generate")
    parser.add_argument("--seed", type=int, default=1, help="corpus seed (generated data)")
    parser.add_argument("--shape", choices=("compact", "default"), default="compact")
    parser.add_argument("--readers", nargs="+", default=list(DEFAULT_READERS), metavar="NAME")
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--train-seeds", type=int, nargs="+", default=[0], metavar="S")
    parser.add_argument(
        "--num-entities",
        type=int,
        default=600,
        help="entity ids (0: the data module's default, 600 or what the data needs if more)",
    )
    parser.add_argument(
        "--set",
        nargs="+",
        action="extend",
        default=[],
        metavar="ARG",
        help="extra fit arguments for every run, e.g. --set=--model.lr=0.003 (repeatable)",
    )
    parser.add_argument("--plateau", action="store_true", help="add the answer-layer table")
    parser.add_argument("--no-readers", action="store_true", help="only the plateau table")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--work-dir", help="where runs go (default: a temporary folder)")
    parser.add_argument("--output", help="write the figures as JSON here")
    parser.add_argument(
        "--plot",
        metavar="FILE.png",
        help="also draw the curves: validation accuracy per epoch, the baselines as lines",
    )
    parser.add_argument(
        "--from-json",
        metavar="FILE",
        help="train nothing: print (and --plot) the figures an earlier --output wrote",
    )
    return parser.parse_args(argv)


def run(args: argparse.Namespace) -> dict:
    """Train every run the options ask for; the figures ``--output`` writes."""
    torch.set_num_threads(args.threads)
    with tempfile.TemporaryDirectory() as scratch:
        work = Path(args.work_dir or scratch)
        data = (
            Path(args.data)
            if args.data
            else generate(work / "generated", args.stories, args.seed, args.shape)
        )
        base = baselines(data)
        extra = ["--data.num_entities", str(args.num_entities)] if args.num_entities else []
        extra += args.set
        readers: dict[str, dict] = {}
        plateau: dict[str, dict] = {}
        for seed in args.train_seeds:
            suffix = f" (seed {seed})" if len(args.train_seeds) > 1 else ""
            for name in [] if args.no_readers else args.readers:
                config = CONFIGS / f"{name}.yaml" if not name.endswith(".yaml") else Path(name)
                run = train(config, data, work / f"{config.stem}-{seed}", args.epochs, seed, extra)
                readers[config.stem + suffix] = run
                print(config.stem + suffix, run, flush=True)
            for layer, match in PLATEAU if args.plateau else ():
                name = f"answer_layer={layer}, query_match={str(match).lower()}{suffix}"
                options = ["--model.answer_layer", layer, "--model.query_match", str(match)]
                run = train(
                    CONFIGS / "attentive_reader.yaml",
                    data,
                    work / f"plateau-{layer}-{match}-{seed}",
                    args.epochs,
                    seed,
                    [*extra, *options],
                )
                plateau[name] = run
                print(name, run, flush=True)
    return {
        "cpu": cpu_model(),
        "threads": args.threads,
        "data": str(data) if args.data else None,
        "generated": None if args.data else vars(args) | {"data": None},
        "num_entities": args.num_entities,
        "epochs": args.epochs,
        "baselines": base,
        "readers": readers,
        "plateau": plateau,
    }


def corpus_title(figures: dict) -> str:
    """What the curves were trained on, in a few words (the plot's title)."""
    generated = figures.get("generated")
    ids = figures.get("num_entities") or "the data's own"
    if generated:
        corpus = (
            f"{generated['stories']} {generated['shape']} synthetic stories "
            f"(seed {generated['seed']})"
        )
    else:
        corpus = Path(figures["data"]).name
    return f"{corpus}, {ids} permuted entity ids"


def plot(path: str, figures: dict) -> Path:
    """Draw the figures' tables (validation accuracy per epoch) with their baselines."""
    from attentive_reader.viz.curves import write_learning_curves

    panels = {
        "Shipped configs": {k: v["val_acc"] for k, v in figures["readers"].items()},
        "Answer layers (attentive_reader.yaml)": {
            k: v["val_acc"] for k, v in figures["plateau"].items()
        },
    }
    return write_learning_curves(path, panels, figures["baselines"], title=corpus_title(figures))


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.from_json:
        figures = json.loads(Path(args.from_json).read_text(encoding="utf-8"))
    else:
        figures = run(args)
    readers, plateau, base = figures["readers"], figures["plateau"], figures["baselines"]
    epochs = figures["epochs"]
    ids = figures["num_entities"] or "the data's own"
    print(
        f"\nCPU: {figures['cpu']}; {figures['threads']} torch thread(s); entity ids: {ids}, permuted"
    )
    if readers:
        print("\n" + table("Shipped configs: validation accuracy", readers, base, epochs))
    if plateau:
        print("\n" + table("Answer layers (attentive_reader.yaml)", plateau, base, epochs))
    if args.output and not args.from_json:
        Path(args.output).write_text(json.dumps(figures, indent=2) + "\n")
    if args.plot:
        print(f"\nplot written to {plot(args.plot, figures)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
