"""A checkpoint works on any corpus and any article (issue 34): a reader trained on short
stories with the smallest entity block they allow reads another corpus, whose stories name
more entities, and an article with more entities than its block. Examples are fitted into
the block (``data/entity_block.py``), never refused; answers keep the real names."""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest

from attentive_reader.cli import main as cli
from attentive_reader.common.markers import entity_index, is_entity_marker
from attentive_reader.corpus.records import ClozeExample
from attentive_reader.corpus.synthetic.words import CITIES, COUNTRIES
from attentive_reader.data.datamodule import ClozeDataModule
from attentive_reader.data.entity_block import example_fit
from attentive_reader.data.vocab import Vocabulary
from attentive_reader.eval.evaluation import evaluate, load_examples
from attentive_reader.eval.inference import load_checkpoint
from attentive_reader.training.run import run_cli
from tests.trained_reader import ROOT, fit_tiny_reader, make_tiny_data

QUIET = ["--trainer.enable_progress_bar", "false", "--trainer.enable_model_summary", "false"]


@dataclass(frozen=True)
class Corpora:
    """The short stories' reader (its block: what their data needs) and a corpus of longer
    stories that number more entities."""

    ckpt: Path
    block: int
    other: Path


@pytest.fixture(scope="module")
def corpora(tmp_path_factory) -> Corpora:
    root = tmp_path_factory.mktemp("corpora")
    _, short = make_tiny_data(root / "short", stories=16, seed=1, synth=["--compact"])
    block = ClozeDataModule(str(short)).entities_needed()
    ckpt = fit_tiny_reader(short, root / "runs", extra=["--data.num_entities", str(block)])
    _, other = make_tiny_data(root / "other", stories=20, seed=2)
    return Corpora(ckpt, block, other)


def _largest_number(example: ClozeExample) -> int:
    return max(entity_index(t) for t in (*example.context, *example.query) if is_entity_marker(t))


def test_evaluate_reads_a_corpus_that_numbers_more_entities_than_the_block(corpora):
    report = evaluate(corpora.other, [corpora.ckpt], split="test", device="cpu")
    examples = load_examples(corpora.other, "test")
    (info,) = report.checkpoints
    beyond = [ex for ex in examples if _largest_number(ex) >= corpora.block]
    assert info.num_entities == corpora.block and info.relabelled == len(beyond) > 0
    lines = report.lines[info.name]
    assert report.num_examples == len(lines) == len(examples)
    left_out = []
    for line, example in zip(lines, examples):
        # The lines name the stored markers and their real names.
        assert line.gold == example.answer and line.prediction in example.candidates
        assert line.prediction_name == example.entities[line.prediction]
        if example_fit(example, corpora.block).reader_number(entity_index(example.answer)) is None:
            left_out.append(line)
    assert info.unanswerable == len(left_out) > 0
    assert not any(line.correct for line in left_out)
    assert all(line.gold_probability == 0.0 for line in left_out)
    model = report.system(info.name).overall
    assert model.n == len(examples) and model.correct == sum(line.correct for line in lines)
    assert (
        f"{info.name}: {len(beyond)} of {len(examples)} examples numbered entities beyond its "
        f"{corpora.block} entity ids and were read relabelled into them; {len(left_out)} "
        "answers fell outside them and count wrong"
    ) in report.markdown().splitlines()


def test_words_the_checkpoint_never_saw_are_read_as_unknown(corpora):
    loaded = load_checkpoint(corpora.ckpt, corpora.other)
    vocab = loaded.datamodule.vocab
    assert vocab.num_entities == corpora.block == loaded.reader.num_entities
    row = ClozeExample.from_row(loaded.datamodule.examples("test")[0])
    read = loaded.datamodule.dataset("test").examples[0]
    words = [(t, i) for t, i in zip(row.context, read.context.tolist()) if not is_entity_marker(t)]
    unknown = [t for t, _ in words if t not in vocab.words]
    assert unknown and all(i == Vocabulary.UNK for t, i in words if t in unknown)
    assert all(i == vocab.token_id(t) for t, i in words if t not in unknown)


def test_heatmaps_of_the_other_corpus_show_the_stored_markers_and_names(corpora):
    from attentive_reader.viz import checkpoint_heatmaps

    examples = {ex.id: ex for ex in load_examples(corpora.other, "test")}
    pages = checkpoint_heatmaps(corpora.ckpt, corpora.other, limit=len(examples), device="cpu")
    assert len(pages) == len(examples)
    for page in pages:
        example = examples[page.id]
        fit = example_fit(example, corpora.block)
        assert page.context == example.context and page.answer == example.answer
        # The candidates are the entities the block kept, under their stored markers.
        kept = [c for c in example.candidates if fit.reader_number(entity_index(c)) is not None]
        assert page.candidates == tuple(kept) and set(page.probabilities) == set(kept)
        assert page.prediction in kept and page.entities == example.entities
    assert any(len(page.candidates) < len(examples[page.id].candidates) for page in pages)


