"""The answering workers of ``attentive-reader serve``: where one question at a time is answered.

Two kinds behind one interface (``Worker``), driven by the pool (``pool.AnswerPool``):

* ``ThreadWorker``: the server's own reader, called on the pool's thread. It cannot die.
* ``ProcessWorker``: a spawned process that loads its own ``Reader`` from a ``ReaderSource``
  (its own spaCy pipeline and model, ``torch_threads`` torch threads) and answers the
  questions sent over its pipe, one at a time. Its death (a ``kill -9``, the kernel's
  out-of-memory killer) is seen at once by the pool's thread waiting on it, as
  ``WorkerDied``. It ignores Ctrl-C (the server stops it) and ends by itself when the server
  is gone: its pipe closes when the server stops, and a watch thread sees the server's
  process end even when it was killed without a word (``kill -9``), so no worker outlives
  its server.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import threading
import time
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from typing import TYPE_CHECKING, Any, Literal, Protocol

from attentive_reader.common.errors import UserError

if TYPE_CHECKING:
    from multiprocessing.context import SpawnProcess

    from attentive_reader.api import Reader

Task = Literal["answer", "answer_many", "answer_example"]

# How often a worker process looks for its server (the ``kill -9`` case; a closed pipe is seen
# at once).
SERVER_CHECK_SECONDS = 0.5


@dataclass(frozen=True)
class ReaderSource:
    """How a worker process loads its own reader: the arguments of ``Reader.load``.

    Attributes:
        ckpt: the reader checkpoint, or an ensemble's checkpoints.
        spacy_model: a spaCy pipeline instead of the recorded one.
        device: ``cpu``, ``cuda``, ``cuda:N`` or ``auto``.
        batch_size: examples per forward pass in ``answer_many``.
    """

    ckpt: str | tuple[str, ...]
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
class Done:
    """A task's result and the seconds its worker spent on it."""

    result: Any
    seconds: float


class WorkerDied(Exception):
    """A worker process ended while it was loading or answering (the message says how)."""


class Worker(Protocol):
    """One place where questions are answered, one at a time.

    Attributes:
        pid: the process that answers (the server's own for a thread).
        check_every: seconds between two looks at an idle worker's life (``None``: it
            cannot die).
    """

    pid: int
    check_every: float | None

    def launch(self) -> None:
        """Start loading the reader (returns at once)."""

    def wait_ready(self, seconds: float) -> int:
        """The worker's process id once its reader is loaded.

        Raises:
            UserError: the reader could not be loaded.
            WorkerDied: the process ended while loading.
            TimeoutError: not loaded within ``seconds``.
        """

    def alive(self) -> bool:
        """Whether the worker can still answer."""

    def ask(self, task: Task, args: tuple, kwargs: dict) -> Done:
        """``reader.<task>(*args, **kwargs)``; raises what the reader raised, or
        ``WorkerDied``."""

    def ended(self) -> str:
        """How a dead worker ended, for a log line (``killed by SIGKILL``)."""

    def terminate(self) -> None:
        """Ask the worker to end, without waiting (``stop`` waits)."""

    def stop(self) -> None:
        """End the worker now, whatever it is doing."""


def call(reader: Reader, task: Task, args: tuple, kwargs: dict) -> Done:
    """``reader.<task>(*args, **kwargs)`` and the seconds it took."""
    started = time.perf_counter()
    result = getattr(reader, task)(*args, **kwargs)
    return Done(result, time.perf_counter() - started)


class ThreadWorker:
    """The server's own reader, answering on the caller's thread.

    Args:
        reader: the reader (shared: nothing is copied).
    """

    check_every = None

    def __init__(self, reader: Reader) -> None:
        self.reader = reader
        self.pid = os.getpid()

    def launch(self) -> None:
        pass

    def wait_ready(self, seconds: float) -> int:
        return self.pid

    def alive(self) -> bool:
        return True

    def ask(self, task: Task, args: tuple, kwargs: dict) -> Done:
        return call(self.reader, task, args, kwargs)

    def ended(self) -> str:
        return "did not end"

    def terminate(self) -> None:
        pass

    def stop(self) -> None:
        pass


