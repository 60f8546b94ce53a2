"""The preprocessing driver: output, manifest, determinism, sharding/merge, resume, faults.

Every test uses a blank English pipeline with an ``entity_ruler`` named ``ner`` (saved to a
folder and named with ``--spacy-model``), so no statistical model is needed.
"""

from __future__ import annotations

import ast
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import datasets
import pytest

from attentive_reader.cli import main as cli_main
from attentive_reader.common.errors import UserError
from attentive_reader.corpus.manifest import MANIFEST_FORMAT, ShardCounts, read_manifest, statistics
from attentive_reader.corpus.preprocess import merge, preprocess
from attentive_reader.corpus.questions import export_questions
from attentive_reader.corpus.records import CLOZE_FEATURES, SPLITS, ClozeExample
from tests.corpus.pipelines import (
    ORGS,
    PEOPLE,
    PLACES,
    dataset_rows,
    preprocess_options,
    save_pipeline,
)


def test_output_manifest_and_accounting(corpus, model, tmp_path):
    out = tmp_path / "out"
    result = preprocess([str(corpus)], out, preprocess_options(model), progress=False)
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest == result.manifest and manifest["complete"] is True

    loaded = datasets.load_from_disk(str(out))
    assert sorted(loaded) == sorted(SPLITS)
    for split in SPLITS:
        assert loaded[split].features == CLOZE_FEATURES
        assert len(loaded[split]) == manifest["examples"][split]

    counts = manifest["counts"]
    assert counts["read"] == 34
    assert counts["kept"] == 30
    assert counts["skipped"] == {"empty": 1, "no_entities": 1, "no_highlights": 1, "too_long": 1}
    assert counts["read"] == counts["kept"] + sum(counts["skipped"].values())
    # Every story: highlight 1 asks for a, b and the place; highlight 2 for the org and "Jones"
    # etc. (a's surname, a trailing sub-span of a's name): 5 questions per story.
    assert sum(manifest["examples"].values()) == 150
    assert manifest["statistics"]["questions_per_document"] == 5.0
    assert manifest["statistics"]["entities_per_document"] == 4.0
    assert manifest["options"]["max_context_tokens"] == 200
    assert manifest["spacy"]["components"] == ["ner"]
    assert manifest["toolkit"]["name"] == "attentive-reader"
    assert not (out / "shards").exists() and not (out / ".tmp").exists()

    example = ClozeExample.from_row(loaded["train"][0])
    assert example.query.count("@placeholder") == 1
    assert example.answer in example.candidates
    assert example.entities[example.answer] in PEOPLE + PLACES + ORGS + ["Smith", "Jones"]


def test_read_manifest_absent_foreign_and_broken(tmp_path):
    assert read_manifest(tmp_path) is None  # no manifest.json
    (tmp_path / "manifest.json").write_text('{"format": "something else"}', encoding="utf-8")
    assert read_manifest(tmp_path) is None  # not a dataset of this toolkit
    ours = {"format": MANIFEST_FORMAT, "complete": True}
    (tmp_path / "manifest.json").write_text(json.dumps(ours), encoding="utf-8")
    assert read_manifest(tmp_path) == ours
    (tmp_path / "manifest.json").write_text('{"format": ', encoding="utf-8")
    with pytest.raises(UserError, match=r"manifest\.json: not a readable JSON manifest"):
        read_manifest(tmp_path)


def test_statistics_by_hand():
    """Two stories, by hand: contexts of 6 and 10 tokens, 3 and 1 entities, 3 questions."""
    counts = ShardCounts(read=3)
    one = ClozeExample(
        "s1_0_0",
        "s1",
        ("a",) * 6,
        ("@placeholder", "x", "y"),
        "@entity0",
        ("@entity0", "@entity1", "@entity2"),
    )
    two = ClozeExample(
        "s1_0_1", "s1", ("a",) * 6, ("@placeholder", "x"), "@entity1", one.candidates
    )
    three = ClozeExample(
        "s2_0_0", "s2", ("a",) * 10, ("@placeholder",) * 1, "@entity0", ("@entity0",)
    )
    counts.add_story("train", [one, two])
    counts.add_story("test", [three])
    assert statistics(counts) == {
        "documents": 2,
        "documents_by_split": {"train": 1, "validation": 0, "test": 1},
        "examples": 3,
        "train_questions_per_document": 2.0,
        "questions_per_document": 1.5,
        "entities_per_document": 2.0,
        "context_tokens": 8.0,
        "query_tokens": 2.0,
    }
    assert counts.examples == {"train": 2, "validation": 0, "test": 1}
    assert ShardCounts.from_json(counts.to_json()) == counts


