"""The cluster engine of a preprocessing run: the shards as tasks on a Dask distributed cluster.

``ClusterPool`` has the interface of the local ``workers.ShardPool`` (``submit``, ``collect``,
``close``, ``terminate``), so the driver's loop, the shard plan, the output folder and the
manifest are the same for both engines; only where a shard runs changes. The driver reads the
inputs and sends each shard's records with its task; a worker runs ``shards.process_shard``
and writes the shard's files into the output folder, which every worker must see at the same
path (shared storage). A finished shard is reused exactly as in a local run.

Each worker loads the spaCy pipeline once, when the run registers its ``SpacyPipeline``
plugin (and again only when a worker process is restarted); the plugin also checks that the
worker's toolkit and pipeline are the driver's, since a worker with another model version
would silently give another dataset. A worker that dies mid-shard (killed for lack of memory,
a lost machine) loses its task and the scheduler runs it again on another worker
(``distributed.scheduler.allowed-failures`` times, 3 by default): a shard's files are written
through a temporary file and a rename, so a half-done shard leaves nothing that looks finished
and the result is the same.

Why Dask rather than Ray: the engine only needs "run this function on some worker, again if
its worker dies", which ``distributed.Client.submit`` does with no more than a pure-Python
install (``pip install "attentive-reader[cluster]"``), ``dask scheduler`` / ``dask worker``
or ``dask-jobqueue`` on SLURM, and a ``LocalCluster`` that tests start in a second; Ray's
actors would hold the pipeline too, at the price of a large binary runtime.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import os
from concurrent.futures import CancelledError
from pathlib import Path

import distributed
from distributed import Client, Future, WorkerPlugin, as_completed, get_worker
from distributed.scheduler import KilledWorker
from spacy.language import Language

from attentive_reader.common.errors import UserError
from attentive_reader.corpus.manifest import ShardCounts
from attentive_reader.corpus.pipeline import load_pipeline, pipeline_info
from attentive_reader.corpus.shards import ShardTask, finished_shard
from attentive_reader.corpus.workers import run_shard
from attentive_reader.version import __version__

# How long the driver waits for the scheduler to answer, and for a first worker to join it.
CONNECT_SECONDS = 10
WORKER_WAIT_SECONDS = 60


class SpacyPipeline(WorkerPlugin):
    """A worker plugin holding the run's spaCy pipeline, loaded once per worker process.

    Args:
        model: the resolved pipeline name or directory (``None``: no shard holds a story).
        expected: the driver's ``pipeline_info``; a worker whose pipeline differs refuses
            its shards with a ``UserError``.
    """

    def __init__(self, model: str | None, expected: dict | None) -> None:
        self.model = model
        self.expected = expected
        self.toolkit = __version__
        key = json.dumps([model, expected, __version__], sort_keys=True)
        self.name = f"attentive-reader-spacy-{hashlib.sha1(key.encode()).hexdigest()[:12]}"
        self.nlp: Language | None = None

    async def setup(self, worker: distributed.Worker) -> None:
        """Load the pipeline in a thread (the worker keeps answering its scheduler)."""
        if __version__ != self.toolkit:
            raise UserError(
                f"Dask worker {worker.address} has attentive-reader {__version__}, the driver "
                f"{self.toolkit}; install the same version on every worker"
            )
        if self.model is None:
            return
        nlp = await asyncio.to_thread(load_pipeline, self.model)
        found = pipeline_info(nlp)
        if found != self.expected:
            raise UserError(
                f"Dask worker {worker.address} loads {self.model} as {found}, the driver as "
                f"{self.expected}; install the same spaCy and model versions on every worker"
            )
        self.nlp = nlp

    def teardown(self, worker: distributed.Worker) -> None:
        self.nlp = None


def _cluster_shard(task: ShardTask, plugin: str) -> tuple[int, dict]:
    """One shard on a worker: reused if a lost result's shard was written already."""
    finished = finished_shard(Path(task.directory), task.index, task.key)
    if finished is not None:  # the task ran again after its result was lost with a worker
        return task.index, finished.to_json()
    holder = get_worker().plugins.get(plugin)
    if not isinstance(holder, SpacyPipeline) or (holder.model is not None and holder.nlp is None):
        raise UserError(
            f"Dask worker {get_worker().address} has no spaCy pipeline for this run (it failed "
            "to load there: see the worker's log)"
        )
    return run_shard(task, holder.nlp)


