"""The preprocessing driver: raw stories -> anonymized cloze dataset, parallel and resumable.

How a run goes (``preprocess``):

1. The inputs are read in order (``sources.iter_stories`` / ``questions.iter_questions``),
   each record gets its split (the source's, else ``--url-lists``, else a hash of the story
   id) and the stream is cut into *shards* of ``shard_size`` records: shard ``k`` holds
   records ``k*S .. (k+1)*S - 1``, so the assignment depends on the input order only.
2. Each shard is processed by one worker (a process holding the spaCy pipeline, loaded once):
   ``nlp.pipe`` (batched NER) over the articles, ``nlp.make_doc`` over the highlights,
   ``cloze.make_examples``. A story over the token cap is skipped before NER. The worker
   writes the shard's examples to ``DIR/shards/shard-NNNNNN.parquet`` and its counts to
   ``shard-NNNNNN.json``, each through a temporary file and a rename; the JSON, written
   last, marks the shard finished. At most ``2 * num_proc`` shards are in flight, so memory
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
"""

from __future__ import annotations

import hashlib
import json
import multiprocessing
import os
import queue
import shutil
import signal
import time
import traceback
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Literal

import datasets
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from rich.console import Console
from rich.progress import BarColumn, Progress, ProgressColumn, TextColumn, TimeElapsedColumn
from rich.text import Text
from spacy.language import Language

from attentive_reader import __version__
from attentive_reader.corpus.cloze import ClozeOptions, count_tokens, make_examples
from attentive_reader.corpus.entities import (
    DEFAULT_LABELS,
    GROUPING_RULES_VERSION,
    grouping_info,
    load_pipeline,
    pipeline_info,
    resolve_model,
)
from attentive_reader.corpus.manifest import (
    MANIFEST_NAME,
    ShardCounts,
    build_manifest,
    read_manifest,
    total,
    write_json_atomic,
)
from attentive_reader.corpus.questions import iter_questions
from attentive_reader.corpus.records import CLOZE_FEATURES, SPLITS, ClozeExample, Skip, Story
from attentive_reader.corpus.sources import (
    UrlLists,
    detect_kind,
    hash_split,
    iter_stories,
    split_input,
    url_sha1,
)
from attentive_reader.errors import UserError
from attentive_reader.faults import WriteGuard, format_size, is_write_fault, size_of, writing

SHARDS_DIR = "shards"
TMP_DIR = ".tmp"
RUN_FILE = "run.json"
# Everything a run may leave in its output directory (``--overwrite`` removes only these).
# ".encoded": the token ids ClozeDataModule caches inside a dataset (data/encoded.py).
OUTPUT_ENTRIES = (MANIFEST_NAME, "dataset_dict.json", *SPLITS, SHARDS_DIR, TMP_DIR, ".encoded")
# Examples buffered by a worker before they are written to the shard's parquet file.
ROWS_PER_WRITE = 512

# The stored schema of a shard: the dataset's schema plus the split of each example.
SHARD_SCHEMA = CLOZE_FEATURES.arrow_schema.append(pa.field("split", pa.string()))


