"""Write generated cloze examples as a processed dataset, with the normal manifest.

Generators that make already-anonymized examples (the toy relation task, benchmark data)
store them here the way ``preprocess`` stores a corpus: a ``datasets.DatasetDict`` of the
three splits (``CLOZE_FEATURES``) and a ``manifest.json`` built by ``corpus.manifest``, in
which every example counts as one generated document with one question. Loaders and reports
therefore read a generated dataset exactly as a preprocessed one.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable, Mapping
from pathlib import Path

import datasets

from attentive_reader.common.fileio import write_json_atomic
from attentive_reader.corpus.manifest import (
    MANIFEST_NAME,
    ShardCounts,
    build_manifest,
)
from attentive_reader.corpus.records import CLOZE_FEATURES, SPLITS, ClozeExample
from attentive_reader.version import __version__


def write_examples(
    directory: str | os.PathLike,
    splits: Mapping[str, Iterable[ClozeExample]],
    *,
    source: str,
    options: dict,
) -> dict:
    """Write ``splits`` (split name -> examples) as a processed dataset in ``directory``.

    Args:
        directory: where to write (created; a dataset already there is replaced).
        splits: the examples of ``train`` / ``validation`` / ``test``; a split left out is
            written empty.
        source: what generated the examples (the manifest's input and its ``synthetic``
            mark's ``generator``, e.g. ``"toy"``).
        options: the generator's options, as stored in the manifest (JSON values).

    Returns:
        The manifest written to ``directory/manifest.json``.

    Raises:
        ValueError: for a split name other than ``train`` / ``validation`` / ``test``.
    """
    unknown = sorted(set(splits) - set(SPLITS))
    if unknown:
        raise ValueError(f"unknown split(s) {unknown}; use {', '.join(SPLITS)}")
    out = Path(directory)
    counts = ShardCounts()
    tables = {}
    for split in SPLITS:
        examples = list(splits.get(split, ()))
        for example in examples:
            counts.read += 1
            counts.stories += 1
            counts.add_story(split, [example])
        rows = [example.to_row() for example in examples]
        tables[split] = (
            datasets.Dataset.from_list(rows, features=CLOZE_FEATURES)
            if rows  # from_list([]) loses the columns
            else datasets.Dataset.from_dict({n: [] for n in CLOZE_FEATURES}, CLOZE_FEATURES)
        )
    out.mkdir(parents=True, exist_ok=True)
    # An empty split needs one (empty) shard file, or it cannot be loaded back.
    empty = {split: 1 for split, table in tables.items() if len(table) == 0}
    bars_were_enabled = datasets.is_progress_bar_enabled()
    datasets.disable_progress_bars()
    try:
        datasets.DatasetDict(tables).save_to_disk(str(out), num_shards=empty or None)
    finally:
        if bars_were_enabled:
            datasets.enable_progress_bars()
    run = {"source": source, "options": options, "toolkit": __version__}
    manifest = build_manifest(
        inputs=[{"path": source, "kind": "generated"}],
        options=options,
        pipeline=None,
        toolkit_version=__version__,
        run_key=hashlib.sha1(json.dumps(run, sort_keys=True).encode()).hexdigest(),
        counts=counts,
        num_shards=1,
        synthetic={"generator": source},  # made up by a program, not real text
    )
    write_json_atomic(out / MANIFEST_NAME, manifest)
    return manifest
