"""The entity ids a stored dataset needs: the largest ``@entityN`` of each split, and the
block a new vocabulary gets from it."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import datasets
import pyarrow as pa
import pyarrow.compute as pc

from attentive_reader.common.errors import UserError
from attentive_reader.common.fileio import digest_of
from attentive_reader.common.markers import ENTITY_PREFIX, MARKER_PATTERN, entity_marker
from attentive_reader.data.encoded import cached_json, split_fingerprint
from attentive_reader.data.vocab import DEFAULT_NUM_ENTITIES


def largest_entity_numbers(splits: Mapping[str, datasets.Dataset], cache: Path) -> dict[str, int]:
    """Split -> its largest entity number, over contexts and queries (-1: none).

    Counted once per dataset: the result is cached in ``cache`` (the encoded ids' folder).
    """
    key = digest_of({s: split_fingerprint(rows) for s, rows in splits.items()})
    found = cached_json(cache, "entity-numbers", key, lambda: _largest_numbers(splits))
    return dict(found)  # type: ignore[call-overload]


def block_size(needed: int, num_entities: int | None, path: Path) -> int:
    """The entity block of a new vocabulary for the dataset at ``path``, which needs
    ``needed`` ids: ``num_entities``, or by default 600 or ``needed`` if more.

    Raises:
        UserError: ``num_entities`` is smaller than the dataset needs.
    """
    if num_entities is None:
        return max(DEFAULT_NUM_ENTITIES, needed)
    if num_entities < needed:
        raise UserError(
            f"{path} needs {needed} entity ids (its largest marker is "
            f"{entity_marker(needed - 1)}) but --data.num_entities is {num_entities}; raise "
            f"it or leave it unset ({DEFAULT_NUM_ENTITIES}, or what the data needs if more)"
        )
    return num_entities


def _largest_numbers(splits: Mapping[str, datasets.Dataset]) -> dict[str, int]:
    largest = dict.fromkeys(splits, -1)
    for name, split in splits.items():
        rows = split.select_columns(["candidates", "query"]).with_format("arrow")
        for table in rows.iter(batch_size=50_000):
            # The candidates are the context's markers; a query may name others.
            for column in ("candidates", "query"):
                tokens = pc.list_flatten(table.column(column))
                largest[name] = max(largest[name], _largest_marker(tokens))
    return largest


def _largest_marker(tokens: pa.Array) -> int:
    """The largest ``N`` of the ``@entityN`` tokens among ``tokens`` (-1: none)."""
    markers = tokens.filter(pc.match_substring_regex(tokens, MARKER_PATTERN))
    if not len(markers):
        return -1
    return pc.max(pc.cast(pc.utf8_slice_codeunits(markers, len(ENTITY_PREFIX)), "int64")).as_py()
