"""The answering pool of ``attentive-reader serve``: readers working off the event loop, bounded.

Answering (spaCy NER, then the reader: 0.1-0.8 s of CPU) never runs on the event loop, so
the page and the health check answer at once while questions are being answered. At most
``workers`` questions are answered at a time and at most ``queue`` more wait; one more is
refused with a 503 (``busy``, with ``Retry-After``), and a question not answered within
``timeout`` seconds of its arrival gets a 504 (``timeout``).

Two kinds of pool:

* ``AnswerPool.processes``: each worker process loads its own ``Reader`` (its own spaCy
  pipeline and model) from a ``ReaderSource``, with one torch thread. This is the one that
  uses every core: spaCy's NER holds the GIL for most of its time, so threads sharing one
  reader answer no faster than one thread (measured in ``docs/answering.md``), and spaCy
  makes no promise that one pipeline may be called from several threads at once.
* ``AnswerPool.threads``: one worker thread answering with the caller's ``Reader``: one
  copy of the model in memory, one question at a time (tests, small machines).

A question already being answered when its time runs out is answered to its end (a worker
cannot be stopped halfway), and its place counts until then; one still waiting is dropped.
"""

from __future__ import annotations

import asyncio
import math
import multiprocessing
import os
import signal
import threading
import time
from collections.abc import Callable
from concurrent.futures import (
    BrokenExecutor,
    Executor,
    Future,
    ProcessPoolExecutor,
    ThreadPoolExecutor,
)
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from attentive_reader.errors import UserError
from attentive_reader.serve.problems import Problem

if TYPE_CHECKING:
    from attentive_reader.api import Reader

PoolKind = Literal["process", "thread"]
Task = Literal["answer", "answer_many", "answer_example"]

DEFAULT_QUEUE = 16
DEFAULT_TIMEOUT = 30.0
# The first guess of the seconds one question takes, for Retry-After before any is answered.
FIRST_GUESS_SECONDS = 1.0


def cores() -> int:
    """The CPU cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


@dataclass(frozen=True)
class ReaderSource:
    """How a worker process loads its own reader: the arguments of ``Reader.load``.

    Attributes:
        ckpt: the reader checkpoint.
        spacy_model: a spaCy pipeline instead of the recorded one.
        device: ``cpu``, ``cuda``, ``cuda:N`` or ``auto``.
        batch_size: examples per forward pass in ``answer_many``.
    """

    ckpt: str
    spacy_model: str | None = None
    device: str = "cpu"
    batch_size: int = 32

    def load(self) -> Reader:
        """The reader, its pipeline warnings left to the parent (which loaded it first)."""
        from attentive_reader.api import Reader

        return Reader.load(
            self.ckpt,
            spacy_model=self.spacy_model,
            device=self.device,
            batch_size=self.batch_size,
            warn=lambda message: None,
        )


@dataclass(frozen=True)
class _Done:
    """A task's result and the seconds its worker spent on it."""

    result: Any
    seconds: float


def _call(reader: Reader, task: Task, args: tuple, kwargs: dict) -> _Done:
    started = time.perf_counter()
    result = getattr(reader, task)(*args, **kwargs)
    return _Done(result, time.perf_counter() - started)


# --- inside a worker process ---------------------------------------------------------------

_worker_reader: Reader | None = None
_worker_error: UserError | None = None


def _start_worker(source: ReaderSource, torch_threads: int) -> None:
    """A worker process's initializer: its thread counts, then its own reader."""
    global _worker_reader, _worker_error
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C stops the server, which stops us
    for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ[name] = str(torch_threads)  # before numpy and torch start their pools
    import torch

    torch.set_num_threads(torch_threads)
    try:
        _worker_reader = source.load()
    except UserError as error:  # raised by every task, so the parent reports it in one line
        _worker_error = error


def _work(task: Task, args: tuple, kwargs: dict) -> _Done:
    if _worker_error is not None:
        raise _worker_error
    assert _worker_reader is not None
    return _call(_worker_reader, task, args, kwargs)


def _ready(pause: float) -> int:
    """A warm-up task: the worker's process id once its reader is loaded."""
    if _worker_error is not None:
        raise _worker_error
    time.sleep(pause)  # so that the other workers take the other warm-up tasks
    return os.getpid()


# --- the pool, in the server's process ------------------------------------------------------


