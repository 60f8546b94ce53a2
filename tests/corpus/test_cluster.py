"""``preprocess --engine dask`` on a real local Dask cluster: two worker processes (nannies)
that the module starts once and the tests share.

The pipeline is the blank English one with an ``entity_ruler`` of the other preprocessing
tests, plus ``test_block_once`` (``cluster_components``): the first worker that meets story 13
(shard 3 of 9) writes its process id and waits, so that a test can SIGKILL it in the middle of
that shard once the other worker has finished the other 8 shards. With the flag file in place
nothing waits. Every cluster run is compared with one local run in one process.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import signal
import sys
import threading
import time
from pathlib import Path

import dask
import datasets
import pytest
import spacy
from distributed import LocalCluster
from distributed.utils import get_mp_context

from attentive_reader.cli import main as cli_main
from attentive_reader.common.errors import UserError
from attentive_reader.corpus.preprocess import PreprocessOptions, preprocess
from attentive_reader.corpus.records import SPLITS
from tests.corpus import cluster_components  # noqa: F401  (registers test_block_once here)
from tests.corpus.pipelines import corpus_patterns, preprocess_options

WORKER_MODULES = ["attentive_reader.corpus.cluster", "tests.corpus.cluster_components"]
SHARDS = 9  # 34 records in shards of 4
BLOCKED_SHARD = 3  # story 13's


@pytest.fixture(scope="module")
def cluster():
    # Worker processes start from a fork server that imported the toolkit once, so that a
    # killed worker is back in a fraction of a second (a spawned one imports it all again).
    # A nanny sets its workers' variables (MALLOC_TRIM_THRESHOLD_, ...) in this process's
    # environment: they are taken back after the module (the allocator's tests read them).
    environment = dict(os.environ)
    try:
        with dask.config.set({"distributed.worker.multiprocessing-method": "forkserver"}):
            get_mp_context().set_forkserver_preload(["distributed", *WORKER_MODULES])
            with LocalCluster(
                n_workers=2,
                processes=True,
                threads_per_worker=1,
                host="127.0.0.1",
                dashboard_address=None,
                preload=["tests.corpus.cluster_components"],
                silence_logs=logging.CRITICAL,
            ) as cluster:
                yield cluster
    finally:
        os.environ.clear()
        os.environ.update(environment)


@pytest.fixture
def scheduler(cluster) -> str:
    """The scheduler's address, once both workers are up (a killed one is restarted)."""
    cluster.wait_for_workers(2, timeout=120)
    return cluster.scheduler_address


@pytest.fixture(scope="module")
def model(tmp_path_factory) -> tuple[str, Path]:
    """The pipeline (a directory) and its flag file (present: nothing waits)."""
    folder = tmp_path_factory.mktemp("pipeline")
    flag = folder / "blocked.pid"
    nlp = spacy.blank("en")
    nlp.add_pipe("entity_ruler", name="ner").add_patterns(corpus_patterns())
    nlp.add_pipe("test_block_once", config={"flag": str(flag), "word": "on day 13."})
    nlp.to_disk(folder / "ruler")
    flag.write_text("none\n")
    return str(folder / "ruler"), flag


@pytest.fixture(scope="module")
def local(corpus, model, tmp_path_factory) -> dict:
    """The manifest of the local run in one process; its folder is ``manifest["_out"]``."""
    out = tmp_path_factory.mktemp("local") / "out"
    result = preprocess([str(corpus)], out, preprocess_options(model[0]), progress=False)
    return {**result.manifest, "_out": out}


def _digests(out: Path) -> dict[str, str]:
    """SHA-256 of each split's rows, in order."""
    loaded = datasets.load_from_disk(str(out))
    digests = {}
    for split in SPLITS:
        digest = hashlib.sha256()
        for row in loaded[split]:
            digest.update(json.dumps(row, sort_keys=True).encode() + b"\n")
        digests[split] = digest.hexdigest()
    return digests


def _same_as_local(out: Path, manifest: dict, local: dict) -> None:
    assert _digests(out) == _digests(local["_out"])
    for key in ("run_key", "counts", "examples", "statistics", "skip_details", "spacy", "inputs"):
        assert manifest[key] == local[key], key
    options = {k: v for k, v in manifest["options"].items() if k not in ("engine", "scheduler")}
    assert options == {
        k: v for k, v in local["options"].items() if k not in ("engine", "scheduler")
    }
    assert manifest["options"]["engine"] == "dask" and local["options"]["engine"] == "local"


def _kill_blocked_worker(flag: Path, shards: Path, done: int) -> threading.Thread:
    """A thread that SIGKILLs the worker stopped in shard 3 once ``done`` shards are done."""

    def run() -> None:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            pid = flag.read_text().strip() if flag.exists() else ""
            if pid and len(list(shards.glob("shard-*.json"))) >= done:
                os.kill(int(pid), signal.SIGKILL)
                return
            time.sleep(0.02)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