def test_the_end_of_run_table_compares_train_documents_with_the_published_train_split():
    """The published documents (90,266 for CNN) and queries per document (4.2) are the train
    split's: the table's rows hold this run's train figures, not all splits'."""
    from rich.console import Console

    from attentive_reader.corpus.manifest import comparison_table

    counts = ShardCounts(read=3)
    story = ClozeExample("s1_0_0", "s1", ("a",) * 4, ("@placeholder",), "@entity0", ("@entity0",))
    counts.add_story("train", [story] * 3)
    counts.add_story("validation", [story])
    question = ClozeExample("q", "s9", ("a",) * 4, ("@placeholder",), "@entity0", ("@entity0",))
    counts.add_question("train", question)
    counts.add_question("train", question)  # a second question of the same story
    stats = statistics(counts)
    assert stats["documents"] == 3
    assert stats["documents_by_split"] == {"train": 2, "validation": 1, "test": 0}
    assert stats["train_questions_per_document"] == 2.5  # 5 train questions, 2 train documents
    manifest = {"statistics": stats, "examples": counts.examples}
    console = Console(record=True, width=120)
    console.print(comparison_table(manifest))
    rows = {
        cells[1].strip(): [c.strip() for c in cells[2:-1]]
        for cells in (line.split("│") for line in console.export_text().splitlines())
        if len(cells) > 2
    }
    assert rows["documents, train"] == ["2", "90,266", "196,961"]
    assert rows["queries per document, train"] == ["2.5", "4.2", "4.5"]


def test_shard_counts_of_an_older_version_are_processed_again(tmp_path):
    from attentive_reader.corpus.shards import finished_shard, shard_paths

    counts = ShardCounts(read=1)
    parquet, json_path = shard_paths(tmp_path, 0)
    parquet.parent.mkdir(parents=True, exist_ok=True)
    parquet.write_bytes(b"")
    old = counts.to_json()
    del old["documents_by_split"]
    json_path.write_text(json.dumps({"key": "k", "counts": old}))
    assert finished_shard(tmp_path, 0, "k") is None
    json_path.write_text(json.dumps({"key": "k", "counts": counts.to_json()}))
    assert finished_shard(tmp_path, 0, "k") == counts


def test_deterministic_and_independent_of_processes(corpus, model, tmp_path):
    one = preprocess([str(corpus)], tmp_path / "a", preprocess_options(model), progress=False)
    again = preprocess([str(corpus)], tmp_path / "b", preprocess_options(model), progress=False)
    two = preprocess(
        [str(corpus)], tmp_path / "c", preprocess_options(model, num_proc=2), progress=False
    )
    reference = dataset_rows(tmp_path / "a")
    assert dataset_rows(tmp_path / "b") == reference
    assert dataset_rows(tmp_path / "c") == reference
    for other in (again, two):
        assert other.manifest["counts"] == one.manifest["counts"]
        assert other.manifest["statistics"] == one.manifest["statistics"]
        assert other.manifest["run_key"] == one.manifest["run_key"]


