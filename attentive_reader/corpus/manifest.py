"""The manifest of a preprocessing run: counts, statistics, and their comparison table.

Every run writes ``manifest.json`` beside the dataset. It records what went in (inputs,
every option, the spaCy pipeline and the toolkit version), what happened to every record
read (``read == kept + sum(skipped.values())``), how many examples each split holds, and the
corpus statistics of Hermann et al. (2015), Table 1, so that a run can be compared with the
published CNN / Daily Mail figures (``comparison_table``).

Counting is done per shard (``ShardCounts``, summed with ``+``) so that shards processed on
different machines add up to the same manifest as a single run.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from rich.table import Table

from attentive_reader.common.errors import UserError
from attentive_reader.corpus.records import SPLITS, ClozeExample, Skip

MANIFEST_NAME = "manifest.json"
MANIFEST_FORMAT = "attentive-reader/cloze-dataset"
MANIFEST_VERSION = 1
# Skips kept with their details (per shard and in the manifest); the rest are only counted.
MAX_SKIP_DETAILS = 20

# Hermann et al. (2015), Table 1 and Chen et al. (2016): the full corpora (train split for the
# per-document figures), shown beside a run's in docs/preprocessing.md.
PUBLISHED: dict[str, dict[str, float | int]] = {
    "CNN": {
        "documents": 90_266,
        "train": 380_298,
        "validation": 3_924,
        "test": 3_198,
        "questions_per_document": 4.2,
        "entities_per_document": 26.4,
        "context_tokens": 761.8,
        "query_tokens": 12.5,
    },
    "Daily Mail": {
        "documents": 196_961,
        "train": 879_450,
        "validation": 64_835,
        "test": 53_182,
        "questions_per_document": 4.5,
        "entities_per_document": 26.5,
        "context_tokens": 813.1,
        "query_tokens": 14.3,
    },
}


@dataclass
class ShardCounts:
    """What happened to the records of one shard (or, summed, of a whole run).

    A *record* is one story (from ``.story`` files, archives or datasets), one ``.question``
    file, or one unreadable input reported by a source as a ``Skip``.

    Attributes:
        read: records read.
        kept: records that gave at least one example.
        skipped: reason -> number of records skipped for it.
        stories: records that were stories (the rest were ``.question`` files or unreadable).
        question_files: records that were ``.question`` files.
        examples: split -> number of examples.
        documents: kept stories (``.question`` documents are counted in ``question_docs``).
        documents_by_split: split -> kept stories whose examples went to it.
        context_tokens: sum over kept stories of their context length.
        entities: sum over kept stories of their number of distinct entities.
        query_tokens: sum over all examples of their query length.
        question_docs: story id -> (context tokens, entities, split) of the ``.question``
            examples, so that questions of one story spread over shards make one document.
        skip_details: the first ``MAX_SKIP_DETAILS`` skips, as dicts.
    """

    read: int = 0
    kept: int = 0
    skipped: dict[str, int] = field(default_factory=dict)
    stories: int = 0
    question_files: int = 0
    examples: dict[str, int] = field(default_factory=lambda: dict.fromkeys(SPLITS, 0))
    documents: int = 0
    documents_by_split: dict[str, int] = field(default_factory=lambda: dict.fromkeys(SPLITS, 0))
    context_tokens: int = 0
    entities: int = 0
    query_tokens: int = 0
    question_docs: dict[str, tuple[int, int, str]] = field(default_factory=dict)
    skip_details: list[dict[str, str]] = field(default_factory=list)

    def add_skip(self, skip: Skip) -> None:
        """Count one skipped record."""
        self.skipped[skip.reason] = self.skipped.get(skip.reason, 0) + 1
        if len(self.skip_details) < MAX_SKIP_DETAILS:
            self.skip_details.append(
                {"source": skip.source, "reason": skip.reason, "detail": skip.detail}
            )

    def add_story(self, split: str, examples: list[ClozeExample]) -> None:
        """Count one kept story and its examples (they share one context)."""
        self.kept += 1
        self.documents += 1
        self.documents_by_split[split] += 1
        self.context_tokens += len(examples[0].context)
        self.entities += len(examples[0].candidates)
        self.examples[split] += len(examples)
        self.query_tokens += sum(len(e.query) for e in examples)

    def add_question(self, split: str, example: ClozeExample) -> None:
        """Count one example read from a ``.question`` file."""
        self.kept += 1
        self.examples[split] += 1
        self.query_tokens += len(example.query)
        self.question_docs.setdefault(
            example.story_id, (len(example.context), len(example.candidates), split)
        )

    def __add__(self, other: ShardCounts) -> ShardCounts:
        skipped = dict(self.skipped)
        for reason, n in other.skipped.items():
            skipped[reason] = skipped.get(reason, 0) + n
        question_docs = dict(self.question_docs)
        for story_id, value in other.question_docs.items():
            question_docs.setdefault(story_id, value)
        room = MAX_SKIP_DETAILS - len(self.skip_details)
        return ShardCounts(
            read=self.read + other.read,
            kept=self.kept + other.kept,
            skipped=skipped,
            stories=self.stories + other.stories,
            question_files=self.question_files + other.question_files,
            examples={s: self.examples[s] + other.examples[s] for s in SPLITS},
            documents=self.documents + other.documents,
            documents_by_split={
                s: self.documents_by_split[s] + other.documents_by_split[s] for s in SPLITS
            },
            context_tokens=self.context_tokens + other.context_tokens,
            entities=self.entities + other.entities,
            query_tokens=self.query_tokens + other.query_tokens,
            question_docs=question_docs,
            skip_details=self.skip_details + other.skip_details[: max(room, 0)],
        )

    def to_json(self) -> dict:
        """A JSON-serializable dict (inverse: ``from_json``)."""
        return {
            "read": self.read,
            "kept": self.kept,
            "skipped": dict(sorted(self.skipped.items())),
            "stories": self.stories,
            "question_files": self.question_files,
            "examples": dict(self.examples),
            "documents": self.documents,
            "documents_by_split": dict(self.documents_by_split),
            "context_tokens": self.context_tokens,
            "entities": self.entities,
            "query_tokens": self.query_tokens,
            "question_docs": {k: list(v) for k, v in self.question_docs.items()},
            "skip_details": list(self.skip_details),
        }

    @classmethod
    def from_json(cls, data: dict) -> ShardCounts:
        """Inverse of ``to_json``.

        Raises:
            KeyError: counts written by an older version of the toolkit (no
                ``documents_by_split``): the shard is processed again.
        """
        return cls(
            read=data["read"],
            kept=data["kept"],
            skipped=dict(data["skipped"]),
            stories=data["stories"],
            question_files=data["question_files"],
            examples={s: data["examples"].get(s, 0) for s in SPLITS},
            documents=data["documents"],
            documents_by_split={s: data["documents_by_split"].get(s, 0) for s in SPLITS},
            context_tokens=data["context_tokens"],
            entities=data["entities"],
            query_tokens=data["query_tokens"],
            question_docs={k: (v[0], v[1], v[2]) for k, v in data["question_docs"].items()},
            skip_details=list(data["skip_details"]),
        )


def total(counts: Iterable[ShardCounts]) -> ShardCounts:
    """The sum of the counts of several shards, in order (skip details keep that order)."""
    result = ShardCounts()
    for c in counts:
        result = result + c
    return result


def statistics(counts: ShardCounts) -> dict[str, float | int]:
    """The corpus statistics of Table 1 of Hermann et al. (2015).

    Documents are the kept stories plus the distinct stories of ``.question`` examples;
    context tokens and entities are averaged over documents, query tokens over examples (all
    splits). The published documents and queries per document are those of the train split:
    ``documents_by_split`` and ``train_questions_per_document`` are the figures to compare.
    """
    documents = counts.documents + len(counts.question_docs)
    context = counts.context_tokens + sum(c for c, _, _ in counts.question_docs.values())
    entities = counts.entities + sum(e for _, e, _ in counts.question_docs.values())
    examples = sum(counts.examples.values())
    by_split = dict(counts.documents_by_split)
    for _, _, split in counts.question_docs.values():
        by_split[split] += 1
    train = by_split["train"]
    return {
        "documents": documents,
        "documents_by_split": by_split,
        "examples": examples,
        "train_questions_per_document": (
            round(counts.examples["train"] / train, 3) if train else 0.0
        ),
        "questions_per_document": round(examples / documents, 3) if documents else 0.0,
        "entities_per_document": round(entities / documents, 3) if documents else 0.0,
        "context_tokens": round(context / documents, 3) if documents else 0.0,
        "query_tokens": round(counts.query_tokens / examples, 3) if examples else 0.0,
    }


def counts_section(counts: ShardCounts) -> dict:
    """The ``counts`` section of the manifest: every record read is kept or skipped."""
    return {
        "read": counts.read,
        "kept": counts.kept,
        "skipped": dict(sorted(counts.skipped.items())),
        "by_kind": {
            "stories": counts.stories,
            "question_files": counts.question_files,
            "unreadable": counts.read - counts.stories - counts.question_files,
        },
    }


def build_manifest(
    *,
    inputs: list[dict],
    options: dict,
    pipeline: dict | None,
    toolkit_version: str,
    grouping: dict | None = None,
    run_key: str,
    counts: ShardCounts,
    num_shards: int,
    partial: dict | None = None,
    synthetic: dict | None = None,
) -> dict:
    """The manifest of a run (``partial`` describes the shards of a ``--num-shards`` part).

    ``grouping`` records the entity grouping rules' version and the name tables
    (``grouping.grouping_info``); ``None`` in manifests of datasets made before it existed.
    ``synthetic`` says what generated the stories when they are made up (the built-in
    corpus's mark, ``corpus.synthetic.synthetic_origin``, or a generator of examples);
    ``None`` for real text. Manifests made before it existed have no ``synthetic`` key.
    """
    manifest = {
        "format": MANIFEST_FORMAT,
        "format_version": MANIFEST_VERSION,
        "complete": partial is None,
        "toolkit": {"name": "attentive-reader", "version": toolkit_version},
        "grouping": grouping,
        "inputs": inputs,
        "synthetic": synthetic,
        "options": options,
        "spacy": pipeline,
        "run_key": run_key,
        "shards": num_shards,
        "counts": counts_section(counts),
        "examples": dict(counts.examples),
        "statistics": statistics(counts),
        "skip_details": counts.skip_details,
    }
    if partial is not None:
        manifest["partial"] = partial
    return manifest


def read_manifest(directory: str | os.PathLike) -> dict | None:
    """The manifest in ``directory``, or ``None`` when it has none (or one of another format:
    a folder that is no cloze dataset of this toolkit).

    Raises:
        UserError: the manifest cannot be read or is not valid JSON (the file is named).
    """
    path = Path(directory) / MANIFEST_NAME
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise UserError(
            f"{path}: not a readable JSON manifest ({err}); preprocess the dataset again"
        ) from None
    return data if isinstance(data, dict) and data.get("format") == MANIFEST_FORMAT else None


def _fmt(value: float | int | None) -> str:
    if value is None:
        return "-"
    if isinstance(value, int):
        return f"{value:,}"
    return f"{value:,.1f}"


def comparison_table(manifest: dict) -> Table:
    """The run's statistics beside the published CNN / Daily Mail figures (a rich Table).

    The published documents and queries per document are the train split's, and so are this
    run's in those rows; the averages are over all splits of this run (manifests written
    before ``documents_by_split`` existed show "-" in the train rows).
    """
    stats = manifest["statistics"]
    examples = manifest["examples"]
    table = Table(title="Cloze corpus statistics (published: Hermann et al. 2015, Table 1)")
    table.add_column("")
    table.add_column("this run", justify="right")
    for name in PUBLISHED:
        table.add_column(name, justify="right")
    rows: list[tuple[str, float | int | None, str]] = [
        ("documents, train", stats.get("documents_by_split", {}).get("train"), "documents"),
        ("queries train", examples["train"], "train"),
        ("queries validation", examples["validation"], "validation"),
        ("queries test", examples["test"], "test"),
        (
            "queries per document, train",
            stats.get("train_questions_per_document"),
            "questions_per_document",
        ),
        ("entities per document (avg)", stats["entities_per_document"], "entities_per_document"),
        ("context tokens (avg)", stats["context_tokens"], "context_tokens"),
        ("query tokens (avg)", stats["query_tokens"], "query_tokens"),
    ]
    for label, value, key in rows:
        table.add_row(label, _fmt(value), *(_fmt(PUBLISHED[n][key]) for n in PUBLISHED))
    return table


def counts_table(manifest: dict) -> Table:
    """Records read, kept and skipped by reason (a rich Table)."""
    counts = manifest["counts"]
    table = Table(title="Records")
    table.add_column("")
    table.add_column("count", justify="right")
    table.add_row("read", _fmt(counts["read"]))
    table.add_row("kept", _fmt(counts["kept"]))
    for reason, n in counts["skipped"].items():
        table.add_row(f"skipped: {reason}", _fmt(n))
    return table


def preprocessing_identity(manifest: dict | None) -> dict | None:
    """How a dataset's text was anonymized, for a reader trained on it to read new text alike.

    Recorded in every checkpoint trained on the dataset (``ClozeDataModule.state_dict``) and
    read back by ``attentive_reader.api.Reader`` so that a document is anonymized exactly as
    the training stories were.

    Args:
        manifest: a dataset's ``manifest.json`` (``read_manifest``), or ``None``.

    Returns:
        ``None`` without a manifest, else ``{"spacy": {name, version, spacy, components} or
        None (DeepMind .question data: no pipeline ran), "spacy_model": the --spacy-model
        given to preprocess (a name, a directory, or None for the installed default),
        "labels", "lowercase", "max_context_tokens", "grouping_rules": the grouping rules'
        version, "toolkit": the toolkit version that preprocessed}``.
    """
    if manifest is None:
        return None
    options = manifest.get("options") or {}
    return {
        "spacy": manifest.get("spacy"),
        "spacy_model": options.get("spacy_model"),
        "labels": list(options.get("labels") or []),
        "lowercase": bool(options.get("lowercase", True)),
        "max_context_tokens": options.get("max_context_tokens"),
        "grouping_rules": (manifest.get("grouping") or {}).get("rules_version"),
        "toolkit": (manifest.get("toolkit") or {}).get("version"),
    }


# What changes how text is anonymized, as named in messages.
_IDENTITY_PARTS = {
    "spacy": "spaCy pipeline",
    "labels": "labels",
    "lowercase": "lowercase",
    "max_context_tokens": "max_context_tokens",
    "grouping_rules": "grouping rules",
}


def identity_difference(ours: dict | None, theirs: dict | None) -> tuple[str, str] | None:
    """How two preprocessing identities (``preprocessing_identity``) differ in what marks the
    entities of a text: the parts that differ, written for each side (``("spaCy pipeline
    en_core_web_lg 3.8.0", "spaCy pipeline en_core_web_sm 3.8.0")``), or ``None`` when they
    agree or either is unknown. The toolkit version and the ``--spacy-model`` path are not
    compared: the pipeline's name and version and the grouping rules' version say it."""
    if ours is None or theirs is None:
        return None
    differ = [
        key for key in _IDENTITY_PARTS if _shown(key, ours.get(key)) != _shown(key, theirs.get(key))
    ]
    if not differ:
        return None
    return tuple(  # type: ignore[return-value]
        ", ".join(f"{_IDENTITY_PARTS[key]} {_shown(key, side.get(key))}" for key in differ)
        for side in (ours, theirs)
    )


def _shown(key: str, value: object) -> str:
    if key == "spacy":
        if not isinstance(value, dict):
            return "none (DeepMind .question data)"
        return f"{value.get('name')} {value.get('version')}"
    if key == "labels" and isinstance(value, list):
        return ",".join(value)
    return str(value)
