"""A preprocessing run before its first shard: its pipeline, its key, its folder, its engine.

``prepare_run`` loads the NER pipeline (none when every input is ``.question`` files), derives
the run key (``run_key_fields``: what identifies the run's output, hashed) and checks the
output folder against it (``outdir.prepare_output``: fresh, resume or up to date).
``open_pool`` starts where the shards run: a Dask cluster's workers (``corpus.cluster``, an
optional extra), local worker processes (``workers.ShardPool``) or none (the driver's process).
The driver (``corpus.preprocess``) reads the ``PreparedRun`` it returns in every later step.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

from spacy.language import Language

from attentive_reader.common.errors import UserError
from attentive_reader.common.fileio import write_json_atomic
from attentive_reader.corpus.grouping import GROUPING_RULES_VERSION
from attentive_reader.corpus.options import PreprocessOptions
from attentive_reader.corpus.outdir import RUN_FILE, SHARDS_DIR, TMP_DIR, prepare_output, run_state
from attentive_reader.corpus.pipeline import load_pipeline, pipeline_info, resolve_model
from attentive_reader.corpus.shards import input_identity
from attentive_reader.corpus.sources import QUESTION_KINDS, UrlLists
from attentive_reader.corpus.workers import ShardPool
from attentive_reader.version import __version__

if TYPE_CHECKING:  # the optional engine (pip install "attentive-reader[cluster]")
    from attentive_reader.corpus.cluster import ClusterPool


def run_key_fields(
    inputs: Sequence[str],
    kinds: Sequence[str],
    options: PreprocessOptions,
    model: dict | None,
) -> dict:
    """What identifies a run's output: the toolkit, the rules, the inputs, the pipeline and
    the options whose ``OptionSpec.run_key`` says they change it
    (``PreprocessOptions.run_key_options``)."""
    return {
        "toolkit": __version__,
        "grouping_rules": GROUPING_RULES_VERSION,
        "inputs": [{"path": input_identity(p, k), "kind": k} for p, k in zip(inputs, kinds)],
        "model": model,
        **options.run_key_options(),
    }


def model_identity(name: str | None) -> str:
    """The pipeline's name, or its directory as an absolute path."""
    resolved = resolve_model(name)
    return str(Path(resolved).resolve()) if Path(resolved).is_dir() else resolved


@dataclass(frozen=True)
class RunPipeline:
    """The run's NER pipeline; every field ``None`` when every input is ``.question`` files,
    in a folder or an archive (no NER needed).

    Attributes:
        nlp: the loaded pipeline.
        model: the model's identity (part of the run key).
        info: the pipeline's name and version (``pipeline.pipeline_info``) for the manifest.
    """

    nlp: Language | None = None
    model: dict | None = None
    info: dict | None = None


def run_pipeline(options: PreprocessOptions, kinds: Sequence[str]) -> RunPipeline:
    """The pipeline of a run over inputs of these ``kinds``, loaded once in the driver."""
    if all(kind in QUESTION_KINDS for kind in kinds):
        return RunPipeline()
    nlp = load_pipeline(options.spacy_model)
    info = pipeline_info(nlp)
    model = {
        "model": model_identity(options.spacy_model),
        "name": info["name"],
        "version": info["version"],
    }
    return RunPipeline(nlp, model, info)


@dataclass
class PreparedRun:
    """One preprocessing run, prepared: what every step of the driver after ``prepare_run``
    reads.

    Attributes:
        inputs: the inputs, in order; ``kinds`` their kinds (``shards.input_kinds``).
        options: the run's options.
        pipeline: its NER pipeline.
        url_lists: the ``--url-lists`` read, if given.
        run_key: the hash of ``run_key_fields``.
        status: ``fresh``, ``resume`` or ``up_to_date`` (``outdir.prepare_output``).
        out: the output folder; ``shards`` its shard folder.
    """

    inputs: Sequence[str]
    kinds: list[str]
    options: PreprocessOptions
    pipeline: RunPipeline
    url_lists: UrlLists | None
    run_key: str
    status: str
    out: Path
    shards: Path

    @property
    def partial(self) -> bool:
        """A ``num_shards`` part: its shards stay for ``merge``."""
        return self.options.num_shards > 1


def prepare_run(
    inputs: Sequence[str], kinds: list[str], out: Path, options: PreprocessOptions
) -> PreparedRun:
    """The run's pipeline and key, and its output folder checked (``prepare_output``): an
    up-to-date output is cleaned of leftovers; else the shard folder is ready."""
    url_lists = UrlLists.from_dir(options.url_lists) if options.url_lists else None
    pipeline = run_pipeline(options, kinds)
    fields = run_key_fields(inputs, kinds, options, pipeline.model)
    run_key = hashlib.sha1(json.dumps(fields, sort_keys=True).encode()).hexdigest()
    state = run_state(run_key, options)
    status = prepare_output(out, state, options.overwrite)
    shards = out / SHARDS_DIR
    run = PreparedRun(inputs, kinds, options, pipeline, url_lists, run_key, status, out, shards)
    if status == "up_to_date":
        if not run.partial:  # left behind by a run killed after it finished
            shutil.rmtree(shards, ignore_errors=True)
        shutil.rmtree(out / TMP_DIR, ignore_errors=True)
        return run
    shards.mkdir(exist_ok=True)
    for stale in shards.glob(".*.tmp-*"):
        stale.unlink()
    write_json_atomic(shards / RUN_FILE, state)
    return run


def open_pool(options: PreprocessOptions, pipeline: RunPipeline) -> ShardPool | ClusterPool | None:
    """The run's workers: a cluster's, local processes, or none (this process)."""
    if options.engine == "dask":
        assert options.scheduler is not None
        cluster = cluster_engine()
        # A directory as an absolute path: the workers' working directories are their own.
        model = model_identity(options.spacy_model) if pipeline.nlp is not None else None
        return cluster.ClusterPool(options.scheduler, model, pipeline.info)
    if options.num_proc > 1:
        return ShardPool(options.num_proc, options.spacy_model, pipeline.nlp)
    return None


def cluster_engine() -> ModuleType:
    """``corpus.cluster``, or the one line that says what to install."""
    try:
        return importlib.import_module("attentive_reader.corpus.cluster")
    except ImportError as error:
        if (error.name or "").split(".")[0] not in ("distributed", "dask"):
            raise
        raise UserError(
            '--engine dask needs Dask distributed: pip install "attentive-reader[cluster]" '
            '(or pip install "dask[distributed]")'
        ) from None
