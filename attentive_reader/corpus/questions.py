"""DeepMind ``.question`` files: read them as examples, write any processed dataset as them.

A ``.question`` file (Hermann et al. 2015 release) holds one anonymized cloze example::

    http://www.cnn.com/2015/...            line 1: the story url
                                           line 2: blank
    @entity0 ( @entity1 ) -- the ...       line 3: the context tokens, space-separated
                                           line 4: blank
    @placeholder says ...                  line 5: the query tokens, one @placeholder
                                           line 6: blank
    @entity0                               line 7: the answer marker
                                           line 8: blank
    @entity0:CNN                           line 9 on: the entity map, @entityN:Name
    @entity1:Washington

The file stem is the example id; a DeepMind story id is the SHA-1 of its url. Examples whose
story has no url are written with the pseudo url ``urn:attentive-reader:story:<story_id>``
(or ``urn:attentive-reader:story:<story_id>:<url>`` when the story id is not the SHA-1 of the
url), so that reading an export back gives the very same examples.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path, PurePosixPath

import datasets

from attentive_reader.common.errors import UserError
from attentive_reader.common.faults import writing
from attentive_reader.common.fileio import place
from attentive_reader.common.markers import PLACEHOLDER, is_entity_marker
from attentive_reader.corpus.records import (
    SPLITS,
    ClozeExample,
    Skip,
    is_safe_id,
    load_dataset,
    safe_id,
)
from attentive_reader.corpus.sources import (
    ARCHIVE_SUFFIXES,
    QUESTION_SUFFIX,
    decode_text,
    iter_members,
    url_sha1,
    walk_files,
)

PSEUDO_URL_PREFIX = "urn:attentive-reader:story:"
# split -> the folder name of the DeepMind release, and back
SPLIT_FOLDERS = {"train": "training", "validation": "validation", "test": "test"}
FOLDER_SPLITS = {"training": "train", "train": "train", "validation": "validation", "test": "test"}

# 0-based line index -> the one-line field there (odd lines are blank separators)
_FIELDS = {0: "url", 2: "context", 4: "query", 6: "answer"}


def _bad(source: str, detail: str) -> Skip:
    return Skip(source, "bad_question", detail)


def _story_of_url(url_line: str) -> tuple[str, str | None]:
    """(story id, url) encoded by a ``.question`` url line."""
    if url_line.startswith(PSEUDO_URL_PREFIX):
        story_id, _, url = url_line[len(PSEUDO_URL_PREFIX) :].partition(":")
        if story_id:
            return story_id, url or None
    return url_sha1(url_line), url_line


def parse_question(text: str, *, example_id: str, source: str) -> ClozeExample | Skip:
    """Parse the text of a ``.question`` file (the layout is in the module docstring).

    Args:
        text: the file's text.
        example_id: the example id (the file stem).
        source: the file, for messages.

    Returns:
        The example (candidates: the distinct markers of the context, by first occurrence),
        or ``Skip`` with reason ``bad_question`` saying which line is missing or wrong: a
        missing field, a non-blank separator line, a query without exactly one
        ``@placeholder``, an answer that is not a marker or not in the entity map, a bad
        entity map line.
    """
    lines = [line.rstrip("\r") for line in text.removeprefix("\ufeff").split("\n")]
    fields: dict[str, str] = {}
    for index in range(8):  # in line order, so the first thing wrong is reported
        line = lines[index].strip() if index < len(lines) else ""
        if index % 2:
            if line:
                return _bad(
                    source,
                    f"line {index + 1} should be blank (the layout is url, context, query, "
                    "answer, entity map, separated by blank lines)",
                )
        elif not line:
            return _bad(source, f"missing the {_FIELDS[index]} (line {index + 1})")
        else:
            fields[_FIELDS[index]] = line
    query = tuple(fields["query"].split())
    placeholders = query.count(PLACEHOLDER)
    if placeholders != 1:
        return _bad(
            source, f"the query (line 5) has {placeholders} {PLACEHOLDER}, expected exactly one"
        )
    answer = fields["answer"]
    if not is_entity_marker(answer):
        return _bad(source, f"the answer (line 7) {answer!r} is not an @entityN marker")
    entities: dict[str, str] = {}
    for index in range(8, len(lines)):
        line = lines[index].strip()
        if not line:
            continue
        marker, colon, name = line.partition(":")
        if not colon or not is_entity_marker(marker):
            return _bad(source, f"line {index + 1} is not an entity map line (@entityN:Name)")
        if marker in entities:
            return _bad(source, f"line {index + 1}: {marker} is already in the entity map")
        entities[marker] = name
    if answer not in entities:
        return _bad(source, f"the answer {answer} (line 7) is not in the entity map")
    context = tuple(fields["context"].split())
    story_id, url = _story_of_url(fields["url"])
    return ClozeExample(
        id=example_id,
        story_id=story_id,
        context=context,
        query=query,
        answer=answer,
        candidates=tuple(dict.fromkeys(t for t in context if is_entity_marker(t))),
        entities=entities,
        url=url,
    )


def _split_of_folders(folders: tuple[str, ...]) -> str | None:
    """The split named by the nearest of ``folders`` (outermost first), else ``None``."""
    for folder in reversed(folders):
        if folder.lower() in FOLDER_SPLITS:
            return FOLDER_SPLITS[folder.lower()]
    return None


def _split_of_path(file: Path, root: Path) -> str | None:
    """The split named by the nearest folder, between ``root`` (included) and ``file``."""
    folders = file.parent.relative_to(root).parts if file.parent != root else ()
    return _split_of_folders((root.name, *folders))


def _read_question(data: bytes, name: str, source: str) -> ClozeExample | Skip:
    text = decode_text(data, source)
    if isinstance(text, Skip):
        return text
    stem = name[: -len(QUESTION_SUFFIX)]
    return parse_question(text, example_id=safe_id(stem), source=source)


def _question_files(root: Path) -> Iterator[tuple[str | None, ClozeExample | Skip]]:
    """``(split, example or skip)`` of the files under ``root`` (or of the file ``root``)."""
    top = root.parent if root.is_file() else root
    for file in [root] if root.is_file() else walk_files(root, QUESTION_SUFFIX):
        try:
            data = file.read_bytes()
        except OSError as err:
            yield (
                None,
                Skip(str(file), "unreadable", f"cannot read the file: {err.strerror or err}"),
            )
            continue
        yield _split_of_path(file, top), _read_question(data, file.name, str(file))


def _question_members(archive: Path) -> Iterator[tuple[str | None, ClozeExample | Skip]]:
    """``(split, example or skip)`` of the ``.question`` members of a gzipped tar archive,
    streamed; the split is named by the member's folders (``cnn/questions/training/``)."""
    for item in iter_members(archive, QUESTION_SUFFIX, "questions"):
        if isinstance(item, Skip):
            yield None, item
            continue
        name, data = item
        member = PurePosixPath(name)
        split = _split_of_folders(member.parent.parts)
        yield split, _read_question(data, member.name, f"{archive}:{name}")