@dataclass(frozen=True)
class PreprocessOptions:
    """Every option of a preprocessing run.

    Attributes:
        spacy_model: spaCy pipeline name or directory (``nlp.to_disk``); ``None`` picks an
            installed default (``entities.resolve_model``).
        labels: NER labels that count as entities.
        lowercase: lowercase context and query words (markers never are).
        max_context_tokens: skip stories whose article has more tokens; ``None``: no cap.
        url_lists: directory with ``all_train.txt`` / ``all_val.txt`` / ``all_test.txt``;
            stories listed in none of them are skipped (``not_in_url_lists``).
        split_fractions: train / validation / test fractions for stories that get their
            split from a hash of their id.
        hf_config: configuration of a Hugging Face hub dataset (e.g. ``3.0.0``).
        hf_splits: the hub dataset's splits to read (all when ``None``).
        num_proc: worker processes (1: everything in this process).
        batch_size: articles per ``nlp.pipe`` batch.
        shard_size: records per shard (the unit of parallel work and of resuming).
        num_shards: number of parts the shards are divided into (several machines).
        shard_index: the part this run processes, ``0 <= shard_index < num_shards``.
        strict: stop at the first unreadable input or failing story instead of counting it.
        overwrite: replace an existing output directory.
    """

    spacy_model: str | None = None
    labels: tuple[str, ...] = DEFAULT_LABELS
    lowercase: bool = True
    max_context_tokens: int | None = 2000
    url_lists: str | None = None
    split_fractions: tuple[float, float, float] = (0.9, 0.05, 0.05)
    hf_config: str | None = None
    hf_splits: tuple[str, ...] | None = None
    num_proc: int = 1
    batch_size: int = 64
    shard_size: int = 256
    num_shards: int = 1
    shard_index: int = 0
    strict: bool = False
    overwrite: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "labels", tuple(self.labels))
        object.__setattr__(self, "split_fractions", tuple(float(f) for f in self.split_fractions))
        if self.hf_splits is not None:
            object.__setattr__(self, "hf_splits", tuple(self.hf_splits))
        for name in ("num_proc", "batch_size", "shard_size", "num_shards"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        if not 0 <= self.shard_index < self.num_shards:
            raise ValueError(
                f"shard_index must be in 0..{self.num_shards - 1} (num_shards={self.num_shards}), "
                f"got {self.shard_index}"
            )
        fractions = self.split_fractions
        if len(fractions) != 3 or any(f < 0 for f in fractions) or abs(sum(fractions) - 1) > 1e-6:
            raise ValueError(
                "split_fractions must be three non-negative numbers (train, validation, test) "
                f"summing to 1, e.g. 0.9 0.05 0.05; got {list(fractions)}"
            )
        # ClozeOptions validates labels and max_context_tokens.
        self.cloze_options()

    def cloze_options(self) -> ClozeOptions:
        """The options of ``cloze.make_examples``."""
        return ClozeOptions(
            labels=self.labels,
            lowercase=self.lowercase,
            max_context_tokens=self.max_context_tokens,
        )

    def to_json(self) -> dict:
        """Every option, as stored in the manifest."""
        data = asdict(self)
        data["labels"] = list(self.labels)
        data["split_fractions"] = list(self.split_fractions)
        data["hf_splits"] = list(self.hf_splits) if self.hf_splits is not None else None
        return data


@dataclass(frozen=True)
class WorkItem:
    """One record of the input stream with its split.

    Attributes:
        split: ``train`` / ``validation`` / ``test`` (``None`` for a ``Skip``).
        record: a story to process, an example read from a ``.question`` file, or a skip.
    """

    split: str | None
    record: Story | ClozeExample | Skip


@dataclass(frozen=True)
class ShardTask:
    """One shard of work for a worker.

    Attributes:
        index: the shard number.
        key: its shard key (resuming reuses a finished shard with the same key).
        items: its records, in input order.
        directory: where the shard's files go (``DIR/shards``).
        cloze: options of ``make_examples``.
        batch_size: articles per ``nlp.pipe`` batch.
        strict: raise on a story that fails instead of counting it as skipped.
    """

    index: int
    key: str
    items: tuple[WorkItem, ...]
    directory: str
    cloze: ClozeOptions
    batch_size: int
    strict: bool


@dataclass
class PreprocessResult:
    """What a run did.

    Attributes:
        output: the output directory.
        manifest: the manifest written there.
        status: ``done`` (a dataset or part was written) or ``up_to_date`` (the directory
            already held the complete output of the same run; nothing was done).
        processed_shards: shards processed by this run.
        reused_shards: finished shards reused from an interrupted run.
        seconds: wall time.
        records_processed: records processed by this run (reused shards not counted).
    """

    output: Path
    manifest: dict
    status: Literal["done", "up_to_date"] = "done"
    processed_shards: int = 0
    reused_shards: int = 0
    seconds: float = 0.0
    records_processed: int = 0


# --------------------------------------------------------------------------- inputs


def _input_kinds(inputs: Sequence[str]) -> list[str]:
    if not inputs:
        raise UserError(
            "no input given: name .story directories, archives, data files or .question directories"
        )
    return [detect_kind(path) for path in inputs]


def _input_identity(input: str, kind: str) -> str:
    """An absolute path for a local input (keeping a ``SPLIT=`` prefix), the name for a hub
    dataset."""
    if kind == "hf_hub":
        return input
    split, path = split_input(input)
    resolved = str(Path(path).resolve())
    return f"{split}={resolved}" if split is not None else resolved


def _story_split(
    story: Story, url_lists: UrlLists | None, fractions: tuple[float, float, float]
) -> str | Skip:
    if story.split is not None:
        return story.split
    if url_lists is not None:
        split = url_lists.split_of(story.id)
        if split is None and story.url:
            split = url_lists.split_of(url_sha1(story.url))
        if split is None:
            return Skip(
                story.source or story.id,
                "not_in_url_lists",
                f"story {story.id}: its url is in none of the url lists",
            )
        return split
    return hash_split(story.id, fractions)


def iter_items(
    inputs: Sequence[str],
    kinds: Sequence[str],
    options: PreprocessOptions,
    url_lists: UrlLists | None = None,
) -> Iterator[WorkItem]:
    """The records of all inputs, in order, each with its split.

    Splits: the source's (Hugging Face splits, ``.question`` folder names), else the url
    lists, else ``hash_split`` of the story id with ``options.split_fractions``.
    """
    fractions = options.split_fractions
    for path, kind in zip(inputs, kinds):
        if kind == "questions":
            for entry in iter_questions(path, strict=options.strict):
                if isinstance(entry, Skip):
                    yield WorkItem(None, entry)
                    continue
                split, example = entry
                if split is None and url_lists is not None:
                    split = url_lists.split_of(example.story_id)
                if split is None:
                    split = hash_split(example.story_id, fractions)
                yield WorkItem(split, example)
            continue
        for record in iter_stories(
            path, hf_config=options.hf_config, hf_splits=options.hf_splits, strict=options.strict
        ):
            if isinstance(record, Skip):
                yield WorkItem(None, record)
                continue
            split = _story_split(record, url_lists, fractions)
            if isinstance(split, Skip):
                yield WorkItem(None, split)
            else:
                yield WorkItem(split, record)


def _item_json(item: WorkItem) -> list:
    record = item.record
    if isinstance(record, ClozeExample):
        return ["question", item.split, record.to_row()]
    kind = "story" if isinstance(record, Story) else "skip"
    return [kind, item.split, asdict(record)]


def shard_key(run_key: str, index: int, items: Iterable[WorkItem]) -> str:
    """The identity of a shard's work: the run key, its number and its records."""
    digest = hashlib.sha1(f"{run_key}:{index}".encode())
    for item in items:
        digest.update(json.dumps(_item_json(item), ensure_ascii=False).encode())
        digest.update(b"\n")
    return digest.hexdigest()


def _chunks(items: Iterable[WorkItem], size: int) -> Iterator[list[WorkItem]]:
    chunk: list[WorkItem] = []
    for item in items:
        chunk.append(item)
        if len(chunk) == size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


# --------------------------------------------------------------------------- one shard


def _shard_paths(directory: Path, index: int) -> tuple[Path, Path]:
    return directory / f"shard-{index:06d}.parquet", directory / f"shard-{index:06d}.json"


def process_shard(
    task: ShardTask,
    nlp: Language | None,
    on_record: Callable[[int], None] | None = None,
) -> ShardCounts:
    """Process one shard and write its files (examples, then counts) atomically.

    Args:
        task: the shard.
        nlp: the NER pipeline (``None`` only when the shard holds no story).
        on_record: called with 1 after each record (progress).

    Returns:
        The shard's counts (also written to its JSON file).

    Raises:
        UserError: with ``task.strict``, the first story that fails.
    """
    directory = Path(task.directory)
    parquet_path, json_path = _shard_paths(directory, task.index)
    tmp = directory / f".{parquet_path.name}.tmp-{os.getpid()}"
    counts = ShardCounts()
    rows: list[dict] = []
    cap = task.cloze.max_context_tokens

    def ner_inputs() -> Iterator[tuple[object, tuple[Story, object]]]:
        assert nlp is not None
        for item in task.items:
            if isinstance(item.record, Story):
                doc = nlp.make_doc(item.record.article)
                if cap is not None and count_tokens(doc) > cap:
                    # Skipped anyway (make_examples checks the cap first): no NER for it.
                    yield nlp.make_doc(""), (item.record, doc)
                else:
                    yield doc, (item.record, None)

    docs = (
        nlp.pipe(ner_inputs(), as_tuples=True, batch_size=task.batch_size)
        if nlp is not None and any(isinstance(i.record, Story) for i in task.items)
        else iter(())
    )
    writer = pq.ParquetWriter(tmp, SHARD_SCHEMA)
    try:
        for item in task.items:
            counts.read += 1
            record = item.record
            if isinstance(record, Skip):
                counts.add_skip(record)
            elif isinstance(record, ClozeExample):
                counts.question_files += 1
                counts.add_question(item.split, record)
                rows.append({**record.to_row(), "split": item.split})
            else:
                counts.stories += 1
                doc, (story, raw_doc) = next(docs)
                article_doc = raw_doc if raw_doc is not None else doc
                result = _story_examples(story, article_doc, nlp, task)
                if isinstance(result, Skip):
                    counts.add_skip(result)
                else:
                    counts.add_story(item.split, result)
                    rows.extend({**e.to_row(), "split": item.split} for e in result)
            if len(rows) >= ROWS_PER_WRITE:
                writer.write_table(pa.Table.from_pylist(rows, schema=SHARD_SCHEMA))
                rows.clear()
            if on_record is not None:
                on_record(1)
        if rows:
            writer.write_table(pa.Table.from_pylist(rows, schema=SHARD_SCHEMA))
        writer.close()
    except BaseException:
        try:  # closing flushes, and fails again on a full disk: keep the first error
            writer.close()
        except OSError:
            pass
        tmp.unlink(missing_ok=True)
        raise
    os.replace(tmp, parquet_path)
    write_json_atomic(json_path, {"index": task.index, "key": task.key, "counts": counts.to_json()})
    return counts


def _story_examples(
    story: Story, article_doc: object, nlp: Language | None, task: ShardTask
) -> list[ClozeExample] | Skip:
    """``make_examples`` for one story; an unexpected failure is a counted skip."""
    assert nlp is not None
    try:
        highlight_docs = [nlp.make_doc(h) for h in story.highlights]
        return make_examples(story, article_doc, highlight_docs, task.cloze)
    except Exception as error:  # one bad story never ends the run unless strict
        if task.strict:
            raise UserError(
                f"{story.source or story.id}: story {story.id} failed: "
                f"{type(error).__name__}: {error} (rerun without --strict to skip it)"
            ) from error
        return Skip(
            story.source or story.id,
            "error",
            f"story {story.id}: {type(error).__name__}: {error}",
        )


def _finished_shard(directory: Path, index: int, key: str) -> ShardCounts | None:
    """The counts of a finished shard with this key, else ``None``."""
    parquet_path, json_path = _shard_paths(directory, index)
    try:
        data = json.loads(json_path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if data.get("key") != key or not parquet_path.is_file():
        return None
    return ShardCounts.from_json(data["counts"])


# --------------------------------------------------------------------------- workers

# The pipeline of this process: set before forking so that forked workers inherit it.
_NLP: Language | None = None


def _worker_main(tasks, results, model: str | None, parent: int) -> None:
    """A worker process: loads the pipeline once, then processes shards until told to stop."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is handled by the parent
    nlp = _NLP if _NLP is not None else load_pipeline(model)
    while True:
        try:
            task = tasks.get(timeout=1.0)
        except queue.Empty:
            if os.getppid() != parent:  # the parent died (e.g. kill -9): stop
                return
            continue
        if task is None:
            return
        try:
            counts = process_shard(task, nlp)
            results.put((task.index, counts.to_json(), None))
        except UserError as error:
            results.put((task.index, None, UserError(str(error))))
        except BaseException as error:  # report, with its traceback, to the parent
            if is_write_fault(error):  # a full disk, a read-only folder: one line, by the parent
                assert isinstance(error, OSError)
                fault = OSError(error.errno, error.strerror, error.filename)
                results.put((task.index, None, fault))
                continue
            results.put(
                (
                    task.index,
                    None,
                    RuntimeError(
                        f"shard {task.index} failed in a worker: {type(error).__name__}: "
                        f"{error}\n{traceback.format_exc()}"
                    ),
                )
            )


class _WorkerPool:
    """``num_proc`` worker processes fed through a task queue (fork where available)."""

    def __init__(self, num_proc: int, model: str | None, nlp: Language | None) -> None:
        global _NLP
        methods = multiprocessing.get_all_start_methods()
        context = multiprocessing.get_context("fork" if "fork" in methods else "spawn")
        _NLP = nlp  # inherited by forked workers; spawned ones load the model themselves
        self.tasks = context.Queue()
        self.results = context.Queue()
        self.in_flight = 0
        self.processes = [
            context.Process(
                target=_worker_main,
                args=(self.tasks, self.results, model, os.getpid()),
                daemon=True,
            )
            for _ in range(num_proc)
        ]
        try:
            for process in self.processes:
                process.start()
        finally:
            _NLP = None

    def submit(self, task: ShardTask) -> None:
        self.tasks.put(task)
        self.in_flight += 1

    def collect(self) -> tuple[int, ShardCounts]:
        """Wait for the next finished shard; raise what a worker raised."""
        while True:
            try:
                index, counts, error = self.results.get(timeout=1.0)
            except queue.Empty:
                dead = [p for p in self.processes if p.exitcode is not None]
                if dead:
                    raise RuntimeError(
                        f"a worker process died (exit code {dead[0].exitcode}), for example "
                        "killed for lack of memory; rerun the same command to resume, with "
                        "a smaller --shard-size or --num-proc"
                    ) from None
                continue
            self.in_flight -= 1
            if error is not None:
                raise error
            return index, ShardCounts.from_json(counts)

    def close(self) -> None:
        for _ in self.processes:
            self.tasks.put(None)
        for process in self.processes:
            process.join(timeout=10)
        self.terminate()

    def terminate(self) -> None:
        for process in self.processes:
            if process.is_alive():
                process.terminate()
        for process in self.processes:
            process.join(timeout=5)


# --------------------------------------------------------------------------- output


def _run_state(run_key: str, options: PreprocessOptions) -> dict:
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


def _clear_output(out: Path) -> None:
    for name in OUTPUT_ENTRIES:
        path = out / name
        if path.is_dir():
            shutil.rmtree(path)
        elif path.exists():
            path.unlink()
    for path in out.glob(f".{MANIFEST_NAME}.tmp-*"):
        path.unlink()


def _prepare_output(
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
    manifest = read_manifest(out)
    if not overwrite and state is not None:
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
    _clear_output(out)
    left = sorted(p.name for p in out.iterdir())
    if left:
        raise UserError(
            f"--overwrite: {out} holds files that are not preprocessing output "
            f"({', '.join(left[:5])}); choose an empty or new directory"
        )
    return "fresh"


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
        os.replace(tmp / "dataset" / split, out / split)
    os.replace(tmp / "dataset" / "dataset_dict.json", out / "dataset_dict.json")


def _finish(out: Path, shard_files: Sequence[Path], manifest: dict) -> None:
    # Everything that needs space is written under DIR/.tmp; then only renames follow, the
    # manifest last, so a full disk never leaves a dataset without its manifest.
    _write_dataset(shard_files, out, manifest)
    os.replace(out / TMP_DIR / MANIFEST_NAME, out / MANIFEST_NAME)
    shutil.rmtree(out / TMP_DIR, ignore_errors=True)


# --------------------------------------------------------------------------- progress


class _RateColumn(ProgressColumn):
    def render(self, task) -> Text:
        speed = task.finished_speed or task.speed
        return Text(f"{speed:.1f} stories/s" if speed else "", style="progress.data.speed")


def _progress(console: Console, enabled: bool) -> Progress:
    return Progress(
        TextColumn("[progress.description]{task.description}"),
        BarColumn(),
        TextColumn("{task.completed:,} records"),
        _RateColumn(),
        TimeElapsedColumn(),
        console=console,
        disable=not enabled,
        transient=False,
    )


# --------------------------------------------------------------------------- the estimate


def _input_size(inputs: Sequence[str], kinds: Sequence[str]) -> int | None:
    """Bytes of all local inputs (an archive: uncompressed); ``None`` with a hub dataset."""
    size = 0
    for input, kind in zip(inputs, kinds):
        if kind == "hf_hub":
            return None
        _, path = split_input(input)
        if kind == "archive" and path.lower().endswith(("gz", "tgz")):
            try:  # gzip's trailer: the uncompressed size modulo 4 GiB
                with open(path, "rb") as f:
                    f.seek(-4, os.SEEK_END)
                    size += max(int.from_bytes(f.read(4), "little"), os.path.getsize(path))
                continue
            except OSError:
                pass
        size += size_of(path)
    return size


class _Estimate:
    """The expected output size, from the first finished shard; a warning when it won't fit.

    The peak is reached while finishing: the shards (parquet), the joined arrow streams and
    the saved dataset (arrow) are on disk together; a part run (``num_shards > 1``) writes
    its share of the shards only.
    """

    def __init__(
        self,
        inputs: Sequence[str],
        kinds: Sequence[str],
        out: Path,
        options: PreprocessOptions,
        guard: WriteGuard,
        console: Console,
        verbose: bool,
    ) -> None:
        self.total_input = _input_size(inputs, kinds)
        self.out, self.guard, self.console, self.verbose = out, guard, console, verbose
        self.num_shards = options.num_shards
        self.input_bytes: dict[int, int] = {}
        self.done = self.total_input is None

    def shard_started(self, index: int, chunk: Sequence[WorkItem]) -> None:
        if not self.done:
            self.input_bytes[index] = sum(
                len(json.dumps(_item_json(item), ensure_ascii=False).encode()) for item in chunk
            )

    def shard_done(self, shards: Path, index: int) -> None:
        if self.done or not self.input_bytes.get(index):
            return
        self.done = True
        assert self.total_input is not None
        parquet_path = _shard_paths(shards, index)[0]
        try:
            parquet = parquet_path.stat().st_size
            arrow = pq.read_table(parquet_path).nbytes
        except OSError:
            return
        scale = self.total_input / self.input_bytes[index]
        if self.num_shards > 1:
            expected = peak = int(parquet * scale / self.num_shards)
        else:
            expected, peak = int(arrow * scale), int((parquet + 2 * arrow) * scale)
        self.guard.needed = peak
        free = shutil.disk_usage(self.out).free
        more = max(peak - size_of(self.out), 0)
        if self.verbose:
            self.console.print(
                f"expected output: about {format_size(expected)} (about {format_size(peak)} "
                f"while finishing), estimated from the first shard; {format_size(free)} free "
                f"on the disk holding {self.out}",
                soft_wrap=True,
                highlight=False,
            )
        if free < more:
            self.console.print(
                f"warning: the disk holding {self.out} has {format_size(free)} free, less than "
                f"the about {format_size(more)} this run still needs; free space, or the run "
                "stops when the disk is full (then run the same command again to continue)",
                soft_wrap=True,
                highlight=False,
            )


# --------------------------------------------------------------------------- the run


def run_key_fields(
    inputs: Sequence[str],
    kinds: Sequence[str],
    options: PreprocessOptions,
    model: dict | None,
) -> dict:
    """What identifies a run's output (options that only change speed are left out)."""
    return {
        "toolkit": __version__,
        "grouping_rules": GROUPING_RULES_VERSION,
        "inputs": [{"path": _input_identity(p, k), "kind": k} for p, k in zip(inputs, kinds)],
        "model": model,
        "labels": list(options.labels),
        "lowercase": options.lowercase,
        "max_context_tokens": options.max_context_tokens,
        "url_lists": str(Path(options.url_lists).resolve()) if options.url_lists else None,
        "split_fractions": list(options.split_fractions),
        "hf_config": options.hf_config,
        "hf_splits": list(options.hf_splits) if options.hf_splits is not None else None,
        "shard_size": options.shard_size,
        "batch_size": options.batch_size,
    }


def _model_identity(name: str | None) -> str:
    resolved = resolve_model(name)
    return str(Path(resolved).resolve()) if Path(resolved).is_dir() else resolved


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
            ``.question`` directories or hub dataset names, in order.
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
    with writing(output, "preprocess") as guard:
        return _preprocess(inputs, Path(output), options, console, progress, guard)


def _preprocess(
    inputs: Sequence[str],
    out: Path,
    options: PreprocessOptions | None,
    console: Console | None,
    progress: bool | None,
    guard: WriteGuard,
) -> PreprocessResult:
    started = time.perf_counter()
    options = options or PreprocessOptions()
    console = console or Console(stderr=True)
    kinds = _input_kinds(inputs)
    url_lists = UrlLists.from_dir(options.url_lists) if options.url_lists else None

    nlp: Language | None = None
    model: dict | None = None
    pipeline: dict | None = None
    if any(kind != "questions" for kind in kinds):
        nlp = load_pipeline(options.spacy_model)
        pipeline = pipeline_info(nlp)
        model = {
            "model": _model_identity(options.spacy_model),
            "name": pipeline["name"],
            "version": pipeline["version"],
        }
    fields = run_key_fields(inputs, kinds, options, model)
    run_key = hashlib.sha1(json.dumps(fields, sort_keys=True).encode()).hexdigest()
    state = _run_state(run_key, options)
    partial = options.num_shards > 1

    status = _prepare_output(out, state, options.overwrite)
    if status == "up_to_date":
        if not partial:  # left behind by a run killed after it finished
            shutil.rmtree(out / SHARDS_DIR, ignore_errors=True)
        shutil.rmtree(out / TMP_DIR, ignore_errors=True)
        return PreprocessResult(out, read_manifest(out) or {}, "up_to_date")
    shards = out / SHARDS_DIR
    shards.mkdir(exist_ok=True)
    for stale in shards.glob(".*.tmp-*"):
        stale.unlink()
    write_json_atomic(shards / RUN_FILE, state)

    cloze = options.cloze_options()
    estimate = _Estimate(inputs, kinds, out, options, guard, console, progress is not False)
    counts: dict[int, ShardCounts] = {}
    processed = reused = records_processed = 0
    total_shards = 0
    pool = _WorkerPool(options.num_proc, options.spacy_model, nlp) if options.num_proc > 1 else None
    bar = _progress(console, console.is_terminal if progress is None else progress)
    try:
        with bar:
            task_id = bar.add_task("preprocessing", total=None)

            def advance(n: int) -> None:
                bar.advance(task_id, n)

            def collect() -> None:
                nonlocal records_processed
                assert pool is not None
                index, shard_counts = pool.collect()
                counts[index] = shard_counts
                estimate.shard_done(shards, index)
                records_processed += shard_counts.read
                advance(shard_counts.read)

            items = iter_items(inputs, kinds, options, url_lists)
            for index, chunk in enumerate(_chunks(items, options.shard_size)):
                total_shards = index + 1
                if index % options.num_shards != options.shard_index:
                    continue
                key = shard_key(run_key, index, chunk)
                estimate.shard_started(index, chunk)
                finished = _finished_shard(shards, index, key)
                if finished is not None:
                    counts[index] = finished
                    estimate.shard_done(shards, index)
                    reused += 1
                    advance(finished.read)
                    continue
                task = ShardTask(
                    index, key, tuple(chunk), str(shards), cloze, options.batch_size, options.strict
                )
                processed += 1
                if pool is None:
                    counts[index] = process_shard(task, nlp, on_record=advance)
                    records_processed += counts[index].read
                    estimate.shard_done(shards, index)
                else:
                    while pool.in_flight >= 2 * options.num_proc:
                        collect()
                    pool.submit(task)
            while pool is not None and pool.in_flight:
                collect()
    except BaseException as error:
        if pool is not None:
            pool.terminate()
        finished = len(list(shards.glob("shard-*.json")))
        if not finished and status == "fresh":  # nothing worth resuming: leave no debris
            try:
                _clear_output(out)
            except OSError:  # a read-only folder: nothing was written there anyway
                pass
        elif isinstance(error, KeyboardInterrupt):
            console.print(
                f"interrupted: {finished} finished shards are kept in {shards}; run the "
                "same command again to resume",
                soft_wrap=True,
            )
        raise
    if pool is not None:
        pool.close()

    if total_shards == 0:
        _clear_output(out)
        raise UserError(f"no story or question was found in {', '.join(inputs)}")
    ordered = sorted(counts)
    summed = total(counts[i] for i in ordered)
    input_list = [{"path": _input_identity(p, k), "kind": k} for p, k in zip(inputs, kinds)]
    part = (
        {
            "num_shards": options.num_shards,
            "shard_index": options.shard_index,
            "total_shards": total_shards,
            "shard_indices": ordered,
        }
        if partial
        else None
    )
    manifest = build_manifest(
        inputs=input_list,
        options=options.to_json(),
        pipeline=pipeline,
        toolkit_version=__version__,
        grouping=grouping_info(),
        run_key=run_key,
        counts=summed,
        num_shards=total_shards,
        partial=part,
    )
    if partial:
        write_json_atomic(out / MANIFEST_NAME, manifest)
    else:
        _finish(out, [_shard_paths(shards, i)[0] for i in ordered], manifest)
        shutil.rmtree(shards)
    return PreprocessResult(
        out,
        manifest,
        "done",
        processed_shards=processed,
        reused_shards=reused,
        seconds=time.perf_counter() - started,
        records_processed=records_processed,
    )


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
        parquet_path, json_path = _shard_paths(owner[index] / SHARDS_DIR, index)
        try:
            data = json.loads(json_path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            raise UserError(f"{json_path} is missing or unreadable; rerun that part") from None
        if not parquet_path.is_file():
            raise UserError(f"{parquet_path} is missing; rerun that part")
        counts.append(ShardCounts.from_json(data["counts"]))
        files.append(parquet_path)
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
    )
    manifest["merged_from"] = [str(Path(p).resolve()) for p in parts]
    if out.resolve() in {Path(p).resolve() for p in parts}:
        raise UserError(f"the merge output {out} is one of the parts; choose a new directory")
    with writing(out, "merge") as guard:
        _prepare_output(out, None, overwrite)
        # A merge never resumes: a failed one leaves nothing, so that it can simply be rerun.
        guard.cleanups.append(lambda: _clear_output(out))
        _finish(out, files, manifest)
    return PreprocessResult(out, manifest, "done", seconds=time.perf_counter() - started)