@pytest.mark.slow
def test_parts_merge_into_the_single_run(corpus, model, tmp_path):
    single = preprocess(
        [str(corpus)], tmp_path / "single", preprocess_options(model), progress=False
    )
    parts = []
    for index in range(3):
        part = tmp_path / f"part{index}"
        result = preprocess(
            [str(corpus)],
            part,
            preprocess_options(model, num_shards=3, shard_index=index),
            progress=False,
        )
        assert result.manifest["complete"] is False
        assert result.manifest["partial"]["shard_indices"] == list(range(index, 9, 3))
        assert not (part / "dataset_dict.json").exists()  # a part is not a dataset
        parts.append(part)

    with pytest.raises(UserError, match="missing"):
        merge(parts[:2], tmp_path / "bad")
    with pytest.raises(UserError, match="both"):
        merge([*parts, parts[0]], tmp_path / "bad")

    assert (
        cli_main(["merge", *map(str, reversed(parts)), "--output", str(tmp_path / "merged")]) == 0
    )
    assert dataset_rows(tmp_path / "merged") == dataset_rows(tmp_path / "single")
    merged = json.loads((tmp_path / "merged" / "manifest.json").read_text())
    assert merged.pop("merged_from") == [str(p.resolve()) for p in reversed(parts)]
    assert merged == single.manifest


def _script(tmp_path: Path) -> Path:
    """A console entry point that knows the slow test component."""
    script = tmp_path / "run_cli.py"
    script.write_text(
        textwrap.dedent(
            """
            import faulthandler, signal, sys, time
            from spacy.language import Language

            # Ctrl-C as in a terminal, whatever this test run inherited: a shell starts a
            # background job ("pytest &") with SIGINT ignored, and so would this run be.
            signal.signal(signal.SIGINT, signal.default_int_handler)
            # SIGUSR1: every thread's stack on stderr, the workers' too (they inherit it), so
            # that a run that hangs says where.
            faulthandler.register(signal.SIGUSR1, all_threads=True)

            @Language.component("test_slow_down")
            def _slow_down(doc):
                time.sleep(0.2)  # slow enough that signals land mid-run, even on a busy machine
                return doc

            from attentive_reader.cli import main
            sys.exit(main(sys.argv[1:]))
            """
        )
    )
    return script


def _shards_done(out: Path) -> int:
    return len(list((out / "shards").glob("shard-*.json")))


