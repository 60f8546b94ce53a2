"""How far ``evaluate`` is: each reader's questions read, of the split's total.

On a terminal, Rich's bar (questions done of the total, the percentage, the rate, the time
taken and left); elsewhere (``evaluate ... > log 2>&1``) a line every ``every_seconds`` and
one when a reader has read them all. ``QuestionProgress`` is also the callable that prints
the line before each reader, so ``evaluate(..., progress=QuestionProgress())`` gives both.
"""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Callable, Iterator
from typing import Literal, TextIO

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskProgressColumn,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from attentive_reader.common.durations import duration as _duration

ProgressStyle = Literal["auto", "bar", "lines"]


class QuestionProgress:
    """The progress of an evaluation, reader by reader.

    Args:
        stream: where it goes (standard error by default, beside the report on standard out).
        style: ``bar``, ``lines``, or ``auto`` (a bar on a terminal, lines elsewhere).
        every_seconds: in ``lines`` style, the time between two lines of one reader.
    """

    def __init__(
        self,
        stream: TextIO | None = None,
        style: ProgressStyle = "auto",
        every_seconds: float = 30.0,
    ) -> None:
        self.stream = stream if stream is not None else sys.stderr
        if style == "auto":
            style = "bar" if self.stream.isatty() else "lines"
        self.style = style
        self.every_seconds = every_seconds
        self._name = ""

    def __call__(self, line: str) -> None:
        """The line before a reader (``evaluating CKPT on N examples (device)``)."""
        self._name = line.removeprefix("evaluating ").split(" on ", 1)[0]
        print(line, file=self.stream, flush=True)

    @contextlib.contextmanager
    def reading(self, total: int) -> Iterator[Callable[[int], None]]:
        """One reader's pass over ``total`` questions; yields ``advance(questions)``."""
        if self.style == "bar":
            with self._bar(total) as advance:
                yield advance
            return
        started = last = time.monotonic()
        done = 0

        def advance(questions: int) -> None:
            nonlocal done, last
            done += questions
            now = time.monotonic()
            if done < total and now - last < self.every_seconds:
                return
            last = now
            seconds = now - started
            rate = done / seconds if seconds > 0 else 0.0
            line = f"{self._name}: {done:,} of {total:,} questions ({100 * done / total:.0f}%)"
            if done < total:
                left = f", about {_duration((total - done) / rate)} left" if rate > 0 else ""
                line += f", {rate:.1f} questions/s{left}"
            else:
                line += f" read in {_duration(seconds)} ({rate:.1f} questions/s)"
            print(line, file=self.stream, flush=True)

        yield advance

    @contextlib.contextmanager
    def _bar(self, total: int) -> Iterator[Callable[[int], None]]:
        console = Console(file=self.stream)
        columns = (
            TextColumn("reading"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("questions"),
            TaskProgressColumn(),
            TimeElapsedColumn(),
            TimeRemainingColumn(),
        )
        with Progress(*columns, console=console, transient=False) as bar:
            task = bar.add_task("reading", total=total)
            yield lambda questions: bar.advance(task, questions)
