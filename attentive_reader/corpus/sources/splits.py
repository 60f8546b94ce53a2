"""Story ids and split assignment: the SHA-1 of a url or text, ``hash_split``, and the
CNN / Daily Mail url lists (``UrlLists``), which also tell each story's publisher.
"""

from __future__ import annotations

import hashlib
import math
import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

from attentive_reader.common.errors import UserError
from attentive_reader.corpus.records import SPLITS

# url list file -> split (the layout of the CNN / Daily Mail url lists)
URL_LIST_FILES = {"all_train.txt": "train", "all_val.txt": "validation", "all_test.txt": "test"}

Publisher = Literal["cnn", "dailymail"]
# publisher -> the web domain of its stories
PUBLISHER_DOMAINS: dict[Publisher, str] = {"cnn": "cnn.com", "dailymail": "dailymail.co.uk"}
_HOST = re.compile(r"https?://([^/:?#]+)", re.IGNORECASE)


def publisher_of_url(url: str) -> Publisher | None:
    """The publisher of a story url, by its host (``cnn.com``, ``dailymail.co.uk`` or a
    subdomain); for a Wayback Machine url (``http://web.archive.org/web/2015.../http://www.
    cnn.com/...``, as in the url lists) the host of the archived url. ``None`` for others."""
    hosts = _HOST.findall(url)
    host = hosts[-1].lower() if hosts else ""
    for publisher, domain in PUBLISHER_DOMAINS.items():
        if host == domain or host.endswith("." + domain):
            return publisher
    return None


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
