"""``ClozeDataModule``: a processed cloze dataset directory as batches for the readers."""

from __future__ import annotations

import functools
import json
import warnings
from pathlib import Path
from typing import Any

import datasets
import pytorch_lightning as pl
import torch
from pytorch_lightning.callbacks import Callback
from torch.utils.data import DataLoader

from attentive_reader.common.checkpoint_file import read_checkpoint
from attentive_reader.common.checks import check_positive, check_positive_or_none
from attentive_reader.common.errors import EmptySplitWarning, UserError
from attentive_reader.common.fileio import digest_of
from attentive_reader.common.markers import entity_index, entity_marker
from attentive_reader.common.upstream import uses_distributed_sampler
from attentive_reader.corpus.manifest import (
    identity_difference,
    preprocessing_identity,
    read_manifest,
)
from attentive_reader.corpus.records import SPLITS, Split, dataset_split, load_dataset
from attentive_reader.data.batching import BucketBatchSampler, ResumableLoader, collate
from attentive_reader.data.encoded import (
    BadRow,
    cache_root,
    cached_json,
    encoded_split,
    split_fingerprint,
)
from attentive_reader.data.entity_numbers import block_size, largest_entity_numbers
from attentive_reader.data.provenance import data_provenance
from attentive_reader.data.split import ENTITY_ID_POLICIES, EncodedSplit, EntityIdPolicy
from attentive_reader.data.stories import story_share
from attentive_reader.data.vocab import Vocabulary
from attentive_reader.data.vocab_sources import (
    PIPELINE_FILE,
    VOCAB_FILE,
    checkpoint_state,
    read_vocabulary,
    token_counts,
)

__all__ = [
    "ClozeDataModule",
    "EncodedSplit",
    "PreprocessingWarning",
    "Split",
    "VocabularyWriter",
]


class PreprocessingWarning(UserWarning):
    """A dataset was preprocessed otherwise than the data a checkpoint was trained on."""


