"""A checkpoint knows what it was trained on: the record ``fit`` writes, and what ``answer``,
``Reader`` and the page say about it (a one-line warning for a reader trained on the synthetic
corpus or validating below its data's exclusive-frequency baseline; none for other readers;
an unknown provenance for old checkpoints)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from attentive_reader.cli import main as cli
from attentive_reader.corpus.sources.splits import url_sha1
from attentive_reader.models.provenance import Provenance
from tests.corpus.fixtures import write_story
from tests.trained_reader import fit_tiny_reader

ARTICLE = (
    "Shares in Greystone Bank rose after Susan Kennedy flew to Lisbon.\n\n"
    "Kennedy smiled. Greystone Bank said the deal was done."
)
# Hand-written stories with names the synthetic corpus's entity ruler tags, split by url
# lists of made-up news urls. The validation story names Athens three times and its highlight's person once, so
# the exclusive-frequency baseline (the most frequent entity not in the query) is 0 there.
TRAIN = [
    (
        ["Alice Bennett joined Beacon Bank in Athens.", "Bennett said Beacon Bank was strong."],
        ["Alice Bennett joined Beacon Bank"],
    ),
    (
        ["Andrew Allen flew to Barcelona for Avalon Airways.", "Allen met staff in Barcelona."],
        ["Andrew Allen flew to Barcelona"],
    ),
    (
        ["Avalon Airways hired Alice Bennett in Amsterdam.", "Bennett starts next week."],
        ["Avalon Airways hired Alice Bennett"],
    ),
    (
        ["Beacon Bank opened in Barcelona, said Andrew Allen.", "Allen was pleased."],
        ["Beacon Bank opened in Barcelona"],
    ),
]
VALIDATION = [
    (
        ["Andrew Allen left Athens.", "Athens was hot. In Athens, Beacon Bank closed early."],
        ["Andrew Allen left"],
    )
]
TEST = [(["Alice Bennett met Andrew Allen in Amsterdam."], ["Alice Bennett met Andrew Allen"])]


@pytest.fixture(scope="module")
def handmade(tmp_path_factory, trained) -> Path:
    """A tiny reader trained on the hand-written stories (real text, not the synthetic
    corpus); the synthetic corpus's entity ruler tags their names."""
    root = tmp_path_factory.mktemp("handmade")
    (root / "url_lists").mkdir()
    for split, stories in (("train", TRAIN), ("val", VALIDATION), ("test", TEST)):
        urls = [f"https://news.example.org/{split}/{n}" for n in range(len(stories))]
        for url, (paragraphs, highlights) in zip(urls, stories):
            write_story(root / "stories", url_sha1(url), paragraphs, highlights)
        (root / "url_lists" / f"all_{split}.txt").write_text("".join(u + "\n" for u in urls))
    argv = ["preprocess", str(root / "stories"), "--url-lists", str(root / "url_lists")]
    argv += ["--spacy-model", str(trained.ruler), "--output", str(root / "data"), "--quiet"]
    assert cli(argv) == 0
    return fit_tiny_reader(root / "data", root / "runs")


def _answer(ckpt: Path, article: Path, *extra: str) -> list[str]:
    return ["answer", "--ckpt", str(ckpt), "--document", str(article), *extra]


@pytest.fixture
def article(tmp_path) -> Path:
    path = tmp_path / "article.txt"
    path.write_text(ARTICLE, encoding="utf-8")
    return path


def _warnings(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith("warning:")]


@pytest.mark.slow
def test_answer_says_in_one_line_that_the_reader_knows_only_the_synthetic_corpus(
    trained, article, capsys
):
    manifest = json.loads((trained.data / "manifest.json").read_text())
    assert manifest["synthetic"]["generator"] == "attentive_reader.corpus.synthetic"
    assert cli([*_answer(trained.ckpt, article), "--query", "@placeholder smiled"]) == 0
    captured = capsys.readouterr()
    (warning,) = _warnings(captured.err)
    assert "trained on the built-in synthetic corpus, seed 5" in warning
    (line,) = [x for x in captured.out.splitlines() if x.startswith("reader: ")]
    assert f"trained on {trained.data} (the built-in synthetic corpus, seed 5;" in line
    assert cli([*_answer(trained.ckpt, article), "--query", "@placeholder smiled", "--json"]) == 0
    record = json.loads(capsys.readouterr().out)["reader"]
    assert record["synthetic"] == "the built-in synthetic corpus, seed 5"
    assert record["warning"] == warning.removeprefix("warning: ")