class ProcessWorker:
    """A worker process with its own reader, loaded from ``source``.

    Args:
        source: how the process loads its reader.
        torch_threads: the torch threads of the process.
    """

    check_every = 0.25

    def __init__(self, source: ReaderSource, torch_threads: int = 1) -> None:
        self.source = source
        self.torch_threads = torch_threads
        self.pid = 0
        self._process: SpawnProcess | None = None
        self._pipe: Connection | None = None

    def launch(self) -> None:
        context = multiprocessing.get_context("spawn")  # no fork of a threaded server
        mine, theirs = context.Pipe()
        self._process = context.Process(
            target=_worker_main,
            args=(theirs, self.source, self.torch_threads, os.getpid()),
            name="answer-worker",
            daemon=True,  # and so terminated by multiprocessing when the server exits
        )
        with _signals_deferred():  # a Ctrl-C now would cut the new process's start in half
            self._process.start()
        theirs.close()  # the worker's end lives in the worker only: its exit closes the pipe
        self._pipe = mine
        self.pid = self._process.pid or 0

    def wait_ready(self, seconds: float) -> int:
        kind, value = self._receive(seconds)
        if kind == "failed":
            raise value
        return value

    def alive(self) -> bool:
        return self._process is not None and self._process.is_alive()

    def ask(self, task: Task, args: tuple, kwargs: dict) -> Done:
        assert self._pipe is not None
        try:
            self._pipe.send((task, args, kwargs))
        except OSError:
            raise WorkerDied(self.ended()) from None
        kind, value = self._receive(None)
        if kind == "error":
            raise value
        return value

    def _receive(self, seconds: float | None) -> tuple[str, Any]:
        """The worker's next message, or ``WorkerDied`` if it ends first."""
        assert self._process is not None and self._pipe is not None
        ready = wait([self._pipe, self._process.sentinel], seconds)
        if not ready:
            raise TimeoutError(f"the worker did not answer within {seconds:g} s")
        if self._pipe in ready:
            try:
                return self._pipe.recv()
            except Exception:  # closed, or cut short by the worker's death
                pass
        self._process.join(1.0)
        raise WorkerDied(self.ended())

    def ended(self) -> str:
        code = None if self._process is None else self._process.exitcode
        if code is None:
            return "stopped answering"
        if code < 0:
            return f"was killed by {signal.Signals(-code).name}"
        return f"exited with status {code}"

    def terminate(self) -> None:
        """SIGTERM."""
        if self._process is not None and self._process.is_alive():
            self._process.terminate()

    def stop(self, seconds: float = 3.0) -> None:
        """SIGTERM, then SIGKILL after ``seconds``."""
        if self._process is None:
            return
        if self._process.is_alive():
            self._process.terminate()
            self._process.join(seconds)
            if self._process.is_alive():
                self._process.kill()
                self._process.join()
        if self._pipe is not None:
            self._pipe.close()


@contextmanager
def _signals_deferred() -> Iterator[None]:
    """SIGINT and SIGTERM that come during the body take effect when it ends (main thread
    only, where Python runs signal handlers). Starting a spawned process writes its
    preparation data down a pipe: cut short by Ctrl-C, the child dies reading it (a traceback
    in the server's log) and the parent forgets it."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    received: list[int] = []
    kinds = (signal.SIGINT, signal.SIGTERM)
    previous = {
        kind: signal.signal(kind, lambda number, frame: received.append(number)) for kind in kinds
    }
    try:
        yield
    finally:
        for kind, handler in previous.items():
            signal.signal(kind, signal.SIG_DFL if handler is None else handler)
        if received:
            signal.raise_signal(received[0])  # to the handler it was meant for


# --- inside a worker process ---------------------------------------------------------------


def _watch_server(server: int) -> None:
    while os.getppid() == server:
        time.sleep(SERVER_CHECK_SECONDS)
    os._exit(1)  # the server died (kill -9): no one will ask or read our answers


def _worker_main(pipe: Connection, source: ReaderSource, torch_threads: int, server: int) -> None:
    """A worker process: load the reader, then answer what comes down the pipe until it
    closes."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C stops the server, which stops us
    threading.Thread(target=_watch_server, args=(server,), daemon=True).start()
    for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ[name] = str(torch_threads)  # before numpy and torch start their pools
    import torch

    torch.set_num_threads(torch_threads)
    try:
        reader = source.load()
    except UserError as error:  # the pool reports it in one line
        pipe.send(("failed", error))
        return
    pipe.send(("ready", os.getpid()))
    while True:
        try:
            task, args, kwargs = pipe.recv()
        except (EOFError, OSError):  # the server closed its end: it is stopping
            return
        pipe.send(_answer(reader, task, args, kwargs))


def _answer(reader: Reader, task: Task, args: tuple, kwargs: dict) -> tuple[str, Any]:
    try:
        return "done", call(reader, task, args, kwargs)
    except UserError as error:  # a refusal of the question, with its code
        return "error", error
    except Exception as error:  # a bug: its traceback goes to the server's log with the 500
        return "error", RuntimeError(
            f"{type(error).__name__} in an answering worker: {error}\n{traceback.format_exc()}"
        )
