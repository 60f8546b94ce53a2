"""The preprocessing driver: raw stories -> anonymized cloze dataset, parallel and resumable.

How a run goes (``preprocess``):

1. The inputs are read in order (``shards.iter_items``: ``sources.iter_stories`` /
   ``questions.iter_questions``), each record gets its split (the source's, else
   ``--url-lists``, else a hash of the story id) and the stream is cut into *shards* of
   ``shard_size`` records: shard ``k`` holds records ``k*S .. (k+1)*S - 1``, so the
   assignment depends on the input order only.
2. Each shard is processed (``shards.process_shard``) here or, with ``num_proc > 1``, by a
   worker of ``workers.ShardPool`` (processes holding the spaCy pipeline, loaded once), or,
   with ``engine="dask"``, as a task on the workers of a Dask cluster (``cluster.ClusterPool``):
   ``nlp.pipe`` (batched NER) over the articles, ``nlp.make_doc`` over the highlights,
   ``cloze.make_examples``. A story over the token cap is skipped before NER. The shard's
   examples go to ``DIR/shards/shard-NNNNNN.parquet`` and its counts to
   ``shard-NNNNNN.json``, each through a temporary file and a rename; the JSON, written
   last, marks the shard finished. At most two shards per worker are in flight, so memory
   does not grow with the corpus.
3. The shards are joined, in shard order, into a ``datasets.DatasetDict`` (all three splits,
   ``CLOZE_FEATURES``) saved under ``DIR/.tmp`` and moved into ``DIR`` with
   ``dataset_dict.json`` last; ``manifest.json`` (``complete: true``) is written after it.
   A directory without a complete manifest is never a finished dataset.

Resuming: a shard is reused when its JSON holds the same *shard key*, a hash of the run key
(toolkit version, inputs, model, every option that changes the output) and of the shard's
records. Rerunning an interrupted command (Ctrl-C, ``kill -9``, a crash) therefore redoes
only the unfinished shards and ends with exactly the output of an uninterrupted run.

Several machines: ``num_shards=K, shard_index=I`` processes only the shards ``k`` with
``k % K == I`` and leaves them in ``DIR/shards`` with a partial manifest; ``merge`` joins
the K part directories into the same dataset and manifest as a single run.

The rooms: ``options.py`` (``PreprocessOptions``), ``run.py`` (the pipeline, the run key,
the output folder's state and the engine, before the first shard), ``shards.py`` (the input
stream, shard keys, one shard's work), ``workers.py`` (the process pool), ``cluster.py`` (the
Dask engine, an optional extra), ``outdir.py`` (the output folder and the parts of a merge),
``manifest.py`` (the counts), ``console.py`` (progress, the size estimate, the summary) and this
driver (the shard loop, the dataset's finish, the merge). Why these are not ``datasets.map``
with its cache: the development guide, "The corpus run machinery and ``datasets``".
"""

from __future__ import annotations

import os
import shutil
import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import datasets
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from rich.console import Console

from attentive_reader.common.errors import EmptySplitWarning, UserError
from attentive_reader.common.faults import WriteGuard, writing
from attentive_reader.common.fileio import place, write_json_atomic
from attentive_reader.corpus.console import Estimate, ShardProgress, count_records
from attentive_reader.corpus.grouping import grouping_info
from attentive_reader.corpus.manifest import (
    MANIFEST_NAME,
    ShardCounts,
    build_manifest,
    read_manifest,
    total,
)
from attentive_reader.corpus.options import PreprocessOptions, PreprocessResult
from attentive_reader.corpus.outdir import TMP_DIR, clear_output, prepare_output, read_parts
from attentive_reader.corpus.records import CLOZE_FEATURES, SPLITS
from attentive_reader.corpus.run import PreparedRun, cluster_engine, open_pool, prepare_run
from attentive_reader.corpus.shards import (
    SHARD_SCHEMA,
    ShardTask,
    WorkItem,
    chunks,
    finished_shard,
    input_identity,
    input_kinds,
    iter_items,
    process_shard,
    shard_key,
    shard_paths,
)
from attentive_reader.corpus.sources import check_hub
from attentive_reader.corpus.synthetic.files import synthetic_origin
from attentive_reader.version import __version__

if TYPE_CHECKING:  # the optional engine (pip install "attentive-reader[cluster]")
    from attentive_reader.corpus.cluster import ClusterPool
    from attentive_reader.corpus.workers import ShardPool

