"""``attentive-reader learning``: do the shipped readers learn? Their learning curves.

Trains shipped configs through the Lightning CLI (as ``attentive-reader fit --config``) on
``--data`` or a corpus generated here, with the entity permutation on, and prints validation
accuracy per epoch beside the baselines; ``--plateau`` compares the answer layers; ``--sizes``
trains each reader on training sets of several sizes (a share of the training stories, as
``fit --data.train_fraction``), the same validation questions for all; ``--output`` writes the
JSON that ``attentive-reader curves --learning`` draws. Training runs where
Lightning's ``accelerator: auto`` puts it, with one torch thread unless ``--threads``.
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from attentive_reader.common.errors import UserError
from attentive_reader.common.machine import cpu_model
from attentive_reader.training.shipped_configs import config_path
from attentive_reader.viz.curve_data import learning_record, read_columns, validation_baselines
from attentive_reader.viz.curve_tables import learning_tables, markdown

DEFAULT_READERS = (
    "attentive_reader", "impatient_reader", "deep_lstm_reader", "uniform_reader",
    "hard_attention_reader", "gaussian_glimpse_reader", "transformer_glimpse_reader",
    "gated_attention_reader",
)  # fmt: skip
# What the glimpse readers log per validation epoch (mean per example): tokens read at full
# resolution, tokens inside the retina's pooled windows, the document's length, and the share
# of examples whose answer the glimpses read.
READING = ("val_tokens_read", "val_tokens_pooled", "val_doc_tokens", "val_answer_read")
PLATEAU = [(layer, match) for match in (False, True) for layer in ("output", "tied", "pointer")]


def generate(out: Path, stories: int, seed: int, shape: str) -> Path:
    """Write a synthetic corpus and preprocess it with its entity ruler; return the dataset."""
    corpus, data = out / "corpus", out / "data"
    synth = ["synth", str(corpus), "--stories", str(stories), "--seed", str(seed)]
    synth += ["--shape", shape]
    _attentive_reader(synth)
    _attentive_reader([
        "preprocess", str(corpus / "stories"), "--url-lists", str(corpus / "url_lists"),
        "--spacy-model", str(corpus / "entity_ruler"), "--output", str(data), "--quiet",
    ])  # fmt: skip
    return data


def train_questions(data: Path) -> list[str]:
    """The story id of each training question of ``data``, in stored order."""
    from attentive_reader.corpus.records import load_split

    return list(load_split(data, "train")["story_id"])


def size_share(story_ids: list[str], size: int) -> tuple[float, int]:
    """The share of the training stories (``--data.train_fraction``) that holds about ``size``
    questions, and how many questions it holds: the smallest share of the stories, in the
    order ``fit`` keeps them, with at least ``size`` questions (all of them if fewer)."""
    from attentive_reader.data.stories import story_position

    per_story = Counter(story_ids)
    held = 0
    for story in sorted(per_story, key=story_position):
        held += per_story[story]
        if held >= size:
            # story_share keeps the stories whose position is below the share
            return math.nextafter(story_position(story), math.inf), held
    return 1.0, held


def _attentive_reader(argv: list[str]) -> None:
    command = [sys.executable, "-m", "attentive_reader.cli", *argv]
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)


def train(config: Path, data: Path, out: Path, epochs: int, seed: int, extra: list[str]) -> dict:
    """Fit ``config`` on ``data`` for ``epochs``; validation accuracy and loss per epoch."""
    from attentive_reader.training.run import run_cli

    started = time.perf_counter()
    run_cli([
        "fit", "--config", str(config), "--data.path", str(data),
        "--seed_everything", str(seed), "--data.seed", str(seed),
        "--trainer.max_epochs", str(epochs), "--trainer.default_root_dir", str(out),
        "--trainer.enable_progress_bar", "false", "--trainer.enable_model_summary", "false",
        "--trainer.num_sanity_val_steps", "0",
        "--trainer.logger.class_path", "pytorch_lightning.loggers.CSVLogger",
        "--trainer.logger.init_args.save_dir", str(out),
        "--trainer.logger.init_args.name", "curve",
        *extra,
    ])  # fmt: skip
    seconds = time.perf_counter() - started
    columns = {"val_acc": "val_acc", "train_loss": "train_loss_epoch"}
    per_epoch = read_columns(out / "curve", columns | {name: name for name in READING})
    figures = {key: per_epoch[key] for key in columns} | {"seconds": round(seconds, 1)}
    # the glimpse readers' tokens read per validation example
    return figures | {name: per_epoch[name] for name in READING if per_epoch[name]}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="attentive-reader learning",
        description=(
            "Train shipped reader configs for a few epochs on a generated corpus (or --data), "
            "the entity permutation on, and print validation accuracy per epoch beside the "
            "baselines: does each reader learn? --output writes what `attentive-reader curves "
            "--learning` draws."
        ),
    )
    parser.add_argument("--data", help="a processed dataset (default: generate one)")
    parser.add_argument(
        "--stories",
        type=int,
        help="stories to generate (default: 1500, or with --sizes enough for the largest)",
    )
    parser.add_argument(
        "--seed", type=int, default=1, help="corpus seed (generated data; default: %(default)s)"
    )
    parser.add_argument(
        "--shape",
        choices=("compact", "default", "long"),
        default="compact",
        help="the generated stories' shape (default: %(default)s)",
    )
    parser.add_argument(
        "--readers",
        nargs="+",
        default=list(DEFAULT_READERS),
        metavar="NAME",
        help="shipped config names (as `attentive-reader configs` lists them) or .yaml files "
        "(default: every reader: %(default)s)",
    )
    parser.add_argument(
        "--epochs", type=int, default=5, help="epochs per run (default: %(default)s)"
    )
    parser.add_argument(
        "--train-seeds",
        type=int,
        nargs="+",
        default=[0],
        metavar="S",
        help="one run per training seed (default: %(default)s)",
    )
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
    parser.add_argument(
        "--sizes",
        type=int,
        nargs="+",
        metavar="N",
        help="train each reader on about N training questions for each N (a share of the "
        "training stories, the same validation questions), instead of on all of them: "
        "accuracy against training-set size",
    )
    parser.add_argument("--plateau", action="store_true", help="add the answer-layer table")
    parser.add_argument("--no-readers", action="store_true", help="only the plateau table")
    parser.add_argument(
        "--threads", type=int, default=1, help="torch threads (default: %(default)s)"
    )
    parser.add_argument("--work-dir", help="where runs go (default: a temporary folder)")
    parser.add_argument(
        "--output", help="write the figures as JSON here (attentive-reader curves --learning)"
    )
    return parser


def run(args: argparse.Namespace) -> dict:
    """Train every run the options ask for; the figures ``--output`` writes."""
    import torch

    torch.set_num_threads(args.threads)
    with tempfile.TemporaryDirectory() as scratch:
        work = Path(args.work_dir or scratch)
        data = Path(args.data) if args.data else _generate(work / "generated", args)
        base = validation_baselines(data)
        story_ids = train_questions(data) if args.sizes else []
        _check_sizes(args, data, len(story_ids))
        # (size, share of the stories, questions it holds), the same for every reader
        shares = [(size, *size_share(story_ids, size)) for size in sorted(set(args.sizes or ()))]
        extra = ["--data.num_entities", str(args.num_entities)] if args.num_entities else []
        extra += args.set
        readers: dict[str, dict] = {}
        plateau: dict[str, dict] = {}
        sizes: dict[str, list[dict]] = {}
        for seed in args.train_seeds:
            suffix = f" (seed {seed})" if len(args.train_seeds) > 1 else ""
            for name in args.readers if args.sizes and not args.no_readers else []:
                config = _config(name)
                for size, share, held in shares:
                    folder = work / f"{config.stem}-{seed}-size{size}"
                    options = [*extra, "--data.train_fraction", repr(share)]
                    run = train(config, data, folder, args.epochs, seed, options)
                    run |= {"questions": held, "share": share}
                    sizes.setdefault(config.stem + suffix, []).append(run)
                    print(f"{config.stem}{suffix}, {held:,} questions", run, flush=True)
            for name in [] if args.no_readers or args.sizes else args.readers:
                config = _config(name)
                run = train(config, data, work / f"{config.stem}-{seed}", args.epochs, seed, extra)
                readers[config.stem + suffix] = run
                print(config.stem + suffix, run, flush=True)
            for layer, match in PLATEAU if args.plateau else ():
                name = f"answer_layer={layer}, query_match={str(match).lower()}{suffix}"
                options = ["--model.answer_layer", layer, "--model.query_match", str(match)]
                folder = work / f"plateau-{layer}-{match}-{seed}"
                config = _config("attentive_reader")
                run = train(config, data, folder, args.epochs, seed, [*extra, *options])
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
        "sizes": sizes,
    }


def _generate(out: Path, args: argparse.Namespace) -> Path:
    """The generated corpus: ``--stories`` stories, or with ``--sizes`` enough stories for the
    largest size (a first corpus measures the questions per story, a second one, if needed, is
    larger by that measure)."""
    stories = args.stories or 1500
    data = generate(out, stories, args.seed, args.shape)
    if args.sizes and args.stories is None:
        held = len(train_questions(data))
        if held < max(args.sizes):
            bigger = math.ceil(stories * max(args.sizes) / max(held, 1) * 1.05)
            shutil.rmtree(out)
            data = generate(out, bigger, args.seed, args.shape)
            args.stories = bigger
    args.stories = args.stories or stories
    return data


def _check_sizes(args: argparse.Namespace, data: Path, held: int) -> None:
    """Every ``--sizes`` within the training questions of ``data``."""
    if args.sizes and max(args.sizes) > held:
        more = "; generate more stories (--stories)" if not args.data else ""
        raise UserError(
            f"--sizes {max(args.sizes)}: the training split of {data} holds only {held:,} "
            f"questions{more}"
        )


def _config(name: str) -> Path:
    """A shipped config by name (``attentive_reader``) or a config file."""
    try:
        return config_path(name)
    except UserError as err:
        raise UserError(f"--readers: {err}") from None


def main(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    for name in args.readers:  # every name checked before the first run
        _config(name)
    for size in args.sizes or ():
        if size < 1:
            raise UserError(
                f"--sizes {size}: a training-set size is a number of questions, 1 or more"
            )
    figures = run(args)
    ids = figures["num_entities"] or "the data's own"
    print(
        f"\nCPU: {figures['cpu']}; {figures['threads']} torch thread(s); entity ids: {ids}, permuted"
    )
    print("\n" + markdown(learning_tables(learning_record(figures, "the runs"))))
    if args.output:
        Path(args.output).write_text(json.dumps(figures, indent=2) + "\n")
    return 0
