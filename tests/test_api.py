"""The Python API (``Reader`` / ``Answer``): a round trip against ``evaluate``, the query's
names anonymized with the document's grouping, the recorded pipeline, and every bad input."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import torch

from attentive_reader.common.errors import UserError
from tests.trained_reader import CONTEXT_CAP, ROOT

pytestmark = pytest.mark.slow

# Names the synthetic corpus's entity ruler tags (corpus/synthetic.py).
ARTICLE = (
    "Shares in Greystone Bank rose after Susan Kennedy flew to Lisbon.\n\n"
    "Kennedy smiled. Greystone Bank said the deal was done."
)


def test_importing_the_package_stays_cheap():
    code = (
        "import sys, attentive_reader; "
        "print(sorted(m for m in ('torch', 'spacy', 'datasets') if m in sys.modules)); "
        "from attentive_reader import Reader; print(Reader.__module__)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
    ).stdout.split("\n")
    assert out[:2] == ["[]", "attentive_reader.api"]


def test_checkpoint_carries_the_preprocessing_identity(trained):
    from attentive_reader.corpus.manifest import preprocessing_identity, read_manifest

    checkpoint = torch.load(trained.ckpt, map_location="cpu", weights_only=True)
    stored = checkpoint["ClozeDataModule"]["pipeline"]
    assert stored == preprocessing_identity(read_manifest(trained.data))
    assert stored["spacy"]["name"] == "en_pipeline" and stored["spacy"]["components"] == ["ner"]
    assert stored["spacy_model"] == str(trained.ruler)
    assert stored["max_context_tokens"] == CONTEXT_CAP and stored["lowercase"] is True
    assert stored["grouping_rules"] >= 2 and "PERSON" in stored["labels"]
    # ... and beside vocab.json
    beside = trained.ckpt.parent / "pipeline.json"
    assert json.loads(beside.read_text()) == stored


def _blanked_highlights(trained, reader, split="test"):
    """``(stored example, raw article, raw highlight with the answer's mention blanked)``
    for every example of ``split``: the mention is found as preprocessing found it."""
    import datasets

    from attentive_reader.corpus.aliases import alias_table, find_aliases
    from attentive_reader.corpus.entities import find_mentions
    from attentive_reader.corpus.grouping import group_mentions
    from attentive_reader.corpus.records import ClozeExample
    from attentive_reader.corpus.sources import parse_story

    nlp, labels = reader.nlp, reader.options.labels
    rows = [ClozeExample.from_row(r) for r in datasets.load_from_disk(str(trained.data))[split]]
    out = []
    for row in rows:
        text = trained.story_file(row.story_id).read_text(encoding="utf-8")
        story = parse_story(text, story_id=row.story_id, source="")
        table = alias_table(group_mentions(find_mentions(nlp(story.article), labels)))
        h, j = (int(x) for x in row.id.rsplit("_", 2)[1:])
        highlight = story.highlights[h]
        doc = nlp.make_doc(highlight)
        start, end, _ = find_aliases(doc, table)[j]
        begin, finish = doc[start].idx, doc[end - 1].idx + len(doc[end - 1].text)
        blanked = highlight[:begin] + "@placeholder" + highlight[finish:]
        out.append((row, text, story.article, blanked))
    return out


def test_round_trip_gives_evaluates_predictions(trained, reader):
    """reader.answer(raw article, raw highlight with the answer blanked) == what evaluate's
    loop computes on the stored example: the same tokens, prediction and probabilities."""
    from attentive_reader.eval.inference import iterate_predictions, load_for_split

    model, datamodule = load_for_split(trained.ckpt, trained.data, torch.device("cpu"))
    evaluated = {}
    for _, output in iterate_predictions(model, datamodule, "test", batch_size=4):
        for i, example_id in enumerate(output.ids):
            evaluated[example_id] = (int(output.prediction[i]), output.probs[i])
    cases = _blanked_highlights(trained, reader)
    assert len(cases) == len(evaluated) >= 10
    answers = reader.answer_many([(article, blanked) for _, _, article, blanked in cases])
    for (row, text, _, blanked), answer in zip(cases, answers):
        assert answer.context == row.context, row.id
        assert answer.question == row.query, (row.id, blanked)
        assert {c.marker for c in answer.candidates} == set(row.candidates)
        prediction, probs = evaluated[row.id]
        assert answer.prediction.marker == f"@entity{prediction}", row.id
        for c in answer.candidates:
            assert c.probability == pytest.approx(float(probs[int(c.marker[7:])]), abs=1e-5)
            assert c.name == row.entities[c.marker]
        # The .story text itself (highlights ignored) gives the same answer.
        assert_same_candidates(reader.answer(text, blanked), answer)
    # answer_example on the stored row is the same computation.
    row, _, _, _ = cases[0]
    assert_same_candidates(reader.answer_example(row), answers[0])


def assert_same_candidates(a, b):
    """The same ranking and probabilities (up to the float noise of another batch's padding)."""
    assert [(c.marker, c.name) for c in a.candidates] == [(c.marker, c.name) for c in b.candidates]
    for x, y in zip(a.candidates, b.candidates):
        assert x.probability == pytest.approx(y.probability, abs=1e-5)


def test_query_names_take_the_documents_grouping(reader):
    answer = reader.answer(ARTICLE, "@placeholder flew to Lisbon with Kennedy")
    # Markers by first occurrence in the article; "Kennedy" is the article's Susan Kennedy.
    assert answer.entities == {
        "@entity0": "Greystone Bank",
        "@entity1": "Susan Kennedy",
        "@entity2": "Lisbon",
    }
    assert answer.question == ("@placeholder", "flew", "to", "@entity2", "with", "@entity1")
    assert answer.context[:4] == ("shares", "in", "@entity0", "rose")
    assert [c.marker for c in answer.candidates] != [] and len(answer.candidates) == 3
    probabilities = [c.probability for c in answer.candidates]
    assert probabilities == sorted(probabilities, reverse=True)
    assert sum(probabilities) == pytest.approx(1.0, abs=1e-5)
    assert answer.filled == f"{answer.prediction.name} flew to Lisbon with Kennedy"
    assert answer.attention is not None and len(answer.attention) == len(answer.context)
    assert sum(answer.attention) == pytest.approx(1.0, abs=1e-4)
    # The three ways of writing the blank are one query.
    for blank in ("___", "XXX", "_____"):
        other = reader.answer(ARTICLE, f"{blank} flew to Lisbon with Kennedy")
        assert other.question == answer.question
        assert_same_candidates(other, answer)
    # A possessive after the blank is tokenized as after a name.
    possessive = reader.answer(ARTICLE, "@placeholder's shares rose")
    assert possessive.question == ("@placeholder", "'s", "shares", "rose")
    # A query without names: only the blank is a marker.
    plain = reader.answer(ARTICLE, "shares in @placeholder rose")
    assert plain.question == ("shares", "in", "@placeholder", "rose")


def test_answer_json_and_heatmap(reader):
    from attentive_reader.viz.html import render_html

    answer = reader.answer(ARTICLE + " <script>alert(1)</script>", "@placeholder smiled")
    data = answer.to_json(top=2)
    assert len(data["candidates"]) == 2 and data["prediction"] == data["candidates"][0]
    assert data["filled"].endswith(" smiled")
    page = render_html(answer.heatmap(model="tiny"))
    # spaCy reads "<script>" as "<", "script", ">": each token escaped on its own.
    assert "<script" not in page and ">&lt;</span>" in page
    assert "Susan Kennedy" in page  # the real-names view


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("Kennedy flew to Lisbon", "has no blank"),
        ("@placeholder flew to ___", "has 2 blanks"),
        ("   ", "the query is empty"),
    ],
)
def test_bad_queries(reader, query, message):
    with pytest.raises(UserError, match=message):
        reader.answer(ARTICLE, query)


