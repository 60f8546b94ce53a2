"""The output directory of a preprocessing run: fresh, resumable, up to date, or refused.

A run's identity (its run key and part) is kept in ``DIR/shards/run.json`` while it works and
in ``manifest.json`` once done; ``prepare_output`` compares it with the new run's to decide
whether to start afresh, resume or do nothing, and never removes files a run did not write.
``read_parts`` checks the part directories of a ``num_shards`` run before they are merged.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from attentive_reader.common.errors import UserError
from attentive_reader.corpus.manifest import MANIFEST_NAME, ShardCounts, read_manifest
from attentive_reader.corpus.options import PreprocessOptions
from attentive_reader.corpus.records import SPLITS
from attentive_reader.corpus.shards import shard_paths

SHARDS_DIR = "shards"
TMP_DIR = ".tmp"
RUN_FILE = "run.json"
# Everything a run may leave in its output directory (``--overwrite`` removes only these).
OUTPUT_ENTRIES = (MANIFEST_NAME, "dataset_dict.json", *SPLITS, SHARDS_DIR, TMP_DIR, ".encoded")


def run_state(run_key: str, options: PreprocessOptions) -> dict:
    return {
        "run_key": run_key,
        "num_shards": options.num_shards,
        "shard_index": options.shard_index,
    }


def _manifest_state(manifest: dict) -> dict:
    partial = manifest.get("partial") or {}
    return {
        "run_key": manifest.get("run_key"),
        "num_shards": partial.get("num_shards", 1),
        "shard_index": partial.get("shard_index", 0),
    }


def clear_output(out: Path) -> None:
    for name in OUTPUT_ENTRIES:
        path = out / name
        if path.is_dir():
            shutil.rmtree(path)
        elif path.exists():
            path.unlink()
    for path in out.glob(f".{MANIFEST_NAME}.tmp-*"):
        path.unlink()


def prepare_output(
    out: Path, state: dict | None, overwrite: bool
) -> Literal["fresh", "resume", "up_to_date"]:
    """Check the output directory and say what to do with it.

    ``state`` is the run's identity (``None`` for a merge, which never resumes).
    """
    if out.exists() and not out.is_dir():
        raise UserError(f"output {out} exists and is not a directory; choose a directory")
    if not out.exists() or not any(out.iterdir()):
        out.mkdir(parents=True, exist_ok=True)
        return "fresh"
    if not overwrite and state is not None:
        manifest = read_manifest(out)  # --overwrite replaces even an unreadable one
        if manifest is not None and _manifest_state(manifest) == state:
            return "up_to_date"
        try:
            run = json.loads((out / SHARDS_DIR / RUN_FILE).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            run = None
        if run == state:
            return "resume"
    if not overwrite:
        raise UserError(
            f"output directory {out} is not empty and does not hold an unfinished run of the "
            "same command; pass --overwrite to replace it, or choose another directory"
        )
    clear_output(out)
    left = sorted(p.name for p in out.iterdir())
    if left:
        raise UserError(
            f"--overwrite: {out} holds files that are not preprocessing output "
            f"({', '.join(left[:5])}); choose an empty or new directory"
        )
    return "fresh"


@dataclass(frozen=True)
class Parts:
    """The part directories of one ``num_shards`` run, checked and complete.

    Attributes:
        first: the first part's manifest (every part's has the same run key).
        counts: the counts of every shard, in shard order.
        files: the parquet file of every shard, in shard order.
        total_shards: the number of shards of the whole run.
    """

    first: dict
    counts: list[ShardCounts]
    files: list[Path]
    total_shards: int


def read_parts(parts: Sequence[str | os.PathLike]) -> Parts:
    """Check that ``parts`` are the complete, disjoint parts of one run and list their shards.

    Raises:
        UserError: a directory is not a part, the parts come from different runs, or a
            shard is missing, unreadable or given twice.
    """
    manifests = []
    for part in parts:
        manifest = read_manifest(part)
        if manifest is None or "partial" not in manifest:
            raise UserError(
                f"{part} is not the output of a partial run (preprocess --num-shards K "
                "--shard-index I): it has no partial manifest.json"
            )
        manifests.append(manifest)
    first = manifests[0]
    for part, manifest in zip(parts, manifests):
        if manifest["run_key"] != first["run_key"]:
            raise UserError(
                f"{part} comes from a different run than {parts[0]} (other inputs, options "
                "or model); merge only the parts of one command"
            )
        if manifest["partial"]["total_shards"] != first["partial"]["total_shards"]:
            raise UserError(f"{part}: its number of shards differs from {parts[0]}'s")
    owner: dict[int, Path] = {}
    for part, manifest in zip(parts, manifests):
        for index in manifest["partial"]["shard_indices"]:
            if index in owner:
                raise UserError(
                    f"shard {index} is in both {owner[index]} and {part}; give each part once"
                )
            owner[index] = Path(part)
    expected = first["partial"]["total_shards"]
    missing = sorted(set(range(expected)) - set(owner))
    if missing:
        shown = ", ".join(str(i) for i in missing[:10])
        raise UserError(
            f"shards {shown} are missing (of {expected}); run the missing "
            "--shard-index parts and merge all of them"
        )
    counts = []
    files = []
    for index in range(expected):
        parquet_path, json_path = shard_paths(owner[index] / SHARDS_DIR, index)
        try:
            data = json.loads(json_path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            raise UserError(f"{json_path} is missing or unreadable; rerun that part") from None
        if not parquet_path.is_file():
            raise UserError(f"{parquet_path} is missing; rerun that part")
        try:
            counts.append(ShardCounts.from_json(data["counts"]))
        except KeyError:
            raise UserError(
                f"{json_path} was written by an older version of attentive-reader; rerun that part"
            ) from None
        files.append(parquet_path)
    return Parts(first, counts, files, expected)
