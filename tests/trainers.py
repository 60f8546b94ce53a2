"""One quiet CPU trainer for the tests that build their own ``pl.Trainer``."""

from __future__ import annotations

import pytorch_lightning as pl

QUIET = {
    "accelerator": "cpu",
    "devices": 1,
    "logger": False,
    "enable_checkpointing": False,
    "enable_progress_bar": False,
    "enable_model_summary": False,
    "deterministic": True,
}


def quiet_trainer(**overrides) -> pl.Trainer:
    """A ``pl.Trainer`` on one CPU with no logger, checkpoint callback, progress bar or model
    summary, deterministic; ``overrides`` are further ``pl.Trainer`` arguments (or replace
    those of ``QUIET``)."""
    return pl.Trainer(**{**QUIET, **overrides})