def test_bad_documents(reader):
    with pytest.raises(UserError, match="the document is empty"):
        reader.answer(" \n ", "@placeholder smiled")
    with pytest.raises(UserError, match="no entity"):
        reader.answer("Shares rose after the deal was done.", "@placeholder smiled")
    with pytest.raises(UserError, match="no article text"):
        reader.answer("@highlight\n\nKennedy smiled", "@placeholder smiled")


def test_a_long_document_is_cut_to_the_context_cap_with_a_notice(reader):
    filler = " ".join(["the market was quiet ."] * 100)  # 500 tokens
    document = f"{ARTICLE} {filler} Lisbon welcomed Kennedy."
    answer = reader.answer(document, "@placeholder smiled")
    assert len(answer.notices) == 1 and f"{CONTEXT_CAP}-token context cap" in answer.notices[0]
    assert len(answer.context) <= CONTEXT_CAP
    assert answer.context[-1] != "kennedy" and "welcomed" not in answer.context


def test_answer_many_matches_answer_and_returns_errors_in_place(reader):
    pairs = [
        (ARTICLE, "@placeholder smiled"),
        (ARTICLE, "no blank here"),
        (ARTICLE, "Kennedy flew to @placeholder"),
    ]
    results = reader.answer_many(pairs, errors="return")
    assert isinstance(results[1], UserError) and "no blank" in str(results[1])
    for (document, query), result in zip([pairs[0], pairs[2]], [results[0], results[2]]):
        assert_same_candidates(result, reader.answer(document, query))
    with pytest.raises(UserError, match="no blank"):
        reader.answer_many(pairs)


