"""Grouping rules version 6 (issue 29), each on a hand-written story, with its guard.

Each case comes from an answer whose marker stood directly beside another marker in the
250 real test stories (``attentive-reader anonymization --adjacent``); each story test fails
on version 5. Entities are given as token spans over whitespace-tokenized text
(``labelled_groups``), as NER read them in the real story.
"""

from __future__ import annotations

import spacy
from spacy.tokens import Doc, Span

from attentive_reader.corpus.cloze import make_examples
from attentive_reader.corpus.entities import find_mentions
from attentive_reader.corpus.names import canonical_form, is_place
from attentive_reader.corpus.records import Story
from tests.corpus.pipelines import LABELS, labelled_groups


def at(text: str, *entities: tuple[str, str]) -> list[tuple[int, int, str]]:
    """Token spans of NER entities given as (words, label), each found at the first place
    after the entity before it (so a name written twice is given twice, in order)."""
    words, spans, position = text.split(), [], 0
    for name, label in entities:
        n = len(name.split())
        start = next(i for i in range(position, len(words)) if words[i : i + n] == name.split())
        spans.append((start, start + n, label))
        position = start + n
    return spans


def mentions(text: str, spans: list[tuple[int, int, str]]) -> list[str]:
    """The text of each mention of a text whose NER entities are ``spans``."""
    doc = Doc(spacy.blank("en").vocab, words=text.split())
    doc.ents = [Span(doc, start, end, label=label) for start, end, label in spans]
    return [m.text for m in find_mentions(doc, LABELS)]


# --- a first name and its surname, cut in two by NER ---------------------------------------


def test_a_full_name_is_never_cut_so_that_its_surname_joins_another_person():
    # The daughter "Jamie" (a place to NER) "Silvonek": cut in two, her surname went to her
    # mother "Cheryl Silvonek" and her first name stood beside the mother's marker.
    text = (
        "Cheryl Silvonek died . Cheryl Silvonek was 54 . Her daughter Jamie Silvonek , 14 , "
        "was charged . Jamie Silvonek wept ."
    )
    spans = at(
        text,
        ("Cheryl Silvonek", "PERSON"),
        ("Cheryl Silvonek", "PERSON"),
        ("Jamie", "GPE"),
        ("Silvonek", "PERSON"),
        ("Jamie", "GPE"),
        ("Silvonek", "PERSON"),
    )
    assert labelled_groups(text, spans) == [
        ["Cheryl Silvonek", "Cheryl Silvonek"],
        ["Jamie Silvonek", "Jamie Silvonek"],
    ]
    # A word that is no first name joins only when the story writes it only, or mostly and
    # at least twice, right before that name: "Rhodri" (GPE) "Giggs", where NER read the
    # second "Rhodri Giggs" as no name at all, is one man; "Aintree" named alone as often
    # is the racecourse.
    text = "Rhodri Giggs was fined . Rhodri Giggs , 37 , spoke . His brother Ryan Giggs won ."
    spans = at(text, ("Rhodri", "GPE"), ("Giggs", "PERSON"), ("Ryan Giggs", "PERSON"))
    assert labelled_groups(text, spans) == [["Rhodri Giggs", "Rhodri Giggs"], ["Ryan Giggs"]]
    text = "Aintree Treadwell rode . Aintree cheered . Liam Treadwell won ."
    spans = at(
        text,
        ("Aintree", "PERSON"),
        ("Treadwell", "PERSON"),
        ("Aintree", "PERSON"),
        ("Liam Treadwell", "PERSON"),
    )
    assert labelled_groups(text, spans) == [["Aintree", "Aintree"], ["Treadwell", "Liam Treadwell"]]