__all__ = [
    "PreprocessOptions",
    "PreprocessResult",
    "ShardTask",
    "WorkItem",
    "iter_items",
    "merge",
    "preprocess",
    "process_shard",
    "shard_key",
]


# --------------------------------------------------------------------------- output


def _write_dataset(shard_files: Sequence[Path], out: Path, manifest: dict) -> None:
    """Join shard files, in order, into ``out`` as a DatasetDict (``dataset_dict.json`` last).

    ``manifest`` is written to ``DIR/.tmp`` beside the dataset before anything is moved.
    """
    tmp = out / TMP_DIR
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    schema = CLOZE_FEATURES.arrow_schema
    arrow_paths = {split: tmp / f"{split}.arrow" for split in SPLITS}
    writers = {split: pa.ipc.new_stream(str(path), schema) for split, path in arrow_paths.items()}
    try:
        for path in shard_files:
            table = pq.read_table(path, schema=SHARD_SCHEMA)
            for split in SPLITS:
                part = table.filter(pc.equal(table["split"], split))
                if part.num_rows:
                    columns = [part[name] for name in schema.names]
                    writers[split].write_table(pa.Table.from_arrays(columns, schema=schema))
    finally:
        for writer in writers.values():
            writer.close()
    info = datasets.DatasetInfo(features=CLOZE_FEATURES)
    dataset = datasets.DatasetDict(
        {split: datasets.Dataset.from_file(str(p), info=info) for split, p in arrow_paths.items()}
    )
    # An empty split needs one (empty) shard file, or it cannot be loaded back.
    num_shards = {split: 1 for split in SPLITS if len(dataset[split]) == 0}
    bars_were_enabled = datasets.is_progress_bar_enabled()
    datasets.disable_progress_bars()
    try:
        dataset.save_to_disk(str(tmp / "dataset"), num_shards=num_shards or None)
    finally:
        if bars_were_enabled:
            datasets.enable_progress_bars()
    del dataset
    write_json_atomic(tmp / MANIFEST_NAME, manifest)
    for name in ("dataset_dict.json", *SPLITS):  # stale files of an interrupted finish
        path = out / name
        if path.is_dir():
            shutil.rmtree(path)
        elif path.exists():
            path.unlink()
    for split in SPLITS:
        place(tmp / "dataset" / split, out / split)
    place(tmp / "dataset" / "dataset_dict.json", out / "dataset_dict.json")


def _finish(out: Path, shard_files: Sequence[Path], manifest: dict) -> None:
    # Everything that needs space is written under DIR/.tmp; then only renames follow, the
    # manifest last, so a full disk never leaves a dataset without its manifest.
    _write_dataset(shard_files, out, manifest)
    place(out / TMP_DIR / MANIFEST_NAME, out / MANIFEST_NAME)
    shutil.rmtree(out / TMP_DIR, ignore_errors=True)


# --------------------------------------------------------------------------- the run


def preprocess(
    inputs: Sequence[str],
    output: str | os.PathLike,
    options: PreprocessOptions | None = None,
    *,
    console: Console | None = None,
    progress: bool | None = None,
) -> PreprocessResult:
    """Preprocess ``inputs`` into the cloze dataset ``output`` (see the module docstring).

    Args:
        inputs: ``.story`` directories, ``.tgz`` archives, json/jsonl/csv/parquet files,
            ``.question`` directories or archives, or hub dataset names, in order.
        output: the output directory.
        options: the run's options (defaults when ``None``).
        console: where progress goes (a default rich console when ``None``).
        progress: show a progress bar; ``None``: only on a terminal.

    Returns:
        What was done; ``result.manifest`` is the manifest written to ``output``.

    Raises:
        UserError: bad inputs or options, a non-empty output directory, or (``strict``) a
            bad record.
        OutputInUse: another run writes ``output``.
        OutputError: the disk is full, the folder read-only, ... (finished shards are kept:
            the same call continues once the cause is fixed).
    """
    # The inputs are checked before the output is touched: a mistyped path or an
    # unreachable hub leaves nothing behind.
    kinds = input_kinds(inputs)
    for name, kind in zip(inputs, kinds):
        if kind == "hf_hub":
            check_hub(name)
    with writing(output, "preprocess") as guard:
        result = _preprocess(inputs, kinds, Path(output), options, console, progress, guard)
    warn_empty_splits(result.manifest, kinds)
    return result


