"""The answering pool of ``attentive-reader serve``: supervised workers behind a bounded queue.

Answering (spaCy NER, then the reader) is long CPU work (docs/answering.md, "Speed"), so it
never runs on the event loop: the page and the health check answer at once while questions
are being answered. At most
``workers`` questions are answered at a time and at most ``queue`` more wait; one more is
refused with a 503 (``busy``, with ``Retry-After``), and a question not answered within
``timeout`` seconds of its arrival gets a 504 (``timeout``).

Each worker (``workers.Worker``) has a thread of the pool that takes the waiting questions
one at a time, hands each to its worker and waits for the answer or the worker's death. So
the pool is a supervisor too: a worker process that dies (``kill -9``, out of memory) is
seen within ``ProcessWorker.check_every`` and replaced; the question it held gets a 503
``worker_died`` with ``Retry-After``, and the waiting ones are answered by the other workers
and the new one. A worker that dies ``max_deaths`` times within ``death_window`` seconds is
not started again (one log line says so, and ``state()``); with none left, every question
gets a 503 ``workers_lost``.

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
import collections
import logging
import math
import os
import queue as queues
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from attentive_reader.common.checks import check_positive
from attentive_reader.common.errors import UserError
from attentive_reader.serve.problems import Problem
from attentive_reader.serve.workers import (
    Done,
    ProcessWorker,
    ReaderSource,
    Task,
    ThreadWorker,
    Worker,
    WorkerDied,
)

if TYPE_CHECKING:
    from attentive_reader.api import Reader

PoolKind = Literal["process", "thread"]
Status = Literal["ok", "degraded", "down"]

DEFAULT_QUEUE = 16
DEFAULT_TIMEOUT = 30.0
# A worker that dies this often is not started again (a crash loop: a broken model, memory).
MAX_DEATHS = 5
DEATH_WINDOW = 60.0
# The first guess of the seconds one question takes, for Retry-After before any is answered.
FIRST_GUESS_SECONDS = 1.0
# The seconds a worker process may take to load its reader.
LOAD_SECONDS = 600.0

log = logging.getLogger(__name__)


def cores() -> int:
    """The CPU cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


@dataclass
class _Job:
    """A question in the pool: what to run and where its answer goes."""

    task: Task
    args: tuple
    kwargs: dict
    future: Future = field(default_factory=Future)


@dataclass
class _Slot:
    """One worker's place in the pool: the worker now in it and its history."""

    number: int
    worker: Worker
    state: Literal["starting", "live", "given_up"] = "starting"
    busy: bool = False
    deaths: collections.deque = field(default_factory=collections.deque)


_STOP = None  # put in the queue by close(): a slot's thread ends