def test_a_surname_shared_by_two_people_stays_with_the_one_it_is_written_with():
    # "Mary Pat" "Christie", two mentions side by side: her surname went to her husband
    # "Chris Christie" (d5a6a185). Her first names and the surname are one name.
    text = (
        "Chris Christie ran . Chris Christie spoke . Chris Christie won . "
        "Ditching Wall Street : Mary Pat Christie , right , quit ."
    )
    spans = at(
        text, *[("Chris Christie", "PERSON")] * 3, ("Mary Pat", "PERSON"), ("Christie", "PERSON")
    )
    assert labelled_groups(text, spans)[-1] == ["Mary Pat Christie"]
    # Guards: a demonym ("American" "Spieth") or a place before a surname is another name;
    # a first name before a first name is two ("his Jack Russell Sam", a dog and its owner).
    text = "Jordan Spieth won . the pacesetting American Spieth , and Sam . his Jack Russell Sam ."
    spans = at(
        text,
        ("Jordan Spieth", "PERSON"),
        ("American", "NORP"),
        ("Spieth", "PERSON"),
        ("Sam", "PERSON"),
        ("Jack Russell", "PERSON"),
        ("Sam", "PERSON"),
    )
    assert mentions(text, spans) == [
        "Jordan Spieth",
        "American",
        "Spieth",
        "Sam",
        "Jack Russell",
        "Sam",
    ]


def test_a_rank_or_title_before_a_person_is_one_name_with_it():
    text = "Bishop John Folda is ill . The diocese said Bishop John Folda rests . Folda left ."
    spans = at(
        text,
        ("Bishop", "PERSON"),
        ("John Folda", "PERSON"),
        ("Bishop", "ORG"),
        ("John Folda", "PERSON"),
        ("Folda", "PERSON"),
    )
    assert labelled_groups(text, spans) == [["Bishop John Folda"] * 2 + ["Folda"]]


# --- names of teams, institutions and organisations ----------------------------------------


def test_a_club_name_is_not_split_at_its_place():
    # "Newcastle" (GPE) "United" (ORG): the city and the club were two markers side by side.
    text = "Newcastle lost . Newcastle United fans have planned a protest . Scottish Parliament"
    spans = at(
        text,
        ("Newcastle", "GPE"),
        ("Newcastle", "GPE"),
        ("United", "ORG"),
        ("Scottish", "NORP"),
        ("Parliament", "ORG"),
    )
    assert labelled_groups(text, spans) == [
        ["Newcastle"],
        ["Newcastle United"],
        ["Scottish Parliament"],
    ]
    # Guards: no club word ("Minnesota U.S. Attorney"), and a person after a place.
    text = "Minnesota U.S. Attorney Andy Luger spoke . in Newcastle Alan Pardew said ."
    spans = at(
        text,
        ("Minnesota", "GPE"),
        ("U.S.", "GPE"),
        ("Andy Luger", "PERSON"),
        ("Newcastle", "GPE"),
        ("Alan Pardew", "PERSON"),
    )
    assert mentions(text, spans) == [
        "Minnesota",
        "U.S.",
        "Andy Luger",
        "Newcastle",
        "Alan Pardew",
    ]


def test_two_pieces_that_make_a_name_of_the_story_or_the_tables_are_one():
    # "Islamic" (NORP) "State" (ORG): a name of the name tables; "Frida" (GPE) "Kahlo",
    # named whole elsewhere.
    text = "the Islamic State 's unit . Frida Kahlo painted . in Frida Kahlo : The Photographs"
    spans = at(
        text,
        ("Islamic", "NORP"),
        ("State", "ORG"),
        ("Frida Kahlo", "PERSON"),
        ("Frida", "GPE"),
        ("Kahlo", "PERSON"),
    )
    assert labelled_groups(text, spans) == [["Islamic State"], ["Frida Kahlo", "Frida Kahlo"]]
    # Guard: a known place or demonym is no piece of such a name ("Davis High School English
    # teacher", read whole once, is a school and a subject).
    text = "Davis High School English teacher Brianne . at Davis High School English lessons"
    spans = at(
        text,
        ("Davis High School English", "ORG"),
        ("Brianne", "PERSON"),
        ("Davis High School", "ORG"),
        ("English", "LANGUAGE"),
    )
    assert mentions(text, spans)[-2:] == ["Davis High School", "English"]


# --- mentions that are no names --------------------------------------------------------------


def test_a_mention_all_in_lowercase_is_dropped_unless_the_story_writes_it_as_a_name():
    text = (
        "the soil of some United States strawberry fields . septum piercings . an iPhone , iphone"
    )
    spans = at(
        text,
        ("United States", "GPE"),
        ("strawberry", "PRODUCT"),
        ("septum", "GPE"),
        ("iPhone", "PRODUCT"),
        ("iphone", "PRODUCT"),
    )
    assert mentions(text, spans) == ["United States", "iPhone", "iphone"]


