"""Faults while writing: a second run on the same output, a full disk, a read-only folder,
no permission; each is one line and a non-zero exit, and the rerun gives the undisturbed
result. For ``preprocess`` (+ ``merge``) and ``export``."""

from __future__ import annotations

import errno
import os
import subprocess
import sys
from pathlib import Path

import datasets
import pyarrow.parquet as pq
import pytest

import attentive_reader.corpus.preprocess as driver
import attentive_reader.corpus.questions as questions
from attentive_reader.cli import main as cli_main
from attentive_reader.common.faults import OutputError
from attentive_reader.common.locking import OutputInUse, lock_path
from attentive_reader.corpus.preprocess import merge, preprocess
from attentive_reader.corpus.questions import export_questions
from tests.corpus.pipelines import dataset_rows, preprocess_options


@pytest.fixture(scope="module")
def reference(corpus, model, tmp_path_factory) -> Path:
    """The undisturbed run (9 shards of 4 stories)."""
    out = tmp_path_factory.mktemp("reference") / "out"
    preprocess([str(corpus)], out, preprocess_options(model), progress=False)
    return out


def _cli_args(corpus: Path, out: Path, model: str) -> list[str]:
    return ["preprocess", str(corpus), "--output", str(out), "--spacy-model", model]


def _same_as(out: Path, reference: Path) -> None:
    """The same dataset and manifest (but for ``num_proc``, which changes only the speed)."""
    assert dataset_rows(out) == dataset_rows(reference)
    manifests = [driver.read_manifest(out), driver.read_manifest(reference)]
    for manifest in manifests:
        manifest["options"].pop("num_proc")
    assert manifests[0] == manifests[1]


def _looks_unfinished(out: Path) -> None:
    assert not (out / "manifest.json").exists() and not (out / "dataset_dict.json").exists()


def _one_line(err: str) -> str:
    assert "Traceback" not in err
    last = err.strip().splitlines()[-1]
    assert last.startswith("attentive-reader preprocess: error: ")
    return last


def test_a_run_arriving_while_another_holds_the_output_is_refused(
    corpus, model, tmp_path, lock_holder, capsys
):
    out = tmp_path / "out"
    first = lock_holder(out, "preprocess")
    with pytest.raises(OutputInUse, match=f"in use by process {first.pid}"):
        preprocess([str(corpus)], out, preprocess_options(model), progress=False)
    assert cli_main(_cli_args(corpus, out, model)) == 2
    assert f"in use by process {first.pid}" in _one_line(capsys.readouterr().err)
    assert not out.exists()  # touched nothing


@pytest.mark.slow
def test_a_run_arriving_during_this_run_is_refused_and_this_one_finishes(
    corpus, model, tmp_path, reference, monkeypatch
):
    out = tmp_path / "out"
    second: list[subprocess.CompletedProcess] = []
    process_shard = driver.process_shard

    def and_a_second_run(task, nlp, on_record=None):
        if task.index == 2:  # two shards are finished: the second command arrives
            argv = [sys.executable, "-m", "attentive_reader.cli", *_cli_args(corpus, out, model)]
            second.append(subprocess.run(argv, capture_output=True, text=True, timeout=120))
        return process_shard(task, nlp, on_record)

    monkeypatch.setattr(driver, "process_shard", and_a_second_run)
    preprocess([str(corpus)], out, preprocess_options(model), progress=False)
    (refused,) = second
    assert refused.returncode == 2
    assert f"in use by process {os.getpid()}" in _one_line(refused.stderr)
    _same_as(out, reference)


class _FailingWriter(pq.ParquetWriter):
    """Raises ``code`` when the examples of shard ``FAIL_AT`` are written."""

    code = errno.ENOSPC

    def write_table(self, table, *args, **kwargs):
        if "shard-000003" in str(self.where):
            raise OSError(self.code, os.strerror(self.code), str(self.where))
        return super().write_table(table, *args, **kwargs)


@pytest.mark.parametrize("num_proc", [1, 2])
@pytest.mark.parametrize(
    ("code", "words"),
    [(errno.ENOSPC, "is full: "), (errno.EACCES, "no permission to write")],
)
def test_a_fault_in_a_shard_stops_in_one_line_and_the_rerun_continues(
    corpus, model, tmp_path, reference, monkeypatch, capsys, code, words, num_proc
):
    out = tmp_path / "out"
    writer = type("Writer", (_FailingWriter,), {"code": code})
    monkeypatch.setattr(driver.pq, "ParquetWriter", writer)
    argv = [*_cli_args(corpus, out, model), "--max-context-tokens", "200", "--shard-size", "4"]
    assert cli_main([*argv, "--num-proc", str(num_proc), "--quiet"]) == 2
    line = _one_line(capsys.readouterr().err)
    assert words in line and "written" in line and "run the same command again" in line
    _looks_unfinished(out)
    finished = len(list((out / "shards").glob("shard-*.json")))
    # One process has finished shards 0-2 before it reaches shard 3; with two workers, the one
    # that fails at shard 3 has finished a shard before it, while the other may be mid-shard.
    assert finished >= (3 if num_proc == 1 else 1)
    if num_proc == 1:  # (a worker stopped mid-shard leaves its temporary file, as after a kill)
        assert not list((out / "shards").glob(".*tmp*"))
    monkeypatch.undo()
    resumed = preprocess(
        [str(corpus)], out, preprocess_options(model, num_proc=num_proc), progress=False
    )
    if num_proc == 1:
        assert resumed.reused_shards == finished
    else:  # the other worker may still close the shard it was writing as the run stops
        assert resumed.reused_shards >= finished
    _same_as(out, reference)