class ClozeDataModule(pl.LightningDataModule):
    """A processed dataset directory (``attentive-reader preprocess`` output) as batches.

    The vocabulary is built from the train split when the module is created, so that the
    Lightning CLI can link ``vocab_size`` and ``num_entities`` into the model, or read from
    ``vocab`` / ``checkpoint``; checkpoints store it. Token ids are encoded once per dataset and
    vocabulary and memory-mapped (``data/encoded.py``). docs/training.md ("Data options")
    says what each option does; docs/scale.md how the encoded ids are cached and shared.

    Args:
        path: the processed dataset directory (splits ``train``, ``validation``, ``test``).
        batch_size: training batch size.
        eval_batch_size: validation/test/predict batch size (default ``batch_size``).
        max_words: the number of most frequent train words in the vocabulary.
        num_entities: size of the entity id block (``None``: 600, or what the dataset needs
            if more); ignored when a stored vocabulary is read.
        entity_ids: ``permute`` (a fresh permutation per training example and epoch, the
            paper's) or ``first_occurrence`` (the stored ids); evaluation never permutes.
        max_context_tokens: cut contexts to this many tokens (candidates stay the whole
            context's).
        pool_size: batches per length-sorting pool.
        num_workers: ``DataLoader`` worker processes.
        seed: seed of batch shuffling and entity permutation.
        vocab: a ``vocab.json`` or a checkpoint whose vocabulary to use.
        predict_split: the split ``predict`` reads.
        checkpoint: a checkpoint whose vocabulary to use when ``vocab`` is unset (the CLI
            links it from ``--ckpt_path``).
        cache_dir: where to keep the encoded ids (default: the dataset's ``.encoded`` when
            writable, else the user's cache).
        num_proc: worker processes for the first encoding of a large split.
        vocabulary: the vocabulary itself, when the caller has it in hand (not a
            hyperparameter; replaces ``vocab`` and ``checkpoint``).
        train_fraction: train on this share of the training stories, a subset of any larger
            share (learning curves over training-set size).
    """

    def __init__(
        self,
        path: str,
        batch_size: int = 32,
        eval_batch_size: int | None = None,
        max_words: int = 50_000,
        num_entities: int | None = None,
        entity_ids: EntityIdPolicy = "permute",
        max_context_tokens: int | None = None,
        pool_size: int = 50,
        num_workers: int = 0,
        seed: int = 0,
        vocab: str | None = None,
        predict_split: Split = "test",
        checkpoint: str | None = None,
        cache_dir: str | None = None,
        num_proc: int = 1,
        vocabulary: Vocabulary | None = None,
        train_fraction: float = 1.0,
    ) -> None:
        super().__init__()
        check_positive(batch_size=batch_size, pool_size=pool_size, num_proc=num_proc)
        check_positive_or_none(
            num_entities=num_entities,
            eval_batch_size=eval_batch_size,
            max_context_tokens=max_context_tokens,
        )
        for name, value in (("max_words", max_words), ("num_workers", num_workers)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(f"{name} must be a non-negative integer, got {value!r}")
        if entity_ids not in ENTITY_ID_POLICIES:
            raise ValueError(
                f"entity_ids must be one of {', '.join(ENTITY_ID_POLICIES)}, got {entity_ids!r}"
            )
        if predict_split not in SPLITS:
            raise ValueError(f"predict_split must be one of {SPLITS}, got {predict_split!r}")
        # Stored in checkpoints for from_checkpoint; not sent to loggers (the CLI's config.yaml
        # has them). They are the arguments as given: the entity count in use is the
        # vocabulary's (``num_entities``), which the CLI links into the model's arguments.
        self.save_hyperparameters(ignore=["vocabulary"], logger=False)
        self.path = Path(path)
        self.batch_size = batch_size
        self.eval_batch_size = eval_batch_size or batch_size
        self.entity_ids: EntityIdPolicy = entity_ids
        self.max_context_tokens = max_context_tokens
        self.pool_size = pool_size
        self.num_workers = num_workers
        self.pin_memory: bool | None = None  # None: when the trainer runs on CUDA
        self.num_proc = num_proc
        self.seed = seed
        self.predict_split = predict_split
        self._splits = {
            split: rows for split, rows in load_dataset(self.path).items() if split in SPLITS
        }
        if "train" in self._splits:
            self._splits["train"] = story_share(self._splits["train"], train_fraction)
        self._cache = cache_root(self.path, cache_dir)
        # How the dataset's text was anonymized (manifest.json), stored in checkpoints so that
        # attentive_reader.api.Reader anonymizes a new document alike; None without a manifest.
        self.pipeline: dict | None = preprocessing_identity(read_manifest(self.path))
        stored_vocab = vocab if vocab is not None else checkpoint
        if vocabulary is not None:
            self.vocab = vocabulary
        elif stored_vocab is not None:
            self.vocab, recorded = read_vocabulary(Path(stored_vocab))
            self.check_preprocessing(recorded, stored_vocab)
        else:
            self.vocab = self._built_vocabulary(max_words, self._block_size(num_entities))
        self._encoded: dict[str, EncodedSplit] = {}
        self._provenance: dict | None = None

    # --- what the CLI links into the model -----------------------------------------------

    @property
    def vocab_size(self) -> int:
        """The number of token ids."""
        return len(self.vocab)

    @property
    def num_entities(self) -> int:
        """The number of entity ids (the readers' output size)."""
        return self.vocab.num_entities

    # --- data ----------------------------------------------------------------------------

    def entities_needed(self) -> int:
        """The number of entity ids the stored data needs: its largest entity number + 1."""
        largest = max(self.largest_entity_numbers().values(), default=-1)
        if largest < 0:
            raise UserError(f"{self.path} holds no entity markers; is it a processed dataset?")
        return largest + 1

    def largest_entity_numbers(self) -> dict[str, int]:
        """Split -> its largest entity number, over contexts and queries (-1: none); counted
        once per dataset (cached beside the encoded ids)."""
        return largest_entity_numbers(self._splits, self._cache)

    def _block_size(self, num_entities: int | None) -> int:
        """The entity block of a new vocabulary (``entity_numbers.block_size``)."""
        return block_size(self.entities_needed(), num_entities, self.path)

    def check_preprocessing(self, recorded: dict | None, source: str | Path) -> None:
        """Warn in one line (``PreprocessingWarning``) when this dataset was preprocessed
        otherwise than the data of ``source`` (a checkpoint or vocabulary), whose
        preprocessing identity is ``recorded``: the reader still reads it."""
        difference = identity_difference(self.pipeline, recorded)
        if difference is not None:
            ours, theirs = difference
            warnings.warn(
                f"{self.path} was preprocessed with {ours}, the training data of {source} with "
                f"{theirs}: entities may be marked differently",
                PreprocessingWarning,
                stacklevel=2,
            )

    def _built_vocabulary(self, max_words: int, num_entities: int) -> Vocabulary:
        """``Vocabulary.build`` over the train split, counted once per dataset and options."""
        train = self.examples("train")
        if not len(train):
            raise UserError(
                f"the train split of {self.path} is empty (0 examples): no vocabulary to build "
                "and nothing to train on; give it examples when preprocessing (a file's rows go "
                "to train unless named) or read the data with a checkpoint's vocabulary"
            )
        key = digest_of(
            {"train": split_fingerprint(train), "max_words": max_words, "entities": num_entities}
        )

        def build() -> dict:
            counts = token_counts(train)
            return Vocabulary.from_counts(
                counts, max_words=max_words, num_entities=num_entities
            ).to_dict()

        stored = cached_json(self._cache, "vocab", key, build)
        return Vocabulary.from_dict(stored)  # type: ignore[arg-type]

    def provenance(self) -> dict:
        """What this dataset is, for the checkpoints of readers trained on it: its folder,
        fingerprint, whether it was generated, and its validation split's exclusive-frequency
        baseline (``data/provenance.py``; computed once per dataset, then cached)."""
        if self._provenance is None:
            self._provenance = data_provenance(self.path, self._splits, self._cache)
        return self._provenance

    def examples(self, split: Split) -> datasets.Dataset:
        """The stored rows of ``split`` (``CLOZE_FEATURES``), e.g. for heatmaps and reports."""
        return dataset_split(self._splits, split, self.path)  # type: ignore[arg-type]

    def dataset(self, split: Split) -> EncodedSplit:
        """``split`` encoded with the vocabulary (entity permutation only for ``train``).

        The first call for a dataset and vocabulary encodes the split into the cache; later
        calls (in any process) open the cached files.
        """
        if split not in self._encoded:
            rows = self.examples(split)
            try:
                columns = encoded_split(
                    rows, self.vocab, self._cache, split, self.num_proc, self.path
                )
            except BadRow as bad:
                self._check(rows[bad.index], split)
                raise UserError(  # pragma: no cover - _check explains every BadRow
                    f"{self.path} [{split}] example {rows[bad.index]['id']}: cannot be encoded"
                ) from None
            self._encoded[split] = EncodedSplit(
                columns,
                num_entities=self.num_entities,
                entity_offset=self.vocab.entity_offset,
                entity_ids=self.entity_ids if split == "train" else "first_occurrence",
                seed=self.seed,
                max_context_tokens=self.max_context_tokens,
            )
        return self._encoded[split]

    def _check(self, row: dict, split: str) -> None:
        """Raise the ``UserError`` that explains why ``row`` cannot be encoded."""
        try:
            candidates = [entity_index(marker) for marker in row["candidates"]]
            answer = entity_index(row["answer"])
        except ValueError as err:
            raise UserError(f"{self.path} [{split}] example {row['id']}: {err}") from None
        if answer not in candidates:
            raise UserError(
                f"{self.path} [{split}] example {row['id']}: the answer {row['answer']} is not "
                "among its candidates; the dataset is corrupt, preprocess it again"
            )

    # --- Lightning hooks -----------------------------------------------------------------

    def setup(self, stage: str) -> None:
        """Encode the splits the stage needs (for ``fit``, also compute ``provenance``: the
        checkpoints record it)."""
        if stage == "fit":
            self._check_training_fits()
            self.provenance()
        needed = {
            "fit": ("train", "validation"),
            "validate": ("validation",),
            "test": ("test",),
            "predict": (self.predict_split,),
        }[stage]
        for split in needed:
            self.dataset(split)
        self._check_splits_not_empty(stage)

    def _check_splits_not_empty(self, stage: str) -> None:
        """An empty split: ``fit`` trains without validation (and says so), the other
        stages have nothing to do.

        Raises:
            UserError: the split ``stage`` reads (``train`` for ``fit``) has no examples.
        """
        stage = str(getattr(stage, "value", stage))  # Lightning passes a str enum
        split = {"fit": "train", "validate": "validation", "test": "test"}.get(
            stage, self.predict_split
        )
        if not len(self.dataset(split).lengths):
            raise UserError(
                f"the {split} split of {self.path} is empty (0 examples): nothing to "
                f"{'train on' if stage == 'fit' else stage}; give that split examples when "
                "preprocessing (SPLIT=FILE inputs, --url-lists or more stories) or use another "
                "dataset"
            )
        if stage == "fit" and not len(self.dataset("validation").lengths):
            warnings.warn(
                f"the validation split of {self.path} is empty: training without validation "
                "(no val_acc, no best checkpoint; last.ckpt holds the latest state)",
                EmptySplitWarning,
                stacklevel=2,
            )

    def _check_training_fits(self) -> None:
        """Training data is never relabelled: its markers must fit the entity block.

        Raises:
            UserError: the train split numbers an entity beyond the block (a vocabulary from
                a checkpoint or ``vocab.json`` made for other data).
        """
        largest = self.largest_entity_numbers().get("train", -1)
        if largest >= self.num_entities:
            raise UserError(
                f"{self.path} [train] numbers entities up to {entity_marker(largest)} but the "
                f"vocabulary has {self.num_entities} entity ids, and training data is never "
                f"relabelled: give a vocabulary of at least {largest + 1} entity ids, or build "
                "one from this data (no --data.vocab, no --ckpt_path)"
            )

    def train_dataloader(self) -> DataLoader:
        return self._bucketed(self.dataset("train"), self.batch_size, shuffle=True)

    def val_dataloader(self) -> DataLoader | list:
        validation = self.dataset("validation")
        if not len(validation.lengths):
            return []  # Lightning skips validation (setup has said so)
        return self._bucketed(validation, self.eval_batch_size, shuffle=False)

    def test_dataloader(self) -> DataLoader:
        return self._bucketed(self.dataset("test"), self.eval_batch_size, shuffle=False)

    def predict_dataloader(self) -> DataLoader:
        """The ``predict_split`` in stored order (one device: every rank reads it all)."""
        return DataLoader(
            self.dataset(self.predict_split),
            batch_size=self.eval_batch_size,
            shuffle=False,
            collate_fn=self._collate,
            num_workers=self.num_workers,
            pin_memory=self._pins_memory(),
        )

    def state_dict(self) -> dict[str, Any]:
        """What checkpoints store: the vocabulary and the dataset's preprocessing identity."""
        return {"vocab": self.vocab.to_dict(), "pipeline": self.pipeline}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Check that a checkpoint's vocabulary is the one in use.

        Raises:
            UserError: if they differ (the model's embeddings would be misread).
        """
        stored = Vocabulary.from_dict(state_dict["vocab"])
        if stored != self.vocab:
            raise UserError(
                "the checkpoint's vocabulary differs from this data module's; build the data "
                "module with ClozeDataModule.from_checkpoint(ckpt) or vocab=<the checkpoint>"
            )

    @classmethod
    def from_checkpoint(
        cls, ckpt_path: str | Path, *, checkpoint: dict | None = None, **overrides: Any
    ) -> ClozeDataModule:
        """The data module of a checkpoint, with its vocabulary.

        The checkpoint's data module arguments are the defaults; ``overrides`` replace them
        (e.g. ``path=`` another processed directory to evaluate on).

        Args:
            ckpt_path: the checkpoint file (recorded as the ``vocab`` argument).
            checkpoint: the file's content when the caller has loaded it already
                (``checkpoint_file.read_checkpoint``), so that it is not read again.
            **overrides: data module arguments that replace the stored ones.
        """
        if checkpoint is None:
            checkpoint = read_checkpoint(Path(ckpt_path))
        stored = checkpoint.get("datamodule_hyper_parameters") or {}
        # Keys starting with "_" are the Lightning CLI's bookkeeping, not arguments.
        arguments = {key: value for key, value in stored.items() if not key.startswith("_")}
        if "permute_entities" in arguments:
            raise UserError(
                f"{ckpt_path} was saved by a development version of attentive-reader (data "
                "option permute_entities, now entity_ids: permute or first_occurrence); train "
                "it again with this version"
            )
        arguments.update(overrides)
        if overrides.get("vocab") is None:
            arguments["vocab"] = str(ckpt_path)
        if "path" not in arguments:
            raise UserError(
                f"{ckpt_path} does not record its dataset directory; pass path=<directory>"
            )
        if overrides.get("vocab") is not None:
            return cls(**arguments)
        state = checkpoint_state(checkpoint, Path(ckpt_path))  # the checkpoint in hand
        module = cls(**arguments, vocabulary=Vocabulary.from_dict(state["vocab"]))
        module.check_preprocessing(state.get("pipeline"), ckpt_path)
        return module

    # --- internals -----------------------------------------------------------------------

    @property
    def _collate(self) -> functools.partial:
        return functools.partial(collate, num_entities=self.num_entities)

    def _bucketed(self, dataset: EncodedSplit, batch_size: int, shuffle: bool) -> DataLoader:
        num_replicas, rank = 1, 0
        if self._trainer is not None:
            num_replicas, rank = self.trainer.world_size, self.trainer.global_rank
            if num_replicas > 1 and uses_distributed_sampler(self.trainer):
                raise UserError(
                    "ClozeDataModule shards its batches across ranks itself: create the "
                    "Trainer with use_distributed_sampler=False (the CLI's default)"
                )
        sampler = BucketBatchSampler(
            dataset.lengths,
            batch_size=batch_size,
            shuffle=shuffle,
            seed=self.seed,
            num_replicas=num_replicas,
            rank=rank,
            pool_size=self.pool_size,
            epoch_fn=self._current_epoch if shuffle else None,
        )
        # Training: a loader that a mid-epoch checkpoint resumes at its next batch. Each loader
        # draws its workers' base seed from a generator of its own, so that starting an epoch
        # or a validation leaves the global random state (dropout's) as it was: a resumed run
        # then draws what the interrupted one would have.
        loader = ResumableLoader if shuffle else DataLoader
        return loader(
            dataset,
            batch_sampler=sampler,
            collate_fn=self._collate,
            num_workers=self.num_workers,
            pin_memory=self._pins_memory(),
            # Training workers live from epoch to epoch instead of starting again for each.
            persistent_workers=shuffle and self.num_workers > 0,
            generator=torch.Generator().manual_seed(self.seed),
        )

    def _pins_memory(self) -> bool:
        """Batches go to page-locked memory (a faster, asynchronous copy to the GPU) when
        ``pin_memory`` says so, or by default when the trainer runs on a CUDA device."""
        if self.pin_memory is not None:
            return self.pin_memory
        return self._trainer is not None and self.trainer.strategy.root_device.type == "cuda"

    def _current_epoch(self) -> int:
        return self.trainer.current_epoch if self._trainer is not None else 0

    @property
    def _trainer(self) -> pl.Trainer | None:
        return getattr(self, "trainer", None)


class VocabularyWriter(Callback):
    """Writes the data module's vocabulary as ``vocab.json`` into the checkpoint directory
    when ``fit`` starts (rank 0 only; not for ``fast_dev_run``)."""

    def on_fit_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        datamodule = getattr(trainer, "datamodule", None)
        if not isinstance(datamodule, ClozeDataModule) or trainer.fast_dev_run:
            return
        if not trainer.is_global_zero:
            return
        checkpoint = trainer.checkpoint_callback
        directory = getattr(checkpoint, "dirpath", None) or trainer.log_dir
        directory = Path(directory or trainer.default_root_dir)
        directory.mkdir(parents=True, exist_ok=True)
        datamodule.vocab.save(directory / VOCAB_FILE)
        if datamodule.pipeline is not None:
            (directory / PIPELINE_FILE).write_text(
                json.dumps(datamodule.pipeline, indent=1, ensure_ascii=False), encoding="utf-8"
            )