@pytest.mark.slow
def test_a_reader_trained_on_other_text_gets_no_warning(handmade, article, capsys):
    record = torch.load(handmade, weights_only=True)["provenance"]
    assert record["data"]["synthetic"] is False
    assert record["data"]["exclusive_frequency"] == 0.0  # Athens, not the answer, is counted
    assert record["data"]["validation_examples"] == 1
    assert cli([*_answer(handmade, article), "--query", "@placeholder smiled"]) == 0
    captured = capsys.readouterr()
    assert _warnings(captured.err) == []
    assert "synthetic" not in captured.err + captured.out
    (line,) = [x for x in captured.out.splitlines() if x.startswith("reader: ")]
    assert "(real text; fingerprint " in line


def _edited(ckpt: Path, tmp_path: Path, edit) -> Path:
    checkpoint = torch.load(ckpt, weights_only=True)
    edit(checkpoint)
    path = tmp_path / "edited.ckpt"
    torch.save(checkpoint, path)
    return path


@pytest.mark.slow
def test_below_the_baseline_warns_and_an_old_checkpoint_is_unknown(
    handmade, article, tmp_path, capsys
):
    def below(checkpoint):
        checkpoint["provenance"]["val_acc"] = 0.125
        checkpoint["provenance"]["data"]["exclusive_frequency"] = 0.375

    path = _edited(handmade, tmp_path, below)
    assert cli([*_answer(path, article), "--query", "@placeholder smiled"]) == 0
    (warning,) = _warnings(capsys.readouterr().err)
    assert "validates at 0.1250, below its data's exclusive-frequency baseline 0.3750" in warning

    path = _edited(handmade, tmp_path, lambda checkpoint: checkpoint.pop("provenance"))
    assert cli([*_answer(path, article), "--query", "@placeholder smiled"]) == 0
    captured = capsys.readouterr()
    assert _warnings(captured.err) == []
    assert "reader: provenance unknown (the checkpoint predates" in captured.out


@pytest.mark.slow
def test_reader_has_the_record_and_the_page_shows_it(trained, reader):
    from starlette.testclient import TestClient

    from attentive_reader.serve.app import create_app

    assert reader.provenance.synthetic == "the built-in synthetic corpus, seed 5"
    assert (
        reader.provenance.fingerprint
        == __import__("hashlib").sha256((trained.data / "manifest.json").read_bytes()).hexdigest()
    )
    html = TestClient(create_app(reader)).get("/").text
    assert 'id="caution">warning: this reader was trained on the built-in synthetic' in html
    assert f"trained on {trained.data.name} (" in html and str(trained.data.parent) not in html


def test_the_record_read_back():
    assert Provenance.of({}).describe().startswith("provenance unknown")
    assert Provenance.of({}).warning() is None
    data = {"path": "/d/cnn", "fingerprint": "ab" * 32, "synthetic": False}
    record = {"data": {**data, "exclusive_frequency": 0.3}, "val_acc": 0.6, "epoch": 4}
    real = Provenance.of({"provenance": {**record, "best_val_acc": 0.62, "global_step": 900}})
    assert real.warning() is None and not real.below_baseline
    assert real.describe() == (
        f"trained on /d/cnn (real text; fingerprint {'ab' * 6}), saved at epoch 4, step 900; "
        "val_acc 0.6000 (best 0.6200); exclusive-frequency baseline 0.3000"
    )
    mark = {"generator": "attentive_reader.corpus.synthetic", "seed": 0}
    both = {**record, "val_acc": 0.2, "data": {**record["data"], "synthetic": mark}}
    warning = Provenance.of({"provenance": both}).warning()
    assert warning.count("\n") == 0 and " and validates at 0.2000, below " in warning
    unknown = {**record, "data": {**data, "synthetic": None}}
    assert "(origin unknown;" in Provenance.of({"provenance": unknown}).describe()
