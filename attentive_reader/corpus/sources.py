"""Readers of raw news stories: ``.story`` directories and archives, Hugging Face datasets.

Every reader is a generator that yields ``Story`` records, or ``Skip`` records for inputs it
could not use, one at a time: nothing reads a whole directory, archive or dataset into
memory. The order is deterministic (sorted paths, archive member order, dataset row order).

Input kinds (see ``detect_kind``):

* ``stories``: a directory searched recursively for ``*.story`` files, or one ``.story`` file.
  The story id is the file stem (CNN / Daily Mail name their files by the SHA-1 of the url).
* ``archive``: a ``.tgz`` / ``.tar.gz`` archive of ``.story`` files, read as a stream.
* ``hf_files``: a local ``.json`` / ``.jsonl`` / ``.csv`` / ``.parquet`` file with the columns
  ``article``, ``highlights`` (one highlight per line), optional ``id`` and ``url``. Its rows go
  to the ``train`` split unless the input is written ``SPLIT=PATH`` (``validation=val.csv``).
* ``questions``: a directory of DeepMind ``.question`` files (read by ``corpus.questions``).
* ``hf_hub``: anything that does not exist locally is a Hugging Face hub dataset name
  (``cnn_dailymail`` with config ``3.0.0``), read split by split.

Splits of ``.story`` inputs are assigned later, by ``UrlLists`` or ``hash_split``.
"""

from __future__ import annotations

import hashlib
import math
import os
import re
import socket
import tarfile
import zlib
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Literal
from urllib.parse import urlparse

from attentive_reader.corpus.records import SPLITS, Skip, Story, safe_id
from attentive_reader.errors import UserError

InputKind = Literal["stories", "archive", "hf_files", "questions", "hf_hub"]

STORY_SUFFIX = ".story"
QUESTION_SUFFIX = ".question"
ARCHIVE_SUFFIXES = (".tgz", ".tar.gz")
# file suffix -> the ``datasets`` packaged builder that reads it
HF_FILE_BUILDERS = {".json": "json", ".jsonl": "json", ".csv": "csv", ".parquet": "parquet"}
HIGHLIGHT_MARKER = "@highlight"

# url list file -> split (the layout of the CNN / Daily Mail url lists)
URL_LIST_FILES = {"all_train.txt": "train", "all_val.txt": "validation", "all_test.txt": "test"}
# split names some hub datasets use for the three standard splits
_SPLIT_ALIASES = {"val": "validation", "valid": "validation", "dev": "validation"}


_STRICT_HINT = "(--strict stops at the first bad input; leave it out to count and skip it)"


# --------------------------------------------------------------------------------------------
# Ids and splits


def url_sha1(url: str) -> str:
    """The SHA-1 hex digest of a url (how CNN / Daily Mail name their story files)."""
    return hashlib.sha1(url.encode("utf-8")).hexdigest()


def text_sha1(text: str) -> str:
    """The SHA-1 hex digest of a text (the id of an HF row that has neither ``id`` nor ``url``)."""
    return hashlib.sha1(text.encode("utf-8")).hexdigest()


def _check_fractions(fractions: Sequence[float]) -> tuple[float, float, float]:
    values = tuple(float(f) for f in fractions)
    if (
        len(values) != 3
        or any(not math.isfinite(f) or f < 0 for f in values)
        or abs(sum(values) - 1.0) > 1e-6
    ):
        raise ValueError(
            "split fractions must be three non-negative numbers (train, validation, test) "
            f"that sum to 1, e.g. 0.9 0.05 0.05; got {list(fractions)}"
        )
    return values  # type: ignore[return-value]


def hash_split(story_id: str, fractions: Sequence[float] = (0.9, 0.05, 0.05)) -> str:
    """The split of a story, decided by the SHA-1 of its id: the same id always gets the same split.

    The hash is mapped to a number ``u`` in ``[0, 1)``; the story goes to ``train`` when
    ``u < fractions[0]``, to ``validation`` when ``u < fractions[0] + fractions[1]``, else to
    ``test``. A split with fraction 0 never gets a story.

    Args:
        story_id: the story id.
        fractions: (train, validation, test) fractions, non-negative, summing to 1.

    Raises:
        ValueError: if the fractions are not three non-negative numbers summing to 1.
    """
    values = _check_fractions(fractions)
    u = int(hashlib.sha1(story_id.encode("utf-8")).hexdigest()[:16], 16) / 2.0**64
    last = max(i for i, f in enumerate(values) if f > 0)  # takes the rounding remainder
    bound = 0.0
    for index, fraction in enumerate(values[:last]):
        bound += fraction
        if fraction > 0 and u < bound:
            return SPLITS[index]
    return SPLITS[last]


