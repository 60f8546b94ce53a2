"""The one read of a checkpoint file (floor 0; torch is imported when a file is read).

Every checkpoint the toolkit opens is read here, with ``torch.load(weights_only=True)``: no
code in a checkpoint is ever run, and a missing or unreadable file is a one-line
``UserError`` naming it. ``check_checkpoint_file`` says a file is missing without importing
torch, so that a command tells it before it loads anything heavy.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

from attentive_reader.common.errors import UserError


def check_checkpoint_file(path: str | Path) -> Path:
    """``path`` as a ``Path``, once it is known to be a file (nothing is imported or read).

    Raises:
        UserError: no such file, or a folder.
    """
    path = Path(path)
    if path.is_dir():
        raise UserError(
            f"{path} is a folder, not a checkpoint; a run's checkpoints are in its "
            "checkpoints/ folder (last.ckpt, best-*.ckpt)"
        )
    if not path.is_file():
        raise UserError(f"checkpoint not found: {path}")
    return path


def read_checkpoint(
    path: str | Path, map_location: Any = "cpu", *, content: bytes | None = None, mmap: bool = False
) -> Any:
    """A checkpoint file's content, read with ``weights_only=True``.

    Args:
        path: the file (named in errors).
        map_location: where to put the tensors (``torch.load``'s argument).
        content: the file's bytes when the caller has read them already (to hash them), so
            that the file is read once.
        mmap: map the file instead of reading it (to look at one key of a large file).

    Raises:
        UserError: if the file is missing or not a readable checkpoint.
    """
    import torch

    path = Path(path) if content is not None else check_checkpoint_file(path)
    source = path if content is None else io.BytesIO(content)
    try:
        return torch.load(
            source, map_location=map_location, weights_only=True, mmap=mmap and content is None
        )
    except Exception as err:  # unpickling errors come in many types
        first = str(err).strip().split(". ")[0].splitlines()[0] if str(err).strip() else ""
        raise UserError(
            f"{path} is not a readable checkpoint (truncated, or not a checkpoint: "
            f"{first or type(err).__name__}); use another checkpoint of the run or copy it again"
        ) from None
