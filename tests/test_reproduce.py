"""docs/reproduce.md's steps run as written, on generated stand-ins of DeepMind's CNN data.

The steps are read from the page itself (between its ``reproduce-steps`` markers): ``download``
from a server this test starts on 127.0.0.1 (``--mirror``), ``preprocess`` of the ``.question``
archive as it is, ``fit`` with the paper config's schedule (plateau halving, early stopping,
the best checkpoint kept) for 2 epochs at tiny sizes, ``test`` and ``evaluate --predictions`` on
the checkpoint ``fit`` names in its last line. The only changes to the page's commands are the
mirror, quiet output and tiny sizes.
"""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest
import torch

from attentive_reader.cli import main
from tests.downloads import serve_folder, use_stand_ins, write_question_archive

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "reproduce.md"
TINY = [
    "--trainer.max_epochs", "2",
    "--model.embedding_dim", "8",
    "--model.hidden_dim", "8",
    "--data.batch_size", "4",
    "--trainer.enable_progress_bar", "false",
]  # fmt: skip


def page_steps() -> list[list[str]]:
    """The commands of the page's steps block, continuations joined, comments dropped."""
    text = PAGE.read_text(encoding="utf-8")
    block = re.search(r"reproduce-steps: begin -->\s*```bash\n(.*?)```", text, flags=re.S)
    assert block, "docs/reproduce.md marks its steps with reproduce-steps: begin / end"
    lines = re.sub(r"\\\n", " ", block.group(1)).splitlines()
    return [shlex.split(line) for line in lines if line.strip() and not line.startswith("#")]


def test_the_page_names_the_whole_path() -> None:
    commands = [step[:2] for step in page_steps()]
    assert commands == [
        ["attentive-reader", "download"],
        ["attentive-reader", "preprocess"],
        ["attentive-reader", "fit"],
        ["attentive-reader", "test"],
        ["attentive-reader", "evaluate"],
    ]
    fit = page_steps()[2]
    assert fit[fit.index("--config") + 1] == "configs/attentive_reader_paper.yaml"


@pytest.mark.slow
def test_the_steps_of_the_page_run_as_written(tmp_path, monkeypatch, capsys) -> None:
    served = tmp_path / "served"
    served.mkdir()
    written = write_question_archive(
        served / "cnn.tgz", {"train": 40, "validation": 12, "test": 12}, seed=3
    )
    use_stand_ins(monkeypatch, served)  # the catalog's checksums are those of the stand-in
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    best: str | None = None
    with serve_folder(served) as server:
        for step in page_steps():
            command, args = step[1], step[2:]
            args = [str(ROOT / a) if a.startswith("configs/") else a for a in args]
            if "BEST" in args:
                assert best is not None, "fit printed no best checkpoint line"
                args = [best if a == "BEST" else a for a in args]
            extra = {
                "download": ["--mirror", server.base, "--quiet"],
                "preprocess": ["--quiet"],
                "fit": TINY,
                "test": TINY,
            }.get(command, [])
            assert main([command, *args, *extra]) == 0, f"{command} failed"
            out = capsys.readouterr().out
            if command == "fit":
                found = re.search(r"^best checkpoint: (\S+) \(epoch (\d+), val_acc", out, re.M)
                assert found, out[-2000:]
                best = found.group(1)
                assert Path(best).is_file()
                last = Path(best).parent / "last.ckpt"
                state = torch.load(last, map_location="cpu", weights_only=True)
                assert state["epoch"] == 1  # the last of the 2 epochs, whichever was best
                scheduler = state["lr_schedulers"]
                assert scheduler, "the paper config's plateau schedule is in the checkpoint"

    manifest = json.loads((work / "data" / "cnn" / "manifest.json").read_text())
    assert manifest["examples"] == {"train": 40, "validation": 12, "test": 12}
    assert manifest["spacy"] is None  # read as DeepMind anonymized it: no NER ran
    report = json.loads((work / "runs" / "attentive_reader_paper" / "report.json").read_text())
    lines = (work / "runs" / "attentive_reader_paper" / "predictions.jsonl").read_text()
    predictions = [json.loads(line) for line in lines.splitlines()]
    assert {p["id"] for p in predictions} == {e.id for e in written["test"]}
    (reader,) = [s for s in report["systems"] if s["kind"] != "baseline"]
    correct = sum(p["correct"] for p in predictions)
    assert correct == reader["overall"]["correct"] and len(predictions) == reader["overall"]["n"]
    baselines = {s["name"] for s in report["systems"] if s["kind"] == "baseline"}
    assert {"maximum_frequency", "exclusive_frequency", "word_distance"} <= baselines