def warn_empty_splits(manifest: dict, kinds: Sequence[str]) -> None:
    """One ``EmptySplitWarning`` naming the empty validation / test splits and why (``fit``
    then trains without validation; ``test`` has nothing to test)."""
    examples = manifest.get("examples", {})
    empty = [split for split in ("validation", "test") if examples.get(split) == 0]
    if not empty or not examples.get("train"):
        return
    if all(kind == "hf_files" for kind in kinds):
        why = (
            "a data file's rows all go to train unless its split is named (validation=FILE, "
            "test=FILE); --split-fractions splits only stories without a split of their own"
        )
    else:
        why = (
            "no story got it (url lists, a source's own splits, or --split-fractions on too "
            "few stories)"
        )
    warnings.warn(
        f"the {' and '.join(empty)} split{'s are' if len(empty) > 1 else ' is'} empty: {why}; "
        "fit trains without validation and test has nothing to test",
        EmptySplitWarning,
        stacklevel=3,
    )


@dataclass
class _Progress:
    """What the shard loop has done so far."""

    counts: dict[int, ShardCounts] = field(default_factory=dict)
    processed: int = 0
    reused: int = 0
    records_processed: int = 0
    total_shards: int = 0


def _preprocess(
    inputs: Sequence[str],
    kinds: list[str],
    out: Path,
    options: PreprocessOptions | None,
    console: Console | None,
    progress: bool | None,
    guard: WriteGuard,
) -> PreprocessResult:
    started = time.perf_counter()
    options = options or PreprocessOptions()
    if options.engine == "dask":
        cluster_engine()  # installed? (before anything is loaded or written)
    console = console or Console(stderr=True)
    run = prepare_run(inputs, kinds, out, options)
    if run.status == "up_to_date":
        return PreprocessResult(out, read_manifest(out) or {}, "up_to_date")
    estimate = Estimate(inputs, run.kinds, out, options, guard, console, progress is not False)
    mode = "bar" if progress else "off"
    if progress is None:  # a bar on a terminal, a line per shard in a log
        mode = "bar" if console.is_terminal else "lines"
    bar = ShardProgress(console, mode, count_records(run.inputs, run.kinds))
    done = _run_shards(run, estimate, bar, console)
    if done.total_shards == 0:
        clear_output(out)
        raise UserError(f"no story or question was found in {', '.join(inputs)}")
    manifest = _write_manifest(run, done)
    return PreprocessResult(
        out,
        manifest,
        "done",
        processed_shards=done.processed,
        reused_shards=done.reused,
        seconds=time.perf_counter() - started,
        records_processed=done.records_processed,
    )


def _run_shards(
    run: PreparedRun, estimate: Estimate, bar: ShardProgress, console: Console
) -> _Progress:
    """Process (or reuse) every shard of this run, in this process or a pool's workers.

    On an error nothing worth resuming is left behind (a fresh output is cleared); after an
    interrupt the finished shards are kept, and the message says how to resume.
    """
    done = _Progress()
    pool: ShardPool | ClusterPool | None = None
    try:
        pool = open_pool(run.options, run.pipeline)
        with bar:
            _dispatch_shards(run, pool, estimate, done, bar)
    except BaseException as error:
        if pool is not None:
            pool.terminate()
        finished_count = len(list(run.shards.glob("shard-*.json")))
        if not finished_count and run.status == "fresh":  # nothing to resume: leave no debris
            try:
                clear_output(run.out)
            except OSError:  # a read-only folder: nothing was written there anyway
                pass
        elif isinstance(error, KeyboardInterrupt):
            console.print(
                f"interrupted: {finished_count} finished shards are kept in {run.shards}; run "
                "the same command again to resume",
                soft_wrap=True,
            )
        raise
    if pool is not None:
        pool.close()
    return done


