"""The input stream cut into shards, and the work on one shard.

Every record of the inputs gets its split (``iter_items``) and the stream is cut into shards of
``shard_size`` records (``chunks``); a shard's key (``shard_key``) names its work, so a finished
shard with the same key is reused on resume (``finished_shard``). ``process_shard`` does one
shard: NER over its articles, cloze examples, then the shard's parquet file and its counts
(``shard-NNNNNN.json``, written last: it marks the shard finished), each through a temporary
file and a rename. It runs in the driver's process or in a worker (``corpus.workers``).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from spacy.language import Language

from attentive_reader.common.errors import UserError
from attentive_reader.common.fileio import replacing, write_json_atomic
from attentive_reader.corpus.cloze import ClozeOptions, count_tokens, make_examples
from attentive_reader.corpus.manifest import ShardCounts
from attentive_reader.corpus.options import PreprocessOptions
from attentive_reader.corpus.questions import iter_questions
from attentive_reader.corpus.records import CLOZE_FEATURES, ClozeExample, Skip, Story
from attentive_reader.corpus.sources import (
    QUESTION_KINDS,
    Publisher,
    UrlLists,
    detect_kind,
    hash_split,
    iter_stories,
    publisher_of_url,
    split_input,
    url_sha1,
)

# Examples buffered by a worker before they are written to the shard's parquet file.
ROWS_PER_WRITE = 512

# The stored schema of a shard: the dataset's schema plus the split of each example.
SHARD_SCHEMA = CLOZE_FEATURES.arrow_schema.append(pa.field("split", pa.string()))


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


# --------------------------------------------------------------------------- inputs


def input_kinds(inputs: Sequence[str]) -> list[str]:
    """The kind of every input (``sources.detect_kind``); a ``UserError`` when there is none."""
    if not inputs:
        raise UserError(
            "no input given: name .story directories, archives, data files or .question directories"
        )
    return [detect_kind(path) for path in inputs]


def input_identity(input: str, kind: str) -> str:
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


def _other_publisher(
    story_id: str,
    url: str | None,
    source: str,
    url_lists: UrlLists | None,
    publisher: Publisher | None,
) -> Skip | None:
    """A skip for a record that is not of ``publisher`` (by its listed url, else its own),
    else ``None``."""
    if publisher is None:
        return None
    listed = url_lists.url_of(story_id) if url_lists is not None else None
    if listed is None and url and url_lists is not None:
        listed = url_lists.url_of(url_sha1(url))
    found = publisher_of_url(listed or url or "")
    if found == publisher:
        return None
    if found is None:
        return Skip(
            source,
            "not_in_url_lists",
            f"story {story_id}: its url is in none of the url lists, so its publisher is "
            f"unknown (--publisher {publisher})",
        )
    return Skip(source, "other_publisher", f"story {story_id}: {found}, not {publisher}")


def _question_items(
    path: str, options: PreprocessOptions, url_lists: UrlLists | None
) -> Iterator[WorkItem]:
    for entry in iter_questions(path, strict=options.strict):
        if isinstance(entry, Skip):
            yield WorkItem(None, entry)
            continue
        split, example = entry
        source = f"{path}:{example.id}"
        other = _other_publisher(
            example.story_id, example.url, source, url_lists, options.publisher
        )
        if other is not None:
            yield WorkItem(None, other)
            continue
        if split is None and url_lists is not None:
            split = url_lists.split_of(example.story_id)
        if split is None:
            split = hash_split(example.story_id, options.split_fractions)
        yield WorkItem(split, example)


def iter_items(
    inputs: Sequence[str],
    kinds: Sequence[str],
    options: PreprocessOptions,
    url_lists: UrlLists | None = None,
) -> Iterator[WorkItem]:
    """The records of all inputs, in order, each with its split.

    Splits: the source's (Hugging Face splits, ``.question`` folder names, in a folder or an
    archive), else the url lists, else ``hash_split`` of the story id with
    ``options.split_fractions``. With ``options.publisher``, the records of the other
    publisher are skips (``other_publisher``), and so are those whose publisher the url
    lists do not tell (``not_in_url_lists``).
    """
    for path, kind in zip(inputs, kinds):
        if kind in QUESTION_KINDS:
            yield from _question_items(path, options, url_lists)
            continue
        for record in iter_stories(
            path, hf_config=options.hf_config, hf_splits=options.hf_splits, strict=options.strict
        ):
            if isinstance(record, Skip):
                yield WorkItem(None, record)
                continue
            split = _story_split(record, url_lists, options.split_fractions)
            if not isinstance(split, Skip):
                source = record.source or record.id
                other = _other_publisher(
                    record.id, record.url, source, url_lists, options.publisher
                )
                split = other or split
            if isinstance(split, Skip):
                yield WorkItem(None, split)
            else:
                yield WorkItem(split, _with_listed_url(record, url_lists))


def _with_listed_url(story: Story, url_lists: UrlLists | None) -> Story:
    """A story without a url of its own (a ``.story`` file) takes the url the url lists give
    its id, so that its examples (and an ``export``) keep the real url."""
    if story.url is not None or url_lists is None:
        return story
    listed = url_lists.url_of(story.id)
    return story if listed is None else replace(story, url=listed)


def item_json(item: WorkItem) -> list:
    """A record as JSON values (hashed into the shard key; sized for the estimate)."""
    record = item.record
    if isinstance(record, ClozeExample):
        return ["question", item.split, record.to_row()]
    kind = "story" if isinstance(record, Story) else "skip"
    return [kind, item.split, asdict(record)]


def shard_key(run_key: str, index: int, items: Iterable[WorkItem]) -> str:
    """The identity of a shard's work: the run key, its number and its records."""
    digest = hashlib.sha1(f"{run_key}:{index}".encode())
    for item in items:
        digest.update(json.dumps(item_json(item), ensure_ascii=False).encode())
        digest.update(b"\n")
    return digest.hexdigest()


