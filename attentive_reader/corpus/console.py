"""What a preprocessing run shows: its progress, the size estimate, the summary.

``ShardProgress`` is the progress: on a terminal a Rich bar (records done of the total when
the inputs' files can be counted, the percentage, the rate, the time taken and left); when
the output is not a terminal (a log file), one line per finished shard with the running
total, the rate and the time left.

``Estimate`` predicts the output size from the first finished shard and warns when the disk
will not hold it; ``print_report`` prints the end-of-run summary (``attentive-reader
preprocess`` and ``merge``).
"""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import pyarrow.parquet as pq
from rich.console import Console
from rich.progress import (
    BarColumn,
    Progress,
    ProgressColumn,
    Task,
    TaskProgressColumn,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.text import Text

from attentive_reader.common.durations import duration as _duration
from attentive_reader.common.faults import WriteGuard, format_size, size_of
from attentive_reader.corpus.manifest import comparison_table, counts_table
from attentive_reader.corpus.options import PreprocessOptions
from attentive_reader.corpus.shards import WorkItem, item_json, shard_paths
from attentive_reader.corpus.sources import split_input
from attentive_reader.corpus.sources.inputs import QUESTION_SUFFIX, STORY_SUFFIX

if TYPE_CHECKING:
    from attentive_reader.corpus.options import PreprocessResult

# Skips printed at the end of a run (all of them are counted in the manifest).
SKIPS_SHOWN = 5


class _RateColumn(ProgressColumn):
    """Records per second, once known."""

    def render(self, task: Task) -> Text:
        speed = task.finished_speed or task.speed
        return Text(f"{speed:.1f} stories/s" if speed else "", style="progress.data.speed")


def progress_bar(console: Console, enabled: bool, total: int | None = None) -> Progress:
    """The run's progress bar: records done (of ``total`` when known, with the percentage
    and the time left), their rate and the time taken."""
    counted = (
        "{task.completed:,} of {task.total:,} records" if total else "{task.completed:,} records"
    )
    columns: list[ProgressColumn] = [
        TextColumn("[progress.description]{task.description}"),
        BarColumn(),
        TextColumn(counted),
    ]
    if total:
        columns.append(TaskProgressColumn())
    columns += [_RateColumn(), TimeElapsedColumn()]
    if total:
        columns.append(TimeRemainingColumn())
    return Progress(*columns, console=console, disable=not enabled, transient=False)


def count_records(inputs: Sequence[str], kinds: Sequence[str]) -> int | None:
    """The records the inputs hold when counting is cheap (folders of ``.story`` or
    ``.question`` files: one record a file); ``None`` when an input is an archive, a data
    file or a hub dataset."""
    total = 0
    for input, kind in zip(inputs, kinds):
        if kind not in ("stories", "questions"):
            return None
        suffix = STORY_SUFFIX if kind == "stories" else QUESTION_SUFFIX
        for _folder, _dirs, names in os.walk(split_input(input)[1]):
            total += sum(1 for name in names if name.lower().endswith(suffix))
    return total


class ShardProgress:
    """The progress of a run's shard loop: a bar, lines, or nothing (see the module).

    Args:
        console: where it goes.
        mode: ``bar``, ``lines`` or ``off``.
        total: the records expected, when known.
    """

    def __init__(
        self, console: Console, mode: Literal["bar", "lines", "off"], total: int | None
    ) -> None:
        self.console, self.mode, self.total = console, mode, total
        self.bar = progress_bar(console, mode == "bar", total)
        self.done = 0
        self.shards = 0
        self._started = time.monotonic()
        self._task = None

    def __enter__(self) -> ShardProgress:
        self.bar.__enter__()
        self._task = self.bar.add_task("preprocessing", total=self.total)
        self._started = time.monotonic()
        return self

    def __exit__(self, *exc: object) -> None:
        self.bar.__exit__(*exc)  # type: ignore[arg-type]

    def advance(self, records: int) -> None:
        """``records`` more records read."""
        self.done += records
        if self._task is not None:
            self.bar.advance(self._task, records)

    def shard_done(self, index: int, reused: bool = False) -> None:
        """Shard ``index`` is finished (a line in ``lines`` mode)."""
        self.shards += 1
        if self.mode != "lines":
            return
        seconds = time.monotonic() - self._started
        rate = self.done / seconds if seconds > 0 else 0.0
        line = f"preprocessing: shard {index + 1} {'reused' if reused else 'done'}, {self.done:,}"
        if self.total:
            line += f" of {self.total:,} records ({100 * self.done / self.total:.1f}%)"
        else:
            line += " records"
        line += f", {rate:.1f} stories/s, {_duration(seconds)} so far"
        if self.total and rate > 0:
            line += f", about {_duration(max(self.total - self.done, 0) / rate)} left"
        self.console.print(line, soft_wrap=True, highlight=False, markup=False)


# --------------------------------------------------------------------------- the estimate


def _input_size(inputs: Sequence[str], kinds: Sequence[str]) -> int | None:
    """Bytes of all local inputs (an archive: uncompressed); ``None`` with a hub dataset."""
    size = 0
    for input, kind in zip(inputs, kinds):
        if kind == "hf_hub":
            return None
        _, path = split_input(input)
        if kind in ("archive", "question_archive") and path.lower().endswith(("gz", "tgz")):
            try:  # gzip's trailer: the uncompressed size modulo 4 GiB
                with open(path, "rb") as f:
                    f.seek(-4, os.SEEK_END)
                    size += max(int.from_bytes(f.read(4), "little"), os.path.getsize(path))
                continue
            except OSError:
                pass
        size += size_of(path)
    return size


class Estimate:
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
                len(json.dumps(item_json(item), ensure_ascii=False).encode()) for item in chunk
            )

    def shard_done(self, shards: Path, index: int) -> None:
        if self.done or not self.input_bytes.get(index):
            return
        self.done = True
        assert self.total_input is not None
        parquet_path = shard_paths(shards, index)[0]
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


