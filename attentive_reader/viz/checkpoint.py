"""``checkpoint_heatmaps``: a checkpoint's heatmap data for examples of a split.

The checkpoint is read once (``eval.inference.load_checkpoint``) and the chosen rows are read
in stored order; write the result with ``write_heatmaps``::

    from attentive_reader.viz import checkpoint_heatmaps, write_heatmaps

    examples = checkpoint_heatmaps("last.ckpt", "data/cnn", split="test", limit=20)
    write_heatmaps(examples, "heatmaps", scale="normalized")
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from attentive_reader.common.checkpoint_file import check_checkpoint_file
from attentive_reader.common.checks import check_positive_options
from attentive_reader.common.errors import UserError
from attentive_reader.corpus.records import SPLITS, ClozeExample, check_dataset_dir
from attentive_reader.viz.heatmap import HeatmapExample, heatmap_examples

if TYPE_CHECKING:
    from attentive_reader.corpus.records import Split


def select_rows(ids_in_split: Sequence[str], ids: Sequence[str] | None, limit: int) -> list[int]:
    """Row indices of the requested ids (in the given order, once each) or of the first
    ``limit`` rows.

    Raises:
        UserError: naming the ids that are not in the split.
    """
    if ids is None:
        return list(range(min(limit, len(ids_in_split))))
    position = {example_id: i for i, example_id in enumerate(ids_in_split)}
    missing = [i for i in ids if i not in position]
    if missing:
        shown = ", ".join(missing[:5]) + (" ..." if len(missing) > 5 else "")
        raise UserError(f"{len(missing)} example id(s) not in the split: {shown}")
    return [position[i] for i in dict.fromkeys(ids)]


def checkpoint_heatmaps(
    ckpt: str | Path,
    data: str | Path,
    *,
    split: Split = "test",
    ids: Sequence[str] | None = None,
    limit: int = 20,
    batch_size: int = 32,
    device: str = "auto",
) -> list[HeatmapExample]:
    """The heatmap data of a checkpoint's predictions on examples of a split.

    Args:
        ckpt: a reader checkpoint.
        data: a processed dataset directory.
        split: ``train``, ``validation`` or ``test``.
        ids: these example ids, in this order (default: the first ``limit`` rows).
        limit: how many rows when ``ids`` is not given.
        batch_size: examples per forward pass.
        device: ``auto`` (a GPU when there is one), ``cpu``, ``cuda`` or ``cuda:N``.

    Returns:
        One ``HeatmapExample`` per chosen example (with the Gated-Attention Reader's
        ``hop_attention`` when the reader has hops).

    Raises:
        UserError: a bad option, a missing checkpoint or dataset, unknown ids, an empty split.
    """
    if split not in SPLITS:
        raise UserError(f"split must be one of {', '.join(SPLITS)}, got {split!r}")
    check_positive_options(limit=limit, batch_size=batch_size)
    check_checkpoint_file(ckpt)  # before the reader's imports (torch, Lightning: seconds)
    check_dataset_dir(data)

    from attentive_reader.eval.inference import iterate_predictions, load_checkpoint, resolve_device

    resolved = resolve_device(device)
    loaded = load_checkpoint(ckpt, data, resolved)
    table = loaded.datamodule.examples(split)
    indices = select_rows(list(table["id"]), ids, limit)
    if not indices:
        raise UserError(f"{data} [{split}] holds no examples")
    rows = {row.id: row for row in (ClozeExample.from_row(table[i]) for i in indices)}
    pages: list[HeatmapExample] = []
    for _, prediction in iterate_predictions(
        loaded.reader,
        loaded.datamodule,
        split,
        indices=indices,
        batch_size=batch_size,
        device=resolved,
    ):
        pages += heatmap_examples(prediction, rows, model=str(ckpt))
    return pages
