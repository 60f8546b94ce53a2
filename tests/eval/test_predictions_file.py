"""``attentive-reader evaluate --predictions FILE.jsonl``: one line per checkpoint and example,
in stored order, whatever the batch size; the mean of ``correct`` is the report's accuracy."""

from __future__ import annotations

import errno
import json
from pathlib import Path

import pytest

from attentive_reader.cli import main as cli
from attentive_reader.eval import load_examples

pytestmark = pytest.mark.slow


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_the_predictions_of_a_trained_reader_are_the_reports(trained, tmp_path, capsys):
    predictions, out = tmp_path / "predictions.jsonl", tmp_path / "report.json"
    argv = ["evaluate", "--ckpt", str(trained.ckpt), "--data", str(trained.data)]
    assert cli([*argv, "--predictions", str(predictions), "--out", str(out)]) == 0
    examples = load_examples(trained.data, "test")
    lines = _lines(predictions)
    assert f"{len(examples)} predictions written to {predictions}" in capsys.readouterr().err

    # Every example once, in stored order; each line is that example's.
    assert [line["id"] for line in lines] == [ex.id for ex in examples]
    model = json.loads(out.read_text())["systems"][-1]
    assert {line["checkpoint"] for line in lines} == {model["name"]} == {str(trained.ckpt)}
    for line, ex in zip(lines, examples):
        assert line["story_id"] == ex.story_id and line["gold"] == ex.answer
        assert line["correct"] == (line["prediction"] == ex.answer)
        assert line["num_candidates"] == len(ex.candidates)
        assert line["prediction"] in ex.candidates
        # The synthetic corpus keeps its entity map: markers come with their names.
        assert line["prediction_name"] == ex.entities[line["prediction"]] != ""
        assert line["gold_name"] == ex.entities[ex.answer]
        assert 0 < line["gold_probability"] <= line["prediction_probability"] <= 1
        if line["correct"]:
            assert line["gold_probability"] == line["prediction_probability"]

    # The mean of `correct` is the report's accuracy, exactly (not to a tolerance).
    correct = sum(line["correct"] for line in lines)
    assert correct == model["overall"]["correct"]
    assert correct / len(lines) == model["overall"]["accuracy"]


def test_every_checkpoint_answers_every_example_once_whatever_the_batch(toy_run, tmp_path):
    checkpoints = [str(toy_run.attentive), str(toy_run.impatient)]
    argv = ["evaluate", "--ckpt", *checkpoints, "--data", str(toy_run.data)]
    runs = {}
    for batch_size in (1, 4, 64):
        path = tmp_path / f"b{batch_size}.jsonl"
        assert cli([*argv, "--batch-size", str(batch_size), "--predictions", str(path)]) == 0
        runs[batch_size] = _lines(path)
    ids = [ex.id for ex in load_examples(toy_run.data, "test")]
    # The checkpoints in the order given, each over the examples in stored order.
    first = runs[1]
    assert [(line["checkpoint"], line["id"]) for line in first] == [
        (ckpt, i) for ckpt in checkpoints for i in ids
    ]
    for other in (runs[4], runs[64]):
        assert len(other) == len(first)
        for a, b in zip(first, other):
            assert {k: v for k, v in a.items() if "probability" not in k} == {
                k: v for k, v in b.items() if "probability" not in k
            }
            assert a["gold_probability"] == pytest.approx(b["gold_probability"], abs=1e-5)


def test_predictions_errors_are_one_line_and_a_full_disk_leaves_no_file(
    toy_run, tmp_path, capsys, monkeypatch
):
    import attentive_reader.corpus.manifest as manifest

    data, path = str(toy_run.data), tmp_path / "p.jsonl"
    assert cli(["evaluate", "--data", data, "--predictions", str(path)]) == 2
    assert "--predictions needs a checkpoint (--ckpt or --ensemble)" in capsys.readouterr().err
    argv = ["evaluate", "--ckpt", str(toy_run.attentive), "--data", data]
    assert cli([*argv, "--predictions", str(path), "--out", str(path)]) == 2
    assert "are the same file" in capsys.readouterr().err

    def full(self, text, *args, **kwargs):
        self.write_bytes(text[:10].encode())  # a few lines, then the disk is full
        raise OSError(errno.ENOSPC, "No space left on device", str(self))

    monkeypatch.setattr(manifest.Path, "write_text", full)
    assert cli([*argv, "--predictions", str(path)]) == 2
    err = capsys.readouterr().err
    assert "the disk holding" in err and "is full" in err and "Traceback" not in err
    assert list(tmp_path.iterdir()) == []  # no half file, no temporary, no lock