class AnswerPool:
    """Readers answering off the event loop: ``workers`` at a time, ``queue`` waiting.

    Build one with ``AnswerPool.threads`` or ``AnswerPool.processes``.

    Args:
        executor: where the tasks run.
        submit: ``submit(task, args, kwargs)`` -> a future of a ``_Done``.
        kind: ``process`` or ``thread``.
        workers: questions answered at a time.
        queue: questions that may wait beyond those.
        timeout: seconds from a question's arrival to its answer, else a 504.
    """

    def __init__(
        self,
        executor: Executor,
        submit: Callable[[Task, tuple, dict], Future],
        *,
        kind: PoolKind,
        workers: int,
        queue: int = DEFAULT_QUEUE,
        timeout: float = DEFAULT_TIMEOUT,
    ) -> None:
        if workers < 1:
            raise ValueError(f"workers must be positive, got {workers}")
        if queue < 0:
            raise ValueError(f"queue must be zero or more, got {queue}")
        if not 0 < timeout < math.inf:
            raise ValueError(f"timeout must be positive, got {timeout}")
        self.kind = kind
        self.workers = workers
        self.queue = queue
        self.timeout = timeout
        self._executor = executor
        self._submit = submit
        self._lock = threading.Lock()
        self._in_flight = 0  # submitted and not finished (running or waiting)
        self._seconds = FIRST_GUESS_SECONDS  # a running mean of the seconds per task

    @classmethod
    def threads(
        cls, reader: Reader, *, queue: int = DEFAULT_QUEUE, timeout: float = DEFAULT_TIMEOUT
    ) -> AnswerPool:
        """One worker thread answering with ``reader`` (shared: nothing is copied)."""
        executor = ThreadPoolExecutor(1, thread_name_prefix="answer")

        def submit(task: Task, args: tuple, kwargs: dict) -> Future:
            return executor.submit(_call, reader, task, args, kwargs)

        return cls(executor, submit, kind="thread", workers=1, queue=queue, timeout=timeout)

    @classmethod
    def processes(
        cls,
        source: ReaderSource,
        *,
        workers: int,
        queue: int = DEFAULT_QUEUE,
        timeout: float = DEFAULT_TIMEOUT,
        torch_threads: int = 1,
    ) -> AnswerPool:
        """``workers`` processes, each with its own reader loaded from ``source`` and
        ``torch_threads`` torch threads; ``start`` loads them."""
        if workers < 1:
            raise ValueError(f"workers must be positive, got {workers}")
        executor = ProcessPoolExecutor(
            workers,
            mp_context=multiprocessing.get_context("spawn"),  # no fork of a threaded server
            initializer=_start_worker,
            initargs=(source, torch_threads),
        )

        def submit(task: Task, args: tuple, kwargs: dict) -> Future:
            return executor.submit(_work, task, args, kwargs)

        return cls(executor, submit, kind="process", workers=workers, queue=queue, timeout=timeout)

    def start(self, seconds: float = 600.0) -> list[int]:
        """Start every worker and wait until each has loaded its reader.

        Returns:
            The workers' process ids (the server's own for a thread pool).

        Raises:
            UserError: a worker could not load its reader, or not within ``seconds``.
        """
        if self.kind == "thread":
            return [os.getpid()]
        seen: set[int] = set()
        deadline = time.monotonic() + seconds
        while len(seen) < self.workers:
            try:
                futures = [self._executor.submit(_ready, 0.2) for _ in range(self.workers)]
                for future in futures:
                    seen.add(future.result(timeout=max(0.0, deadline - time.monotonic())))
            except TimeoutError:
                raise UserError(
                    f"{self.workers - len(seen)} of {self.workers} answering workers did not "
                    f"load the reader within {seconds:g} s"
                ) from None
            except BrokenExecutor as error:
                raise UserError(
                    f"an answering worker stopped while loading the reader ({error}); its "
                    "error is printed above"
                ) from None
        return sorted(seen)

    def state(self) -> dict[str, Any]:
        """The pool for the health check: its kind and size, and the questions in it."""
        with self._lock:
            in_flight = self._in_flight
        return {
            "pool": self.kind,
            "workers": self.workers,
            "answering": min(in_flight, self.workers),
            "waiting": max(0, in_flight - self.workers),
            "queue": self.queue,
            "timeout": self.timeout,
        }

    async def run(self, task: Task, *args: Any, **kwargs: Any) -> Any:
        """``reader.<task>(*args, **kwargs)`` on a worker.

        Raises:
            Problem: 503 ``busy`` (the queue is full), 504 ``timeout``, 503 ``workers_lost``.
            UserError: the reader's refusal of the question.
        """
        with self._lock:
            if self._in_flight >= self.workers + self.queue:
                raise self._busy()
            self._in_flight += 1
        try:
            future = self._submit(task, args, kwargs)
        except BaseException:
            self._finished(None)
            raise
        future.add_done_callback(self._finished)
        try:
            done = await asyncio.wait_for(asyncio.wrap_future(future), self.timeout)
        except asyncio.TimeoutError:  # wait_for cancelled the future: dropped if still waiting
            raise Problem(
                504,
                "timeout",
                f"the question was not answered within {self.timeout:g} s; the server is "
                "busy or the document is long: try again later",
            ) from None
        except BrokenExecutor:
            raise Problem(
                503,
                "workers_lost",
                "the answering workers stopped (out of memory?); restart the server",
            ) from None
        return done.result

    def close(self) -> None:
        """Stop the workers (waiting questions are dropped, running ones finish)."""
        self._executor.shutdown(wait=True, cancel_futures=True)

    def _finished(self, future: Future | None) -> None:
        with self._lock:
            self._in_flight -= 1
            if future is not None and not future.cancelled() and future.exception() is None:
                seconds = future.result().seconds
                self._seconds = 0.8 * self._seconds + 0.2 * seconds

    def _busy(self) -> Problem:
        # Called under the lock: the seconds until the waiting questions are answered.
        waiting = self._in_flight - self.workers + 1
        retry = max(1, math.ceil(self._seconds * waiting / self.workers))
        return Problem(
            503,
            "busy",
            f"{self._in_flight} questions are being answered or waiting, the server's limit; "
            f"try again in {retry} s",
            {"Retry-After": str(retry)},
        )
