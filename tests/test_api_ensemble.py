"""Ensembles in the Python API, ``answer`` and ``serve``: ``Reader.load([a, b])`` answers with
the mean of the members' probabilities and attention, a list of one is the reader, members that
read differently are refused in one line, and a server started here answers ``/api/answer``
with the ensemble (its worker process loading the ensemble itself)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from attentive_reader.cli import main as cli
from attentive_reader.common.errors import UserError
from tests.serve.live import ARTICLE, QUERY, call, running

pytestmark = pytest.mark.slow


def _second_member(trained_ckpt: Path, out: Path, **identity) -> Path:
    """A randomly initialised Gated-Attention Reader saved in a copy of the trained
    checkpoint: the same vocabulary and data (``identity``: preprocessing changed)."""
    from attentive_reader.models import GatedAttentionReader

    checkpoint = torch.load(trained_ckpt, weights_only=True)
    stored = checkpoint["hyper_parameters"]
    torch.manual_seed(1)
    reader = GatedAttentionReader(
        vocab_size=stored["vocab_size"],
        num_entities=stored["num_entities"],
        embedding_dim=8,
        hidden_dim=6,
        answer_layer="pointer",
    )
    path = "attentive_reader.models.GatedAttentionReader"
    checkpoint["hyper_parameters"] = {**dict(reader.hparams), "_class_path": path}
    checkpoint["reader_class"] = path
    checkpoint["state_dict"] = reader.state_dict()
    checkpoint["ClozeDataModule"]["pipeline"].update(identity)
    torch.save(checkpoint, out)
    return out


@pytest.fixture(scope="module")
def members(trained, tmp_path_factory) -> tuple[Path, Path]:
    return trained.ckpt, _second_member(trained.ckpt, tmp_path_factory.mktemp("gated") / "g.ckpt")


@pytest.fixture(scope="module")
def ensemble(members):
    from attentive_reader import Reader

    return Reader.load(list(members))


def test_the_ensemble_answers_with_the_mean_of_its_readers(members, ensemble, reader):
    from attentive_reader import Reader

    gated = Reader.load(members[1])
    both, one, two = (r.answer(ARTICLE, QUERY) for r in (ensemble, reader, gated))
    first, second = ({c.marker: c.probability for c in answer.candidates} for answer in (one, two))
    mean = {marker: (first[marker] + second[marker]) / 2 for marker in first}
    assert {c.marker: c.probability for c in both.candidates} == pytest.approx(mean, abs=1e-6)
    assert both.prediction.marker == max(mean, key=mean.get)
    assert both.context == one.context == two.context  # anonymized once, alike
    expected = [(a + b) / 2 for a, b in zip(one.attention, two.attention)]
    assert list(both.attention) == pytest.approx(expected, abs=1e-6)
    assert ensemble.path == f"{members[0]} + {members[1]}"
    assert ensemble.describe().startswith("an ensemble of 2 readers")
    assert [m["checkpoint"] for m in ensemble.provenance_json()["ensemble"]] == list(
        map(str, members)
    )
    # A list of one checkpoint is that reader.
    alone = Reader.load([members[0]]).answer(ARTICLE, QUERY)
    assert alone.to_json() == one.to_json() and alone.attention == one.attention


def test_members_that_anonymize_differently_are_refused(members, tmp_path):
    from attentive_reader import Reader

    other = _second_member(members[0], tmp_path / "other.ckpt", labels=["PERSON"])
    with pytest.raises(UserError, match="cannot answer as one ensemble: their training data was"):
        Reader.load([members[0], other])


def test_answer_takes_an_ensemble(members, ensemble, tmp_path, capsys):
    document = tmp_path / "article.txt"
    document.write_text(ARTICLE)
    argv = ["answer", "--ensemble", *map(str, members), "--document", str(document)]
    assert cli([*argv, "--query", QUERY, "--json", "--top", "3"]) == 0
    printed = json.loads(capsys.readouterr().out)
    expected = json.loads(json.dumps(ensemble.answer(ARTICLE, QUERY).to_json(3)))
    assert {k: printed[k] for k in expected} == expected
    assert len(printed["reader"]["ensemble"]) == 2
    assert cli([*argv, "--ckpt", str(members[0]), "--query", QUERY]) == 2
    assert "not allowed with argument" in capsys.readouterr().err


def test_a_served_ensemble_answers_as_the_ensemble_does(members, ensemble, trained):
    from attentive_reader.serve.app import create_app
    from attentive_reader.serve.pool import AnswerPool
    from attentive_reader.serve.workers import ReaderSource

    source = ReaderSource(tuple(str(path) for path in members))
    pool = AnswerPool.processes(source, workers=1, queue=4)
    try:
        pool.start()
        with running(create_app(ensemble, pool=pool)) as url:
            status, _, answer = call(url, "/api/answer", {"document": ARTICLE, "query": QUERY})
            assert status == 200
            expected = ensemble.answer(ARTICLE, QUERY).to_json(5)
            # what `answer --json` prints, the reader block naming files, never folders
            expected |= {"reader": ensemble.provenance_json(folder=False)}
            assert answer == json.loads(json.dumps(expected))
            checkpoints = [member["checkpoint"] for member in answer["reader"]["ensemble"]]
            assert checkpoints == [Path(path).name for path in members]
            health = call(url, "/api/health")[2]
            names = " + ".join(Path(path).name for path in members)
            assert health["model"] == names
            assert health["reader"] == "Ensemble of AttentiveReader, GatedAttentionReader"
    finally:
        pool.close()