# --------------------------------------------------------------------------- the summary


def print_report(result: PreprocessResult, console: Console) -> None:
    """Print the end-of-run summary of ``preprocess`` or ``merge``: statistics beside the
    published figures, records read / kept / skipped, the first skips, the time taken."""
    manifest = result.manifest
    if result.status == "up_to_date":
        console.print(f"{result.output} already holds the output of this command; nothing to do.")
    if manifest.get("partial"):
        part = manifest["partial"]
        console.print(
            f"Part {part['shard_index']} of {part['num_shards']}: {len(part['shard_indices'])} of "
            f"{part['total_shards']} shards in {result.output}. Join the parts with "
            "`attentive-reader merge PART_DIR ... --output DIR`."
        )
        console.print(counts_table(manifest))
        return
    console.print(comparison_table(manifest))
    console.print(counts_table(manifest))
    details = manifest.get("skip_details", [])
    skipped = sum(manifest["counts"]["skipped"].values())
    if details:
        console.print(
            f"First skips ({min(len(details), SKIPS_SHOWN)} of {skipped}; all counted in manifest.json):"
        )
        for skip in details[:SKIPS_SHOWN]:
            console.print(
                f"  [{skip['reason']}] {skip['source']}: {skip['detail']}",
                markup=False,
                highlight=False,
                soft_wrap=True,
            )
    if manifest.get("merged_from"):
        console.print(
            f"Merged {len(manifest['merged_from'])} parts ({manifest['shards']} shards) into "
            f"{result.output} in {result.seconds:.1f} s."
        )
    elif result.status == "done":
        rate = result.records_processed / result.seconds if result.seconds else 0.0
        console.print(
            f"Wrote {result.output} in {result.seconds:.1f} s ({result.processed_shards} shards "
            f"processed, {result.reused_shards} reused; {rate:.1f} stories/s)."
        )
