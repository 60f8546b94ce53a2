"""Token ids encoded once per dataset and vocabulary, read memory-mapped after.

A split's ids live in a cache folder of NumPy ``.npy`` files (int32 columns with int64
offsets, as Arrow lays out list columns)::

    context.npy  context_offsets.npy      all contexts' token ids, end to end; (rows + 1,)
    query.npy    query_offsets.npy        the same for queries
                                          (a marker beyond the vocabulary's entity block is
                                          -1 - k: ``data/entity_block.py`` fits it in)
    candidates.npy candidate_offsets.npy  entity numbers (``@entity7`` -> 7)
    answer.npy                            (rows,) entity numbers
    ids.npy                               (rows,) example ids, UTF-8 bytes
    meta.json                             format, key, rows and every file's size

The folder's name holds a key: the SHA-256 of the vocabulary and of the split's fingerprint
(its Arrow files' names, sizes and modification times and the ``datasets`` fingerprint), so a
new vocabulary or a rewritten dataset gets a new folder. Readers open the files with
``mmap_mode="r"``: every process (DDP ranks, data-loader workers) shares the kernel's page
cache, and opening is a few system calls.

Building writes into a temporary folder and renames it into place, under an exclusive
``flock`` on a lock file beside it: a second process (another rank) waits for the first and
then opens its result. A folder whose ``meta.json`` does not match its key, format or file
sizes (an interrupted or damaged build) is rebuilt.

Letters: ``r`` rows (examples), ``t`` tokens of a column.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from multiprocessing import get_context
from pathlib import Path

import datasets
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from attentive_reader.common.errors import UserError
from attentive_reader.common.faults import is_write_fault
from attentive_reader.common.fileio import digest_of, place, write_text_atomic
from attentive_reader.common.locking import waiting_lock
from attentive_reader.common.markers import ENTITY_PREFIX, MARKER_PATTERN
from attentive_reader.common.upstream import dataset_fingerprint
from attentive_reader.data.entity_block import beyond_block_id
from attentive_reader.data.vocab import Vocabulary

FORMAT_VERSION = 1
CACHE_FOLDER = ".encoded"  # inside the dataset directory when it is writable
ENV_CACHE = "ATTENTIVE_READER_CACHE"
_BLOCK_ROWS = 20_000
_ARRAYS = (
    "context",
    "context_offsets",
    "query",
    "query_offsets",
    "candidates",
    "candidate_offsets",
    "answer",
    "ids",
)


class BadRow(Exception):
    """Encoding found a row that the scalar check must explain (its index in the split)."""

    def __init__(self, index: int) -> None:
        super().__init__(f"row {index}")
        self.index = index


@dataclass
class EncodedColumns:
    """The memory-mapped arrays of one encoded split (see the module docstring).

    Pickling keeps only the folder: a process that unpickles it maps the files itself
    instead of receiving copies of the arrays.

    Attributes:
        folder: the cache folder.
        rows: the number of examples ``r``.
    """

    folder: Path
    rows: int

    def __post_init__(self) -> None:
        self._arrays: dict[str, np.ndarray] = {}

    def __getstate__(self) -> dict:
        return {"folder": self.folder, "rows": self.rows}

    def __setstate__(self, state: dict) -> None:
        self.folder, self.rows = state["folder"], state["rows"]
        self._arrays = {}

    def array(self, name: str) -> np.ndarray:
        """One column, memory-mapped read-only on first use."""
        if name not in self._arrays:
            self._arrays[name] = np.load(self.folder / f"{name}.npy", mmap_mode="r")
        return self._arrays[name]

    def context_lengths(self) -> np.ndarray:
        """Stored (untruncated) context length of every example, (r,) int64."""
        return np.diff(self.array("context_offsets"))

    def span(self, column: str, offsets: str, index: int) -> np.ndarray:
        """Row ``index`` of a list column, a read-only view, (t_i,)."""
        bounds = self.array(offsets)
        return self.array(column)[bounds[index] : bounds[index + 1]]

    def example_id(self, index: int) -> str:
        return bytes(self.array("ids")[index]).decode("utf-8")


# --- keys and cache folders ----------------------------------------------------------------


def vocabulary_hash(vocab: Vocabulary) -> str:
    """SHA-256 of the vocabulary's stored form."""
    text = json.dumps(vocab.to_dict(), ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def split_fingerprint(rows: datasets.Dataset) -> str:
    """What identifies a stored split: its Arrow files (name, size, mtime) and fingerprint."""
    files = []
    for entry in rows.cache_files:
        path = Path(entry["filename"])
        stat = path.stat()
        files.append([str(path.resolve()), stat.st_size, stat.st_mtime_ns])
    parts = {"files": files, "fingerprint": dataset_fingerprint(rows), "rows": len(rows)}
    return digest_of(parts)


def cache_root(dataset_dir: Path, cache_dir: str | Path | None = None) -> Path:
    """Where the encoded splits of ``dataset_dir`` live.

    ``cache_dir`` when given; else ``<dataset_dir>/.encoded`` when it exists (also read-only:
    built ahead by ``attentive-reader encode``) or the dataset directory is writable; else
    ``$ATTENTIVE_READER_CACHE`` or ``~/.cache/attentive-reader``, in a folder named by the
    dataset directory's resolved path.
    """
    if cache_dir is not None:
        return Path(cache_dir)
    beside = dataset_dir / CACHE_FOLDER
    if beside.is_dir():
        return beside
    if not beside.exists() and os.access(dataset_dir, os.W_OK):
        return beside
    base = Path(os.environ.get(ENV_CACHE) or Path.home() / ".cache" / "attentive-reader")
    name = hashlib.sha256(str(dataset_dir.resolve()).encode("utf-8")).hexdigest()[:16]
    return base / "encoded" / name


@contextmanager
def _exclusive(lock_file: Path) -> Iterator[None]:
    """Hold ``locking.waiting_lock`` on ``lock_file`` (a second process waits).

    Raises:
        UserError: the cache folder cannot be written (something must be built there).
    """
    with ExitStack() as stack:
        try:
            stack.enter_context(waiting_lock(lock_file))
        except OSError as error:
            if not is_write_fault(error):
                raise
            raise UserError(
                f"the encoded-ids cache {lock_file.parent} cannot be written ({error.strerror}) "
                "and lacks what this run needs: build it once with `attentive-reader encode "
                "DATASET` (with the run's --max-words, --num-entities or --vocab) where it can "
                "be written, or pass --data.cache_dir DIR (a writable folder)"
            ) from None
        yield


def cached_json(root: Path, name: str, key: str, compute: Callable[[], object]) -> object:
    """A JSON value computed once and stored as ``root/<name>-<key>.json`` (atomic write)."""
    path = root / f"{name}-{key[:32]}.json"
    value = _read_json(path, key)
    if value is not None:
        return value
    with _exclusive(root / f".{name}.lock"):
        value = _read_json(path, key)
        if value is None:
            value = compute()
            write_text_atomic(path, json.dumps({"key": key, "value": value}, ensure_ascii=False))
    return value


def _read_json(path: Path, key: str) -> object | None:
    try:
        stored = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return stored.get("value") if isinstance(stored, dict) and stored.get("key") == key else None


# --- opening and building ------------------------------------------------------------------


def encoded_split(
    rows: datasets.Dataset,
    vocab: Vocabulary,
    root: Path,
    split: str,
    num_proc: int = 1,
    dataset_dir: Path | None = None,
) -> EncodedColumns:
    """The encoded columns of ``rows``: opened from the cache, or built once and stored.

    Args:
        rows: the stored split (``CLOZE_FEATURES``).
        vocab: the vocabulary to encode with.
        root: the cache root (``cache_root``).
        split: the split's name (part of the folder name).
        num_proc: worker processes for a first encoding (each encodes a range of rows).
        dataset_dir: the processed dataset directory (workers load ``rows`` from it).

    Raises:
        BadRow: a row that cannot be encoded (a candidate or an answer that is not a marker,
            an answer not among the candidates); the caller explains it.
    """
    key = digest_of(
        {
            "format": FORMAT_VERSION,
            "vocab": vocabulary_hash(vocab),
            "split": split_fingerprint(rows),
        }
    )
    folder = root / f"{split}-{key[:32]}"
    opened = _open(folder, key)
    if opened is not None:
        return opened
    with _exclusive(root / f".{split}.lock"):
        opened = _open(folder, key)  # another process may have built it while we waited
        if opened is not None:
            return opened
        if folder.exists():
            shutil.rmtree(folder)  # stale, partial or damaged
        temporary = root / f".{folder.name}.{os.getpid()}.partial"
        if temporary.exists():
            shutil.rmtree(temporary)
        temporary.mkdir(parents=True)
        try:
            _build(rows, vocab, temporary, key, num_proc, dataset_dir, split)
            place(temporary, folder)
        finally:
            shutil.rmtree(temporary, ignore_errors=True)
    opened = _open(folder, key)
    if opened is None:  # pragma: no cover - only a concurrent deletion gets here
        raise OSError(f"the encoded cache {folder} vanished while it was opened")
    return opened


def _open(folder: Path, key: str) -> EncodedColumns | None:
    """The columns in ``folder`` if its ``meta.json`` matches ``key`` and the files' sizes."""
    try:
        meta = json.loads((folder / "meta.json").read_text(encoding="utf-8"))
        if meta.get("format") != FORMAT_VERSION or meta.get("key") != key:
            return None
        for name in _ARRAYS:
            if (folder / f"{name}.npy").stat().st_size != meta["sizes"][name]:
                return None
        columns = EncodedColumns(folder, int(meta["rows"]))
        for column, offsets in _LISTS:
            bounds = columns.array(offsets)
            if len(bounds) != columns.rows + 1 or bounds[-1] != len(columns.array(column)):
                return None
        if len(columns.array("answer")) != columns.rows:
            return None
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return columns


_LISTS = (
    ("context", "context_offsets"),
    ("query", "query_offsets"),
    ("candidates", "candidate_offsets"),
)


def _selected(rows: datasets.Dataset) -> datasets.Dataset:
    """The selected rows on their own (``flatten_indices``), without datasets' progress bar in
    the training log (it is a moment's work)."""
    shown = datasets.is_progress_bar_enabled()
    datasets.disable_progress_bars()
    try:
        return rows.flatten_indices(keep_in_memory=True)
    finally:
        if shown:
            datasets.enable_progress_bars()


def _build(
    rows: datasets.Dataset,
    vocab: Vocabulary,
    folder: Path,
    key: str,
    num_proc: int,
    dataset_dir: Path | None,
    split: str,
) -> None:
    """Encode ``rows`` into preallocated ``.npy`` files in ``folder``, then write meta.json."""
    count = len(rows)
    if rows.data.num_rows != count:
        # A selection of the stored rows (--data.train_fraction): the table below would be
        # every stored row, and workers would load them all again; encode the selection here.
        rows, dataset_dir = _selected(rows), None
    table = rows.with_format("arrow").data.table  # memory-mapped
    ids = table.column("id")
    width = max(1, int(pc.max(pc.binary_length(ids)).as_py() or 1)) if count else 1
    totals = {
        column: int(pc.sum(pc.list_value_length(table.column(source))).as_py() or 0)
        for column, source in (
            ("context", "context"),
            ("query", "query"),
            ("candidates", "candidates"),
        )
    }
    shapes = {
        "context": ((totals["context"],), np.int32),
        "query": ((totals["query"],), np.int32),
        "candidates": ((totals["candidates"],), np.int32),
        "context_offsets": ((count + 1,), np.int64),
        "query_offsets": ((count + 1,), np.int64),
        "candidate_offsets": ((count + 1,), np.int64),
        "answer": ((count,), np.int32),
        "ids": ((count,), f"S{width}"),
    }
    for name, (shape, dtype) in shapes.items():
        np.lib.format.open_memmap(folder / f"{name}.npy", "w+", dtype=dtype, shape=shape).flush()
    # Each list column's offsets are known before encoding: write them, then fill the values.
    for column, offsets_name in _LISTS:
        source = "candidates" if column == "candidates" else column
        lengths = pc.list_value_length(table.column(source)).to_numpy(zero_copy_only=False)
        offsets = np.lib.format.open_memmap(folder / f"{offsets_name}.npy", "r+")
        offsets[0] = 0
        np.cumsum(lengths, out=offsets[1:])
        offsets.flush()
        del offsets
    ranges = _ranges(count, num_proc)
    task = _Task(str(folder), vocab.to_dict(), str(dataset_dir) if dataset_dir else "", split)
    if num_proc > 1 and dataset_dir is not None and len(ranges) > 1:
        with ProcessPoolExecutor(len(ranges), mp_context=get_context("spawn")) as pool:
            bad = list(pool.map(_encode_range_in_worker, [task] * len(ranges), ranges))
    else:
        bad = [_encode_range(table, vocab, folder, start, stop) for start, stop in ranges]
    failures = [index for index in bad if index is not None]
    if failures:
        raise BadRow(min(failures))
    sizes = {name: (folder / f"{name}.npy").stat().st_size for name in _ARRAYS}
    meta = {"format": FORMAT_VERSION, "key": key, "rows": count, "sizes": sizes}
    (folder / "meta.json").write_text(json.dumps(meta), encoding="utf-8")


def _ranges(count: int, parts: int) -> list[tuple[int, int]]:
    parts = max(1, min(parts, count // _BLOCK_ROWS + 1))
    edges = np.linspace(0, count, parts + 1).astype(int)
    return [(int(a), int(b)) for a, b in zip(edges[:-1], edges[1:]) if b > a] or [(0, 0)]


@dataclass(frozen=True)
class _Task:
    folder: str
    vocab: dict
    dataset_dir: str
    split: str


def _encode_range_in_worker(task: _Task, bounds: tuple[int, int]) -> int | None:
    rows = datasets.load_from_disk(task.dataset_dir)[task.split]
    table = rows.with_format("arrow").data.table
    vocab = Vocabulary.from_dict(task.vocab)
    return _encode_range(table, vocab, Path(task.folder), *bounds)


def _encode_range(
    table: pa.Table, vocab: Vocabulary, folder: Path, start: int, stop: int
) -> int | None:
    """Fill rows ``[start, stop)`` of the preallocated files; the first bad row, or None."""
    arrays = {name: np.load(folder / f"{name}.npy", mmap_mode="r+") for name in _ARRAYS}
    tokens = pa.array(vocab.tokens, type=pa.string())  # position = token id
    options = pc.SetLookupOptions(value_set=tokens)
    first_bad: int | None = None
    for begin in range(start, stop, _BLOCK_ROWS):
        end = min(stop, begin + _BLOCK_ROWS)
        block = table.slice(begin, end - begin)
        for column, offsets_name in _LISTS[:2]:
            values = _flat(block.column(column))
            bounds = arrays[offsets_name]
            lo, hi = int(bounds[begin]), int(bounds[end])
            arrays[column][lo:hi] = _token_ids(values, options)
        markers = _flat(block.column("candidates"))
        answers = block.column("answer").combine_chunks()
        markers_ok = pc.all(pc.match_substring_regex(markers, MARKER_PATTERN)).as_py()
        answers_ok = pc.all(pc.match_substring_regex(answers, MARKER_PATTERN)).as_py()
        if markers_ok is False or answers_ok is False:
            bad = np.flatnonzero(~_row_markers_ok(block, markers, answers))
            first_bad = _min(first_bad, begin + int(bad[0]))
            continue
        numbers = _numbers(markers)  # (t,) entity numbers
        answer = _numbers(answers)  # (rows,)
        lengths = pc.list_value_length(block.column("candidates")).to_numpy(zero_copy_only=False)
        parent = np.repeat(np.arange(len(answer)), lengths)  # (t,) row of each candidate
        has_answer = np.zeros(len(answer), dtype=bool)
        has_answer[parent[numbers == answer[parent]]] = True
        bad = np.flatnonzero(~has_answer)
        if len(bad):
            first_bad = _min(first_bad, begin + int(bad[0]))
        bounds = arrays["candidate_offsets"]
        arrays["candidates"][int(bounds[begin]) : int(bounds[end])] = numbers
        arrays["answer"][begin:end] = answer
        arrays["ids"][begin:end] = [
            value.encode("utf-8") for value in block.column("id").to_pylist()
        ]
    for array in arrays.values():
        array.flush()
    return first_bad


def _token_ids(values: pa.Array, options: pc.SetLookupOptions) -> np.ndarray:
    """The ids of ``values`` (``<unk>`` for unknown words; a marker beyond the entity block as
    ``entity_block.beyond_block_id``), (t,) int32."""
    found = pc.index_in(values, options=options)  # (t,) null: not in the vocabulary
    ids = np.array(pc.fill_null(found, Vocabulary.UNK).to_numpy(zero_copy_only=False), np.int32)
    unknown = found.is_null()
    if pc.any(unknown).as_py():
        words = values.filter(unknown)
        marker = pc.match_substring_regex(words, MARKER_PATTERN).to_numpy(zero_copy_only=False)
        where = np.flatnonzero(unknown.to_numpy(zero_copy_only=False))[marker]
        ids[where] = beyond_block_id(_numbers(words.filter(marker)))
    return ids


def _flat(column: pa.ChunkedArray) -> pa.Array:
    """The values of a list column, end to end, (t,)."""
    return column.combine_chunks().flatten()


def _numbers(markers: pa.Array) -> np.ndarray:
    """``@entityN`` -> N, (t,) int32."""
    digits = pc.utf8_slice_codeunits(markers, len(ENTITY_PREFIX))
    return pc.cast(digits, pa.int64()).to_numpy(zero_copy_only=False).astype(np.int32)


def _row_markers_ok(block: pa.Table, markers: pa.Array, answers: pa.Array) -> np.ndarray:
    """Per row: every candidate and the answer are ``@entityN`` markers, (rows,) bool."""
    ok = pc.match_substring_regex(answers, MARKER_PATTERN).to_numpy(zero_copy_only=False).copy()
    good = pc.match_substring_regex(markers, MARKER_PATTERN).to_numpy(zero_copy_only=False)
    lengths = pc.list_value_length(block.column("candidates")).to_numpy(zero_copy_only=False)
    parent = np.repeat(np.arange(len(ok)), lengths)
    np.logical_and.at(ok, parent, good)
    return ok


def _min(first: int | None, candidate: int) -> int:
    return candidate if first is None else min(first, candidate)
