"""``ClozeReader``: what every reader shares (answer layer masking, loss, metrics, optimiser).

Letters used by all readers: ``b`` batch, ``n`` context length, ``m`` query length, ``d``
embedding size, ``h`` hidden size per direction, ``e`` number of entity ids.
"""

from __future__ import annotations

import inspect
import types
from typing import Any, Literal

import pytorch_lightning as pl
import torch
import torch.nn.functional as F
from pytorch_lightning.utilities import rank_zero_info
from torch import Tensor, nn
from torchmetrics.classification import MulticlassAccuracy

from attentive_reader.data.batching import ClozeBatch
from attentive_reader.models.output import ReaderOutput
from attentive_reader.nn.encoders import load_word_vectors
from attentive_reader.nn.masking import mask_logits

OptimizerName = Literal["sgd", "adam", "rmsprop"]
DEFAULT_LR: dict[str, float] = {"sgd": 0.1, "adam": 1e-3, "rmsprop": 1e-4}
Stage = Literal["train", "val", "test"]


class ClozeReader(pl.LightningModule):
    """Base class of the readers: predicts the answer's entity id among the candidates.

    A subclass builds its network in ``__init__`` (after ``super().__init__(...)``) and
    implements :meth:`forward`, returning raw answer scores through :meth:`answer_logits` so
    that entity ids absent from the context are never predicted. This class provides the
    cross-entropy loss, accuracy for each stage (``train_acc``, ``val_acc``, ``test_acc``,
    synced across processes), ``predict_step`` and a default optimiser (the Lightning CLI's
    ``--optimizer`` / ``--lr_scheduler`` replace it).

    The hyperparameters saved in checkpoints are exactly the init arguments of the concrete
    reader class (all plain JSON values, so checkpoints load with ``weights_only=True``).

    Args:
        vocab_size: number of token ids (linked from the data module).
        num_entities: number of entity ids ``e``, the size of the answer layer (linked from
            the data module).
        embedding_dim: size ``d`` of the word embeddings (``self.embedding``, padding id 0).
        word_vectors: optional GloVe-format text file; its vectors initialise the embeddings
            of matching vocabulary words when ``fit`` starts (the vocabulary comes from the
            trainer's data module, see :meth:`load_word_vectors`).
        optimizer: default optimiser: ``sgd``, ``adam`` or ``rmsprop``.
        lr: its learning rate; ``None`` means 0.1 for SGD (Chen et al.), 1e-3 for Adam,
            1e-4 for RMSProp.
        weight_decay: L2 penalty of the default optimiser.
    """

    def __init__(
        self,
        vocab_size: int,
        num_entities: int,
        embedding_dim: int = 100,
        word_vectors: str | None = None,
        optimizer: OptimizerName = "sgd",
        lr: float | None = None,
        weight_decay: float = 0.0,
    ) -> None:
        super().__init__()
        for name, value in (
            ("vocab_size", vocab_size),
            ("num_entities", num_entities),
            ("embedding_dim", embedding_dim),
        ):
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        if optimizer not in DEFAULT_LR:
            raise ValueError(f"optimizer must be one of {', '.join(DEFAULT_LR)}, got {optimizer!r}")
        if lr is not None and lr <= 0:
            raise ValueError(f"lr must be positive (or null for the default), got {lr}")
        if weight_decay < 0:
            raise ValueError(f"weight_decay must be >= 0, got {weight_decay}")
        if word_vectors is not None and not isinstance(word_vectors, str):
            raise ValueError("word_vectors must be a path given as a string (or None)")
        self.save_hyperparameters(frame=_outermost_init_frame(self))
        self.vocab_size = vocab_size
        self.num_entities = num_entities
        self.optimizer_name = optimizer
        self.lr = DEFAULT_LR[optimizer] if lr is None else lr
        self.weight_decay = weight_decay
        self.word_vectors = word_vectors
        self.embedding = nn.Embedding(vocab_size, embedding_dim, padding_idx=0)
        metric = MulticlassAccuracy(num_classes=num_entities, average="micro")
        self.train_acc = metric.clone()
        self.val_acc = metric.clone()
        self.test_acc = metric.clone()

    # --- what subclasses use -------------------------------------------------------------

    def forward(self, batch: ClozeBatch) -> ReaderOutput:
        """Read a batch; return candidate-masked logits (b, e) and attention weights."""
        raise NotImplementedError

    def answer_logits(self, scores: Tensor, candidates: Tensor) -> Tensor:
        """Restrict answer scores to the candidates.

        Args:
            scores: (b, e) raw scores over entity ids.
            candidates: (b, e) bool, True for entity ids occurring in the context.

        Returns:
            (b, e) logits; non-candidates hold ``torch.finfo(dtype).min``.
        """
        return mask_logits(scores, candidates)

    def load_word_vectors(self, vocab_tokens: list[str]) -> int:
        """Initialise ``self.embedding`` from ``self.word_vectors`` (see ``nn.encoders``).

        Args:
            vocab_tokens: the token of each id, in id order.

        Returns:
            The number of embedding rows that received a vector.
        """
        if self.word_vectors is None:
            return 0
        found = load_word_vectors(self.word_vectors, vocab_tokens, self.embedding)
        rank_zero_info(
            f"word vectors: {found} of {len(vocab_tokens)} vocabulary tokens found in "
            f"{self.word_vectors}"
        )
        return found

    # --- Lightning hooks -----------------------------------------------------------------

    def setup(self, stage: str) -> None:
        """At the start of ``fit``, load word vectors using the data module's vocabulary.

        When resuming from a checkpoint, the checkpoint's weights replace them afterwards.
        """
        if stage != "fit" or self.word_vectors is None:
            return
        datamodule = getattr(self.trainer, "datamodule", None) if self._trainer else None
        vocab = getattr(datamodule, "vocab", None)
        if vocab is None:
            raise ValueError(
                "word_vectors needs the vocabulary: train with a data module that has a "
                "`vocab` (ClozeDataModule), or call load_word_vectors(tokens) yourself and "
                "set word_vectors=None"
            )
        self.load_word_vectors(vocab.decode(range(len(vocab))))

    def on_save_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        # The reader's class, so that ``load_reader`` works for checkpoints made without the CLI.
        checkpoint["reader_class"] = f"{type(self).__module__}.{type(self).__qualname__}"

    def training_step(self, batch: ClozeBatch, batch_idx: int) -> Tensor:
        return self._shared_step(batch, "train")

    def validation_step(self, batch: ClozeBatch, batch_idx: int) -> None:
        self._shared_step(batch, "val")

    def test_step(self, batch: ClozeBatch, batch_idx: int) -> None:
        self._shared_step(batch, "test")

    def predict_step(self, batch: ClozeBatch, batch_idx: int, dataloader_idx: int = 0) -> dict:
        """Predictions for one batch, on the CPU.

        Returns:
            ``{"ids": list[str], "logits": (b, e), "probs": (b, e) (0 for non-candidates),
            "attention": (b, n) | (b, m, n) | None, "selected": (b, k) | None,
            "answer": (b,), "prediction": (b,)}``.
        """
        output = self(batch)
        logits = output.logits.float()  # (b, e)

        def cpu(tensor: Tensor | None) -> Tensor | None:
            return None if tensor is None else tensor.detach().float().cpu()

        return {
            "ids": list(batch.ids),
            "logits": logits.detach().cpu(),
            "probs": torch.softmax(logits, dim=-1).detach().cpu(),
            "attention": cpu(output.attention),
            "selected": None if output.selected is None else output.selected.detach().cpu(),
            "answer": batch.answer.detach().cpu(),
            "prediction": logits.argmax(dim=-1).detach().cpu(),
        }

    def configure_optimizers(self) -> torch.optim.Optimizer:
        """The default optimiser (used when the CLI is given no ``--optimizer``)."""
        if self.optimizer_name == "sgd":
            return torch.optim.SGD(self.parameters(), lr=self.lr, weight_decay=self.weight_decay)
        if self.optimizer_name == "adam":
            return torch.optim.Adam(self.parameters(), lr=self.lr, weight_decay=self.weight_decay)
        return torch.optim.RMSprop(self.parameters(), lr=self.lr, weight_decay=self.weight_decay)

    # --- internals -----------------------------------------------------------------------

    def _shared_step(self, batch: ClozeBatch, stage: Stage) -> Tensor:
        output = self(batch)
        logits = output.logits.float()  # (b, e); float even under bf16 autocast
        loss = F.cross_entropy(logits, batch.answer)
        metric: MulticlassAccuracy = getattr(self, f"{stage}_acc")
        metric.update(logits.argmax(dim=-1), batch.answer)
        size = len(batch)
        self.log(
            f"{stage}_loss",
            loss,
            on_step=stage == "train",
            on_epoch=True,
            prog_bar=True,
            sync_dist=True,
            batch_size=size,
        )
        # Logging the metric object: Lightning computes it over the epoch and torchmetrics
        # syncs its counts across processes (exact, not a mean of per-process accuracies).
        self.log(
            f"{stage}_acc",
            metric,
            on_step=False,
            on_epoch=True,
            prog_bar=True,
            sync_dist=True,
            batch_size=size,
        )
        return loss


def _outermost_init_frame(obj: object) -> types.FrameType | None:
    """The frame of the most derived ``__init__`` running for ``obj``.

    Lightning's ``save_hyperparameters`` merges the arguments of every ``__init__`` in the
    inheritance chain; starting from the outermost frame records only the concrete class's
    own arguments (e.g. ``UniformReader`` does not inherit ``scorer`` from
    ``AttentiveReader``), so a checkpoint's hyperparameters always fit its class.
    """
    frame = inspect.currentframe()
    outermost = None
    while frame is not None:
        if frame.f_code.co_name == "__init__" and frame.f_locals.get("self") is obj:
            outermost = frame
        frame = frame.f_back
    return outermost