def test_a_mention_that_runs_on_into_lowercase_words_is_trimmed():
    # "Ibe for the incident" (ORG) beside "Jordon Ibe": the name is "Ibe".
    text = "Jordon Ibe came . Rodgers has not disciplined Sterling or Ibe for the incident . " + (
        "the Clarence J. Brown Dam and Reservoir , the Court of Appeal Mr Beavis"
    )
    spans = at(
        text,
        ("Jordon Ibe", "PERSON"),
        ("Ibe for the incident", "ORG"),
        ("Clarence J. Brown Dam and", "ORG"),
        ("Reservoir", "ORG"),
        ("Court of Appeal Mr", "ORG"),
        ("Beavis", "PERSON"),
    )
    assert mentions(text, spans) == [
        "Jordon Ibe",
        "Ibe",
        "Clarence J. Brown Dam",
        "Reservoir",
        "Court of Appeal",
        "Beavis",
    ]
    # Guards: a word after a hyphen ("Ban Ki-moon") and a name of the tables ("United
    # states") stay whole.
    doc = spacy.blank("en")("Ban Ki-moon spoke in the United states.")  # "Ki", "-", "moon"
    doc.ents = [Span(doc, 0, 4, "PERSON"), Span(doc, 7, 9, "GPE")]
    assert [m.text for m in find_mentions(doc, LABELS)] == ["Ban Ki-moon", "United states"]


# --- places ----------------------------------------------------------------------------------


def test_a_state_demonym_joins_its_state():
    assert canonical_form(("californian",)) == ("california",) and is_place(("texan",))
    text = "California burned . drought-weary Californians waited . A Texan came from Texas ."
    spans = at(
        text,
        ("California", "GPE"),
        ("Californians", "NORP"),
        ("Texan", "NORP"),
        ("Texas", "GPE"),
    )
    assert labelled_groups(text, spans) == [["California", "Californians"], ["Texan", "Texas"]]
    # Guard: only for a nationality or a place to NER ("the Bakersfield Californian" is a
    # newspaper, "Californian" of it an organisation here).
    text = "California burned , the Californian reported ."
    spans = at(text, ("California", "GPE"), ("Californian", "ORG"))
    assert labelled_groups(text, spans) == [["California"], ["Californian"]]


def test_a_place_of_the_tables_never_joins_a_longer_place_of_the_tables():
    # "Australian" (Australia) joined the state "Western Australia"; "Wales" "New South Wales".
    for longer, short in (("Western Australia", "Australian"), ("New South Wales", "Wales")):
        text = f"{longer} voted . {short} fans cheered ."
        spans = at(text, (longer, "GPE"), (short, "NORP" if short.endswith("n") else "GPE"))
        assert labelled_groups(text, spans) == [[longer], [short]], longer
    # Guard: a longer name of place words that is no place of the tables still takes it
    # (version 5's "Greater Manchester" and "Downtown Seoul").
    text = "Greater Manchester voted . Manchester cheered ."
    spans = at(text, ("Greater Manchester", "GPE"), ("Manchester", "GPE"))
    assert labelled_groups(text, spans) == [["Greater Manchester", "Manchester"]]


def test_the_answer_no_longer_stands_beside_a_piece_of_its_own_name():
    # End to end: the highlight's "Youssouf Mulumbu" is one marker, and in the article the
    # answer stands beside no other marker (version 5: "@entity0 @entity1").
    text = "Youssouf Mulumbu has cast his vote . Harry Kane got the nod by Youssouf Mulumbu ."
    doc = Doc(spacy.blank("en").vocab, words=text.split())
    doc.ents = [
        Span(doc, 0, 1, "GPE"),
        Span(doc, 1, 2, "PERSON"),
        Span(doc, 7, 9, "PERSON"),
        Span(doc, 13, 14, "NORP"),
    ]
    story = Story(id="s", article=text, highlights=("Youssouf Mulumbu backs Harry Kane",))
    highlights = [Doc(doc.vocab, words=story.highlights[0].split())]
    examples = make_examples(story, doc, highlights)
    assert [ex.answer for ex in examples] == ["@entity0", "@entity1"]  # Mulumbu and Kane
    first = examples[0]
    assert first.context[:2] == ("@entity0", "has") and first.context[-2:] == ("@entity0", ".")
    assert first.entities["@entity0"] == "Youssouf Mulumbu" and first.answer == "@entity0"
