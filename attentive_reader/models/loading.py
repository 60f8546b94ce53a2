"""``load_reader``: any reader checkpoint back as its own class.

``ClozeReader.load_from_checkpoint`` on the base class cannot know which reader to build, so
this reads the class path the checkpoint records (the Lightning CLI's ``_class_path``
hyperparameter, or ``reader_class``, written by ``ClozeReader.on_save_checkpoint``),
builds that class from the stored hyperparameters and loads the weights. The file is read
by ``checkpoint_file.read_checkpoint`` (``weights_only=True``: no code in it is ever run).
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

import torch

from attentive_reader.common.checkpoint_file import read_checkpoint
from attentive_reader.common.errors import UserError
from attentive_reader.models.base import ClozeReader, check_weights_fit


def reader_class_paths(checkpoint: dict) -> list[str]:
    """The reader class paths a checkpoint records (``module.Class``), the one the run's
    config named first: it is the public path (``attentive_reader.models.UniformReader``),
    which stays when the class moves to another module."""
    hyper_parameters = checkpoint.get("hyper_parameters") or {}
    paths = (hyper_parameters.get("_class_path"), checkpoint.get("reader_class"))
    return [path for path in paths if isinstance(path, str)]


def _import_class(path: str) -> object:
    module_name, _, class_name = path.rpartition(".")
    try:
        return getattr(importlib.import_module(module_name), class_name)
    except (ImportError, AttributeError, ValueError):
        return None


def load_reader(path: str | Path, map_location: str | torch.device = "cpu") -> ClozeReader:
    """Load a reader checkpoint as its own class, in eval mode.

    Args:
        path: a ``.ckpt`` written by Lightning (``fit`` through the CLI or a ``Trainer``).
        map_location: where to put the weights.

    Raises:
        UserError: if the file is missing, not a reader checkpoint, or names a class that
            cannot be imported.
    """
    return reader_from_checkpoint(read_checkpoint(path, map_location), path, map_location)


def reader_from_checkpoint(
    checkpoint: Any, path: str | Path, map_location: str | torch.device = "cpu"
) -> ClozeReader:
    """The reader of an already loaded checkpoint (``torch.load(..., weights_only=True)``),
    in eval mode: for callers that read the file once for several uses.

    Args:
        checkpoint: the loaded checkpoint.
        path: where it came from, for error messages.
        map_location: where to put the weights.

    Raises:
        UserError: if it is not a reader checkpoint, names a class that cannot be imported,
            or holds weights of another version of that class.
    """
    class_paths = reader_class_paths(checkpoint) if isinstance(checkpoint, dict) else []
    if not class_paths or "state_dict" not in checkpoint:
        raise UserError(f"{path} is not a reader checkpoint (it records no reader class)")
    found = [(found, cls) for found in class_paths if (cls := _import_class(found)) is not None]
    if not found:
        raise UserError(f"{path}: cannot import the reader class {class_paths[-1]}")
    class_path, reader_class = found[0]
    if not (isinstance(reader_class, type) and issubclass(reader_class, ClozeReader)):
        raise UserError(f"{path}: {class_path} is not a ClozeReader")
    hyper_parameters = {
        key: value
        for key, value in (checkpoint.get("hyper_parameters") or {}).items()
        if not key.startswith("_")  # the CLI's _class_path / _instantiator
    }
    reader = reader_class(**hyper_parameters)
    check_weights_fit(reader, checkpoint["state_dict"], str(path))
    reader.load_state_dict(checkpoint["state_dict"])
    return reader.to(map_location).eval()