def _dispatch_shards(
    run: PreparedRun,
    pool: ShardPool | ClusterPool | None,
    estimate: Estimate,
    done: _Progress,
    bar: ShardProgress,
) -> None:
    """The shard loop: this run's shards of the plan, each reused when finished before,
    else processed here (no pool) or submitted, at most two per worker slot in flight."""
    options, shards = run.options, run.shards
    cloze = options.cloze_options()

    def collect() -> None:
        assert pool is not None
        index, shard_counts = pool.collect()
        done.counts[index] = shard_counts
        estimate.shard_done(shards, index)
        done.records_processed += shard_counts.read
        bar.advance(shard_counts.read)
        bar.shard_done(index)

    items = iter_items(run.inputs, run.kinds, options, run.url_lists)
    for index, chunk in enumerate(chunks(items, options.shard_size)):
        done.total_shards = index + 1
        if index % options.num_shards != options.shard_index:
            continue
        key = shard_key(run.run_key, index, chunk)
        estimate.shard_started(index, chunk)
        finished = finished_shard(shards, index, key)
        if finished is not None:
            done.counts[index] = finished
            estimate.shard_done(shards, index)
            done.reused += 1
            bar.advance(finished.read)
            bar.shard_done(index, reused=True)
            continue
        task = ShardTask(
            index, key, tuple(chunk), str(shards), cloze, options.batch_size, options.strict
        )
        done.processed += 1
        if pool is None:
            done.counts[index] = process_shard(task, run.pipeline.nlp, on_record=bar.advance)
            done.records_processed += done.counts[index].read
            estimate.shard_done(shards, index)
            bar.shard_done(index)
        else:
            while pool.in_flight >= 2 * pool.slots:
                collect()
            pool.submit(task)
    while pool is not None and pool.in_flight:
        collect()


def _write_manifest(run: PreparedRun, done: _Progress) -> dict:
    """The run's manifest; a whole run also moves its dataset into place (``_finish``)."""
    options, inputs = run.options, run.inputs
    ordered = sorted(done.counts)
    part = (
        {
            "num_shards": options.num_shards,
            "shard_index": options.shard_index,
            "total_shards": done.total_shards,
            "shard_indices": ordered,
        }
        if run.partial
        else None
    )
    manifest = build_manifest(
        inputs=[{"path": input_identity(p, k), "kind": k} for p, k in zip(inputs, run.kinds)],
        options=options.to_json(),
        pipeline=run.pipeline.info,
        toolkit_version=__version__,
        grouping=grouping_info(),
        run_key=run.run_key,
        counts=total(done.counts[i] for i in ordered),
        num_shards=done.total_shards,
        partial=part,
        synthetic=synthetic_origin(inputs, options.url_lists),
    )
    if run.partial:
        write_json_atomic(run.out / MANIFEST_NAME, manifest)
    else:
        _finish(run.out, [shard_paths(run.shards, i)[0] for i in ordered], manifest)
        shutil.rmtree(run.shards)
    return manifest


def merge(
    parts: Sequence[str | os.PathLike],
    output: str | os.PathLike,
    *,
    overwrite: bool = False,
) -> PreprocessResult:
    """Join the part directories of a ``num_shards`` run into one dataset.

    The result (dataset and manifest) is the one a single run with the same options gives;
    the manifest adds ``merged_from``.

    Raises:
        UserError: a directory is not a part, the parts come from different runs, or a
            shard is missing or given twice.
        OutputInUse: another run writes ``output``.
        OutputError: the disk is full, the folder read-only, ... (nothing is left behind).
    """
    started = time.perf_counter()
    out = Path(output)
    found = read_parts(parts)
    first, counts, files, expected = found.first, found.counts, found.files, found.total_shards
    options = {**first["options"], "num_shards": 1, "shard_index": 0}
    manifest = build_manifest(
        inputs=first["inputs"],
        options=options,
        pipeline=first["spacy"],
        toolkit_version=first["toolkit"]["version"],
        grouping=first.get("grouping"),
        run_key=first["run_key"],
        counts=total(counts),
        num_shards=expected,
        synthetic=first.get("synthetic"),
    )
    manifest["merged_from"] = [str(Path(p).resolve()) for p in parts]
    if out.resolve() in {Path(p).resolve() for p in parts}:
        raise UserError(f"the merge output {out} is one of the parts; choose a new directory")
    with writing(out, "merge") as guard:
        prepare_output(out, None, overwrite)
        # A merge never resumes: a failed one leaves nothing, so that it can simply be rerun.
        guard.cleanups.append(lambda: clear_output(out))
        _finish(out, files, manifest)
    return PreprocessResult(out, manifest, "done", seconds=time.perf_counter() - started)
