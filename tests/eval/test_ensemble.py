"""Ensembles in ``evaluate``: the mean of the members' probabilities on every example, a
one-member ensemble that is its reader, the members named in the report, and checkpoints that
read differently refused in one line (``eval/ensemble.py``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from attentive_reader.cli import main as cli
from attentive_reader.common.errors import UserError
from attentive_reader.data.vocab import Vocabulary
from attentive_reader.eval import Report, evaluate
from attentive_reader.eval.ensemble import MemberData, check_members, member_difference
from attentive_reader.models import AttentiveReader

IDENTITY = {
    "spacy": {"name": "en_core_web_sm", "version": "3.8.0"},
    "labels": ["PERSON", "ORG"],
    "lowercase": True,
    "max_context_tokens": 2000,
    "grouping_rules": 3,
}


def _member(path: str, words=("the", "a"), entities=8, pipeline=IDENTITY, cap=None) -> MemberData:
    return MemberData(path, Vocabulary(list(words), entities), pipeline, cap)


def test_each_difference_that_changes_what_a_reader_reads_is_named():
    a = _member("a.ckpt")
    assert member_difference(a, _member("b.ckpt")) is None
    cases = {
        "their entity ranges differ (8 and 9 entity ids)": _member("b.ckpt", entities=9),
        "their vocabularies differ (2 and 3 words)": _member("b.ckpt", words=("the", "a", "of")),
        "their vocabularies differ (token id 12 is 'a' in one and 'an' in the other)": _member(
            "b.ckpt", words=("the", "an")
        ),
        "only a.ckpt records how its training data was anonymized": _member("b", pipeline=None),
        "anonymized differently (labels PERSON,ORG against labels PERSON)": _member(
            "b.ckpt", pipeline={**IDENTITY, "labels": ["PERSON"]}
        ),
        "they cut contexts differently (max_context_tokens None and 300)": _member(
            "b.ckpt", cap=300
        ),
    }
    for expected, other in cases.items():
        assert expected in member_difference(a, other)
    # What does not change how text is read is not compared: the toolkit that preprocessed.
    assert member_difference(a, _member("b", pipeline={**IDENTITY, "toolkit": "9"})) is None
    with pytest.raises(UserError, match=r"^a.ckpt and c.ckpt cannot answer as one ensemble"):
        check_members([a, _member("b.ckpt"), _member("c.ckpt", cap=300)])
    with pytest.raises(UserError, match="at least one checkpoint"):
        check_members([])


def _lines(path: Path) -> dict[str, list[dict]]:
    by_checkpoint: dict[str, list[dict]] = {}
    for line in path.read_text().splitlines():
        record = json.loads(line)
        by_checkpoint.setdefault(record["checkpoint"], []).append(record)
    return by_checkpoint


@pytest.mark.slow
def test_evaluate_reports_ensembles_beside_their_members(toy_run, tmp_path, capsys):
    attentive, impatient = str(toy_run.attentive), str(toy_run.impatient)
    out, predictions = tmp_path / "report.json", tmp_path / "predictions.jsonl"
    argv = ["evaluate", "--data", str(toy_run.data), "--ckpt", attentive, impatient]
    argv += ["--ensemble", attentive, impatient, "--ensemble", attentive]
    argv += ["--out", str(out), "--predictions", str(predictions), "--batch-size", "4"]
    assert cli(argv) == 0
    pair, alone = f"ensemble({attentive}, {impatient})", f"ensemble({attentive})"
    assert f"| {pair} | model |" in capsys.readouterr().out

    lines = _lines(predictions)
    assert list(lines) == [attentive, impatient, pair, alone]
    for a, b, both in zip(lines[attentive], lines[impatient], lines[pair]):
        assert a["id"] == b["id"] == both["id"]
        # The mean of the members' probabilities (each written to 6 significant digits).
        mean = (a["gold_probability"] + b["gold_probability"]) / 2
        assert both["gold_probability"] == pytest.approx(mean, abs=2e-6)
        assert both["prediction_probability"] >= both["gold_probability"] - 1e-6
    # A one-member ensemble is its reader: the same answers, the same figures.
    strip = [{k: v for k, v in line.items() if k != "checkpoint"} for line in lines[alone]]
    assert strip == [
        {k: v for k, v in line.items() if k != "checkpoint"} for line in lines[attentive]
    ]
    report = json.loads(out.read_text())
    systems = {s["name"]: s for s in report["systems"]}
    assert {**systems[alone], "name": attentive} == systems[attentive]

    # The report names the members, each as a single checkpoint is recorded.
    infos = {c["name"]: c for c in report["inputs"]["checkpoints"]}
    ensemble = infos[pair]
    assert ensemble["reader"] == "attentive_reader.models.ensemble.Ensemble"
    assert ensemble["path"] == f"{attentive} + {impatient}"
    assert [m["path"] for m in ensemble["members"]] == [attentive, impatient]
    assert [m["sha256"] for m in ensemble["members"]] == [
        infos[attentive]["sha256"],
        infos[impatient]["sha256"],
    ]
    assert [m["reader"].rsplit(".", 1)[1] for m in ensemble["members"]] == [
        "AttentiveReader",
        "ImpatientReader",
    ]
    assert infos[attentive]["members"] == []
    assert Report.from_json(report).to_json() == report


def _variant(source: Path, out: Path, *, num_entities=None, swap=False, cap=None) -> Path:
    """A copy of a checkpoint that reads otherwise: another entity block (a fresh reader of
    that size), two words swapped in its vocabulary, or another context cap."""
    checkpoint = torch.load(source, weights_only=True)
    state = checkpoint["ClozeDataModule"]["vocab"]
    if num_entities is not None:
        hyper = checkpoint["hyper_parameters"]
        hyper["vocab_size"] += num_entities - hyper["num_entities"]
        hyper["num_entities"] = state["num_entities"] = num_entities
        checkpoint["state_dict"] = AttentiveReader(**hyper).state_dict()
    if swap:
        state["words"][:2] = state["words"][1::-1]
    if cap is not None:
        checkpoint["datamodule_hyper_parameters"]["max_context_tokens"] = cap
    torch.save(checkpoint, out)
    return out


@pytest.mark.slow
def test_checkpoints_that_read_differently_are_refused_in_one_line(toy_run, tmp_path, capsys):
    source = Path(toy_run.attentive)
    variants = {
        "their entity ranges differ (8 and 10 entity ids)": {"num_entities": 10},
        "their vocabularies differ (token id 11 is": {"swap": True},
        "they cut contexts differently (max_context_tokens None and 50)": {"cap": 50},
    }
    data = str(toy_run.data)
    for number, (expected, change) in enumerate(variants.items()):
        other = _variant(source, tmp_path / f"other{number}.ckpt", **change)
        assert cli(["evaluate", "--data", data, "--ensemble", str(source), str(other)]) == 2
        *progress, error = capsys.readouterr().err.strip().splitlines()
        assert len(progress) == 1 and "Traceback" not in error  # "evaluating ensemble(...)"
        assert error.startswith("attentive-reader evaluate: error: ")
        assert f"{source} and {other} cannot answer as one ensemble: {expected}" in error
    with pytest.raises(UserError, match="checkpoint not found"):
        evaluate(data, ensembles=[[source, tmp_path / "none.ckpt"]])
    with pytest.raises(UserError, match="at least one checkpoint"):
        evaluate(data, ensembles=[[]])
