"""The options of a preprocessing run (``corpus.preprocess.preprocess``) and its result."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Literal

from attentive_reader.corpus.cloze import ClozeOptions
from attentive_reader.corpus.entities import DEFAULT_LABELS
from attentive_reader.corpus.sources.splits import PUBLISHER_DOMAINS, Publisher

Engine = Literal["local", "dask"]
ENGINES: tuple[str, ...] = ("local", "dask")


@dataclass(frozen=True)
class PreprocessOptions:
    """Every option of a preprocessing run.

    Attributes:
        spacy_model: spaCy pipeline name or directory (``nlp.to_disk``); ``None`` picks an
            installed default (``pipeline.resolve_model``).
        labels: NER labels that count as entities.
        lowercase: lowercase context and query words (markers never are).
        max_context_tokens: skip stories whose article has more tokens; ``None``: no cap.
        url_lists: directory with ``all_train.txt`` / ``all_val.txt`` / ``all_test.txt``;
            stories listed in none of them are skipped (``not_in_url_lists``).
        split_fractions: train / validation / test fractions for stories that get their
            split from a hash of their id.
        publisher: keep only the stories (and ``.question`` examples) of this publisher,
            ``cnn`` or ``dailymail``, as the url lists tell (so ``url_lists`` is needed);
            the others are skipped and counted (``other_publisher``).
        hf_config: configuration of a Hugging Face hub dataset (e.g. ``3.0.0``).
        hf_splits: the hub dataset's splits to read (all when ``None``).
        num_proc: worker processes (1: everything in this process).
        batch_size: articles per ``nlp.pipe`` batch.
        shard_size: records per shard (the unit of parallel work and of resuming).
        num_shards: number of parts the shards are divided into (several machines).
        shard_index: the part this run processes, ``0 <= shard_index < num_shards``.
        strict: stop at the first unreadable input or failing story instead of counting it.
        overwrite: replace an existing output directory.
        engine: where the shards run: ``local`` (this machine, ``num_proc`` processes) or
            ``dask`` (the workers of a Dask distributed cluster, ``corpus.cluster``).
        scheduler: the Dask scheduler's address (``tcp://host:8786``) or scheduler file
            (``engine="dask"`` only).
    """

    spacy_model: str | None = None
    labels: tuple[str, ...] = DEFAULT_LABELS
    lowercase: bool = True
    max_context_tokens: int | None = 2000
    url_lists: str | None = None
    split_fractions: tuple[float, float, float] = (0.9, 0.05, 0.05)
    publisher: Publisher | None = None
    hf_config: str | None = None
    hf_splits: tuple[str, ...] | None = None
    num_proc: int = 1
    batch_size: int = 64
    shard_size: int = 256
    num_shards: int = 1
    shard_index: int = 0
    strict: bool = False
    overwrite: bool = False
    engine: Engine = "local"
    scheduler: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "labels", tuple(self.labels))
        object.__setattr__(self, "split_fractions", tuple(float(f) for f in self.split_fractions))
        if self.hf_splits is not None:
            object.__setattr__(self, "hf_splits", tuple(self.hf_splits))
        for name in ("num_proc", "batch_size", "shard_size", "num_shards"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        if not 0 <= self.shard_index < self.num_shards:
            raise ValueError(
                f"shard_index must be in 0..{self.num_shards - 1} (num_shards={self.num_shards}), "
                f"got {self.shard_index}"
            )
        fractions = self.split_fractions
        if len(fractions) != 3 or any(f < 0 for f in fractions) or abs(sum(fractions) - 1) > 1e-6:
            raise ValueError(
                "split_fractions must be three non-negative numbers (train, validation, test) "
                f"summing to 1, e.g. 0.9 0.05 0.05; got {list(fractions)}"
            )
        if self.publisher is not None and self.publisher not in PUBLISHER_DOMAINS:
            raise ValueError(
                f"publisher must be one of {', '.join(PUBLISHER_DOMAINS)}, got {self.publisher!r}"
            )
        if self.publisher is not None and not self.url_lists:
            raise ValueError(
                f"--publisher {self.publisher} needs --url-lists DIR: the url lists tell each "
                "story's publisher (attentive-reader download url_lists --dest DIR fetches them)"
            )
        self._check_engine()
        # ClozeOptions validates labels and max_context_tokens.
        self.cloze_options()

    def _check_engine(self) -> None:
        if self.engine not in ENGINES:
            raise ValueError(f"engine must be one of {', '.join(ENGINES)}, got {self.engine!r}")
        if self.engine == "dask" and not self.scheduler:
            raise ValueError(
                "engine dask needs the scheduler's address: --scheduler tcp://HOST:8786 (or "
                "a scheduler file)"
            )
        if self.engine == "dask" and self.num_proc > 1:
            raise ValueError(
                "num_proc is the local engine's process count; with engine dask the cluster's "
                "workers run the shards (leave --num-proc out)"
            )
        if self.engine == "local" and self.scheduler:
            raise ValueError("a scheduler is used only with engine dask (--engine dask)")

    def cloze_options(self) -> ClozeOptions:
        """The options of ``cloze.make_examples``."""
        return ClozeOptions(
            labels=self.labels,
            lowercase=self.lowercase,
            max_context_tokens=self.max_context_tokens,
        )

    def to_json(self) -> dict:
        """Every option, as stored in the manifest."""
        data = asdict(self)
        data["labels"] = list(self.labels)
        data["split_fractions"] = list(self.split_fractions)
        data["hf_splits"] = list(self.hf_splits) if self.hf_splits is not None else None
        return data


@dataclass
class PreprocessResult:
    """What a run did.

    Attributes:
        output: the output directory.
        manifest: the manifest written there.
        status: ``done`` (a dataset or part was written) or ``up_to_date`` (the directory
            already held the complete output of the same run; nothing was done).
        processed_shards: shards processed by this run.
        reused_shards: finished shards reused from an interrupted run.
        seconds: wall time.
        records_processed: records processed by this run (reused shards not counted).
    """

    output: Path
    manifest: dict
    status: Literal["done", "up_to_date"] = "done"
    processed_shards: int = 0
    reused_shards: int = 0
    seconds: float = 0.0
    records_processed: int = 0