@pytest.mark.parametrize("subcommand, split", [("validate", "validation"), ("test", "test")])
def test_the_lightning_cli_reads_the_other_corpus_with_the_checkpoint(
    corpora, subcommand, split, tmp_path, monkeypatch
):
    monkeypatch.chdir(tmp_path)  # the CLI writes runs/ here
    examples = load_examples(corpora.other, split)
    assert max(map(_largest_number, examples)) >= corpora.block
    argv = [subcommand, "--config", str(ROOT / "configs" / "attentive_reader.yaml"), *QUIET]
    argv += ["--data.path", str(corpora.other), "--ckpt_path", str(corpora.ckpt)]
    metrics = run_cli([*argv, "--trainer.logger", "false"]).trainer.callback_metrics
    expected = evaluate(corpora.other, [corpora.ckpt], split=split, device="cpu")
    accuracy = expected.system(str(corpora.ckpt)).overall.accuracy
    stage = "val" if subcommand == "validate" else "test"
    assert float(metrics[f"{stage}_acc"]) == pytest.approx(accuracy, abs=1e-6)


def test_evaluate_command_warns_in_one_line_about_another_pipeline(corpora, tmp_path, capsys):
    assert cli(["evaluate", "--ckpt", str(corpora.ckpt), "--data", str(corpora.other)]) == 0
    captured = capsys.readouterr()
    assert "warning" not in captured.err and "read relabelled into them" in captured.out
    moved = Path(shutil.copytree(corpora.other, tmp_path / "moved", ignore=_no_cache))
    manifest = json.loads((moved / "manifest.json").read_text())
    manifest["spacy"] = {"name": "en_core_web_sm", "version": "3.8.0"}
    (moved / "manifest.json").write_text(json.dumps(manifest))
    assert cli(["evaluate", "--ckpt", str(corpora.ckpt), "--data", str(moved)]) == 0
    warnings = [line for line in capsys.readouterr().err.splitlines() if "warning" in line]
    assert warnings == [
        f"attentive-reader evaluate: warning: {moved} was preprocessed with spaCy pipeline "
        f"en_core_web_sm 3.8.0, the training data of {corpora.ckpt} with spaCy pipeline "
        "en_pipeline 0.0.0: entities may be marked differently"
    ]


def _no_cache(folder: str, names: list[str]) -> list[str]:
    return [name for name in names if name.startswith(".")]


def _crowded_article(block: int) -> tuple[str, list[str]]:
    """An article naming ``block + 4`` places, the first two three times; its names."""
    names = [*CITIES, *COUNTRIES][: block + 4]
    sentences = [f"They flew to {name}." for name in names]
    sentences += [f"{names[0]} and {names[1]} grew."] * 2
    return " ".join(sentences), names


def test_the_reader_answers_about_an_article_with_more_entities_than_its_block(corpora):
    from attentive_reader import Reader

    with pytest.warns(UserWarning, match="synthetic"):
        reader = Reader.load(corpora.ckpt)
    document, names = _crowded_article(corpora.block)
    answer = reader.answer(document, "They flew to @placeholder")
    # The block keeps the two named most often, then the first to occur.
    assert [c.name for c in sorted(answer.candidates, key=lambda c: names.index(c.name))] == (
        names[: corpora.block]
    )
    assert all(answer.entities[c.marker] == c.name for c in answer.candidates)
    assert answer.prediction.name in names and answer.filled.startswith("They flew to ")
    assert answer.notices == (
        f"the document has {len(names)} entities, more than the reader's {corpora.block} "
        "entity ids: the 4 named least often were read as unknown words and cannot be the answer",
    )


def test_the_answer_command_answers_with_real_names_and_says_so(corpora, tmp_path, capsys):
    document, names = _crowded_article(corpora.block)
    article = tmp_path / "article.txt"
    article.write_text(document)
    argv = ["answer", "--ckpt", str(corpora.ckpt), "--document", str(article), "--json"]
    assert cli([*argv, "--query", "They flew to @placeholder", "--top", "50"]) == 0
    captured = capsys.readouterr()
    shown = json.loads(captured.out)
    assert {c["name"] for c in shown["candidates"]} == set(names[: corpora.block])
    notes = [line for line in captured.err.splitlines() if line.startswith("note:")]
    assert len(notes) == 1 and f"more than the reader's {corpora.block} entity ids" in notes[0]
