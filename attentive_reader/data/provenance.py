"""What a processed dataset is, for the checkpoints of the readers trained on it.

``data_provenance`` gives the training data's part of a checkpoint's provenance record
(``models/provenance.py``): the dataset folder, its fingerprint, whether its stories were made
up by a generator (the built-in synthetic corpus, the toy task), and the exclusive-frequency
baseline on its validation split: the expected accuracy, under a random tie-break, of
answering with the most frequent candidate that is not in the query (``corpus.baselines``).
A reader below that baseline has not learned to read.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import datasets

from attentive_reader.common.errors import UserError
from attentive_reader.common.fileio import digest_of
from attentive_reader.common.upstream import dataset_fingerprint
from attentive_reader.corpus.baselines import expected_credit
from attentive_reader.corpus.manifest import MANIFEST_NAME, read_manifest
from attentive_reader.corpus.records import ClozeExample
from attentive_reader.corpus.synthetic.files import synthetic_origin
from attentive_reader.data.encoded import cached_json, split_fingerprint

BASELINE = "exclusive_frequency"
_COLUMNS = ["context", "query", "answer", "candidates"]


def data_provenance(
    path: Path, splits: dict[str, datasets.Dataset], cache: Path | None = None
) -> dict:
    """The training data's part of a checkpoint's provenance record.

    Args:
        path: the processed dataset folder.
        splits: its splits by name (without ``validation`` examples: no baseline).
        cache: where to keep the baseline, computed once per validation split (the encoded
            ids' cache folder, ``data/encoded.py``); ``None``: compute it every time.

    Returns:
        ``{"path", "fingerprint", "fingerprint_of", "synthetic", "exclusive_frequency",
        "validation_examples"}``: the fingerprint is the SHA-256 of ``manifest.json``
        (``fingerprint_of: "manifest"``; every preprocessing run writes a different one), or
        of the splits' Arrow fingerprints for a folder without a manifest (``"splits"``);
        ``synthetic`` is what generated the stories (a dict), ``False`` for real text, or
        ``None`` when the dataset predates the mark and nothing else tells; the baseline is a
        fraction in [0, 1] (``None`` without validation examples).
    """
    manifest = read_manifest(path)
    if manifest is not None:
        digest = hashlib.sha256((path / MANIFEST_NAME).read_bytes()).hexdigest()
        of = "manifest"
    else:  # the fingerprints datasets records for each split (its state.json)
        arrow = {name: dataset_fingerprint(rows) for name, rows in sorted(splits.items())}
        digest = digest_of(arrow)
        of = "splits"
    validation = splits.get("validation")
    count = 0 if validation is None else len(validation)
    return {
        "path": str(path.resolve()),
        "fingerprint": digest,
        "fingerprint_of": of,
        "synthetic": generated_by(manifest, path),
        "exclusive_frequency": _baseline(validation, cache) if count else None,
        "validation_examples": count,
    }


def generated_by(manifest: dict | None, path: Path) -> dict | bool | None:
    """What generated the stories of the dataset at ``path`` according to its manifest: the
    mark (a dict), ``False`` for real text, ``None`` when the manifest cannot tell (no
    manifest, or one written before the mark existed whose inputs are gone).

    Raises:
        UserError: the manifest is one of generated examples from a development version
            (a ``source`` key and no mark).
    """
    if manifest is None:
        return None
    if "synthetic" in manifest:
        return manifest["synthetic"] or False
    if "source" in manifest:
        raise UserError(
            f"{path / MANIFEST_NAME} was written by a development version of attentive-reader "
            "(a 'source' key, no 'synthetic' mark); generate the dataset again"
        )
    inputs = [str(item.get("path", "")) for item in manifest.get("inputs") or []]
    return synthetic_origin(inputs, (manifest.get("options") or {}).get("url_lists"))


def exclusive_frequency(rows: datasets.Dataset) -> float:
    """The exclusive-frequency baseline's expected accuracy on ``rows``, a fraction."""
    total = 0.0
    for batch in rows.select_columns(_COLUMNS).iter(batch_size=1_000):
        for context, query, answer, candidates in zip(*(batch[c] for c in _COLUMNS)):
            example = ClozeExample(
                id="",
                story_id="",
                context=tuple(context),
                query=tuple(query),
                answer=answer,
                candidates=tuple(candidates),
            )
            total += expected_credit(BASELINE, example)
    return total / len(rows)


def _baseline(validation: datasets.Dataset, cache: Path | None) -> float:
    if cache is None:
        return exclusive_frequency(validation)
    key = split_fingerprint(validation)
    try:
        value = cached_json(cache, BASELINE, key, lambda: exclusive_frequency(validation))
    except UserError:  # a cache nothing can be written to (encode computes it ahead)
        return exclusive_frequency(validation)
    return float(value)  # type: ignore[arg-type]