def _run_until(args: list[str], out: Path, shards: int, sig: int, tmp_path: Path):
    """Start the command in its own process group; send ``sig`` once ``shards`` are done."""
    root = Path(__file__).resolve().parents[2]
    process = subprocess.Popen(
        [sys.executable, str(_script(tmp_path)), "preprocess", *args],
        env={**os.environ, "PYTHONPATH": str(root)},
        start_new_session=True,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 180
        while _shards_done(out) < shards:
            assert process.poll() is None, process.stderr.read().decode()
            assert time.monotonic() < deadline, "the run made no progress"
            time.sleep(0.01)
        at_signal = _shards_done(out), process.poll()
        os.killpg(process.pid, sig)
        try:
            _, err = process.communicate(timeout=30)
        except subprocess.TimeoutExpired:  # a hang: the stacks of the run's processes
            os.killpg(process.pid, signal.SIGUSR1)
            time.sleep(2)
            os.killpg(process.pid, signal.SIGKILL)
            _, err = process.communicate()
            raise AssertionError(
                f"the run did not end within 30 s of the signal ({at_signal[0]} shards done "
                f"then); its processes' stacks:\n{err.decode()[-20000:]}"
            ) from None
        if sig == signal.SIGINT and process.returncode != 130:  # say what the run had done
            err += (
                f"\n[test] at the signal: {at_signal[0]} shards done, exit {at_signal[1]}".encode()
            )
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    return process.returncode, err.decode()


@pytest.mark.slow
def test_resume_after_ctrl_c_and_kill_gives_the_uninterrupted_output(corpus, tmp_path):
    model = save_pipeline(tmp_path / "slow", slow=True)
    out = tmp_path / "out"
    args = [str(corpus), "--output", str(out), "--spacy-model", model, "--shard-size", "3"]
    args += ["--max-context-tokens", "200", "--quiet"]

    # Ctrl-C with two workers: exit 130, finished shards kept.
    code, err = _run_until([*args, "--num-proc", "2"], out, 2, signal.SIGINT, tmp_path)
    assert code == 130 and "run the same command again to resume" in err, (code, err)
    first = _shards_done(out)
    assert first >= 2
    # Then kill -9 of the rerun (one process), a few shards later.
    _run_until(args, out, first + 2, signal.SIGKILL, tmp_path)
    done = _shards_done(out)
    assert first + 2 <= done < 12, "killed too late to test resuming"
    # A killed run never looks complete.
    assert not (out / "manifest.json").exists() and not (out / "dataset_dict.json").exists()

    options = preprocess_options(model, shard_size=3)
    with pytest.raises(UserError, match="not empty"):  # other options: not the same run
        preprocess([str(corpus)], out, preprocess_options(model, shard_size=5), progress=False)
    resumed = preprocess([str(corpus)], out, options, progress=False)
    assert resumed.reused_shards == done
    assert resumed.reused_shards + resumed.processed_shards == 12
    full = preprocess([str(corpus)], tmp_path / "full", options, progress=False)
    assert dataset_rows(out) == dataset_rows(tmp_path / "full")
    assert resumed.manifest == full.manifest

    again = preprocess([str(corpus)], out, options, progress=False)
    assert again.status == "up_to_date"


@pytest.mark.slow
def test_output_directory_rules(corpus, model, tmp_path):
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("mine")
    with pytest.raises(UserError, match="not empty"):
        preprocess([str(corpus)], foreign, preprocess_options(model), progress=False)
    with pytest.raises(UserError, match="not preprocessing output"):
        preprocess(
            [str(corpus)], foreign, preprocess_options(model, overwrite=True), progress=False
        )
    assert (foreign / "notes.txt").read_text() == "mine"

    out = tmp_path / "out"
    preprocess([str(corpus)], out, preprocess_options(model), progress=False)
    with pytest.raises(UserError, match="--overwrite"):
        preprocess([str(corpus)], out, preprocess_options(model, lowercase=False), progress=False)
    result = preprocess(
        [str(corpus)],
        out,
        preprocess_options(model, lowercase=False, overwrite=True),
        progress=False,
    )
    assert result.status == "done"
    assert datasets.load_from_disk(str(out))["train"][0]["context"][-1] == "."


def test_strict_stops_at_the_first_bad_story(corpus, model, tmp_path):
    with pytest.raises(UserError, match="zz_empty.story"):
        preprocess(
            [str(corpus)], tmp_path / "out", preprocess_options(model, strict=True), progress=False
        )


def test_question_files_are_read_as_examples(corpus, model, tmp_path):
    preprocess([str(corpus)], tmp_path / "stories", preprocess_options(model), progress=False)
    export_questions(tmp_path / "stories", tmp_path / "questions")
    result = preprocess(
        [str(tmp_path / "questions")], tmp_path / "again", preprocess_options(None), progress=False
    )
    assert result.manifest["spacy"] is None  # no NER for .question inputs
    assert dataset_rows(tmp_path / "again") == dataset_rows(tmp_path / "stories")
    stats = result.manifest["statistics"]
    original = json.loads((tmp_path / "stories" / "manifest.json").read_text())["statistics"]
    assert stats == original
    assert result.manifest["counts"]["by_kind"]["question_files"] == 150
    # Workers load no pipeline for them either (this model does not exist).
    options = preprocess_options("no_such_spacy_model", num_proc=2)
    preprocess([str(tmp_path / "questions")], tmp_path / "two", options, progress=False)
    assert dataset_rows(tmp_path / "two") == dataset_rows(tmp_path / "stories")


def test_cli(corpus, model, tmp_path, capsys):
    out = tmp_path / "out"
    argv = ["preprocess", str(corpus), "--output", str(out), "--spacy-model", model]
    assert cli_main([*argv, "--max-context-tokens", "200"]) == 0
    printed = capsys.readouterr().out
    assert "Daily Mail" in printed and "761.8" in printed  # the published figures
    assert "skipped: too_long" in printed and "zz_empty.story" in printed
    assert cli_main([*argv, "--split-fractions", "0.5", "0.5", "0.5"]) == 2
    assert "split_fractions" in capsys.readouterr().err


# Makes ``import torch`` fail, as where torch is not installed.
NO_TORCH = textwrap.dedent(
    """
    import importlib.abc, importlib.machinery, sys

    class NoTorch(importlib.abc.MetaPathFinder, importlib.abc.Loader):
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] == "torch":
                return importlib.machinery.ModuleSpec(name, self)
        def create_module(self, spec):
            raise ImportError(f"{spec.name} is blocked by the test")

    sys.meta_path.insert(0, NoTorch())
    """
)


@pytest.mark.slow
def test_preprocessing_never_needs_torch(corpus, model, tmp_path):
    """No module of the preprocessing side imports torch, and it runs where torch is absent.

    (spaCy's thinc imports torch by itself when it is installed, so the check blocks torch.)
    """
    root = Path(__file__).resolve().parents[2]
    sources = [*sorted((root / "attentive_reader" / "corpus").glob("*.py"))]
    sources += [root / "attentive_reader" / "commands" / f"{n}.py" for n in ("preprocess", "merge")]
    for path in sources:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
            else:
                continue
            assert not any(n.split(".")[0] in ("torch", "pytorch_lightning") for n in names), path
    code = NO_TORCH + (
        "from attentive_reader.cli import main\n"
        f"sys.exit(main(['preprocess', {str(corpus)!r}, '--output', {str(tmp_path / 'out')!r}, "
        f"'--spacy-model', {model!r}, '--quiet']))"
    )
    subprocess.run(
        [sys.executable, "-c", code], check=True, env={**os.environ, "PYTHONPATH": str(root)}
    )
    assert (tmp_path / "out" / "manifest.json").is_file()


# --- The worker pool --------------------------------------------------------------------------


def _shard_task(corpus: Path, tmp_path: Path, model: str):
    from attentive_reader.corpus.shards import ShardTask, input_kinds, iter_items

    options = preprocess_options(model)
    items = tuple(iter_items([str(corpus)], input_kinds([str(corpus)]), options))[:4]
    (tmp_path / "shards").mkdir()
    return ShardTask(0, "key", items, str(tmp_path / "shards"), options.cloze_options(), 8, False)


def test_the_pool_gives_what_one_process_gives_and_says_when_a_worker_dies(corpus, model, tmp_path):
    from attentive_reader.corpus.pipeline import load_pipeline
    from attentive_reader.corpus.shards import process_shard
    from attentive_reader.corpus.workers import ShardPool

    task = _shard_task(corpus, tmp_path, model)
    nlp = load_pipeline(model)
    here = process_shard(task, nlp)
    pool = ShardPool(2, model, nlp)
    try:
        pool.submit(task)
        assert pool.in_flight == 1
        assert pool.collect() == (0, here) and pool.in_flight == 0
        worker = pool.executor.submit(os.getpid).result()
        assert worker != os.getpid()
        os.kill(worker, signal.SIGKILL)  # e.g. the kernel's out-of-memory killer
        with pytest.raises(RuntimeError, match="a worker process died.*rerun the same command"):
            for _ in range(20):  # the pool may take a moment to notice
                pool.submit(task)
                pool.collect()
                time.sleep(0.2)
    finally:
        pool.terminate()


def _gone(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]
    except OSError:
        return True
    return state in ("Z", "X")  # exited (a zombie waits for init to reap it)


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads process states from /proc")
def test_workers_stop_when_the_driver_is_killed(model, tmp_path):
    pids = tmp_path / "pids.json"
    script = tmp_path / "driver.py"
    script.write_text(
        textwrap.dedent(
            f"""
            import json, os, time
            from attentive_reader.corpus.workers import ShardPool
            pool = ShardPool(2, {model!r}, None)
            workers = {{pool.executor.submit(os.getpid).result() for _ in range(20)}}
            open({str(pids)!r}, "w").write(json.dumps(sorted(workers)))
            time.sleep(120)
            """
        )
    )
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    driver = subprocess.Popen([sys.executable, str(script)], env=env)
    try:
        deadline = time.monotonic() + 60
        while not pids.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        workers = json.loads(pids.read_text())
        assert workers and driver.pid not in workers
        driver.kill()  # kill -9: the driver cannot stop its workers itself
        driver.wait(timeout=10)
        deadline = time.monotonic() + 10
        while not all(_gone(pid) for pid in workers) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert all(_gone(pid) for pid in workers)
    finally:
        driver.kill()
