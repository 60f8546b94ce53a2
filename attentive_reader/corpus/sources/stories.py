"""``.story`` files: one file, a directory searched recursively, or a ``.tgz`` / ``.tar.gz``
archive read as a stream; ``decode_text`` and ``parse_story`` read one story's text.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

from attentive_reader.corpus.article import normalize_article
from attentive_reader.corpus.records import Skip, Story, safe_id
from attentive_reader.corpus.sources.archives import iter_members
from attentive_reader.corpus.sources.inputs import STORY_SUFFIX, walk_files

HIGHLIGHT_MARKER = "@highlight"


def decode_text(data: bytes, source: str) -> str | Skip:
    """Decode a text file's bytes as UTF-8, or say why it cannot be used.

    Returns:
        The text (a leading byte order mark removed), or ``Skip`` with reason ``empty``,
        ``binary`` (a NUL byte, with its offset) or ``not_utf8`` (the offset and line of the
        first invalid byte).
    """
    if not data.strip():
        return Skip(source, "empty", "empty file")
    nul = data.find(b"\x00")
    if nul >= 0:
        return Skip(source, "binary", f"binary file: NUL byte at byte offset {nul}")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        line = data.count(b"\n", 0, err.start) + 1
        return Skip(
            source,
            "not_utf8",
            f"not UTF-8: invalid byte 0x{data[err.start]:02x} at byte offset {err.start} "
            f"(line {line}); re-encode the file as UTF-8",
        )
    return text.removeprefix("\ufeff")


def parse_story(text: str, *, story_id: str, source: str, url: str | None = None) -> Story | Skip:
    """Parse the text of a ``.story`` file.

    The format: article paragraphs (one per non-blank line), then ``@highlight`` blocks; the
    non-blank lines after the first ``@highlight`` are the highlights (the rule of the
    reference CNN / Daily Mail scripts, so a block normally holds one line). The article is
    normalized as every article is (``corpus.article.normalize_article``: a paragraph that
    does not end a sentence gets a full stop); highlights are kept as written (they become
    the queries).

    Args:
        text: the file's text.
        story_id: the story id (the file stem).
        source: where the text came from, for messages.
        url: the story url when known.

    Returns:
        The ``Story`` (paragraphs joined by blank lines), or ``Skip`` with reason ``empty``
        (nothing but whitespace), ``no_highlights`` (no ``@highlight`` line, or no text after
        them) or ``no_article`` (nothing before the first ``@highlight``).
    """
    if not text.strip():
        return Skip(source, "empty", "empty file")
    paragraphs: list[str] = []  # the article's lines
    highlights: list[str] = []
    in_highlights = False
    first_marker_line = 0
    for line_number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line:
            continue
        if line.startswith(HIGHLIGHT_MARKER):
            if not in_highlights:
                first_marker_line = line_number
            in_highlights = True
        elif in_highlights:
            highlights.append(line)
        else:
            paragraphs.append(line)
    if not in_highlights:
        return Skip(source, "no_highlights", "no @highlight line: a story needs highlights")
    if not highlights:
        return Skip(
            source,
            "no_highlights",
            f"@highlight markers (from line {first_marker_line}) but no highlight text after them",
        )
    if not paragraphs:
        return Skip(
            source,
            "no_article",
            f"no article text before the first @highlight (line {first_marker_line})",
        )
    return Story(
        id=story_id,
        article=normalize_article("\n".join(paragraphs)),
        highlights=tuple(highlights),
        url=url,
        source=source,
    )


def _story_id(name: str) -> str:
    base = os.path.basename(name)
    stem = base[: -len(STORY_SUFFIX)] if base.lower().endswith(STORY_SUFFIX) else base
    return safe_id(stem)


def _read_story_bytes(data: bytes, *, name: str, source: str) -> Story | Skip:
    text = decode_text(data, source)
    if isinstance(text, Skip):
        return text
    return parse_story(text, story_id=_story_id(name), source=source)


def iter_story_files(path: Path) -> Iterator[Story | Skip]:
    """Stream one ``.story`` file, or the ``.story`` files under a directory (sorted)."""
    files = [path] if path.is_file() else walk_files(path, STORY_SUFFIX)
    for file in files:
        try:
            data = file.read_bytes()
        except OSError as err:
            yield Skip(str(file), "unreadable", f"cannot read the file: {err.strerror or err}")
            continue
        yield _read_story_bytes(data, name=file.name, source=str(file))


def iter_archive(path: Path) -> Iterator[Story | Skip]:
    """Stream the ``.story`` members of a gzipped tar archive, in member order."""
    for item in iter_members(path, STORY_SUFFIX, "stories"):
        if isinstance(item, Skip):
            yield item
        else:
            name, data = item
            yield _read_story_bytes(data, name=name, source=f"{path}:{name}")