def _edited_checkpoint(trained, tmp_path, edit):
    checkpoint = torch.load(trained.ckpt, map_location="cpu", weights_only=True)
    edit(checkpoint["ClozeDataModule"])
    path = tmp_path / "edited.ckpt"
    torch.save(checkpoint, path)
    return path


def test_the_recorded_pipeline_missing_different_or_absent(trained, tmp_path):
    from attentive_reader import Reader
    from attentive_reader.api_prepare import PipelineWarning

    def missing(state):
        state["pipeline"]["spacy_model"] = None
        state["pipeline"]["spacy"]["name"] = "en_not_installed_model"

    path = _edited_checkpoint(trained, tmp_path, missing)
    with pytest.raises(UserError, match="en_not_installed_model 0.0.0 .* is not installed"):
        Reader.load(path)

    def other_version(state):
        state["pipeline"]["spacy"]["version"] = "9.9.9"

    path = _edited_checkpoint(trained, tmp_path, other_version)
    with pytest.warns(PipelineWarning, match=r"en_pipeline 0.0.0 differs .*en_pipeline 9.9.9"):
        Reader.load(path)
    told = []
    Reader.load(path, warn=told.append)
    # The pipeline's warning, then the provenance's (the tiny reader is a synthetic one).
    assert len(told) == 2 and "differs" in told[0] and "synthetic corpus" in told[1]

    def questions(state):
        state["pipeline"]["spacy"] = None
        state["pipeline"]["spacy_model"] = None

    path = _edited_checkpoint(trained, tmp_path, questions)
    with pytest.raises(UserError, match=r"DeepMind .question data.*--spacy-model"):
        Reader.load(path)
    reader = Reader.load(path, spacy_model=str(trained.ruler))
    assert len(reader.answer(ARTICLE, "@placeholder smiled").candidates) == 3

    def old(state):
        del state["pipeline"]

    path = _edited_checkpoint(trained, tmp_path, old)
    with pytest.warns(PipelineWarning, match="records no preprocessing identity"):
        Reader.load(path, spacy_model=str(trained.ruler))


def test_the_data_modules_context_cap_is_applied_as_in_training(trained, tmp_path):
    from attentive_reader import Reader

    checkpoint = torch.load(trained.ckpt, map_location="cpu", weights_only=True)
    checkpoint["datamodule_hyper_parameters"]["max_context_tokens"] = 10
    path = tmp_path / "capped.ckpt"
    torch.save(checkpoint, path)
    answer = Reader.load(path).answer(ARTICLE, "@placeholder smiled")
    assert len(answer.context) == 10 and len(answer.attention) == 10
    assert answer.context_length > 10
    assert any("read its first 10" in notice for notice in answer.notices)
    # The candidates stay those of the whole document, as in training.
    assert len(answer.candidates) == 3