class UrlLists:
    """Split assignment from the CNN / Daily Mail url lists.

    ``DIR/all_train.txt``, ``DIR/all_val.txt`` and ``DIR/all_test.txt`` list one url per line
    (any of them may be missing); a story belongs to the split whose list holds the url whose
    SHA-1 is the story id.

    Args:
        urls: SHA-1 of the url -> (split, url).
        source: the directory the lists came from, for messages.
    """

    def __init__(self, urls: dict[str, tuple[str, str]], source: str = "") -> None:
        for key, (split, _) in urls.items():
            if split not in SPLITS:
                raise ValueError(f"unknown split {split!r} for {key}; use one of {SPLITS}")
        self._urls = urls
        self.source = source

    @classmethod
    def from_dir(cls, path: str | os.PathLike) -> UrlLists:
        """Read the url lists in ``path``.

        Raises:
            UserError: if ``path`` is not a directory, holds none of the three lists, or a url
                is listed in two splits.
        """
        folder = Path(path)
        if not folder.is_dir():
            raise UserError(f"--url-lists {folder}: not a directory")
        urls: dict[str, tuple[str, str]] = {}
        found = False
        for name, split in URL_LIST_FILES.items():
            list_file = folder / name
            if not list_file.is_file():
                continue
            found = True
            with open(list_file, encoding="utf-8", errors="replace") as lines:
                for line_number, line in enumerate(lines, start=1):
                    url = line.strip()
                    if not url:
                        continue
                    key = url_sha1(url)
                    previous = urls.get(key)
                    if previous is not None and previous[0] != split:
                        raise UserError(
                            f"{list_file}:{line_number}: {url} is also in the {previous[0]} "
                            "list; a url must be in one list only"
                        )
                    urls[key] = (split, url)
        if not found:
            raise UserError(
                f"--url-lists {folder}: none of {', '.join(URL_LIST_FILES)} is there; "
                "pass the folder that holds the CNN / Daily Mail url lists"
            )
        return cls(urls, source=str(folder))

    def __len__(self) -> int:
        return len(self._urls)

    def split_of(self, story_id: str) -> str | None:
        """The split of the story whose id is the SHA-1 of a listed url, else ``None``."""
        entry = self._urls.get(story_id)
        return entry[0] if entry else None

    def url_of(self, story_id: str) -> str | None:
        """The listed url whose SHA-1 is ``story_id``, else ``None``."""
        entry = self._urls.get(story_id)
        return entry[1] if entry else None

    def counts(self) -> dict[str, int]:
        """Number of listed urls per split."""
        counts = dict.fromkeys(SPLITS, 0)
        for split, _ in self._urls.values():
            counts[split] += 1
        return counts


# --------------------------------------------------------------------------------------------
# Input detection


def split_input(input: str) -> tuple[str | None, str]:
    """Separate an optional ``SPLIT=`` prefix from an input: ``"validation=v.csv"``.

    Returns ``(split, path)``; ``split`` is ``None`` without a prefix (or when the whole
    string is an existing path).
    """
    if "=" in input and not os.path.exists(input):
        prefix, rest = input.split("=", 1)
        split = _SPLIT_ALIASES.get(prefix, prefix)
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


def _looks_like_path(input: str) -> bool:
    """Whether a name that does not exist locally was meant as a path, not a hub dataset."""
    return not _HUB_NAME.fullmatch(input) or _suffix_kind(input) is not None


