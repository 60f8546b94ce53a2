"""``HeatmapWriter``: the heatmap writer as a Lightning prediction-writer callback (the only
viz module that imports Lightning)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from pytorch_lightning.callbacks import BasePredictionWriter

from attentive_reader.corpus.records import ClozeExample, Split
from attentive_reader.viz.files import write_example, write_index
from attentive_reader.viz.heatmap import SCALES, Scale, heatmap_examples
from attentive_reader.viz.html import IndexEntry

if TYPE_CHECKING:
    from attentive_reader.models.predictions import BatchPrediction


class HeatmapWriter(BasePredictionWriter):
    """Writes heatmaps while ``predict`` runs (a Lightning ``BasePredictionWriter``).

    Use from a config::

        trainer:
          callbacks:
            - class_path: attentive_reader.viz.callback.HeatmapWriter
              init_args: {output_dir: heatmaps, split: test, limit: 50}

    The reader's ``predict_step`` output (a ``BatchPrediction``) is joined with the stored
    examples of ``split`` (from the trainer's data module, ``examples(split)``) for their
    tokens and entity maps.

    Args:
        output_dir: folder for the pages, PNGs, JSON sidecars and ``index.html``.
        split: the split ``predict`` runs on (its stored rows give tokens and names);
            default: the data module's ``predict_split``.
        scale: ``"linear"`` or ``"normalized"`` shading.
        clip: full-colour multiple of the uniform weight on the normalized scale.
        png: also write a PNG per example.
        limit: write at most this many examples (per process); ``None`` writes all.
    """

    def __init__(
        self,
        output_dir: str,
        split: Split | None = None,
        scale: Scale = "linear",
        clip: float = 10.0,
        png: bool = True,
        limit: int | None = None,
    ) -> None:
        super().__init__(write_interval="batch")
        if scale not in SCALES:
            raise ValueError(f"unknown scale {scale!r}; choose one of {', '.join(SCALES)}")
        if limit is not None and limit < 1:
            raise ValueError(f"limit must be a positive number of examples or None, got {limit}")
        if clip <= 0:
            raise ValueError(f"clip must be positive, got {clip}")
        self.output_dir = output_dir
        self.split = split
        self.scale: Scale = scale
        self.clip = clip
        self.png = png
        self.limit = limit
        self.entries: list[IndexEntry] = []
        self._dataset: Any = None
        self._row_of: dict[str, int] = {}

    def _rows(self, trainer: Any, ids: Sequence[str]) -> dict[str, ClozeExample]:
        if self._dataset is None:
            dm = getattr(trainer, "datamodule", None)
            if dm is None or not hasattr(dm, "examples"):
                raise RuntimeError(
                    "HeatmapWriter needs the trainer's data module (ClozeDataModule) to look "
                    "up the stored examples; run it from 'attentive-reader predict' with --data"
                )
            if self.split is None:
                self.split = getattr(dm, "predict_split", "test")
            self._dataset = dm.examples(self.split)
            self._row_of = {example_id: i for i, example_id in enumerate(self._dataset["id"])}
        missing = [i for i in ids if i not in self._row_of]
        if missing:
            raise KeyError(
                f"HeatmapWriter: example ids {missing[:3]} are not in the {self.split!r} split; "
                "set the writer's split to the one predict runs on"
            )
        return {i: ClozeExample.from_row(self._dataset[self._row_of[i]]) for i in ids}

    def write_on_batch_end(
        self,
        trainer: Any,
        pl_module: Any,
        prediction: BatchPrediction,
        batch_indices: Sequence[int] | None,
        batch: Any,
        batch_idx: int,
        dataloader_idx: int = 0,
    ) -> None:
        if self.limit is not None and len(self.entries) >= self.limit:
            return
        rows = self._rows(trainer, list(prediction.ids))
        model = type(pl_module).__name__
        for ex in heatmap_examples(prediction, rows, model=model):
            if self.limit is not None and len(self.entries) >= self.limit:
                break
            self.entries.append(
                write_example(ex, self.output_dir, scale=self.scale, clip=self.clip, png=self.png)
            )

    def on_predict_end(self, trainer: Any, pl_module: Any) -> None:
        entries = self.entries
        world = getattr(trainer, "world_size", 1)
        if world > 1:
            import torch.distributed as dist

            gathered: list[list[IndexEntry]] = [[] for _ in range(world)]
            dist.all_gather_object(gathered, entries)
            entries = [e for part in gathered for e in part]
        if getattr(trainer, "is_global_zero", True):
            write_index(entries, self.output_dir, title=f"Attention heatmaps ({self.split})")
