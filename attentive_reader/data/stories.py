"""A share of a split's stories, for learning curves over training-set size."""

from __future__ import annotations

import hashlib

import datasets


def story_position(story_id: str) -> float:
    """Where a story falls in [0, 1): the first 8 bytes of the SHA-1 of its id, scaled.

    The position depends on the id alone, so the stories kept at a share are a subset of
    those kept at any larger share, whatever the split's order or size.
    """
    digest = hashlib.sha1(story_id.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def story_share(rows: datasets.Dataset, fraction: float) -> datasets.Dataset:
    """The rows whose story falls below ``fraction`` (every question of a kept story).

    Args:
        rows: a split with a ``story_id`` column.
        fraction: the share of stories to keep, in (0, 1]; 1 returns ``rows`` itself.

    Raises:
        ValueError: if ``fraction`` is not in (0, 1].
    """
    if isinstance(fraction, bool) or not 0 < fraction <= 1:
        raise ValueError(f"the share of stories must be in (0, 1], got {fraction!r}")
    if fraction == 1:
        return rows
    keep = {s for s in set(rows["story_id"]) if story_position(s) < fraction}
    return rows.select([i for i, s in enumerate(rows["story_id"]) if s in keep])
