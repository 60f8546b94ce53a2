"""Records that flow through the pipeline, and the stored dataset schema.

Everything here is a plain frozen dataclass; conversion to and from stored rows lives beside
the record so both halves of the toolkit (``corpus/`` writes, ``data/`` reads) agree on one
schema.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import datasets

from attentive_reader.common.errors import UserError

Split = Literal["train", "validation", "test"]
SPLITS: tuple[Split, ...] = ("train", "validation", "test")

_SAFE_ID = re.compile(r"[A-Za-z0-9_.-]+")
_UNSAFE_CHARS = re.compile(r"[^A-Za-z0-9_.-]")


def is_safe_id(value: str) -> bool:
    """Whether ``value`` can be used as a file name as is (``[A-Za-z0-9_.-]+``)."""
    return bool(_SAFE_ID.fullmatch(value)) and value not in (".", "..")


def safe_id(value: str) -> str:
    """``value`` with every character outside ``[A-Za-z0-9_.-]`` replaced by ``_``.

    Story ids become parts of example ids and ``.question`` file names, so they must be
    filename-safe. Safe ids are returned unchanged.
    """
    value = _UNSAFE_CHARS.sub("_", value.strip())
    return value if is_safe_id(value) else f"_{value}"


@dataclass(frozen=True)
class Story:
    """One raw news story.

    Attributes:
        id: stable identifier (SHA-1 hex of the url for CNN/DM data; else from the source).
        article: the article text, paragraphs separated by blank lines.
        highlights: the highlight sentences, in order.
        url: the story's url when known.
        source: where it came from, for messages: a file path, ``archive.tgz:member`` or
            ``dataset[split]:row``.
        split: the split the source assigns (HF splits, url lists), or ``None`` to let the
            pipeline assign one.
    """

    id: str
    article: str
    highlights: tuple[str, ...]
    url: str | None = None
    source: str = ""
    split: str | None = None


@dataclass(frozen=True)
class Skip:
    """A story or file that was not used, counted in the manifest under ``reason``.

    Attributes:
        source: file path / archive member / dataset row, as in ``Story.source``.
        reason: a short machine-readable key (``no_highlights``, ``empty``, ``not_utf8``,
            ``too_long``, ``no_entities``, ``bad_question``, ...).
        detail: one human-readable sentence (what was wrong and, where useful, the line).
    """

    source: str
    reason: str
    detail: str = ""


@dataclass(frozen=True)
class ClozeExample:
    """One anonymized cloze question.

    Attributes:
        id: unique example id (``<story_id>_<highlight index>_<occurrence index>`` for
            examples made here; the file stem for DeepMind ``.question`` files); always
            filename-safe (``[A-Za-z0-9_.-]``).
        story_id: the story it was made from.
        context: the anonymized article tokens (entities are single ``@entityN`` tokens).
        query: the anonymized highlight tokens with exactly one ``@placeholder``.
        answer: the marker the placeholder stands for.
        candidates: the distinct markers in the context, by first occurrence.
        entities: marker -> surface name (the longest mention) for every marker in the
            context or query.
        url: the story url when known.
    """

    id: str
    story_id: str
    context: tuple[str, ...]
    query: tuple[str, ...]
    answer: str
    candidates: tuple[str, ...]
    entities: dict[str, str] = field(default_factory=dict, hash=False)
    url: str | None = None

    def to_row(self) -> dict:
        """The stored form (matches ``CLOZE_FEATURES``)."""
        return {
            "id": self.id,
            "story_id": self.story_id,
            "url": self.url or "",
            "context": list(self.context),
            "query": list(self.query),
            "answer": self.answer,
            "candidates": list(self.candidates),
            "entity_markers": list(self.entities.keys()),
            "entity_names": list(self.entities.values()),
        }

    @classmethod
    def from_row(cls, row: dict) -> ClozeExample:
        """Inverse of ``to_row``."""
        return cls(
            id=row["id"],
            story_id=row["story_id"],
            url=row["url"] or None,
            context=tuple(row["context"]),
            query=tuple(row["query"]),
            answer=row["answer"],
            candidates=tuple(row["candidates"]),
            entities=dict(zip(row["entity_markers"], row["entity_names"])),
        )


# The stored schema of every split. The entity map is two parallel lists (marker, name) so
# Arrow stores it as plain string lists.
CLOZE_FEATURES = datasets.Features(
    {
        "id": datasets.Value("string"),
        "story_id": datasets.Value("string"),
        "url": datasets.Value("string"),
        "context": datasets.List(datasets.Value("string")),
        "query": datasets.List(datasets.Value("string")),
        "answer": datasets.Value("string"),
        "candidates": datasets.List(datasets.Value("string")),
        "entity_markers": datasets.List(datasets.Value("string")),
        "entity_names": datasets.List(datasets.Value("string")),
    }
)


# --- the one loader of a processed dataset ---------------------------------------------------

_MAKE_ONE = "make one with 'attentive-reader preprocess'"


def check_dataset_dir(directory: str | os.PathLike) -> Path:
    """``directory`` as a ``Path``, once it looks like a processed dataset (nothing is read:
    a command checks its arguments with it before it loads a reader).

    Raises:
        UserError: the directory is missing or holds no ``dataset_dict.json``.
    """
    folder = Path(directory)
    if not folder.is_dir():
        raise UserError(
            f"{folder} is not a processed dataset directory (it does not exist); fix the "
            f"path or {_MAKE_ONE}"
        )
    if not (folder / "dataset_dict.json").is_file():
        raise UserError(
            f"{folder} is not a processed dataset directory (no dataset_dict.json there); "
            f"{_MAKE_ONE}"
        )
    return folder


def load_dataset(directory: str | os.PathLike) -> datasets.DatasetDict:
    """A processed dataset directory (``attentive-reader preprocess`` output), checked.

    The splits are memory-mapped Arrow tables (``datasets.load_from_disk``); nothing is read
    into memory here.

    Raises:
        UserError: the directory is missing, is not a processed dataset (no
            ``dataset_dict.json``), cannot be loaded (damaged), or holds a split without the
            columns of ``CLOZE_FEATURES`` (written by another tool or an old version). The
            message names the directory and says what to do.
    """
    folder = check_dataset_dir(directory)
    try:
        loaded = datasets.load_from_disk(str(folder))
    except Exception as err:  # a damaged save_to_disk folder fails in many ways
        raise UserError(f"{folder}: cannot load the dataset ({err}); {_MAKE_ONE} again") from None
    if not isinstance(loaded, datasets.DatasetDict):
        raise UserError(f"{folder} holds one table, not a dataset with splits; {_MAKE_ONE}")
    for split, rows in loaded.items():
        missing = [name for name in CLOZE_FEATURES if name not in rows.column_names]
        if missing:
            raise UserError(
                f"{folder}: split {split} lacks the columns {', '.join(missing)} (not a "
                f"processed cloze dataset, or one from an older version); {_MAKE_ONE} again"
            )
    return loaded


def load_split(directory: str | os.PathLike, split: Split) -> datasets.Dataset:
    """One split of a processed dataset directory (see ``load_dataset``).

    Raises:
        UserError: as ``load_dataset``, or the split is missing (the message lists those
            there are).
    """
    return dataset_split(load_dataset(directory), split, directory)


def dataset_split(
    loaded: datasets.DatasetDict, split: str, directory: str | os.PathLike
) -> datasets.Dataset:
    """``loaded[split]``, or a ``UserError`` naming the splits ``directory`` has."""
    if split not in loaded:
        have = ", ".join(loaded) or "none"
        raise UserError(
            f"{directory} has no {split!r} split (it has {have}); choose one of those or "
            "preprocess a dataset with that split"
        )
    return loaded[split]
