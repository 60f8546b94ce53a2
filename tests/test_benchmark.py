"""``scripts/benchmark.py --quick`` runs end to end and produces its table and JSON."""

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "benchmark.py"


@pytest.mark.slow
def test_quick_benchmark_prints_its_tables_and_writes_json(tmp_path: Path) -> None:
    output = tmp_path / "benchmark.json"
    run = subprocess.run(
        [sys.executable, str(SCRIPT), "--quick", "--threads", "1", "--rounds", "1"]
        + ["--output", str(output)],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    for title in (
        "Training throughput",
        "Document BiLSTM",
        "Evaluation of a 160-example",
        "Training data at corpus scale",
        "Answer layers at CNN scale",
        "Targets of issues 15 and 39",
    ):
        assert title in run.stdout
    result = json.loads(output.read_text())
    assert result["mode"] == "quick" and result["threads"] == 1
    reference = result["train"]["Reference (plain loop), fp32"]
    assert reference["ratio_vs_reference"] == 1.0
    for row in result["train"].values():
        assert row["median_examples_per_second"] > 0 and row["peak_rss_mib"] > 0
        threads = row["process_threads_after"]  # one count a round (None without /proc)
        assert len(threads) == result["settings"]["rounds"]
        assert all(t > 0 if Path("/proc/self/task").is_dir() else t is None for t in threads)
    assert set(result["encoder"]["results"]) == {"torch PackedSequence", "SequenceEncoder (padded)"}
    assert result["eval"]["examples"] == 160
    # The dense limit is the yardstick of every reader's share; the CPU is named.
    assert result["train"]["Dense limit (reference maths, equal-length unpadded), fp32"][
        "share_of_dense"
    ] == pytest.approx(1.0)
    for row in result["train"].values():  # real tokens over those computed, padding included
        assert 0 < row["real_token_share"] <= 1
        assert row["computed_share_of_dense"] == pytest.approx(
            row["share_of_dense"] / row["real_token_share"], rel=0.2
        )
    dense = result["train"]["Dense limit (reference maths, equal-length unpadded), fp32"]
    assert dense["real_token_share"] == 1.0  # no padding at all
    assert result["cpu_model"] and result["device"] == "cpu"
    # Scale: the first process encodes, the second only opens the cache.
    for size, row in result["scale"]["sizes"].items():
        assert row["first"]["examples"] == int(size) and row["first"]["encode_seconds"] > 0
        assert row["again"]["encode_seconds"] == 0  # an epoch of batches of 32, at most 200
        assert row["again"]["batches"] == min(200, math.ceil(int(size) / 32))
        assert row["workers"]["num_proc"] == 2 and row["workers"]["encode_seconds"] > 0
    assert set(result["answer"]["results"]) == {"output", "tied", "pointer"}
    for row in result["answer"]["results"].values():
        assert 0 < row["answer_seconds"] < row["step_seconds"]


@pytest.mark.slow
def test_cuda_without_a_gpu_is_a_clear_error() -> None:
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    run = subprocess.run(
        [sys.executable, str(SCRIPT), "--device", "cuda", "--sections", "encoder"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 2
    assert "--device cuda: torch sees no CUDA device here" in run.stderr
    assert "Traceback" not in run.stderr


def _imports(path: Path) -> set[str]:
    import ast

    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


def test_the_sections_form_no_import_circle() -> None:
    """``benchmark.py`` imports its sections; no section imports it back or a later one."""
    scripts = SCRIPT.parent
    for path in [scripts / "benchmark_scale.py", *sorted((scripts / "bench").glob("*.py"))]:
        assert "benchmark" not in _imports(path), path
    graph = {
        p.stem: {m.split(".")[1] for m in _imports(p) if m.startswith("bench.")}
        for p in (scripts / "bench").glob("*.py")
    }

    def reaches(start: str, goal: str, seen: frozenset = frozenset()) -> bool:
        return any(
            n == goal or (n not in seen and reaches(n, goal, seen | {n})) for n in graph[start]
        )

    assert [name for name in graph if reaches(name, name)] == []
    assert {"settings"} == graph["measure"] and graph["settings"] == set()


def test_the_synthetic_data_is_the_packages_generated_dataset(tmp_path: Path) -> None:
    sys.path.insert(0, str(SCRIPT.parent))
    from bench.data import write_dataset
    from bench.settings import QUICK

    from attentive_reader.corpus.records import ClozeExample, load_dataset

    settings = _tiny(QUICK)
    data = write_dataset(tmp_path, settings)
    manifest = json.loads((data / "manifest.json").read_text())
    assert manifest["synthetic"] == {"generator": "benchmark"} and "source" not in manifest
    splits = load_dataset(data)
    assert {s: len(splits[s]) for s in splits} == {"train": 8, "validation": 4, "test": 5}
    for row in splits["train"]:
        example = ClozeExample.from_row(row)
        assert example.answer == example.candidates[0]
        assert set(example.candidates) <= set(example.context)  # every candidate occurs
        assert example.query.count("@placeholder") == 1
        assert len(example.context) <= settings.max_context
    from attentive_reader.data.vocab import Vocabulary

    assert len(Vocabulary.load(tmp_path / "vocab.json")) == settings.vocab_size  # exactly


def _tiny(settings):
    from dataclasses import replace

    return replace(settings, batch_size=4, train_batches=2, eval_examples=5, vocab_size=400)
