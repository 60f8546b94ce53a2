"""``fit --model.word_vectors FILE`` from the command line: the vectors of ``attentive-reader
vectors`` reach the embedding with one log line, and a resumed run and ``evaluate`` never need
the file again."""

from __future__ import annotations

import importlib.util
import logging

import pytest
import torch

from attentive_reader.cli import main as cli
from attentive_reader.corpus.synthetic.toy import write_toy_dataset

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(importlib.util.find_spec("gensim") is None, reason="needs gensim"),
]
QUIET = ["--trainer.enable_progress_bar", "false", "--trainer.enable_model_summary", "false"]


class Lines(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


def test_fit_starts_from_the_vectors_and_a_resume_needs_no_file(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    data = str(write_toy_dataset(tmp_path / "toy", num_train=32, num_validation=8, num_test=8))
    vectors = tmp_path / "vectors.txt"
    argv = ["vectors", "--data", data, "--output", str(vectors), "--dim", "8", "--min-count", "1"]
    assert cli(argv) == 0
    stored = {
        line.split(" ")[0]: [float(v) for v in line.split(" ")[1:]]
        for line in vectors.read_text().splitlines()[1:]
    }
    fit = ["fit", "--config", "attentive_reader", "--data.path", data, *QUIET]
    fit += ["--data.num_entities", "12", "--model.embedding_dim", "8", "--model.hidden_dim", "8"]
    handler = Lines()
    logger = logging.getLogger("pytorch_lightning.utilities.rank_zero")
    logger.addHandler(handler)
    try:
        first = [*fit, "--model.word_vectors", str(vectors), "--model.lr", "1e-9"]
        assert cli([*first, "--trainer.max_steps", "1", "--trainer.limit_val_batches", "1"]) == 0
    finally:
        logger.removeHandler(handler)
    words = len(stored)
    expected = f"word vectors: {words} of {words} vocabulary words found in {vectors}"
    assert [line for line in handler.lines if line.startswith("word vectors:")] == [
        f"{expected} (entity markers, @placeholder and the special tokens keep their own "
        "embeddings)"
    ]
    (last,) = tmp_path.glob("runs/lightning_logs/version_0/checkpoints/last.ckpt")
    checkpoint = torch.load(last, weights_only=True)
    words_of = checkpoint["ClozeDataModule"]["vocab"]["words"]
    offset = 3 + checkpoint["ClozeDataModule"]["vocab"]["num_entities"]
    embedding = checkpoint["state_dict"]["embedding.weight"]
    for index, word in enumerate(words_of):  # one step at lr 1e-9: the file's values
        assert torch.allclose(embedding[offset + index], torch.tensor(stored[word]), atol=1e-5)

    vectors.unlink()  # a resumed run and an evaluation read the checkpoint's embeddings
    resumed = [*first, "--ckpt_path", str(last), "--trainer.max_steps", "2"]
    assert cli([*resumed, "--trainer.limit_val_batches", "1"]) == 0
    assert cli(["evaluate", "--ckpt", str(last), "--data", data, "--device", "cpu"]) == 0
    capsys.readouterr()
    assert cli([*first, "--trainer.max_steps", "1"]) == 2  # a new run needs the file
    assert f"error: word vectors file not found: {vectors}" in capsys.readouterr().err