def detect_kind(input: str) -> InputKind:
    """What kind of input ``input`` is (see the module docstring).

    A directory is ``questions`` when it holds ``.question`` files and ``stories`` when it
    holds ``.story`` files (searched recursively). A local file is classified by its suffix.
    A name that does not exist locally and does not look like a path is a hub dataset.

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
        has_story = has_question = False
        for _folder, _dirnames, filenames in os.walk(path):
            for name in filenames:
                lower = name.lower()
                has_story = has_story or lower.endswith(STORY_SUFFIX)
                has_question = has_question or lower.endswith(QUESTION_SUFFIX)
            if has_story and has_question:
                raise UserError(
                    f"{path} holds both .story and .question files; pass their folders "
                    "as separate inputs"
                )
        if has_question:
            return "questions"
        if has_story:
            return "stories"
        raise UserError(
            f"{path}: no .story or .question files in this directory (searched recursively)"
        )
    if os.path.isfile(path):
        kind = _suffix_kind(path)
        if kind is None:
            raise UserError(
                f"{path}: unknown input type; expected a folder of .story or .question files, "
                "a .tgz/.tar.gz archive, a .json/.jsonl/.csv/.parquet file, or a hub dataset name"
            )
        return kind
    if _looks_like_path(path):
        raise UserError(f"{path}: no such file or directory")
    return "hf_hub"


# --------------------------------------------------------------------------------------------
# .story files


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
    reference CNN / Daily Mail scripts, so a block normally holds one line).

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
    paragraphs: list[str] = []
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
        article="\n\n".join(paragraphs),
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


def _iter_story_files(path: Path) -> Iterator[Story | Skip]:
    files = [path] if path.is_file() else walk_files(path, STORY_SUFFIX)
    for file in files:
        try:
            data = file.read_bytes()
        except OSError as err:
            yield Skip(str(file), "unreadable", f"cannot read the file: {err.strerror or err}")
            continue
        yield _read_story_bytes(data, name=file.name, source=str(file))


def _iter_archive(path: Path) -> Iterator[Story | Skip]:
    """Stream the ``.story`` members of a gzipped tar archive, in member order."""
    try:
        tar = tarfile.open(path, mode="r|gz")
    except (tarfile.TarError, EOFError, zlib.error, OSError) as err:
        raise UserError(f"{path}: not a readable .tgz archive ({err})") from None
    current: str | None = None  # the member being read, or the last one read
    inside = False
    read = 0
    with tar:
        try:
            while True:
                inside = False
                member = tar.next()
                if member is None:
                    break
                tar.members.clear()  # stream mode keeps every header otherwise
                current = member.name
                if not member.isfile() or not member.name.lower().endswith(STORY_SUFFIX):
                    continue
                inside = True
                handle = tar.extractfile(member)
                data = handle.read() if handle is not None else b""
                read += 1
                yield _read_story_bytes(data, name=member.name, source=f"{path}:{member.name}")
        except (tarfile.TarError, EOFError, zlib.error, OSError) as err:
            where = (
                f"inside member {current}"
                if inside
                else (f"after member {current}" if current else "before the first member")
            )
            yield Skip(
                f"{path}:{current}" if current else str(path),
                "truncated_archive",
                f"archive ends early or is corrupt ({err}) {where}; "
                f"{read} stories were read before it",
            )


# --------------------------------------------------------------------------------------------
# Hugging Face datasets


def _first_line(err: BaseException) -> str:
    text = str(err).strip().splitlines()
    return text[0] if text else type(err).__name__


def _highlight_lines(value: object) -> tuple[str, ...]:
    if value is None:
        return ()
    items = value if isinstance(value, (list, tuple)) else str(value).splitlines()
    return tuple(line.strip() for line in (str(item) for item in items) if line.strip())


def _row_story(row: dict, *, source: str, split: str) -> Story | Skip:
    article = row.get("article")
    article = "" if article is None else str(article).strip()
    highlights = _highlight_lines(row.get("highlights"))
    if not article:
        return Skip(source, "no_article", "empty article")
    if not highlights:
        return Skip(source, "no_highlights", "no highlights")
    url = row.get("url")
    url = str(url).strip() if url is not None and str(url).strip() else None
    raw_id = row.get("id")
    raw_id = "" if raw_id is None else str(raw_id).strip()
    if raw_id:
        story_id = safe_id(raw_id)
    else:
        story_id = url_sha1(url) if url else text_sha1(article)
    return Story(
        id=story_id, article=article, highlights=highlights, url=url, source=source, split=split
    )


def _check_columns(columns: Sequence[str], where: str) -> None:
    missing = [name for name in ("article", "highlights") if name not in columns]
    if missing:
        raise UserError(
            f"{where}: no {' or '.join(repr(m) for m in missing)} column (columns found: "
            f"{', '.join(map(str, columns)) or 'none'}); rows need 'article' and 'highlights' "
            "(one highlight per line), optionally 'id' and 'url'"
        )


def _iter_hf_file(input: str) -> Iterator[Story | Skip]:
    import datasets

    split, path = split_input(input)
    split = split or "train"
    builder = HF_FILE_BUILDERS[os.path.splitext(path.lower())[1]]
    try:
        rows = datasets.load_dataset(builder, data_files=path, split="train", streaming=True)
    except Exception as err:
        raise UserError(f"{path}: cannot read as {builder}: {_first_line(err)}") from None
    index = -1
    try:
        for index, row in enumerate(rows):
            if index == 0:
                _check_columns(list(row), path)
            yield _row_story(row, source=f"{path}:row {index}", split=split)
    except UserError:
        raise
    except Exception as err:
        yield Skip(
            f"{path}:row {index + 1}",
            "unreadable",
            f"cannot read the file as {builder} from row {index + 1} on: {_first_line(err)}",
        )
        return
    if index < 0:
        yield Skip(path, "empty", "no rows")


def hub_reachable(timeout: float = 3.0) -> bool:
    """Whether a TCP connection to the Hugging Face hub endpoint opens within ``timeout``."""
    from huggingface_hub import constants

    parsed = urlparse(constants.ENDPOINT)
    port = parsed.port or (443 if parsed.scheme == "https" else 80)
    try:
        with socket.create_connection((parsed.hostname or "", port), timeout=timeout):
            return True
    except OSError:
        return False


def _hub_unreachable(name: str) -> UserError:
    return UserError(
        f"cannot reach the Hugging Face hub for {name}; download it elsewhere or pass local "
        "json/csv/parquet files with article/highlights columns (set HF_HUB_OFFLINE=1 to use a "
        "copy already in the datasets cache)"
    )


def _normal_split(name: str) -> str:
    return _SPLIT_ALIASES.get(name, name)


def _iter_hub(
    name: str, hf_config: str | None, hf_splits: Sequence[str] | None
) -> Iterator[Story | Skip]:
    import datasets
    from datasets.exceptions import DatasetNotFoundError

    offline = bool(datasets.config.HF_HUB_OFFLINE)
    # Offline, load_dataset reads the local cache at once; online, it would retry an
    # unreachable hub for ~20 s first, so probe the endpoint before.
    if not offline and not hub_reachable():
        raise _hub_unreachable(name)
    try:
        loaded = datasets.load_dataset(name, hf_config)
    except DatasetNotFoundError as err:
        if offline:
            raise _hub_unreachable(name) from None
        raise UserError(
            f"{name}: no such dataset on the Hugging Face hub, or it is gated or private "
            f"({_first_line(err)})"
        ) from None
    except (ConnectionError, OSError):  # FileNotFoundError included
        raise _hub_unreachable(name) from None
    except Exception as err:
        raise UserError(
            f"cannot load the hub dataset {name}"
            + (f" (config {hf_config})" if hf_config else "")
            + f": {_first_line(err)}"
        ) from None
    by_split = {_normal_split(split): split for split in loaded}
    wanted = [_normal_split(s) for s in hf_splits] if hf_splits else None
    if wanted is None:
        wanted = [split for split in SPLITS if split in by_split]
    unknown = [split for split in wanted if split not in by_split]
    if unknown or not wanted:
        raise UserError(
            f"{name}: no split {', '.join(unknown) or 'train/validation/test'}; it has "
            f"{', '.join(loaded)}"
        )
    not_standard = [split for split in wanted if split not in SPLITS]
    if not_standard:
        raise UserError(
            f"{name}: split {', '.join(not_standard)} is not one of {', '.join(SPLITS)}"
        )
    for split in wanted:
        rows = loaded[by_split[split]]
        _check_columns(rows.column_names, f"{name}[{by_split[split]}]")
        for index, row in enumerate(rows):
            yield _row_story(row, source=f"{name}[{by_split[split]}]:row {index}", split=split)


# --------------------------------------------------------------------------------------------
# Entry point


def _strict(items: Iterator[Story | Skip]) -> Iterator[Story | Skip]:
    for item in items:
        if isinstance(item, Skip):
            raise UserError(f"{item.source}: {item.detail} [{item.reason}] {_STRICT_HINT}")
        yield item


def iter_stories(
    input: str,
    *,
    hf_config: str | None = None,
    hf_splits: Sequence[str] | None = None,
    strict: bool = False,
) -> Iterator[Story | Skip]:
    """Stream the stories of one input, in a deterministic order.

    Args:
        input: a ``.story`` folder or file, a ``.tgz``/``.tar.gz`` archive, a local
            json/jsonl/csv/parquet file (optionally ``SPLIT=PATH``), or a hub dataset name.
        hf_config: the hub dataset's config (``3.0.0`` for ``cnn_dailymail``).
        hf_splits: the hub dataset's splits to read (default: those of train, validation,
            test it has).
        strict: raise ``UserError`` at the first bad story instead of yielding a ``Skip``.

    Yields:
        ``Story`` records (``split`` set for Hugging Face sources, ``None`` otherwise) and
        ``Skip`` records for unusable stories and files.

    Raises:
        UserError: for inputs that cannot be read at all (see ``detect_kind``), a data file
            without ``article``/``highlights`` columns, an unreachable hub, and under
            ``strict`` any bad story.
    """
    kind = detect_kind(input)
    items: Iterator[Story | Skip]
    if kind == "stories":
        items = _iter_story_files(Path(input))
    elif kind == "archive":
        items = _iter_archive(Path(input))
    elif kind == "hf_files":
        items = _iter_hf_file(input)
    elif kind == "hf_hub":
        items = _iter_hub(input, hf_config, hf_splits)
    else:
        raise UserError(
            f"{input} holds DeepMind .question files: they are read as examples, not stories"
        )
    return _strict(items) if strict else items
