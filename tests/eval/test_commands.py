"""``attentive-reader evaluate`` and ``heatmap`` end to end on the toy task, and the
prediction-writer callback from ``Trainer.predict``."""

from __future__ import annotations

import json
from html.parser import HTMLParser
from pathlib import Path

import pytest

from attentive_reader.cli import main as cli
from attentive_reader.corpus.records import ClozeExample
from attentive_reader.eval.report import build_report

pytestmark = pytest.mark.slow


def _fit_one_step(reader_class, datamodule, path: Path, **options) -> Path:
    import pytorch_lightning as pl

    reader = reader_class(
        datamodule.vocab_size, datamodule.num_entities, 8, hidden_dim=8, **options
    )
    trainer = pl.Trainer(
        max_steps=1,
        limit_val_batches=0,
        accelerator="cpu",
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        use_distributed_sampler=False,
    )
    trainer.fit(reader, datamodule)
    trainer.save_checkpoint(path)
    return path


@pytest.fixture(scope="module")
def toy_run(tmp_path_factory):
    """A tiny toy dataset and two one-step checkpoints (Attentive, Impatient)."""
    import pytorch_lightning as pl

    from attentive_reader.data.datamodule import ClozeDataModule
    from attentive_reader.data.toy import write_toy_dataset
    from attentive_reader.models import AttentiveReader, ImpatientReader

    root = tmp_path_factory.mktemp("toy")
    data = write_toy_dataset(root / "data", num_train=16, num_validation=4, num_test=11)
    pl.seed_everything(0, verbose=False)
    datamodule = ClozeDataModule(str(data), batch_size=8, num_entities=8)
    attentive = _fit_one_step(AttentiveReader, datamodule, root / "attentive.ckpt")
    impatient = _fit_one_step(
        ImpatientReader,
        datamodule,
        root / "impatient.ckpt",
        optimizer="rmsprop",
        lr=5e-5,
        optimizer_options={"alpha": 0.95, "momentum": 0.9},
    )
    return data, attentive, impatient


def test_evaluate_reports_every_example_once(toy_run, tmp_path, capsys):
    data, attentive, impatient = toy_run
    out = tmp_path / "report.json"
    argv = ["evaluate", "--ckpt", str(attentive), str(impatient), "--data", str(data)]
    assert cli([*argv, "--split", "test", "--out", str(out), "--batch-size", "4"]) == 0
    printed = capsys.readouterr().out
    assert "| word_distance | baseline |" in printed and f"| {attentive} | model |" in printed

    report = json.loads(out.read_text())
    assert report["num_examples"] == 11 and report["inputs"]["split"] == "test"
    assert report["inputs"]["manifest"]["source"] == "toy"
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
    data, attentive, _ = toy_run
    assert cli(["evaluate", "--ckpt", str(tmp_path / "none.ckpt"), "--data", str(data)]) == 2
    assert "checkpoint not found" in capsys.readouterr().err
    assert cli(["evaluate", "--data", str(tmp_path)]) == 2
    assert "not a processed dataset" in capsys.readouterr().err


def test_evaluate_out_has_one_writer_and_a_full_disk_leaves_no_half_report(
    toy_run, tmp_path, capsys, lock_holder, monkeypatch
):
    import errno

    import attentive_reader.corpus.manifest as manifest

    data, _, _ = toy_run
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
    data, attentive, impatient = toy_run
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
    import pytorch_lightning as pl

    from attentive_reader.data.datamodule import ClozeDataModule
    from attentive_reader.models.loading import load_reader
    from attentive_reader.viz.heatmap import HeatmapWriter

    data, attentive, _ = toy_run
    reader = load_reader(attentive)
    datamodule = ClozeDataModule.from_checkpoint(str(attentive), path=str(data), batch_size=4)
    writer = HeatmapWriter(str(tmp_path / "pred"), limit=5, png=False)
    trainer = pl.Trainer(
        accelerator="cpu",
        logger=False,
        callbacks=[writer],
        enable_progress_bar=False,
        enable_model_summary=False,
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