@pytest.mark.slow  # on the cluster (started once, the first time)
def test_a_cluster_run_gives_the_local_dataset(corpus, model, local, scheduler, tmp_path, capsys):
    out = tmp_path / "out"
    argv = ["preprocess", str(corpus), "--output", str(out), "--spacy-model", model[0]]
    argv += ["--max-context-tokens", "200", "--shard-size", "4", "--engine", "dask"]
    assert cli_main([*argv, "--scheduler", scheduler]) == 0
    assert f"{SHARDS} shards processed, 0 reused" in capsys.readouterr().out
    manifest = json.loads((out / "manifest.json").read_text())
    _same_as_local(out, manifest, local)
    # Bad stories are counted as in a local run (and as by hand: see test_preprocess).
    assert manifest["counts"]["skipped"] == {
        "empty": 1,
        "no_entities": 1,
        "no_highlights": 1,
        "too_long": 1,
    }
    assert manifest["options"]["scheduler"] == scheduler
    assert not (out / "shards").exists()

    # A scheduler file names the cluster too; the finished output is left as it is.
    scheduler_file = tmp_path / "scheduler.json"
    scheduler_file.write_text(json.dumps({"address": scheduler, "type": "Scheduler"}))
    options = preprocess_options(model[0], engine="dask", scheduler=str(scheduler_file))
    assert preprocess([str(corpus)], out, options, progress=False).status == "up_to_date"


@pytest.mark.slow  # on the cluster (started once, the first time)
def test_a_worker_killed_mid_shard_is_replaced_and_the_dataset_is_the_same(
    corpus, model, local, scheduler, tmp_path
):
    path, flag = model
    flag.unlink(missing_ok=True)  # the first worker to meet story 13 waits there
    out = tmp_path / "out"
    killer = _kill_blocked_worker(flag, out / "shards", SHARDS - 1)
    options = preprocess_options(path, engine="dask", scheduler=scheduler)
    result = preprocess([str(corpus)], out, options, progress=False)
    killer.join(timeout=1)
    assert not killer.is_alive()
    assert flag.read_text().strip().isdigit()  # a worker did wait, and was killed
    assert result.processed_shards == SHARDS
    _same_as_local(out, result.manifest, local)


@pytest.mark.slow  # on the cluster (started once, the first time)
def test_a_lost_shard_stops_the_run_and_a_rerun_reuses_every_finished_shard(
    corpus, model, local, scheduler, cluster, tmp_path
):
    path, flag = model
    flag.unlink(missing_ok=True)
    out = tmp_path / "out"
    options = preprocess_options(path, engine="dask", scheduler=scheduler)
    allowed = cluster.scheduler.allowed_failures
    cluster.scheduler.allowed_failures = 0  # the first worker lost with a shard ends the run
    try:
        killer = _kill_blocked_worker(flag, out / "shards", SHARDS - 1)
        with pytest.raises(RuntimeError, match="shard 3 was lost.*rerun the same command"):
            preprocess([str(corpus)], out, options, progress=False)
        killer.join(timeout=1)
    finally:
        cluster.scheduler.allowed_failures = allowed
    finished = sorted(p.name for p in (out / "shards").glob("shard-*.json"))
    assert finished == [f"shard-{i:06d}.json" for i in range(SHARDS) if i != BLOCKED_SHARD]
    assert not (out / "manifest.json").exists()

    # The rerun (the flag is there now: nothing waits) does only shard 3.
    cluster.wait_for_workers(2, timeout=120)
    result = preprocess([str(corpus)], out, options, progress=False)
    assert (result.reused_shards, result.processed_shards) == (SHARDS - 1, 1)
    _same_as_local(out, result.manifest, local)


@pytest.mark.slow  # on the cluster (started once, the first time)
def test_a_worker_whose_pipeline_differs_from_the_drivers_refuses(model, scheduler):
    from attentive_reader.corpus.cluster import ClusterPool

    driver = {"name": "en_core_web_sm", "version": "3.8.0", "spacy": "3.8.0", "components": []}
    with pytest.raises(UserError, match="install the same spaCy and model versions on every"):
        ClusterPool(scheduler, model[0], driver)


def test_engine_options_are_checked(model, tmp_path):
    with pytest.raises(ValueError, match="--scheduler"):
        PreprocessOptions(engine="dask")
    with pytest.raises(ValueError, match="leave --num-proc out"):
        PreprocessOptions(engine="dask", scheduler="tcp://127.0.0.1:1", num_proc=2)
    with pytest.raises(ValueError, match="--engine dask"):
        PreprocessOptions(scheduler="tcp://127.0.0.1:1")
    # argparse: not a choice, in one line (no usage)
    assert cli_main(["preprocess", "x", "--output", str(tmp_path / "o"), "--engine", "ray"]) == 2


def test_an_unreachable_scheduler_is_one_line(corpus, model, tmp_path, monkeypatch):
    from attentive_reader.corpus import cluster

    monkeypatch.setattr(cluster, "CONNECT_SECONDS", 1)
    options = preprocess_options(
        model[0], engine="dask", scheduler="tcp://127.0.0.1:9"
    )  # discard port
    with pytest.raises(UserError, match="cannot reach the Dask scheduler tcp://127.0.0.1:9"):
        preprocess([str(corpus)], tmp_path / "out", options, progress=False)
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())


def test_without_the_extra_the_dask_engine_is_one_line(
    corpus, model, tmp_path, monkeypatch, capsys
):
    monkeypatch.setitem(sys.modules, "distributed", None)  # as where it is not installed
    monkeypatch.delitem(sys.modules, "attentive_reader.corpus.cluster", raising=False)
    argv = ["preprocess", str(corpus), "--output", str(tmp_path / "out"), "--engine", "dask"]
    assert cli_main([*argv, "--scheduler", "tcp://127.0.0.1:8786"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and 'pip install "attentive-reader[cluster]"' in err, err
    assert not (tmp_path / "out").exists()
