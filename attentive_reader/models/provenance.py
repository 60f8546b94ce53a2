"""What a reader was trained on, as its checkpoints record it.

Every checkpoint a reader saves while it trains (``ClozeReader.on_save_checkpoint``) holds a
``provenance`` record: the training data's part from the data module
(``ClozeDataModule.provenance``, ``data/provenance.py``: the dataset folder, its fingerprint,
whether its stories were generated, its validation split's exclusive-frequency baseline),
and how far training had got: the epoch and step, the validation accuracy of the saved
weights (the last validation before the save) and the best one so far.

``Provenance.of(checkpoint)`` reads it back; ``answer``, ``serve`` and ``Reader`` show
``describe()`` and warn with ``warning()`` (one line) when the reader was trained on
generated data or validates below its data's exclusive-frequency baseline. Checkpoints from
before the record existed read as an unknown provenance, without a warning.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import PurePath
from typing import Any

#: The checkpoint's key for the record.
PROVENANCE_KEY = "provenance"
RECORD_VERSION = 1


def training_record(trainer: Any) -> dict[str, Any]:
    """The record a checkpoint saved now by ``trainer`` holds (plain JSON values).

    The data part is ``None`` when the trainer's data module does not describe itself
    (anything but ``ClozeDataModule``).
    """
    datamodule = getattr(trainer, "datamodule", None)
    describe = getattr(datamodule, "provenance", None)
    current = trainer.callback_metrics.get("val_acc")
    checkpoint = getattr(trainer, "checkpoint_callback", None)
    best = getattr(checkpoint, "best_model_score", None)
    if getattr(checkpoint, "monitor", None) != "val_acc":
        best = None
    return {
        "version": RECORD_VERSION,
        "data": describe() if callable(describe) else None,
        "val_acc": None if current is None else float(current),
        "best_val_acc": None if best is None else float(best),
        "epoch": int(trainer.current_epoch),
        "global_step": int(trainer.global_step),
    }


@dataclass(frozen=True)
class Provenance:
    """A checkpoint's provenance record, as read back (every field ``None`` when unknown).

    Attributes:
        recorded: whether the checkpoint holds a record at all.
        data: the training dataset folder.
        fingerprint: the SHA-256 of its ``manifest.json`` (or of its splits' fingerprints).
        synthetic: what generated its stories (e.g. ``"the built-in synthetic corpus"``),
            ``""`` for real text, ``None`` when the dataset could not tell.
        baseline: the exclusive-frequency baseline on its validation split, in [0, 1].
        val_acc: the validation accuracy of the saved weights.
        best_val_acc: the best validation accuracy of the run when it was saved.
        epoch: the epoch being trained when it was saved (from 0).
        global_step: optimizer steps done.
    """

    recorded: bool = False
    data: str | None = None
    fingerprint: str | None = None
    synthetic: str | None = None
    baseline: float | None = None
    val_acc: float | None = None
    best_val_acc: float | None = None
    epoch: int | None = None
    global_step: int | None = None

    @classmethod
    def of(cls, checkpoint: dict) -> Provenance:
        """The record of a loaded checkpoint (an unknown provenance when it has none)."""
        record = checkpoint.get(PROVENANCE_KEY)
        if not isinstance(record, dict):
            return cls()
        data = record.get("data") if isinstance(record.get("data"), dict) else {}
        return cls(
            recorded=True,
            data=data.get("path"),
            fingerprint=data.get("fingerprint"),
            synthetic=_generator(data.get("synthetic")),
            baseline=data.get("exclusive_frequency"),
            val_acc=record.get("val_acc"),
            best_val_acc=record.get("best_val_acc"),
            epoch=record.get("epoch"),
            global_step=record.get("global_step"),
        )

    def describe(self, folder: bool = True) -> str:
        """One line: what the reader was trained on and how well it validated.

        Args:
            folder: name the dataset's whole folder; ``False``: its last part only (for a
                page that must not show the server's folders).
        """
        if not self.recorded:
            return "provenance unknown (the checkpoint predates the training-data record)"
        if self.data is None:
            where = "trained on a data module that records nothing about its data"
        else:
            data = self.data if folder else PurePath(self.data).name
            kind = {None: "origin unknown", "": "real text"}.get(self.synthetic, self.synthetic)
            where = f"trained on {data} ({kind}; fingerprint {(self.fingerprint or '?')[:12]})"
        parts = [f"{where}, saved at epoch {self.epoch}, step {self.global_step}"]
        if self.val_acc is not None:
            best = "" if self.best_val_acc is None else f" (best {self.best_val_acc:.4f})"
            parts.append(f"val_acc {self.val_acc:.4f}{best}")
        if self.baseline is not None:
            parts.append(f"exclusive-frequency baseline {self.baseline:.4f}")
        return "; ".join(parts)

    def warning(self) -> str | None:
        """One line when the reader's answers deserve no trust, else ``None``."""
        reasons = []
        if self.synthetic:
            reasons.append(f"was trained on {self.synthetic} (made-up stories, not news)")
        if self.below_baseline:
            reasons.append(
                f"validates at {self.val_acc:.4f}, below its data's exclusive-frequency "
                f"baseline {self.baseline:.4f} (the most frequent entity not in the query)"
            )
        if not reasons:
            return None
        return f"this reader {' and '.join(reasons)}: do not trust its answers about real articles"

    @property
    def below_baseline(self) -> bool:
        """Whether the saved weights validate below the exclusive-frequency baseline."""
        return (
            self.val_acc is not None
            and self.baseline is not None
            and (self.val_acc < self.baseline)
        )

    def to_json(self, folder: bool = True) -> dict[str, Any]:
        """The fields, ``describe()`` and ``warning()`` as JSON.

        Args:
            folder: the dataset's whole folder; ``False``: its last part only (what a server
                sends, never its own folders).
        """
        fields = asdict(self)
        if not folder and self.data is not None:
            fields["data"] = PurePath(self.data).name
        return {**fields, "description": self.describe(folder), "warning": self.warning()}


def _generator(mark: Any) -> str | None:
    """The words for what generated a dataset (``data_provenance``'s ``synthetic``)."""
    if mark is False:
        return ""
    if not isinstance(mark, dict):
        return None
    generator = str(mark.get("generator", ""))
    if generator == "attentive_reader.corpus.synthetic":  # corpus.synthetic.files.GENERATOR
        seed = f", seed {mark['seed']}" if "seed" in mark else ""
        return f"the built-in synthetic corpus{seed}"
    return f"generated data ({generator or 'unknown generator'})"