def chunks(items: Iterable[WorkItem], size: int) -> Iterator[list[WorkItem]]:
    """The stream cut into shards of ``size`` records (the last one may be shorter)."""
    chunk: list[WorkItem] = []
    for item in items:
        chunk.append(item)
        if len(chunk) == size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


# --------------------------------------------------------------------------- one shard


def shard_paths(directory: Path, index: int) -> tuple[Path, Path]:
    """The parquet file (examples) and JSON file (counts) of shard ``index``."""
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
    parquet_path, json_path = shard_paths(Path(task.directory), task.index)
    counts = ShardCounts()
    # The temporary file is named by host and process: the workers of a cluster share the
    # folder.
    with replacing(parquet_path) as tmp:
        writer = pq.ParquetWriter(tmp, SHARD_SCHEMA)
        try:
            _write_shard_rows(task, nlp, writer, counts, on_record)
            writer.close()
        except BaseException:
            try:  # closing flushes, and fails again on a full disk: keep the first error
                writer.close()
            except OSError:
                pass
            raise
    write_json_atomic(json_path, {"index": task.index, "key": task.key, "counts": counts.to_json()})
    return counts


def _ner_docs(task: ShardTask, nlp: Language | None) -> Iterator[tuple[object, tuple]]:
    """``(NER doc, (story, tokenized doc or None))`` per story of the shard, in order; a story
    over the context cap gets an empty NER doc (``make_examples`` skips it first anyway)."""
    if nlp is None or not any(isinstance(i.record, Story) for i in task.items):
        return iter(())
    cap = task.cloze.max_context_tokens
    ner: Language = nlp

    def ner_inputs() -> Iterator[tuple[object, tuple[Story, object]]]:
        for item in task.items:
            if isinstance(item.record, Story):
                doc = ner.make_doc(item.record.article)
                if cap is not None and count_tokens(doc) > cap:
                    yield ner.make_doc(""), (item.record, doc)
                else:
                    yield doc, (item.record, None)

    return ner.pipe(ner_inputs(), as_tuples=True, batch_size=task.batch_size)


def _write_shard_rows(
    task: ShardTask,
    nlp: Language | None,
    writer: pq.ParquetWriter,
    counts: ShardCounts,
    on_record: Callable[[int], None] | None,
) -> None:
    """Count every record of the shard and write its examples' rows, in batches."""
    docs = _ner_docs(task, nlp)
    rows: list[dict] = []
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


def finished_shard(directory: Path, index: int, key: str) -> ShardCounts | None:
    """The counts of a finished shard with this key, else ``None``."""
    parquet_path, json_path = shard_paths(directory, index)
    try:
        data = json.loads(json_path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if data.get("key") != key or not parquet_path.is_file():
        return None
    try:
        return ShardCounts.from_json(data["counts"])
    except KeyError:  # written by an older version of the toolkit: processed again
        return None
