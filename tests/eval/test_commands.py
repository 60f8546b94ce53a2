"""``attentive-reader evaluate`` and ``heatmap`` end to end on the toy task, and the
prediction-writer callback from ``Trainer.predict`` (checkpoints: ``conftest.toy_run``)."""

from __future__ import annotations

import dataclasses
import json
from html.parser import HTMLParser
from pathlib import Path

import pytest

from attentive_reader.cli import main as cli
from attentive_reader.corpus.records import ClozeExample
from attentive_reader.eval.report import build_report
from tests.trainers import quiet_trainer

pytestmark = pytest.mark.slow


def test_evaluate_reports_every_example_once(toy_run, tmp_path, capsys):
    data, attentive, impatient = toy_run.data, toy_run.attentive, toy_run.impatient
    out = tmp_path / "report.json"
    argv = ["evaluate", "--ckpt", str(attentive), str(impatient), "--data", str(data)]
    assert cli([*argv, "--split", "test", "--out", str(out), "--batch-size", "4"]) == 0
    printed = capsys.readouterr().out
    assert "| word_distance | baseline |" in printed and f"| {attentive} | model |" in printed

    report = json.loads(out.read_text())
    assert report["num_examples"] == 11 and report["inputs"]["split"] == "test"
    assert report["inputs"]["manifest"]["synthetic"] == {"generator": "toy"}
    hashes = [c["sha256"] for c in report["inputs"]["checkpoints"]]
    assert len(hashes) == 2 and all(len(h) == 64 for h in hashes)
    # The optimiser that trained each reader, with defaults resolved.
    optimizers = [c["optimizer"] for c in report["inputs"]["checkpoints"]]
    assert optimizers == [
        {"name": "adam", "lr": 1e-3, "weight_decay": 0.0},
        {"name": "rmsprop", "lr": 5e-5, "weight_decay": 0.0, "alpha": 0.95, "momentum": 0.9},
    ]
    kinds = [(s["name"], s["kind"]) for s in report["systems"]]
    assert kinds[3:] == [(str(attentive), "model"), (str(impatient), "model")]
    for system in report["systems"]:
        assert system["overall"]["n"] == 11
        assert sum(b["n"] for b in system["by_context_length"].values()) == 11
        assert sum(b["n"] for b in system["by_num_candidates"].values()) == 11
    # The baselines are those of the stored examples.
    import datasets

    examples = [ClozeExample.from_row(r) for r in datasets.load_from_disk(str(data))["test"]]
    expected = build_report(examples, {})["systems"]
    assert report["systems"][:3] == expected


def test_evaluate_errors_are_one_line(toy_run, tmp_path, capsys):
    data = toy_run.data
    assert cli(["evaluate", "--ckpt", str(tmp_path / "none.ckpt"), "--data", str(data)]) == 2
    assert "checkpoint not found" in capsys.readouterr().err
    assert cli(["evaluate", "--data", str(tmp_path)]) == 2
    assert "not a processed dataset" in capsys.readouterr().err


def test_evaluate_out_has_one_writer_and_a_full_disk_leaves_no_half_report(
    toy_run, tmp_path, capsys, lock_holder, monkeypatch
):
    import errno

    import attentive_reader.corpus.manifest as manifest

    data = toy_run.data
    out = tmp_path / "report.json"
    argv = ["evaluate", "--data", str(data), "--out", str(out)]
    first = lock_holder(out, "evaluate")
    assert cli(argv) == 2
    assert f"in use by process {first.pid} (attentive-reader evaluate)" in capsys.readouterr().err
    first.kill()
    first.wait()

    def full(path, text, *args, **kwargs):
        path.write_bytes(text[:10].encode())  # half a report, then the disk is full
        raise OSError(errno.ENOSPC, "No space left on device", str(path))

    monkeypatch.setattr(manifest.Path, "write_text", full)
    assert cli(argv) == 2
    err = capsys.readouterr().err
    assert "the disk holding" in err and "is full" in err and "Traceback" not in err
    assert not list(tmp_path.glob("*report.json*"))
    monkeypatch.undo()
    assert cli(argv) == 0 and json.loads(out.read_text())["num_examples"] == 11


