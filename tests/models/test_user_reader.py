"""A reader written outside the toolkit, as ``docs/readers.md`` ("Writing a reader") walks it:
the registry lists it, and the CLI trains it by its class path and checkpoints it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch
import yaml

from attentive_reader.cli import main as cli_main
from attentive_reader.corpus.synthetic.toy import write_toy_dataset
from attentive_reader.data.batching import ClozeBatch
from attentive_reader.models import ClozeReader, ReaderOutput
from attentive_reader.models.loading import load_reader
from attentive_reader.models.parts import PairReader
from attentive_reader.nn.answer import AnswerInput, AnswerLayerName
from attentive_reader.nn.attention import Attention

pytestmark = pytest.mark.usefixtures("one_thread")
CLASS_PATH = f"{__name__}.MeanQueryReader"


class MeanQueryReader(PairReader):
    """Attends with the dot product of each document state and the mean query state.

    Args:
        temperature: divides the attention scores.
        answer_layer: ``pointer`` (the default), ``tied`` or ``output``.
        **options: ``PairReader``'s and ``ClozeReader``'s.
    """

    def __init__(
        self, *, temperature: float = 1.0, answer_layer: AnswerLayerName = "pointer", **options: Any
    ) -> None:
        super().__init__(**options)
        self.temperature = temperature
        self.build_answer_layer(answer_layer, self.encoders.output_dim)

    def forward(self, batch: ClozeBatch) -> ReaderOutput:
        encoded = self.encode(batch)  # y_d (b, n, 2h), y_q (b, m, 2h)
        mask = batch.query_mask.unsqueeze(-1)  # (b, m, 1)
        q = (encoded.query * mask).sum(1) / mask.sum(1).clamp_min(1)  # (b, 2h)
        scores = torch.bmm(encoded.document, q.unsqueeze(-1)).squeeze(-1) / self.temperature
        s = Attention.of(scores, batch.context_mask).weights  # (b, n), 0 on padding
        r = torch.bmm(s.unsqueeze(1), encoded.document).squeeze(1)  # (b, 2h)
        given = AnswerInput(vector=r, weights=s, token_scores=scores)
        return ReaderOutput(self.answer_scores(batch, given), attention=s)


def test_a_reader_defined_anywhere_is_registered():
    assert ClozeReader.list_available()["MeanQueryReader"] is MeanQueryReader
    assert "AttentiveReader" in ClozeReader.list_available()  # beside the toolkit's


def test_a_second_reader_of_the_same_name_is_refused():
    with pytest.raises(TypeError, match="two reader classes are named AttentiveReader"):

        class AttentiveReader(MeanQueryReader):  # noqa: F811
            def forward(self, batch: ClozeBatch) -> ReaderOutput:
                return super().forward(batch)


@pytest.mark.slow
def test_the_cli_trains_it_by_its_class_path(tmp_path: Path, monkeypatch):
    toy = write_toy_dataset(tmp_path / "toy", num_train=32, num_validation=16, num_test=16)
    monkeypatch.chdir(tmp_path)
    tiny = ["--model.embedding_dim", "8", "--model.hidden_dim", "4", "--model.temperature", "2"]
    quiet = ["--trainer.enable_progress_bar", "false", "--trainer.enable_model_summary", "false"]
    data = ["--data.path", str(toy), "--data.num_entities", "12", "--data.batch_size", "16"]
    once = [
        "--trainer.max_epochs",
        "1",
        "--trainer.log_every_n_steps",
        "1",
        "--seed_everything",
        "0",
    ]
    argv = ["fit", "--model", CLASS_PATH, *tiny, *data, *quiet, *once]
    assert cli_main(argv) == 0

    (run,) = tmp_path.glob("runs/lightning_logs/version_*")
    config = yaml.safe_load((run / "config.yaml").read_text())["model"]
    assert config["class_path"] == CLASS_PATH
    # Its own option and those it passes on, in one flat block.
    assert config["init_args"]["temperature"] == 2.0 and config["init_args"]["rnn"] == "lstm"
    reader = load_reader(run / "checkpoints" / "last.ckpt")
    assert type(reader) is MeanQueryReader and reader.temperature == 2.0
    assert reader.hparams["hidden_dim"] == 4 and reader.hparams["answer_layer"] == "pointer"