def iter_questions(
    input: str | os.PathLike, *, strict: bool = False
) -> Iterator[tuple[str | None, ClozeExample] | Skip]:
    """Stream the ``.question`` files under ``input`` (recursively, sorted), of one file, or
    of a ``.tgz`` / ``.tar.gz`` archive (DeepMind's ``cnn.tgz``, read as a stream in member
    order, never unpacked).

    The split of a file is named by its nearest folder called ``training``/``train``,
    ``validation`` or ``test`` (the input folder itself included; in an archive, the
    member's folders), else ``None``.

    Args:
        input: a folder of ``.question`` files, one file, or an archive of them.
        strict: raise ``UserError`` at the first bad file instead of yielding a ``Skip``.

    Yields:
        ``(split, example)`` pairs, and ``Skip`` records (reasons ``bad_question``, ``empty``,
        ``binary``, ``not_utf8``, ``unreadable``, ``truncated_archive``) naming the file or
        ``archive:member``.

    Raises:
        UserError: if ``input`` does not exist or is not a readable archive, or (strict) for
            a bad file.
    """
    path = Path(input)
    if not path.exists():
        raise UserError(f"{path}: no such file or directory")
    archive = path.is_file() and path.name.lower().endswith(ARCHIVE_SUFFIXES)
    for split, item in _question_members(path) if archive else _question_files(path):
        if isinstance(item, Skip):
            if strict:
                raise UserError(
                    f"{item.source}: {item.detail} [{item.reason}] (--strict stops at the "
                    "first bad file; leave it out to count and skip it)"
                )
            yield item
        else:
            yield split, item


