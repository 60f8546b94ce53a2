"""The worker processes of a preprocessing run: a ``ProcessPoolExecutor`` over shards.

Each worker holds the spaCy pipeline, given once by the pool's initializer: with the ``fork``
start method (Linux) the driver's loaded pipeline is inherited, elsewhere each worker loads
the model itself. A worker ignores Ctrl-C (the driver handles it and stops the pool) and
exits when the driver dies (``kill -9``), so no orphan keeps writing shards. What a worker
raises reaches the driver as one of three errors: a ``UserError`` (``--strict``), a plain
``OSError`` for a fault of the machine (a full disk: the driver's ``faults.writing`` says it
in one line) or a ``RuntimeError`` carrying the worker's traceback.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import threading
import time
import traceback
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool

from spacy.language import Language

from attentive_reader.common.errors import UserError
from attentive_reader.common.faults import is_write_fault
from attentive_reader.corpus.manifest import ShardCounts
from attentive_reader.corpus.pipeline import load_pipeline
from attentive_reader.corpus.shards import ShardTask, process_shard

# The pipeline of a worker process, set once by ``_start_worker`` (never in the driver).
_PIPELINE: Language | None = None


WORKER_DIED = (
    "a worker process died, for example killed for lack of memory; rerun the same command to "
    "resume, with a smaller --shard-size or --num-proc"
)


def _watch_parent(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(1.0)
    os._exit(1)  # the driver died (e.g. kill -9): stop, as it can no longer collect


def _start_worker(
    nlp: Language | None, model: str | None, needs_pipeline: bool, parent: int
) -> None:
    """The pool's initializer: ignore Ctrl-C, hold the pipeline, watch the driver."""
    global _PIPELINE
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is handled by the driver
    if nlp is None and needs_pipeline:  # not inherited: load it here
        nlp = load_pipeline(model)
    _PIPELINE = nlp
    threading.Thread(target=_watch_parent, args=(parent,), daemon=True).start()


def run_shard(task: ShardTask, nlp: Language | None) -> tuple[int, dict]:
    """Process one shard in a worker: ``(index, counts as JSON)``, or one of three errors
    (also the task of a cluster worker, ``corpus.cluster``)."""
    try:
        return task.index, process_shard(task, nlp).to_json()
    except UserError as error:
        raise UserError(str(error)) from None
    except BaseException as error:
        if is_write_fault(error):  # a full disk, a read-only folder: one line, by the driver
            assert isinstance(error, OSError)
            raise OSError(error.errno, error.strerror, error.filename) from None
        raise RuntimeError(
            f"shard {task.index} failed in a worker: {type(error).__name__}: {error}\n"
            f"{traceback.format_exc()}"
        ) from None


def _run_shard(task: ShardTask) -> tuple[int, dict]:
    return run_shard(task, _PIPELINE)


def _ready() -> int:
    return os.getpid()


class ShardPool:
    """``num_proc`` worker processes that process shards; results come back in any order.

    Args:
        num_proc: worker processes.
        model: the spaCy model name or directory (loaded by workers that do not fork).
        nlp: the driver's loaded pipeline (inherited by forked workers), or ``None`` when no
            shard holds a story (only ``.question`` inputs: no NER).

    Raises:
        RuntimeError: the workers could not start (e.g. the model failed to load in them).
    """

    def __init__(self, num_proc: int, model: str | None, nlp: Language | None) -> None:
        self.num_proc = num_proc
        fork = "fork" in multiprocessing.get_all_start_methods()
        context = multiprocessing.get_context("fork" if fork else "spawn")
        self.executor = ProcessPoolExecutor(
            max_workers=num_proc,
            mp_context=context,
            initializer=_start_worker,
            initargs=(nlp if fork else None, model, nlp is not None, os.getpid()),
        )
        self.pending: set[Future] = set()
        # Start the workers now, before the driver starts its progress thread (forking a
        # process with running threads is unsafe); the executor starts them at a first task.
        try:
            self.executor.submit(_ready).result()
        except BrokenProcessPool:
            raise RuntimeError(
                f"the {num_proc} worker processes could not start; run with --num-proc 1 to see why"
            ) from None

    @property
    def slots(self) -> int:
        """Shards the pool runs at once."""
        return self.num_proc

    @property
    def in_flight(self) -> int:
        """Shards submitted and not yet collected."""
        return len(self.pending)

    def submit(self, task: ShardTask) -> None:
        """Queue ``task`` for the next free worker.

        Raises:
            RuntimeError: a worker process died since the last shard (the pool is broken).
        """
        try:
            self.pending.add(self.executor.submit(_run_shard, task))
        except BrokenProcessPool:
            raise RuntimeError(WORKER_DIED) from None

    def collect(self) -> tuple[int, ShardCounts]:
        """Wait for the next finished shard; raise what its worker raised.

        Raises:
            RuntimeError: a worker process died (killed for lack of memory, ...).
        """
        done, _ = wait(self.pending, return_when=FIRST_COMPLETED)
        future = next(iter(done))  # any finished one: the output does not depend on which
        self.pending.remove(future)
        try:
            index, counts = future.result()
        except BrokenProcessPool:
            raise RuntimeError(WORKER_DIED) from None
        return index, ShardCounts.from_json(counts)

    def close(self) -> None:
        """Let the workers finish and stop (after every shard was collected)."""
        self.executor.shutdown(wait=True)

    def terminate(self) -> None:
        """Stop the workers now, mid-shard if need be (a shard never finishes half-written)."""
        terminate = getattr(self.executor, "terminate_workers", None)  # Python >= 3.14
        if terminate is not None:
            terminate()
            return
        # Before 3.14 the executor has no public way to stop busy workers: end its processes.
        processes = list((getattr(self.executor, "_processes", None) or {}).values())
        self.executor.shutdown(wait=False, cancel_futures=True)
        for process in processes:
            if process.is_alive():
                process.terminate()
        for process in processes:
            process.join(timeout=5)