class _Links(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags, self.hrefs = [], []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self.hrefs += [v for k, v in attrs if k in ("href", "src")]


def test_heatmap_command_writes_pages(toy_run, tmp_path, capsys):
    data, impatient = toy_run.data, toy_run.impatient
    out = tmp_path / "maps"
    ids = ["toy-test-3", "toy-test-0"]
    argv = ["heatmap", "--ckpt", str(impatient), "--data", str(data), "--out", str(out)]
    assert cli([*argv, "--ids", *ids, "--scale", "normalized", "--no-png"]) == 0
    assert "2 examples" in capsys.readouterr().out
    sidecars = sorted(out.glob("toy-test-*.json"))
    assert len(sidecars) == 2 and not list(out.glob("*.png"))
    for path in sidecars:
        sidecar = json.loads(path.read_text())
        rows = sidecar["attention"]  # Impatient Reader: one row per query token
        assert sidecar["attention_kind"] == "per_query_token"
        assert len(rows) == len(sidecar["query"])
        for row in rows:
            assert len(row) == len(sidecar["context"])
            assert sum(row) == pytest.approx(1.0, abs=1e-5)
    parser = _Links()
    parser.feed((out / "index.html").read_text())
    assert "script" not in parser.tags
    assert sorted(parser.hrefs)[0].startswith("./toy-test-0-")
    assert cli([*argv, "--ids", "toy-test-999"]) == 2
    assert "not in the split: toy-test-999" in capsys.readouterr().err


def test_heatmap_writer_from_trainer_predict(toy_run, tmp_path):

    from attentive_reader.data.datamodule import ClozeDataModule
    from attentive_reader.models.loading import load_reader
    from attentive_reader.viz.callback import HeatmapWriter

    data, attentive = toy_run.data, toy_run.attentive
    reader = load_reader(attentive)
    datamodule = ClozeDataModule.from_checkpoint(str(attentive), path=str(data), batch_size=4)
    writer = HeatmapWriter(str(tmp_path / "pred"), limit=5, png=False)
    trainer = quiet_trainer(
        callbacks=[writer],
    )
    trainer.predict(reader, datamodule=datamodule, return_predictions=False)
    sidecars = sorted((tmp_path / "pred").glob("toy-test-*.json"))
    assert len(sidecars) == 5
    for path in sidecars:
        sidecar = json.loads(path.read_text())
        assert sum(sidecar["attention"]) == pytest.approx(1.0, abs=1e-5)
        assert sidecar["answer"] in sidecar["candidates"]
    assert (tmp_path / "pred" / "index.html").is_file()
    index = json.loads((tmp_path / "pred" / "index.json").read_text())
    assert [e["id"] for e in index] == [f"toy-test-{i}" for i in range(5)]


def _png_size(path: Path) -> tuple[int, int]:
    """(width, height) from a PNG's IHDR chunk."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")


def test_heatmap_command_shows_the_gated_readers_hops(toy_run, tmp_path, capsys):
    """A 3-hop Gated-Attention checkpoint: one row per gated hop in the JSON, HTML and PNG,
    equal to the reader's own hop attention on the example read alone (no padding)."""
    import torch

    from attentive_reader.eval.inference import iterate_predictions, load_checkpoint
    from attentive_reader.viz.heatmap import HeatmapExample
    from attentive_reader.viz.png import render_png

    out = tmp_path / "hops"
    argv = ["heatmap", "--ckpt", str(toy_run.gated), "--data", str(toy_run.data)]
    assert cli([*argv, "--out", str(out), "--limit", "3", "--batch-size", "2"]) == 0
    assert "3 examples" in capsys.readouterr().out
    loaded = load_checkpoint(toy_run.gated, toy_run.data)
    for row_index in range(3):
        (path,) = out.glob(f"toy-test-{row_index}-*.json")
        sidecar = json.loads(path.read_text())
        n, m = len(sidecar["context"]), len(sidecar["query"])
        hops = sidecar["hop_attention"]  # (K - 1, n, m), K = 3
        assert len(hops) == 2 and all(len(hop) == n for hop in hops)
        for hop in hops:
            for weights in hop:
                assert len(weights) == m and sum(weights) == pytest.approx(1.0, abs=1e-5)
        # The grid: per hop, the mean over the context tokens of each query token's weight.
        grid = sidecar["hop_query_attention"]
        for k in range(2):
            expected = [sum(hops[k][t][i] for t in range(n)) / n for i in range(m)]
            assert grid[k] == pytest.approx(expected)
            assert sum(grid[k]) == pytest.approx(1.0, abs=1e-5)
        # Read alone (batch of one: no padding), the reader gives the same hop attention.
        ((_, alone),) = iterate_predictions(
            loaded.reader, loaded.datamodule, "test", indices=[row_index], batch_size=1
        )
        (record,) = alone.records()
        assert record.hop_attention.shape == (2, n, m)
        assert torch.allclose(record.hop_attention, torch.tensor(hops), atol=1e-5)

        page = (out / f"{path.stem}.html").read_text()
        assert "Gated-Attention hops" in page
        for k in (1, 2):  # one row per hop: a grid row and a document row of n tokens
            assert page.count(f"<th>hop {k}</th>") == 1
            assert page.count(f" hop {k}: most on ") == n
        assert "hop 3" not in page
        png = out / f"{path.stem}.png"
        example = HeatmapExample.from_json(sidecar)
        plain = tmp_path / f"plain-{row_index}.png"
        render_png(dataclasses.replace(example, hop_attention=None), plain)
        width, height = _png_size(png)
        assert (width, height) != _png_size(plain) and height > _png_size(plain)[1]


def test_evaluate_and_the_anonymization_report_give_the_same_baselines(toy_run, tmp_path):
    """One dataset with ties (the toy test split), both tools: the same figures, both ways."""
    report, figures = tmp_path / "report.json", tmp_path / "anonymization.json"
    assert cli(["evaluate", "--data", str(toy_run.data), "--out", str(report)]) == 0
    argv = ["anonymization", str(toy_run.data), "--split", "test", "--json", str(figures)]
    assert cli(argv) == 0
    systems = {s["name"]: s for s in json.loads(report.read_text())["systems"]}
    figures = json.loads(figures.read_text())
    assert figures["questions"] == 11
    ties = 0
    for name in ("maximum_frequency", "exclusive_frequency", "word_distance"):
        expected, first = systems[name]["overall"], systems[name]["first_occurrence"]
        assert round(100 * expected["accuracy"], 1) == figures[name]
        assert round(100 * first["accuracy"], 1) == figures["first_occurrence"][name]
        ties += expected["correct"] != first["correct"]
    assert ties >= 1  # the data has ties, so the two scorings differ and both were compared


def test_evaluate_shows_the_questions_read_in_a_log_and_on_a_terminal(toy_run, capsys):
    """Not a terminal: the reader's line, then a line as the questions come (every batch
    here) ending at all 11; a terminal: Rich's bar at 11/11 questions."""
    import io

    from attentive_reader.eval.evaluation import evaluate
    from attentive_reader.eval.progress import QuestionProgress

    assert cli(["evaluate", "--ckpt", str(toy_run.attentive), "--data", str(toy_run.data)]) == 0
    err = capsys.readouterr().err.splitlines()  # captured: not a terminal, so lines
    assert err[0].startswith(f"evaluating {toy_run.attentive} on 11 examples")
    assert f"{toy_run.attentive}: 11 of 11 questions (100%) read in " in err[1]

    log = io.StringIO()
    progress = QuestionProgress(log, style="lines", every_seconds=0)
    evaluate(toy_run.data, [toy_run.attentive], split="test", batch_size=4, progress=progress)
    counts = [line.split(": ", 1)[1].split(" of ")[0] for line in log.getvalue().splitlines()[1:]]
    assert counts == ["4", "8", "11"]  # batches of 4, 4 and 3

    terminal = io.StringIO()
    bar = QuestionProgress(terminal, style="bar")
    evaluate(toy_run.data, [toy_run.attentive], split="test", batch_size=4, progress=bar)
    assert "11/11 questions" in terminal.getvalue() and "100%" in terminal.getvalue()
