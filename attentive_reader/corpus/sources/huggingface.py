"""Hugging Face datasets: local ``.json`` / ``.jsonl`` / ``.csv`` / ``.parquet`` files with
``article`` and ``highlights`` columns, and hub datasets, read split by split.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator, Sequence
from urllib.parse import urlparse

from attentive_reader.common.errors import UserError
from attentive_reader.corpus.article import normalize_article
from attentive_reader.corpus.records import SPLITS, Skip, Story, safe_id
from attentive_reader.corpus.sources.inputs import HF_FILE_BUILDERS, SPLIT_ALIASES, split_input
from attentive_reader.corpus.sources.splits import text_sha1, url_sha1


def _first_line(err: BaseException) -> str:
    text = str(err).strip().splitlines()
    return text[0] if text else type(err).__name__


def _highlight_line(line: str) -> str:
    """A highlight without the ``" ."`` the reference script added to every line (the
    ``.story`` highlights and DeepMind's queries have none); other endings are kept."""
    line = line.strip()
    return line[:-2].rstrip() if line.endswith(" .") else line


def _highlight_lines(value: object) -> tuple[str, ...]:
    if value is None:
        return ()
    items = value if isinstance(value, (list, tuple)) else str(value).splitlines()
    lines = (_highlight_line(str(item)) for item in items)
    return tuple(line for line in lines if line)


def _row_story(row: dict, *, source: str, split: str) -> Story | Skip:
    raw = row.get("article")
    raw = "" if raw is None else str(raw).strip()
    article = normalize_article(raw)  # as a .story's article or a document to answer
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
        story_id = url_sha1(url) if url else text_sha1(raw)  # the id of the text as given
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


def iter_hf_file(input: str) -> Iterator[Story | Skip]:
    """Stream the rows of a local data file (``SPLIT=PATH`` or ``PATH``, train by default)."""
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
    local = " (nor is it a local file or folder)" if "/" in name else ""
    return UserError(
        f"cannot reach the Hugging Face hub for {name}{local}; download it elsewhere or pass "
        "local json/csv/parquet files with article/highlights columns (set HF_HUB_OFFLINE=1 "
        "to use a copy already in the datasets cache)"
    )


def check_hub(name: str) -> None:
    """Refuse a hub dataset when the hub cannot be reached (unless ``HF_HUB_OFFLINE`` is
    set), at once: online, ``load_dataset`` would retry an unreachable hub first
    (docs/inputs.md).

    Raises:
        UserError: the hub endpoint does not answer within a few seconds.
    """
    import datasets

    if not datasets.config.HF_HUB_OFFLINE and not hub_reachable():
        raise _hub_unreachable(name)


def _normal_split(name: str) -> str:
    return SPLIT_ALIASES.get(name, name)


def iter_hub(
    name: str, hf_config: str | None, hf_splits: Sequence[str] | None
) -> Iterator[Story | Skip]:
    """Stream the rows of a hub dataset's splits (default: those of train, validation, test
    it has), checking first that the hub is reachable unless ``HF_HUB_OFFLINE`` is set."""
    import datasets
    from datasets.exceptions import DatasetNotFoundError

    offline = bool(datasets.config.HF_HUB_OFFLINE)
    check_hub(name)
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
