"""A tiny trained reader for the answering tests (``tests/test_api*.py``, ``tests/serve``);
``tests/conftest.py`` trains it once per session (the ``trained`` fixture).

The synthetic corpus (``attentive-reader synth``), preprocessed with its entity-ruler
pipeline (no model download) and a context cap, then trained for a few steps with
``attentive-reader fit`` and a shipped config, all in this process.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CONTEXT_CAP = 300


@dataclass(frozen=True)
class TrainedReader:
    """What ``train_tiny_reader`` made.

    Attributes:
        corpus: the synthetic corpus (``stories/``, ``url_lists/``, ``entity_ruler/``).
        data: the processed dataset.
        ckpt: the checkpoint ``fit`` wrote (``last.ckpt``).
    """

    corpus: Path
    data: Path
    ckpt: Path

    @property
    def ruler(self) -> Path:
        return self.corpus / "entity_ruler"

    def story_file(self, story_id: str) -> Path:
        return self.corpus / "stories" / f"{story_id}.story"


def train_tiny_reader(
    root: Path, *, stories: int = 24, config: str = "attentive_reader"
) -> TrainedReader:
    """Synthesize, preprocess and fit a tiny reader under ``root``."""
    corpus, data = make_tiny_data(root, stories=stories)
    return TrainedReader(corpus, data, fit_tiny_reader(data, root / "runs", config))


def make_tiny_data(
    root: Path, *, stories: int = 24, seed: int = 5, synth: Sequence[str] = ()
) -> tuple[Path, Path]:
    """Synthesize a corpus under ``root`` (``synth``: more options of ``attentive-reader
    synth``) and preprocess it with its entity ruler; ``(corpus, data)``."""
    from attentive_reader.cli import main as cli

    corpus, data = root / "corpus", root / "data"
    argv = ["synth", str(corpus), "--stories", str(stories), "--seed", str(seed), *synth]
    assert cli(argv) == 0
    assert (
        cli(
            [
                "preprocess",
                str(corpus / "stories"),
                "--url-lists",
                str(corpus / "url_lists"),
                "--spacy-model",
                str(corpus / "entity_ruler"),
                "--max-context-tokens",
                str(CONTEXT_CAP),
                "--output",
                str(data),
                "--quiet",
            ]
        )
        == 0
    )
    return corpus, data


def fit_tiny_reader(
    data: Path, runs: Path, config: str = "attentive_reader", extra: Sequence[str] = ()
) -> Path:
    """Fit a tiny reader on ``data`` for 3 steps with a shipped config (``extra``: more
    options of ``fit``); its ``last.ckpt``."""
    from attentive_reader.cli import main as cli

    fit = [
        "fit",
        "--config",
        str(ROOT / "configs" / f"{config}.yaml"),
        "--data.path",
        str(data),
        "--data.batch_size",
        "8",
        "--model.init_args.embedding_dim",
        "8",
        "--model.init_args.hidden_dim",
        "8",
        "--trainer.max_steps",
        "3",
        "--trainer.limit_val_batches",
        "1",
        "--trainer.logger",
        "false",
        "--trainer.enable_progress_bar",
        "false",
        "--trainer.enable_model_summary",
        "false",
        "--trainer.default_root_dir",
        str(runs),
        *extra,
    ]
    assert cli(fit) == 0
    (ckpt,) = runs.glob("**/last.ckpt")
    return ckpt


def run_script(trained: TrainedReader, script: str, *options: str, timeout: float = 600):
    """Run ``scripts/<script>`` on the tiny reader (its stories, checkpoint and entity ruler)
    with ``options``, the repository on ``PYTHONPATH``; the ``CompletedProcess`` (text)."""
    argv = [
        sys.executable,
        str(ROOT / "scripts" / script),
        "--stories",
        str(trained.corpus / "stories"),
    ]
    argv += ["--ckpt", str(trained.ckpt), "--spacy-model", str(trained.ruler), *options]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(argv, capture_output=True, text=True, env=env, timeout=timeout)
