"""The library call ``evaluate(...) -> Report`` on the toy task: the command's JSON, a round
trip, each checkpoint file read once, and its errors."""

from __future__ import annotations

import builtins
import hashlib
import io
import json
from pathlib import Path

import pytest

from attentive_reader.cli import main as cli
from attentive_reader.common.errors import UserError
from attentive_reader.eval import Report, evaluate, load_examples

pytestmark = pytest.mark.slow


def _without_timings(report: dict) -> dict:
    """The report without what differs between two runs (clock and durations)."""
    report = json.loads(json.dumps(report))
    report.pop("created")
    report["inputs"]["options"].pop("baseline_seconds")
    for checkpoint in report["inputs"]["checkpoints"]:
        checkpoint.pop("seconds")
    return report


def test_evaluate_is_what_the_command_writes(toy_run, tmp_path, capsys):
    checkpoints = [toy_run.attentive, toy_run.gated]
    report = evaluate(toy_run.data, checkpoints, split="test", batch_size=4)
    assert isinstance(report, Report) and report.num_examples == 11
    out = tmp_path / "report.json"
    argv = ["evaluate", "--ckpt", *map(str, checkpoints), "--data", str(toy_run.data)]
    assert cli([*argv, "--batch-size", "4", "--out", str(out)]) == 0
    written = json.loads(out.read_text())
    assert _without_timings(written) == _without_timings(report.to_json())
    assert report.markdown() in capsys.readouterr().out
    # A round trip through JSON gives the same report (predictions are not in the JSON).
    assert Report.from_json(written).to_json() == written
    assert Report.from_json(report.to_json()) == report


def test_the_report_holds_each_systems_predictions(toy_run):
    report = evaluate(toy_run.data, [toy_run.attentive])
    examples = load_examples(toy_run.data, "test")
    assert set(report.predictions) == {s.name for s in report.systems}
    for system in report.systems:
        predictions = report.predictions[system.name]
        correct = sum(p == ex.answer for p, ex in zip(predictions, examples))
        assert len(predictions) == len(examples) == system.overall.n
        # A baseline's markers break ties by first occurrence; its overall figure is the
        # expected accuracy under a random tie-break.
        exact = system.first_occurrence if system.kind == "baseline" else system.overall
        assert correct == exact.correct
    model = report.system(str(toy_run.attentive))
    assert model.kind == "model"
    (info,) = report.checkpoints
    assert info.sha256 == hashlib.sha256(Path(toy_run.attentive).read_bytes()).hexdigest()
    assert info.reader == "attentive_reader.models.attentive.AttentiveReader"
    with pytest.raises(KeyError, match="no system 'nope'"):
        report.system("nope")


def test_each_checkpoint_file_is_read_once(toy_run, monkeypatch):
    import torch

    checkpoints = {Path(toy_run.attentive).resolve(), Path(toy_run.gated).resolve()}
    opened: list[Path] = []
    loads: list[object] = []
    real_open, real_load = builtins.open, torch.load

    def counting_open(file, *args, **kwargs):
        if isinstance(file, (str, Path)) and Path(file).resolve() in checkpoints:
            opened.append(Path(file))
        return real_open(file, *args, **kwargs)

    def counting_load(f, *args, **kwargs):
        loads.append(f)
        return real_load(f, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", counting_open)
    monkeypatch.setattr(io, "open", counting_open)  # what pathlib opens with
    monkeypatch.setattr(torch, "load", counting_load)
    evaluate(toy_run.data, [toy_run.attentive, toy_run.gated])
    assert len(opened) == 2 and {p.resolve() for p in opened} == checkpoints
    assert len(loads) == 2


def test_bad_options_are_user_errors(toy_run, tmp_path):
    with pytest.raises(UserError, match="split must be one of"):
        evaluate(toy_run.data, split="dev")  # type: ignore[arg-type]
    with pytest.raises(UserError, match="--length-buckets must be strictly ascending"):
        evaluate(toy_run.data, length_edges=[0, 500, 250])
    with pytest.raises(UserError, match="checkpoint not found"):
        evaluate(toy_run.data, [tmp_path / "none.ckpt"])
    with pytest.raises(UserError, match="not a processed dataset"):
        evaluate(tmp_path)
    not_a_checkpoint = tmp_path / "notes.ckpt"
    not_a_checkpoint.write_text("hello")
    with pytest.raises(UserError, match="notes.ckpt is not a readable checkpoint"):
        evaluate(toy_run.data, [not_a_checkpoint])


def test_cuda_without_a_gpu_says_to_drop_the_option(monkeypatch):
    import torch

    from attentive_reader.eval.inference import resolve_device

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(
        UserError, match=r"^--device cuda:1: no CUDA device .*; drop --device cuda:1"
    ):
        resolve_device("cuda:1")
    assert resolve_device("auto") == torch.device("cpu")
