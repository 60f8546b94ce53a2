"""What kind of input a path or name is (``detect_kind``), the ``SPLIT=PATH`` prefix
(``split_input``) and the file suffixes of each kind.
"""

from __future__ import annotations

import collections
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Literal

from attentive_reader.common.errors import UserError
from attentive_reader.corpus.records import SPLITS
from attentive_reader.corpus.sources.archives import first_member_suffix

InputKind = Literal["stories", "archive", "hf_files", "questions", "question_archive", "hf_hub"]
# The kinds read as examples (DeepMind's anonymized data: no NER), not as stories.
QUESTION_KINDS: tuple[InputKind, ...] = ("questions", "question_archive")

STORY_SUFFIX = ".story"
QUESTION_SUFFIX = ".question"
ARCHIVE_SUFFIXES = (".tgz", ".tar.gz")
# file suffix -> the ``datasets`` packaged builder that reads it
HF_FILE_BUILDERS = {".json": "json", ".jsonl": "json", ".csv": "csv", ".parquet": "parquet"}
# split names some hub datasets use for the three standard splits
SPLIT_ALIASES = {"val": "validation", "valid": "validation", "dev": "validation"}


def split_input(input: str) -> tuple[str | None, str]:
    """Separate an optional ``SPLIT=`` prefix from an input: ``"validation=v.csv"``.

    Returns ``(split, path)``; ``split`` is ``None`` without a prefix (or when the whole
    string is an existing path).
    """
    if "=" in input and not os.path.exists(input):
        prefix, rest = input.split("=", 1)
        split = SPLIT_ALIASES.get(prefix, prefix)
        if split in SPLITS:
            return split, rest
    return None, input


def _suffix_kind(name: str) -> InputKind | None:
    lower = name.lower()
    if lower.endswith(ARCHIVE_SUFFIXES):
        return "archive"
    if lower.endswith(STORY_SUFFIX):
        return "stories"
    if lower.endswith(QUESTION_SUFFIX):
        return "questions"
    if os.path.splitext(lower)[1] in HF_FILE_BUILDERS:
        return "hf_files"
    return None


def walk_files(root: Path, suffix: str) -> Iterator[Path]:
    """Files under ``root`` ending in ``suffix``, recursively, in sorted order, streamed."""
    for folder, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for name in sorted(filenames):
            if name.lower().endswith(suffix):
                yield Path(folder) / name


_HUB_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*(/[A-Za-z0-9][A-Za-z0-9_.-]*)?")


def _directory_kind(path: str) -> InputKind:
    """``questions`` or ``stories``: the kind of file a folder holds (searched recursively).

    Raises:
        UserError: both kinds, or neither (the files it holds instead are counted, and a
            folder of plain text is told how to become stories).
    """
    has_story = has_question = False
    others: collections.Counter[str] = collections.Counter()
    for _folder, _dirnames, filenames in os.walk(path):
        for name in filenames:
            lower = name.lower()
            has_story = has_story or lower.endswith(STORY_SUFFIX)
            has_question = has_question or lower.endswith(QUESTION_SUFFIX)
            others[os.path.splitext(lower)[1] or "(no suffix)"] += 1
        if has_story and has_question:
            raise UserError(
                f"{path} holds both .story and .question files; pass their folders "
                "as separate inputs"
            )
    if has_question:
        return "questions"
    if has_story:
        return "stories"
    message = f"{path}: no .story or .question files in this directory (searched recursively)"
    if not others:
        raise UserError(f"{message}; it is empty")
    held = ", ".join(f"{count} {suffix}" for suffix, count in others.most_common(3))
    more = f" and {len(others) - 3} other kinds" if len(others) > 3 else ""
    if ".txt" in others:
        raise UserError(
            f"{message}; it holds {held} files{more}: a story is its article, then its summary "
            "points each after an @highlight line (they become the questions): add them and "
            "rename the files .story, or give one .jsonl/.csv file with article and "
            "highlights columns (see the Inputs page of the docs)"
        )
    raise UserError(f"{message}; it holds {held} files{more}; see the Inputs page of the docs")


def _looks_like_path(input: str) -> bool:
    """Whether a name that does not exist locally was meant as a path, not a hub dataset:
    it cannot be a hub name, has a data file's suffix, or its first part is a local folder
    (``data/nope`` beside a ``data/`` folder: a mistyped path, refused before any network)."""
    if not _HUB_NAME.fullmatch(input) or _suffix_kind(input) is not None:
        return True
    return "/" in input and os.path.isdir(input.split("/", 1)[0])


def detect_kind(input: str) -> InputKind:
    """What kind of input ``input`` is (see ``corpus.sources``).

    A directory is ``questions`` when it holds ``.question`` files and ``stories`` when it
    holds ``.story`` files (searched recursively). A local file is classified by its suffix;
    a ``.tgz`` / ``.tar.gz`` archive is a ``question_archive`` when its first member of
    either kind is a ``.question`` file (DeepMind's ``cnn.tgz``), else an ``archive`` of
    stories (only the first members are read, as a stream). A name that does not exist
    locally and does not look like a path is a hub dataset.

    Raises:
        UserError: for a directory with both or neither kind of file, a file of an unknown
            type, a ``SPLIT=`` prefix on something other than a data file, or a path that
            does not exist.
    """
    split, path = split_input(input)
    if split is not None:
        if _suffix_kind(path) != "hf_files" or not os.path.isfile(path):
            raise UserError(
                f"{input}: SPLIT=PATH names a local .json/.jsonl/.csv/.parquet file, "
                f"and {path} is not one"
            )
        return "hf_files"
    if os.path.isdir(path):
        return _directory_kind(path)
    if os.path.isfile(path):
        kind = _suffix_kind(path)
        if kind == "archive":
            suffixes = (STORY_SUFFIX, QUESTION_SUFFIX)
            first = first_member_suffix(Path(path), suffixes)
            return "question_archive" if first == QUESTION_SUFFIX else "archive"
        if kind is None:
            raise UserError(
                f"{path}: unknown input type; expected a folder of .story or .question files, "
                "a .tgz/.tar.gz archive, a .json/.jsonl/.csv/.parquet file, or a hub dataset name"
            )
        return kind
    if _looks_like_path(path):
        raise UserError(f"{path}: no such file or directory")
    return "hf_hub"