def test_a_full_disk_while_finishing_keeps_every_shard(
    corpus, model, tmp_path, reference, monkeypatch
):
    def full(self, *args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device", str(out / ".tmp" / "dataset"))

    out = tmp_path / "out"
    monkeypatch.setattr(datasets.DatasetDict, "save_to_disk", full)
    with pytest.raises(OutputError, match=r"is full: .* written, about .* needed; free space"):
        preprocess([str(corpus)], out, preprocess_options(model), progress=False)
    _looks_unfinished(out)
    monkeypatch.undo()
    resumed = preprocess([str(corpus)], out, preprocess_options(model), progress=False)
    assert (resumed.reused_shards, resumed.processed_shards) == (9, 0)
    _same_as(out, reference)


def test_a_full_merge_leaves_nothing_and_is_rerun(corpus, model, tmp_path, reference, monkeypatch):
    parts = [tmp_path / f"part{i}" for i in range(2)]
    for i, part in enumerate(parts):
        preprocess(
            [str(corpus)],
            part,
            preprocess_options(model, num_shards=2, shard_index=i),
            progress=False,
        )
    out = tmp_path / "merged"
    monkeypatch.setattr(
        driver,
        "write_json_atomic",
        lambda path, data: (_ for _ in ()).throw(OSError(errno.ENOSPC, "full", str(path))),
    )
    with pytest.raises(OutputError, match="is full"):
        merge(parts, out)
    assert not out.exists() or not any(out.iterdir())
    monkeypatch.undo()
    merge(parts, out)
    assert dataset_rows(out) == dataset_rows(reference)


def test_the_estimate_and_a_real_full_disk_then_a_read_only_one(
    corpus, model, reference, small_disk, capsys
):
    out = small_disk.path / "out"
    argv = [*_cli_args(corpus, out, model), "--max-context-tokens", "200", "--shard-size", "4"]
    assert cli_main(argv) == 2  # 64 KB: the shards and the dataset need about 200 KB
    err = capsys.readouterr().err
    assert "expected output: about" in err and "warning: the disk holding" in err
    assert "is full: " in _one_line(err)
    _looks_unfinished(out)
    small_disk.resize("8m")  # free space, and run the same command again
    assert cli_main(argv) == 0
    _same_as(out, reference)

    small_disk.read_only(True)
    other = small_disk.path / "other"
    assert cli_main([*argv[:3], str(other), *argv[4:]]) == 2
    assert "is on a read-only filesystem" in _one_line(capsys.readouterr().err)
    small_disk.read_only(False)
    assert cli_main([*argv[:3], str(other), *argv[4:]]) == 0
    _same_as(other, reference)


def test_a_path_through_a_file_is_one_line(corpus, model, tmp_path, capsys):
    (tmp_path / "file").write_text("mine")
    assert cli_main(_cli_args(corpus, tmp_path / "file" / "out", model)) == 2
    assert "a file" in _one_line(capsys.readouterr().err)
    assert (tmp_path / "file").read_text() == "mine"


# --------------------------------------------------------------------------- export


def _files(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): p.read_text() for p in sorted(folder.rglob("*.question"))}


@pytest.fixture(scope="module")
def exported(reference, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("exported") / "questions"
    export_questions(reference, out)
    return out


def test_export_refuses_a_second_run(reference, tmp_path, lock_holder, capsys):
    out = tmp_path / "questions"
    first = lock_holder(out, "export")
    assert cli_main(["export", str(reference), "--output", str(out)]) == 2
    err = capsys.readouterr().err
    assert f"in use by process {first.pid} (attentive-reader export)" in err
    assert "Traceback" not in err and not out.exists()


@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EACCES])
def test_export_fault_leaves_nothing_and_the_rerun_gives_the_same_files(
    reference, exported, tmp_path, monkeypatch, code
):
    out = tmp_path / "questions"
    calls = []

    def failing_open(path, *args, **kwargs):
        calls.append(path)
        if len(calls) == 5:
            raise OSError(code, os.strerror(code), str(path))
        return open(path, *args, **kwargs)

    monkeypatch.setattr(questions, "open", failing_open, raising=False)
    with pytest.raises(OutputError, match="is full|no permission"):
        export_questions(reference, out)
    assert not out.exists() and not (tmp_path / ".questions.partial").exists()
    monkeypatch.undo()
    export_questions(reference, out)
    assert _files(out) == _files(exported) and not lock_path(out).exists()


def test_export_on_a_real_full_disk_then_more_space(reference, exported, small_disk):
    out = small_disk.path / "questions"
    small_disk.resize("16k")
    with pytest.raises(OutputError, match="is full: "):
        export_questions(reference, out)
    assert not out.exists()
    small_disk.resize("8m")
    export_questions(reference, out)
    assert _files(out) == _files(exported)