def format_question(example: ClozeExample) -> str:
    """The ``.question`` text of an example; ``parse_question`` of it gives ``example`` back.

    Entity names are written on one line (line breaks in a name become spaces).

    Raises:
        ValueError: if the example cannot be written faithfully: an id that is not
            filename-safe, a token that is empty or holds whitespace, candidates that are not
            the distinct markers of the context by first occurrence, an answer missing from
            the entity map.
    """
    if not is_safe_id(example.id):
        raise ValueError(f"example id {example.id!r} is not filename-safe ([A-Za-z0-9_.-])")
    for name, tokens in (("context", example.context), ("query", example.query)):
        for position, token in enumerate(tokens):
            if not token or token != token.strip() or len(token.split()) != 1:
                raise ValueError(
                    f"example {example.id}: {name} token {position} ({token!r}) is empty or "
                    "holds whitespace; .question files separate tokens by single spaces"
                )
    derived = tuple(dict.fromkeys(t for t in example.context if is_entity_marker(t)))
    if tuple(example.candidates) != derived:
        raise ValueError(
            f"example {example.id}: candidates {list(example.candidates)} are not the markers "
            f"of the context by first occurrence {list(derived)}"
        )
    if example.answer not in example.entities:
        raise ValueError(f"example {example.id}: the answer {example.answer} has no entity name")
    if example.url and url_sha1(example.url) == example.story_id:
        url_line = example.url
    else:
        if not is_safe_id(example.story_id):
            raise ValueError(
                f"example {example.id}: story id {example.story_id!r} is not filename-safe "
                "([A-Za-z0-9_.-])"
            )
        url_line = PSEUDO_URL_PREFIX + example.story_id
        if example.url:
            url_line += ":" + example.url
    if any(c.isspace() for c in url_line):
        raise ValueError(f"example {example.id}: the url {example.url!r} holds whitespace")
    entity_lines = "".join(
        f"{marker}:{' '.join(name.splitlines())}\n" for marker, name in example.entities.items()
    )
    return (
        f"{url_line}\n\n{' '.join(example.context)}\n\n{' '.join(example.query)}\n\n"
        f"{example.answer}\n\n{entity_lines}"
    )


def export_questions(dataset_dir: str | os.PathLike, out_dir: str | os.PathLike) -> dict[str, int]:
    """Write a processed dataset as DeepMind ``.question`` files.

    Writes ``out_dir/{training,validation,test}/<example id>.question``. The files go into a
    temporary sibling folder that is renamed to ``out_dir`` at the end, so an interrupted
    export never looks complete.

    Args:
        dataset_dir: a folder written by ``attentive-reader preprocess``.
        out_dir: the output folder; it must not exist or be empty.

    Returns:
        The number of files written per split.

    Raises:
        UserError: if ``dataset_dir`` is not a processed dataset, ``out_dir`` is not empty,
            two examples of a split share an id, or an example cannot be written.
        OutputInUse: another run writes ``out_dir``.
        OutputError: the disk is full, the folder read-only, ... (nothing is left behind).
    """
    loaded = load_dataset(dataset_dir)
    out = Path(out_dir)
    partial = out.parent / f".{out.name}.partial"
    with writing(out, "export", also=(partial,)) as guard:
        if out.exists() and (not out.is_dir() or any(out.iterdir())):
            raise UserError(f"{out} exists and is not an empty folder; choose a new output folder")
        if partial.exists():
            shutil.rmtree(partial)  # left by an interrupted export
        # A failed export leaves nothing: rerunning the same command starts it again.
        guard.cleanups.append(lambda: shutil.rmtree(partial, ignore_errors=True))
        counts = _write_questions(loaded, dataset_dir, partial)
        if out.exists():
            out.rmdir()  # empty, checked above
        place(partial, out)
    return counts


def _write_questions(
    loaded: datasets.DatasetDict, dataset_dir: str | os.PathLike, partial: Path
) -> dict[str, int]:
    counts: dict[str, int] = {}
    for split in sorted(loaded, key=lambda s: (SPLITS.index(s) if s in SPLITS else 3, s)):
        folder = partial / SPLIT_FOLDERS.get(split, split)
        folder.mkdir(parents=True)
        counts[split] = 0
        for row in loaded[split]:
            example = ClozeExample.from_row(row)
            try:
                text = format_question(example)
            except ValueError as err:
                raise UserError(f"{dataset_dir} [{split}]: {err}") from None
            try:
                with open(folder / f"{example.id}{QUESTION_SUFFIX}", "x", encoding="utf-8") as f:
                    f.write(text)
            except FileExistsError:
                raise UserError(
                    f"{dataset_dir} [{split}]: two examples share the id {example.id}"
                ) from None
            counts[split] += 1
    return counts