class AnswerPool:
    """Readers answering off the event loop: ``workers`` at a time, ``queue`` waiting.

    Build one with ``AnswerPool.threads`` or ``AnswerPool.processes``; ``start`` starts its
    workers.

    Args:
        make_worker: a new, not yet launched worker (called again for each replacement).
        kind: ``process`` or ``thread``.
        workers: questions answered at a time.
        queue: questions that may wait beyond those.
        timeout: seconds from a question's arrival to its answer, else a 504.
        max_deaths: deaths of one worker within ``death_window`` seconds after which it is
            not started again.
        death_window: see ``max_deaths``.
    """

    def __init__(
        self,
        make_worker: Callable[[], Worker],
        *,
        kind: PoolKind,
        workers: int,
        queue: int = DEFAULT_QUEUE,
        timeout: float = DEFAULT_TIMEOUT,
        max_deaths: int = MAX_DEATHS,
        death_window: float = DEATH_WINDOW,
    ) -> None:
        check_positive(workers=workers, max_deaths=max_deaths)
        if queue < 0:
            raise ValueError(f"queue must be zero or more, got {queue}")
        if not 0 < timeout < math.inf:
            raise ValueError(f"timeout must be positive, got {timeout}")
        if not death_window > 0:
            raise ValueError(f"death_window must be positive, got {death_window}")
        self.kind = kind
        self.workers = workers
        self.queue = queue
        self.timeout = timeout
        self.max_deaths = max_deaths
        self.death_window = death_window
        self._make_worker = make_worker
        self._jobs: queues.SimpleQueue[_Job | None] = queues.SimpleQueue()
        self._lock = threading.Lock()
        self._slots: list[_Slot] = []
        self._threads: list[threading.Thread] = []
        self._in_flight = 0  # submitted and not finished (running or waiting)
        self._seconds = FIRST_GUESS_SECONDS  # a running mean of the seconds per task
        self._restarts = 0
        self._note: str | None = None  # why the pool is short of workers, for the health check
        self._closing = False
        self._draining = False  # the server is stopping: no worker is started again

    @classmethod
    def threads(
        cls, reader: Reader, *, queue: int = DEFAULT_QUEUE, timeout: float = DEFAULT_TIMEOUT
    ) -> AnswerPool:
        """One worker thread answering with ``reader`` (shared: nothing is copied); started."""
        pool = cls(
            lambda: ThreadWorker(reader), kind="thread", workers=1, queue=queue, timeout=timeout
        )
        pool.start()
        return pool

    @classmethod
    def processes(
        cls,
        source: ReaderSource,
        *,
        workers: int,
        queue: int = DEFAULT_QUEUE,
        timeout: float = DEFAULT_TIMEOUT,
        torch_threads: int = 1,
        max_deaths: int = MAX_DEATHS,
        death_window: float = DEATH_WINDOW,
    ) -> AnswerPool:
        """``workers`` processes, each with its own reader loaded from ``source`` and
        ``torch_threads`` torch threads; ``start`` loads them."""
        return cls(
            lambda: ProcessWorker(source, torch_threads),
            kind="process",
            workers=workers,
            queue=queue,
            timeout=timeout,
            max_deaths=max_deaths,
            death_window=death_window,
        )

    def start(self, seconds: float = LOAD_SECONDS) -> list[int]:
        """Start every worker and wait until each has loaded its reader.

        Returns:
            The workers' process ids (the server's own for a thread pool).

        Raises:
            UserError: a worker could not load the reader, or not within ``seconds``.
        """
        if self._slots:
            raise RuntimeError("the pool is started already")
        self._slots = [_Slot(number, self._make_worker()) for number in range(self.workers)]
        deadline = time.monotonic() + seconds
        try:  # Ctrl-C while the workers start or load stops those already started
            for slot in self._slots:
                slot.worker.launch()  # all load at once
            for slot in self._slots:
                self._wait_ready(slot, max(0.0, deadline - time.monotonic()))
        except BaseException:
            self.close()
            raise
        for slot in self._slots:
            thread = threading.Thread(
                target=self._serve, args=(slot,), name=f"answer-{slot.number}", daemon=True
            )
            thread.start()
            self._threads.append(thread)
        return sorted(slot.worker.pid for slot in self._slots)

    def _wait_ready(self, slot: _Slot, seconds: float) -> None:
        try:
            slot.worker.wait_ready(seconds)
        except TimeoutError:
            raise UserError(
                f"an answering worker did not load the reader within {seconds:g} s"
            ) from None
        except WorkerDied as error:
            raise UserError(
                f"an answering worker {error} while loading the reader; its error is printed above"
            ) from None
        slot.state = "live"

    def state(self) -> dict[str, Any]:
        """The pool for the health check: its status (``ok``; ``degraded``: a worker is
        being replaced or was given up; ``down``: none is left), kind and size, the live
        workers, the restarts so far, the questions in it, and a ``note`` saying why when
        workers were given up."""
        with self._lock:
            live = sum(slot.state == "live" for slot in self._slots)
            left = self._serving()
            answering = sum(slot.busy for slot in self._slots)
            status: Status = "ok" if live == self.workers else "degraded" if left else "down"
            return {
                "status": status,
                "pool": self.kind,
                "workers": self.workers,
                "live": live,
                "restarts": self._restarts,
                "answering": answering,
                "waiting": max(0, self._in_flight - answering),
                "queue": self.queue,
                "timeout": self.timeout,
                "note": self._note,
            }

    async def run(self, task: Task, *args: Any, **kwargs: Any) -> Any:
        """``reader.<task>(*args, **kwargs)`` on a worker.

        Raises:
            Problem: 503 ``busy`` (the queue is full), 504 ``timeout``, 503 ``worker_died``
                (the worker answering it died), 503 ``workers_lost`` (none is left), 503
                ``stopping`` (the server is stopping).
            UserError: the reader's refusal of the question.
        """
        job = _Job(task, args, kwargs)
        with self._lock:  # checked and queued at once: see _give_up
            if self._closing:
                raise _stopping()
            if not self._serving():
                raise self._lost()
            if self._in_flight >= self._serving() + self.queue:
                raise self._busy()
            self._in_flight += 1
            job.future.add_done_callback(self._finished)
            self._jobs.put(job)
        try:
            done = await asyncio.wait_for(asyncio.wrap_future(job.future), self.timeout)
        except asyncio.TimeoutError:  # wait_for cancelled the future: dropped if still waiting
            raise Problem(
                504,
                "timeout",
                f"the question was not answered within {self.timeout:g} s; the server is "
                "busy or the document is long: try again later",
            ) from None
        return done.result

    def drain(self) -> None:
        """The server is told to stop: the live workers answer on, a dead one is not
        replaced (a process manager's SIGTERM may reach the workers as well as the
        server)."""
        self._draining = True

    def close(self) -> None:
        """Stop the workers now: each ends within seconds, whatever it is doing; the
        questions in the pool get a 503 ``stopping``."""
        with self._lock:
            self._closing = True
        for _ in self._slots:
            self._jobs.put(_STOP)
        for slot in self._slots:  # all are asked to stop before any is waited for
            slot.worker.terminate()
        for slot in self._slots:
            slot.worker.stop()
        self._fail_waiting(_stopping())
        for thread in self._threads:
            thread.join(5.0)

    # --- a slot's thread ---------------------------------------------------------------------

    def _serve(self, slot: _Slot) -> None:
        """Answer the waiting questions with ``slot``'s worker; replace it when it dies."""
        while not self._closing:
            if slot.state != "live" or not slot.worker.alive():  # seen dead, or found dead
                if not self._replace(slot):
                    return
                continue
            try:
                job = self._jobs.get(timeout=slot.worker.check_every)
            except queues.Empty:
                continue
            if job is _STOP:
                return
            self._answer(slot, job)

    def _answer(self, slot: _Slot, job: _Job) -> None:
        if not job.future.set_running_or_notify_cancel():  # dropped: its time ran out
            return
        with self._lock:
            slot.busy = True
        try:
            done = slot.worker.ask(job.task, job.args, job.kwargs)
        except WorkerDied as error:
            with self._lock:  # not live from now: the health check a client sends on its 503
                slot.state = "starting"  # sees the replacement under way, not the dead worker
            log.warning(
                "answering worker %d (process %d) %s while answering; its question gets a "
                "503 worker_died",
                slot.number,
                slot.worker.pid,
                error,
            )
            stopping = self._closing or self._draining
            job.future.set_exception(_stopping() if stopping else self._died())
        except BaseException as error:  # the reader's refusal, or a bug (a 500)
            job.future.set_exception(error)
        else:
            job.future.set_result(done)
        finally:
            with self._lock:
                slot.busy = False

    def _replace(self, slot: _Slot) -> bool:
        """A new worker in the place of ``slot``'s dead one; False when it is given up."""
        if self._closing or self._draining:
            return False
        now = time.monotonic()
        slot.deaths.append(now)
        while slot.deaths and slot.deaths[0] < now - self.death_window:
            slot.deaths.popleft()
        how = slot.worker.ended()
        if len(slot.deaths) >= self.max_deaths:
            self._give_up(slot, how)
            return False
        with self._lock:
            slot.state = "starting"
        log.warning(
            "answering worker %d (process %d) %s; starting another",
            slot.number,
            slot.worker.pid,
            how,
        )
        slot.worker.stop()
        slot.worker = self._make_worker()
        slot.worker.launch()
        if self._closing:  # close() may have stopped the old worker while this one started
            slot.worker.stop()
            return False
        try:
            slot.worker.wait_ready(LOAD_SECONDS)
        except (UserError, WorkerDied, TimeoutError) as error:
            log.warning("answering worker %d did not start again: %s", slot.number, error)
            slot.worker.stop()  # dead now: the next turn of _serve counts it
            return True
        with self._lock:
            slot.state = "live"
            self._restarts += 1
        return True

    def _give_up(self, slot: _Slot, how: str) -> None:
        with self._lock:
            slot.state = "given_up"
            left = self._serving()
            self._note = (
                f"answering worker {slot.number} died {len(slot.deaths)} times within "
                f"{self.death_window:g} s (last: {how}) and is not started again; {left} of "
                f"{self.workers} workers left"
                + ("" if left else ": no question can be answered; restart the server")
            )
        log.error(self._note)
        if not left:
            self._fail_waiting(self._lost())

    # --- helpers (the lock: held by the caller where said) ---------------------------------

    def _serving(self) -> int:
        """The workers not given up (live or being started); under the lock."""
        return sum(slot.state != "given_up" for slot in self._slots)

    def _fail_waiting(self, problem: Problem) -> None:
        """Every waiting question gets ``problem``."""
        while True:
            try:
                job = self._jobs.get_nowait()
            except queues.Empty:
                return
            if job is not _STOP and job.future.set_running_or_notify_cancel():
                job.future.set_exception(problem)

    def _finished(self, future: Future) -> None:
        with self._lock:
            self._in_flight -= 1
            if not future.cancelled() and future.exception() is None:
                done: Done = future.result()
                self._seconds = 0.8 * self._seconds + 0.2 * done.seconds

    def _retry_after(self, waiting: int) -> int:
        """Seconds until ``waiting`` questions are answered; under the lock."""
        return max(1, math.ceil(self._seconds * waiting / max(1, self._serving())))

    def _busy(self) -> Problem:
        # Under the lock.
        retry = self._retry_after(self._in_flight - self._serving() + 1)
        return Problem(
            503,
            "busy",
            f"{self._in_flight} questions are being answered or waiting, the server's limit; "
            f"try again in {retry} s",
            {"Retry-After": str(retry)},
        )

    def _died(self) -> Problem:
        with self._lock:
            retry = self._retry_after(max(1, self._in_flight - self._serving() + 1))
        return Problem(
            503,
            "worker_died",
            "the worker answering this question stopped (killed, or out of memory?) and is "
            f"being replaced; try again in {retry} s",
            {"Retry-After": str(retry)},
        )

    def _lost(self) -> Problem:
        return Problem(503, "workers_lost", self._note or "no answering worker is left")


def _stopping() -> Problem:
    return Problem(503, "stopping", "the server is stopping; try again once it is back")
