"""``ClozeReader``: what every reader shares (answer layers, loss, metrics, optimiser and
learning-rate schedule).

Letters used by all readers: ``b`` batch, ``n`` context length, ``m`` query length, ``d``
embedding size, ``h`` hidden size per direction, ``e`` number of entity ids.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, ClassVar, Literal

import pytorch_lightning as pl
import torch
import torch.nn.functional as F
from pytorch_lightning.utilities import rank_zero_info
from torch import Tensor, nn
from torchmetrics.classification import MulticlassAccuracy

from attentive_reader.common.checks import check_positive
from attentive_reader.common.errors import UserError
from attentive_reader.common.markers import is_entity_marker
from attentive_reader.data.batching import ClozeBatch
from attentive_reader.data.entity_block import UNANSWERABLE
from attentive_reader.data.vocab import SPECIAL_TOKENS, Vocabulary
from attentive_reader.models.output import ReaderOutput
from attentive_reader.models.predictions import BatchPrediction
from attentive_reader.models.provenance import PROVENANCE_KEY, training_record
from attentive_reader.models.schedules import (
    LrScheduleName,
    build_schedule,
    check_schedule,
    step_schedule,
)
from attentive_reader.nn.answer import (
    AnswerContext,
    AnswerHead,
    AnswerInput,
    AnswerLayerName,
    build_answer_head,
    check_answer_layer,
)
from attentive_reader.nn.features import query_match as query_match_features
from attentive_reader.nn.masking import mask_logits
from attentive_reader.nn.word_vectors import load_word_vectors

OptimizerName = Literal["sgd", "adam", "rmsprop"]
OPTIMIZERS: dict[str, type[torch.optim.Optimizer]] = {
    "sgd": torch.optim.SGD,
    "adam": torch.optim.Adam,
    "rmsprop": torch.optim.RMSprop,
}
DEFAULT_LR: dict[str, float] = {"sgd": 0.1, "adam": 1e-3, "rmsprop": 1e-4}
Stage = Literal["train", "val", "test"]


class ClozeReader(pl.LightningModule):
    """Base class of the readers: predicts the answer's entity id among the candidates.

    A reader declares its own options as keyword-only arguments and passes the rest on
    (``def __init__(self, *, <its own>, **options)`` then ``super().__init__(**options)``):
    the Lightning CLI reads every signature of the chain, so a config keeps one flat
    ``init_args`` block and ``--print_config`` shows them all. It builds its network from
    parts (``models/parts.py``, ``nn/``) and its head with :meth:`build_answer_layer`, and its
    :meth:`forward` ends in :meth:`answer_scores`. This class gives the embedding, the loss
    (:meth:`step_loss`, the one hook for a reader that trains with more or otherwise),
    accuracy per stage, ``predict_step``, and the optimiser with its schedule, set here only,
    so checkpoints and ``config.yaml`` record what trained the reader. Saved hyperparameters
    are the init arguments of the class chain, defaults included, less ``derived_arguments``:
    plain JSON values, read with ``weights_only=True``. A concrete subclass, wherever it is
    defined, is listed by :meth:`list_available`. ``docs/readers.md`` walks writing one.

    Every reader answers through the head its ``answer_layer`` option names
    (``nn/answer.py``), from its vector ``g`` and its attention ``s``::

        p(a | d, q) = softmax over the candidate entities of W_a g       (output, the paper's)
                    | ... of (W g + c + x) . E[@entity_a] / sqrt(d)      (tied)
                    | sum_{t: d_t = a} s(t), renormalised                 (pointer)

    Args:
        vocab_size: number of token ids (linked from the data module).
        num_entities: number of entity ids ``e``, the size of the answer space (linked from
            the data module).
        embedding_dim: size ``d`` of the word embeddings (``self.embedding``, padding id 0).
        query_match: append to every token's embedding one bit saying whether the token also
            occurs on the other side (context token in the query, query token in the
            context; ``nn/features.py``), so encoders get ``d + 1`` inputs (``input_dim``).
        word_vectors: optional text file of pretrained word vectors (GloVe, or word2vec /
            fastText text format, ``nn/word_vectors.py``) of ``embedding_dim`` values each;
            they initialise the embeddings of matching vocabulary words when a new ``fit``
            starts (the vocabulary comes from the trainer's data module, see
            :meth:`load_word_vectors`). Entity markers, ``@placeholder`` and the special
            tokens keep their own embeddings. A resumed ``fit`` (``ckpt_path``), evaluation
            and answering read the checkpoint's weights and never open the file.
        optimizer: ``sgd``, ``adam`` or ``rmsprop``.
        lr: its learning rate; ``None`` means 0.1 for SGD (Chen et al.), 1e-3 for Adam,
            1e-4 for RMSProp.
        weight_decay: L2 penalty.
        optimizer_options: further keyword arguments of the torch optimiser, e.g.
            ``{"momentum": 0.9, "alpha": 0.95}`` for the paper's RMSProp.
        lr_schedule: ``constant`` (the default), ``plateau`` (multiply the rate by
            ``lr_factor`` when ``val_acc`` has not improved for more than ``lr_patience``
            validated epochs) or ``decay`` (multiply it by ``lr_factor`` after every epoch from
            epoch ``lr_decay_start`` on, counting from 0).
        lr_factor: the schedule's multiplier, in (0, 1); 0.5 halves.
        lr_patience: ``plateau``: epochs without improvement tolerated before a cut.
        lr_decay_start: ``decay``: the first epoch trained at a decayed rate.
        min_lr: the schedule never goes below this rate.
    """

    #: The ways a reader can be set to read in evaluation (its ``eval_mode`` attribute, set
    #: after loading); empty: it reads one way.
    eval_modes: ClassVar[tuple[str, ...]] = ()
    #: The answer layers a reader class accepts (``build_answer_layer`` checks against them).
    answer_layers: ClassVar[tuple[AnswerLayerName, ...]] = ("output", "tied", "pointer")
    #: Init arguments a reader class passes to its base class itself, not the user's choice:
    #: left out of the saved hyperparameters.
    derived_arguments: ClassVar[tuple[str, ...]] = ()
    #: The answer head, built by :meth:`build_answer_layer` in the reader's ``__init__``.
    answer: AnswerHead
    #: ``g = readout(r, u)`` before the head (``models/parts.py``); ``None``: ``g`` is what
    #: the reader hands :meth:`answer_scores` as ``vector``.
    readout: nn.Module | None
    _registry: ClassVar[dict[str, type[ClozeReader]]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if cls.forward is ClozeReader.forward or cls.__name__.startswith("_"):
            return  # a base for readers, not a reader
        known = ClozeReader._registry.get(cls.__name__)
        if known is not None and _class_path(known) != _class_path(cls):
            raise TypeError(
                f"two reader classes are named {cls.__name__} ({_class_path(known)} and "
                f"{_class_path(cls)}): rename one, list_available() keys them by name"
            )
        ClozeReader._registry[cls.__name__] = cls

    @classmethod
    def list_available(cls) -> dict[str, type[ClozeReader]]:
        """Every concrete reader class by class name: the toolkit's (imports
        ``attentive_reader.models``) and every other defined so far, wherever it is."""
        import attentive_reader.models  # noqa: F401  (registers every reader)

        return dict(sorted(ClozeReader._registry.items()))

    def __init__(
        self,
        *,
        vocab_size: int,
        num_entities: int,
        embedding_dim: int = 100,
        query_match: bool = False,
        word_vectors: str | None = None,
        optimizer: OptimizerName = "adam",
        lr: float | None = None,
        weight_decay: float = 0.0,
        optimizer_options: dict[str, float] | None = None,
        lr_schedule: LrScheduleName = "constant",
        lr_factor: float = 0.5,
        lr_patience: int = 0,
        lr_decay_start: int = 3,
        min_lr: float = 0.0,
    ) -> None:
        super().__init__()
        check_positive(
            vocab_size=vocab_size, num_entities=num_entities, embedding_dim=embedding_dim
        )
        if optimizer not in OPTIMIZERS:
            raise ValueError(f"optimizer must be one of {', '.join(OPTIMIZERS)}, got {optimizer!r}")
        if lr is not None and lr <= 0:
            raise ValueError(f"lr must be positive (or null for the default), got {lr}")
        if weight_decay < 0:
            raise ValueError(f"weight_decay must be >= 0, got {weight_decay}")
        if word_vectors is not None and not isinstance(word_vectors, str):
            raise ValueError("word_vectors must be a path given as a string (or None)")
        _check_optimizer_options(optimizer, optimizer_options)
        check_schedule(lr_schedule, lr_factor, lr_patience, min_lr, lr_decay_start)
        self.save_hyperparameters(ignore=list(self.derived_arguments))
        self.vocab_size = vocab_size
        self.num_entities = num_entities
        self.optimizer_name = optimizer
        self.lr = DEFAULT_LR[optimizer] if lr is None else lr
        self.weight_decay = weight_decay
        self.optimizer_options = dict(optimizer_options or {})
        self.lr_schedule: LrScheduleName = lr_schedule
        self.lr_factor = lr_factor
        self.lr_patience = lr_patience
        self.lr_decay_start = lr_decay_start
        self.min_lr = min_lr
        self._validated_epoch = -1  # the last epoch whose validation ran (plateau steps on it)
        self.word_vectors = word_vectors
        self.query_match = bool(query_match)
        self.embedding = nn.Embedding(vocab_size, embedding_dim, padding_idx=0)
        self.input_dim = embedding_dim + (1 if self.query_match else 0)
        self.answer_layer: AnswerLayerName = "output"
        self.readout = None  # a reader with a read-out sets its own
        # One class beyond the entity ids: an answer outside the block (UNANSWERABLE) is
        # scored as it, and no prediction is.
        metric = MulticlassAccuracy(num_classes=num_entities + 1, average="micro")
        self.train_acc = metric.clone()
        self.val_acc = metric.clone()
        self.test_acc = metric.clone()

    # --- what subclasses use -------------------------------------------------------------

    def forward(self, batch: ClozeBatch) -> ReaderOutput:
        """Read a batch; return candidate-masked logits (b, e) and attention weights."""
        raise NotImplementedError

    def embed(self, batch: ClozeBatch, dropout: nn.Module) -> tuple[Tensor, Tensor]:
        """The encoders' inputs: embeddings (with ``dropout``) and, with ``query_match``, the
        match bit.

        Returns:
            ``document`` (b, n, input_dim) and ``query`` (b, m, input_dim).
        """
        document = dropout(self.embedding(batch.context))  # (b, n, d)
        query = dropout(self.embedding(batch.query))  # (b, m, d)
        if not self.query_match:
            return document, query
        in_query, in_context = query_match_features(
            batch.context, batch.context_mask, batch.query, batch.query_mask
        )  # (b, n), (b, m)
        document = torch.cat([document, in_query.unsqueeze(-1).to(document.dtype)], -1)
        query = torch.cat([query, in_context.unsqueeze(-1).to(query.dtype)], -1)
        return document, query  # (b, n, d + 1), (b, m, d + 1)

    def build_answer_layer(
        self,
        name: AnswerLayerName,
        input_dim: int,
        allowed: tuple[str, ...] | None = None,
        why: str = "",
    ) -> None:
        """Build ``self.answer``, the reader's answer head (``nn/answer.py``).

        Args:
            name: ``output``, ``tied`` or ``pointer``.
            input_dim: size of the vector ``g`` the reader answers from (``output``, ``tied``).
            allowed: the layers this reader supports with its other options (default: the
                class's ``answer_layers``).
            why: why a layer is not allowed, for the error message.
        """
        allowed = self.answer_layers if allowed is None else allowed
        check_answer_layer(name, allowed, type(self).__name__, why)
        self.answer_layer = name  # the choice, as configured (the head is what answers)
        self.answer = build_answer_head(
            name, input_dim, self.num_entities, self.embedding.embedding_dim
        )

    def answer_context(self, batch: ClozeBatch) -> AnswerContext:
        """The batch's context as the answer head sees it."""
        return AnswerContext(
            batch.context,
            batch.context_mask,
            self.embedding,
            Vocabulary.entity_offset,
            self.num_entities,
        )

    def answer_scores(
        self, batch: ClozeBatch, given: AnswerInput, candidates: Tensor | None = None
    ) -> Tensor:
        """The answer path every reader's ``forward`` ends in: the read-out (when the reader
        has one and its head needs ``g``), the head, the candidates.

        Args:
            batch: the batch read (its context and candidates).
            given: what the reader read (``AnswerInput``): with a read-out, its ``vector`` is
                ``r`` and ``query`` is ``u``.
            candidates: (b', e) the candidates of each row of ``given``, when there are
                several readings per example (default: ``batch.candidates``).

        Returns:
            (b', e) logits; non-candidates hold ``torch.finfo(dtype).min``.
        """
        if self.readout is not None and not self.answer.reads_tokens:
            given = replace(given, vector=self.readout(given.vector, given.query))  # g
        scores = self.answer.score(self.answer_context(batch), given)  # (b', e)
        return mask_logits(scores, batch.candidates if candidates is None else candidates)

    def load_word_vectors(self, vocab_tokens: list[str]) -> int:
        """Initialise ``self.embedding`` from ``self.word_vectors`` (``nn/word_vectors.py``)
        and say in one log line how many vocabulary words the file had.

        Args:
            vocab_tokens: the token of each id, in id order.

        Returns:
            The number of embedding rows that received a vector.

        Raises:
            UserError: a missing or unreadable file, or vectors of another size than
                ``embedding_dim``.
        """
        if self.word_vectors is None:
            return 0
        found = load_word_vectors(
            self.word_vectors, vocab_tokens, self.embedding, keep=SPECIAL_TOKENS
        )
        words = sum(t not in SPECIAL_TOKENS and not is_entity_marker(t) for t in vocab_tokens)
        rank_zero_info(
            f"word vectors: {found} of {words} vocabulary words found in {self.word_vectors} "
            "(entity markers, @placeholder and the special tokens keep their own embeddings)"
        )
        return found

    # --- Lightning hooks -----------------------------------------------------------------

    def on_fit_start(self) -> None:
        """When a new ``fit`` starts, load the word vectors for the data module's vocabulary.

        A resumed ``fit`` (``ckpt_path``) keeps the checkpoint's embeddings and never opens
        the file (Lightning has restored the weights before this hook).
        """
        if self.word_vectors is None or self.trainer.ckpt_path is not None:
            return
        vocab = getattr(self.trainer.datamodule, "vocab", None)
        if vocab is None:
            raise ValueError(
                "word_vectors needs the vocabulary: train with a data module that has a "
                "`vocab` (ClozeDataModule), or call load_word_vectors(tokens) yourself and "
                "set word_vectors=None"
            )
        self.load_word_vectors(vocab.decode(range(len(vocab))))

    def on_save_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        # The reader's class, so that ``load_reader`` works for checkpoints made without the CLI.
        checkpoint["reader_class"] = _class_path(type(self))
        if self._trainer is not None:  # what it was trained on, and how far it got
            checkpoint[PROVENANCE_KEY] = training_record(self._trainer)

    def on_load_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        check_weights_fit(self, checkpoint["state_dict"], "the checkpoint")
        self._apply_changed_lr(checkpoint)

    def _apply_changed_lr(self, checkpoint: dict[str, Any]) -> None:
        """A run resumed with another learning rate (``--model.lr``) trains with it: the
        restored optimizer's groups and schedule take it. With the same one, the restored
        state stands (a schedule's decay so far included)."""
        stored = checkpoint.get("hyper_parameters", {})
        trained = stored.get("lr") or DEFAULT_LR[stored.get("optimizer", self.optimizer_name)]
        if trained == self.lr:
            return
        for state in checkpoint.get("optimizer_states", []):
            for group in state.get("param_groups", []):
                group["lr"] = self.lr
                if "initial_lr" in group:
                    group["initial_lr"] = self.lr
        for state in checkpoint.get("lr_schedulers", []):
            if "base_lrs" in state:
                state["base_lrs"] = [self.lr] * len(state["base_lrs"])

    def training_step(self, batch: ClozeBatch, batch_idx: int) -> Tensor:
        return self._shared_step(batch, "train")

    def validation_step(self, batch: ClozeBatch, batch_idx: int) -> None:
        self._shared_step(batch, "val")

    def test_step(self, batch: ClozeBatch, batch_idx: int) -> None:
        self._shared_step(batch, "test")

    def predict_step(
        self, batch: ClozeBatch, batch_idx: int, dataloader_idx: int = 0
    ) -> BatchPrediction:
        """Predictions for one batch, on the CPU, with the reader's ``extras`` (e.g. the
        Gated-Attention Reader's ``hop_attention``); ``.records()`` gives one ``Prediction``
        per example."""
        output = self(batch)
        return BatchPrediction.of(batch, output, read=self.reading_mask(batch, output))

    def reading_mask(self, batch: ClozeBatch, output: ReaderOutput) -> Tensor:
        """The document positions whose states the answer of ``output`` is computed from,
        (b, n) bool: every real token for a reader that reads the whole document (the
        default); a reader that reads less says what it read.

        The encoders run over every token whatever this says: it counts what the answer
        reads of their states, the figure a selective reader saves on.
        """
        return batch.context_mask

    def configure_optimizers(self) -> torch.optim.Optimizer | dict[str, Any]:
        """The optimiser of the ``optimizer``, ``lr``, ``weight_decay`` and
        ``optimizer_options`` arguments, with the ``lr_schedule``'s scheduler unless it is
        ``constant``."""
        optimizer = OPTIMIZERS[self.optimizer_name](
            self.parameters(),
            lr=self.lr,
            weight_decay=self.weight_decay,
            **self.optimizer_options,
        )
        schedule = build_schedule(
            optimizer,
            self.lr_schedule,
            factor=self.lr_factor,
            patience=self.lr_patience,
            min_lr=self.min_lr,
            decay_start=self.lr_decay_start,
        )
        return optimizer if schedule is None else {"optimizer": optimizer, "lr_scheduler": schedule}

    def on_train_epoch_start(self) -> None:
        # The rate this epoch trains with (every reader, every schedule).
        optimizer = self.optimizers()
        if isinstance(optimizer, list):  # a reader that configures none
            return
        rate = optimizer.optimizer.param_groups[0]["lr"]
        self.log("lr", rate, on_step=False, on_epoch=True, batch_size=1)

    def on_validation_epoch_end(self) -> None:
        if not self.trainer.sanity_checking:
            self._validated_epoch = self.current_epoch

    def on_train_epoch_end(self) -> None:
        """Step the learning-rate schedule (see ``models/schedules.py`` for why here)."""
        schedulers = self.lr_schedulers()
        for scheduler in schedulers if isinstance(schedulers, list) else [schedulers]:
            if scheduler is not None:
                validated = self._validated_epoch == self.current_epoch
                step_schedule(scheduler, validated, self.trainer.callback_metrics)

    def lr_scheduler_step(self, scheduler: Any, metric: Any) -> None:
        # The schedule is stepped by on_train_epoch_end, before the epoch's checkpoints.
        return None

    # --- internals -----------------------------------------------------------------------

    def _shared_step(self, batch: ClozeBatch, stage: Stage) -> Tensor:
        output = self(batch)
        loss = self.step_loss(batch, output, stage)
        logits = output.logits.float()  # (b, e); float even under bf16 autocast
        metric: MulticlassAccuracy = getattr(self, f"{stage}_acc")
        unanswerable = batch.answer == UNANSWERABLE  # (b,)
        metric.update(
            logits.argmax(dim=-1), batch.answer.masked_fill(unanswerable, logits.shape[-1])
        )
        shared = {"on_epoch": True, "prog_bar": True, "sync_dist": True, "batch_size": len(batch)}
        self.log(f"{stage}_loss", loss, on_step=stage == "train", **shared)
        # Logging the metric object: Lightning computes it over the epoch and torchmetrics
        # syncs its counts across processes (exact, not a mean of per-process accuracies).
        self.log(f"{stage}_acc", metric, on_step=False, **shared)
        return loss

    def step_loss(self, batch: ClozeBatch, output: ReaderOutput, stage: Stage) -> Tensor:
        """The loss of one step, logged as ``{stage}_loss`` and, in training, minimised: the
        mean cross-entropy of the answers (:func:`answer_loss`).

        The one hook for a reader that trains with more (the glimpse readers' locator loss)
        or otherwise (the hard-attention reader's REINFORCE terms); it logs what it adds
        under names of its own.
        """
        return answer_loss(output.logits.float(), batch.answer)


def answer_loss(logits: Tensor, answer: Tensor) -> Tensor:
    """The mean cross-entropy of the answers, ().

    An answer outside the reader's block (``UNANSWERABLE``: a document with more entities
    than the block, at evaluation) has no logit: it is left out of the mean, and a batch of
    only such answers has loss 0. They count wrong in the accuracy.

    Args:
        logits: (b, e) candidate-masked logits.
        answer: (b,) the answers' entity ids.
    """
    loss = F.cross_entropy(logits, answer, ignore_index=UNANSWERABLE)  # nan when all left out
    return torch.where((answer != UNANSWERABLE).any(), loss, torch.zeros_like(loss))


def check_weights_fit(reader: ClozeReader, state_dict: dict[str, Tensor], source: str) -> None:
    """Raise a ``UserError`` when ``state_dict``'s parameter names are not ``reader``'s: a
    checkpoint of a pre-release (its parameters were named otherwise), of another version of
    the reader class, or resumed with other options. ``source`` names it in the message."""
    ours, theirs = set(reader.state_dict()), set(state_dict)
    if ours == theirs:
        return
    differ = sorted(theirs - ours)[:1] + sorted(ours - theirs)[:1]
    raise UserError(
        f"{source} does not fit this {type(reader).__name__}: its parameters differ (e.g. "
        f"{', '.join(differ)}), so it was saved by another attentive-reader version or with "
        "other options; retrain the reader with this version, or load it with the version "
        "and options that trained it"
    )


def _class_path(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def _check_optimizer_options(optimizer: str, options: dict[str, float] | None) -> None:
    """Build the optimiser once on a dummy parameter, so a bad option fails at construction."""
    if not options:
        return
    if not isinstance(options, dict) or not all(isinstance(k, str) for k in options):
        raise ValueError(f"optimizer_options must map option names to values, got {options!r}")
    reserved = {"lr", "weight_decay", "params"} & set(options)
    if reserved:
        raise ValueError(
            f"optimizer_options may not set {', '.join(sorted(reserved))}: use the reader's "
            "lr / weight_decay arguments"
        )
    try:
        OPTIMIZERS[optimizer]([nn.Parameter(torch.zeros(1))], lr=1e-3, **options)
    except (TypeError, ValueError) as err:
        raise ValueError(f"optimizer_options {options!r} do not fit {optimizer}: {err}") from None