def _client(scheduler: str) -> Client:
    """A client of ``scheduler``: an address (``tcp://host:8786``) or a scheduler file."""
    target = {"scheduler_file": scheduler} if os.path.isfile(scheduler) else {"address": scheduler}
    try:
        return Client(**target, timeout=CONNECT_SECONDS, set_as_default=False)
    except (OSError, TimeoutError, ValueError) as error:
        raise UserError(
            f"cannot reach the Dask scheduler {scheduler} ({error}); start one with `dask "
            "scheduler` and workers with `dask worker ADDRESS`, then pass its address "
            "(tcp://HOST:8786) or its --scheduler-file"
        ) from None


class ClusterPool:
    """The shards of a run as tasks on a Dask cluster; results come back in any order.

    Args:
        scheduler: the scheduler's address or scheduler file.
        model: the resolved spaCy pipeline (``None`` when no shard holds a story).
        info: the driver's ``pipeline_info`` of it.

    Raises:
        UserError: the scheduler cannot be reached, no worker joined it, or a worker's
            toolkit or pipeline differs from the driver's.
    """

    def __init__(self, scheduler: str, model: str | None, info: dict | None) -> None:
        self.scheduler = scheduler
        self.client = _client(scheduler)
        self.plugin = SpacyPipeline(model, info)
        self.pending: dict[Future, int] = {}
        self.completed = as_completed(loop=self.client.loop)
        try:
            self.client.wait_for_workers(1, timeout=WORKER_WAIT_SECONDS)
            self.client.register_plugin(self.plugin)
        except TimeoutError:
            self.client.close()
            raise UserError(
                f"no Dask worker joined the scheduler {scheduler} within "
                f"{WORKER_WAIT_SECONDS} s; start workers with `dask worker {scheduler}`"
            ) from None
        except BaseException:  # e.g. a worker's pipeline differs: no worker keeps the plugin
            with contextlib.suppress(Exception):
                self.client.unregister_worker_plugin(self.plugin.name)
            self.client.close()
            raise

    @property
    def slots(self) -> int:
        """Shards the cluster runs at once: its workers' threads (now)."""
        return max(1, sum(self.client.nthreads().values()))

    @property
    def in_flight(self) -> int:
        """Shards submitted and not yet collected."""
        return len(self.pending)

    def submit(self, task: ShardTask) -> None:
        """Queue ``task`` on the cluster."""
        future = self.client.submit(
            _cluster_shard, task, self.plugin.name, key=f"shard-{task.index:06d}-{task.key[:16]}"
        )
        self.pending[future] = task.index
        self.completed.add(future)

    def collect(self) -> tuple[int, ShardCounts]:
        """Wait for the next finished shard; raise what its task raised.

        Raises:
            RuntimeError: the shard's workers died ``allowed-failures`` times.
        """
        future = next(self.completed)
        index = self.pending.pop(future)
        try:
            found, counts = future.result()
        except KilledWorker:
            raise RuntimeError(
                f"shard {index} was lost with every Dask worker that ran it (killed for lack "
                "of memory?); rerun the same command to resume, with a smaller --shard-size"
            ) from None
        except CancelledError:
            raise RuntimeError(
                f"shard {index} was cancelled on the cluster {self.scheduler}"
            ) from None
        return found, ShardCounts.from_json(counts)

    def close(self) -> None:
        """Release the workers' pipelines and disconnect (after every shard was collected)."""
        try:
            self.client.unregister_worker_plugin(self.plugin.name)
        finally:
            self.client.close()

    def terminate(self) -> None:
        """Cancel the shards not yet done and disconnect. A shard already running finishes
        on its worker (its files are written whole; a rerun reuses them)."""
        try:
            self.client.cancel(list(self.pending), force=True)
            self.close()
        except Exception:  # the scheduler may be gone: nothing more to stop
            self.client.close()
