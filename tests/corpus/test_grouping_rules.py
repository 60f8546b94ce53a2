"""The grouping rules for real news (issue 14), each on a hand-written story, with its guard.

``spacy.blank("en")`` + ``entity_ruler`` (no model download), tokenized as ``load_pipeline``
does (``split_glued_parentheses``).
"""

from __future__ import annotations

from functools import partial

import pytest
import spacy
from spacy.tokens import Doc, Span

from attentive_reader.corpus.cloze import make_examples
from attentive_reader.corpus.entities import find_mentions
from attentive_reader.corpus.grouping import (
    ALONE,
    GROUPING_RULES_VERSION,
    RULES,
    acronym,
    group_mentions,
    grouping_info,
    trailing_part,
)
from attentive_reader.corpus.names import canonical_form, form_key, is_place
from attentive_reader.corpus.pipeline import split_glued_parentheses
from attentive_reader.corpus.records import ClozeExample, Story
from attentive_reader.eval.anonymization import (
    anonymization_report,
    cluster_interval,
    interval,
    related_kind,
)
from tests.corpus import pipelines
from tests.corpus.pipelines import LABELS, groups, labelled_groups

# Tokenized as ``load_pipeline`` does (``split_glued_parentheses``).
ruler = partial(pipelines.ruler, split_glued=True)


# --- name tables ---------------------------------------------------------------------------


def test_the_rules_are_a_declared_list_asked_in_order():
    nlp = ruler(("PERSON", "Barack Obama"), ("PERSON", "Obama"), ("ORG", "FBI"),
                ("ORG", "Federal Bureau of Investigation"))  # fmt: skip
    doc = nlp("Barack Obama met the Federal Bureau of Investigation. Obama praised the FBI.")
    mentions = find_mentions(doc, LABELS)

    def texts(rules=None):
        return [[m.text for m in e.mentions] for e in group_mentions(mentions, rules)]

    both = [["Barack Obama", "Obama"], ["Federal Bureau of Investigation", "FBI"]]
    assert texts() == texts(RULES) == both
    assert texts(()) == [["Barack Obama"], ["Federal Bureau of Investigation"], ["Obama"], ["FBI"]]
    assert texts((trailing_part,)) == [
        ["Barack Obama", "Obama"],
        ["Federal Bureau of Investigation"],
        ["FBI"],
    ]
    assert texts((acronym, trailing_part)) == both  # order: each key meets one rule here

    def never(key, grouping):  # a rule that keeps every name it sees apart
        return ALONE

    assert texts((never, *RULES)) == texts(())


def test_name_tables_know_countries_demonyms_and_aliases():
    assert canonical_form(("iranian",)) == ("iran",)
    assert canonical_form(("u.s.",)) == canonical_form(("america",)) == ("united", "states")
    assert canonical_form(("saudis",)) == ("saudi", "arabia")
    assert canonical_form(("isis",)) == ("islamic", "state")
    assert form_key(["U.N."]) == ("un",) and form_key(["al", "-", "Qaeda"]) == ("al", "qaeda")
    assert is_place(("seoul",)) and not is_place(("obama",))
    # Two- and three-letter codes that are words never name a country.
    assert canonical_form(("it",)) == ("it",) and canonical_form(("can",)) == ("can",)


# --- rule 5: demonyms and aliases of a place ---------------------------------------------


def test_demonyms_join_their_place():
    nlp = ruler(("GPE", "Iran"), ("NORP", "Iranian"), ("NORP", "Iranians"))
    text = "Iran said no. The Iranian minister left. Iranians cheered."
    assert groups(nlp, text) == [["Iran", "Iranian", "Iranians"]]
    nlp = ruler(("NORP", "Saudi"), ("NORP", "Saudis"), ("GPE", "Saudi Arabia"))
    assert groups(nlp, "Saudi Arabia struck. Saudi jets flew. Saudis agreed.") == [
        ["Saudi Arabia", "Saudi", "Saudis"]
    ]


def test_aliases_and_acronym_dots_join():
    nlp = ruler(("GPE", "U.S."), ("GPE", "United States"), ("GPE", "America"), ("GPE", "US"))
    text = "The United States warned. U.S. troops left. America waited. US aid came."
    assert groups(nlp, text) == [["United States", "U.S.", "America", "US"]]
    nlp = ruler(
        ("ORG", "ISIS"), ("ORG", "Islamic State"), ("ORG", "U.N."), ("ORG", "United Nations")
    )
    text = "ISIS fighters fled. The Islamic State lost. The U.N. met. The United Nations voted."
    assert groups(nlp, text) == [["ISIS", "Islamic State"], ["U.N.", "United Nations"]]


# --- rule 6: plurals ------------------------------------------------------------------------


def test_plural_of_a_group_joins_its_singular_but_not_for_people():
    nlp = ruler(("NORP", "Houthi"), ("NORP", "Houthis"))
    assert groups(nlp, "Houthi rebels advanced. The Houthis won.") == [["Houthi", "Houthis"]]
    # Guard: a surname is no plural ("Williams" is not two "William").
    nlp = ruler(("PERSON", "William"), ("PERSON", "Williams"))
    assert groups(nlp, "William ran. Williams won.") == [["William"], ["Williams"]]


# --- rule 7: acronyms ------------------------------------------------------------------------


def test_acronym_of_exactly_one_name_joins_it():
    nlp = ruler(("ORG", "Federal Bureau of Investigation"), ("ORG", "FBI"))
    text = "The Federal Bureau of Investigation said the FBI would act."
    assert groups(nlp, text) == [["Federal Bureau of Investigation", "FBI"]]
    # Guard: two names with the same initials keep the acronym apart.
    nlp = ruler(
        ("ORG", "Federal Bureau of Investigation"),
        ("ORG", "Fire Brigade Institute"),
        ("ORG", "FBI"),
    )
    text = "The Federal Bureau of Investigation and the Fire Brigade Institute met the FBI."
    assert len(groups(nlp, text)) == 3


# --- person names ---------------------------------------------------------------------------


def test_a_surname_joins_the_person_named_far_more():
    nlp = ruler(("PERSON", "Richie Benaud"), ("PERSON", "Lou Benaud"), ("PERSON", "Benaud"))
    text = (
        "Richie Benaud died. Richie Benaud played 63 Tests. Richie Benaud called games. "
        "His father Lou Benaud taught him. Benaud was 84."
    )
    assert groups(nlp, text) == [
        ["Richie Benaud", "Richie Benaud", "Richie Benaud", "Benaud"],
        ["Lou Benaud"],
    ]
    # Guard: named as often as each other, the surname stays apart (rule 3).
    text = "Richie Benaud died. His father Lou Benaud taught him. Benaud was 84."
    assert groups(nlp, text) == [["Richie Benaud"], ["Lou Benaud"], ["Benaud"]]


def test_a_surname_named_twice_goes_to_the_story_lead():
    # "Stan Freberg" named first and twice, his daughter "Donna Freberg" once: the bare
    # surname is his (twice as often, and the story's lead), though he is named only twice.
    nlp = ruler(("PERSON", "Stan Freberg"), ("PERSON", "Donna Freberg"), ("PERSON", "Freberg"))
    text = (
        "Stan Freberg died. Freberg was 88. His daughter Donna Freberg confirmed it. "
        "Fans mourned Stan Freberg."
    )
    assert groups(nlp, text) == [
        ["Stan Freberg", "Freberg", "Stan Freberg"],
        ["Donna Freberg"],
    ]
    # Guards: the one named first but not twice as often, or twice as often but named
    # after the other, does not take it.
    text = "Stan Freberg died. Freberg was 88. Donna Freberg spoke. Stan Freberg sang."
    text += " Donna Freberg wept."
    assert len(groups(nlp, text)) == 3
    text = "Donna Freberg spoke. Freberg was 88. Stan Freberg died. Stan Freberg sang."
    assert len(groups(nlp, text)) == 3


def test_a_name_after_a_hyphen_is_no_trailing_part():
    # "Williams-Mercedes" (a team and its engine): "Mercedes" is another name.
    nlp = ruler(("ORG", "Williams-Mercedes"), ("ORG", "Mercedes"))
    text = "The Williams-Mercedes car was fast. Mercedes won."
    assert groups(nlp, text) == [["Williams-Mercedes"], ["Mercedes"]]
    # Guard: an Arabic article stays part of the name ("Sadr" is "Muqtada al-Sadr").
    nlp = ruler(("PERSON", "Muqtada al-Sadr"), ("PERSON", "Sadr"))
    assert groups(nlp, "Muqtada al-Sadr spoke. Sadr left.") == [["Muqtada al-Sadr", "Sadr"]]


def test_the_short_name_of_an_organisation_joins_it():
    nlp = ruler(("ORG", "Southwest Airlines"), ("ORG", "Southwest"))
    text = "Southwest Airlines grounded planes. Southwest said sorry."
    assert groups(nlp, text) == [["Southwest Airlines", "Southwest"]]
    nlp = ruler(("PRODUCT", "Progress 59"), ("PRODUCT", "Progress"))
    text = "The Progress 59 spacecraft spun. Russia lost Progress."
    assert groups(nlp, text) == [["Progress 59", "Progress"]]
    # Guards: a place ("Atlanta" the city, not the team), a longer name of another kind
    # ("Duke Chapel" is no organisation word), two such names ("Duke University" and
    # "Duke Hospital"), and an acronym of another name ("NFL" ~ "National Football League",
    # not "NFL Network").
    nlp = ruler(("ORG", "Atlanta Falcons"), ("GPE", "Atlanta"))
    assert groups(nlp, "The Atlanta Falcons lost. Atlanta mourned.") == [
        ["Atlanta Falcons"],
        ["Atlanta"],
    ]
    nlp = ruler(("ORG", "Duke University"), ("FAC", "Duke Chapel"), ("ORG", "Duke"))
    text = "Duke University spoke. Duke Chapel rang. Duke said no."
    assert groups(nlp, text) == [["Duke University", "Duke"], ["Duke Chapel"]]
    nlp = ruler(("ORG", "Duke University"), ("ORG", "Duke Foundation"), ("ORG", "Duke"))
    text = "Duke University spoke. The Duke Foundation paid. Duke said no."
    assert len(groups(nlp, text)) == 3
    nlp = ruler(("ORG", "NFL Network"), ("ORG", "National Football League"), ("ORG", "NFL"))
    text = "The National Football League spoke. NFL Network aired it. The NFL said no."
    assert groups(nlp, text) == [
        ["National Football League", "NFL"],
        ["NFL Network"],
    ]


def test_a_full_name_labelled_work_of_art_still_takes_its_surname():
    nlp = ruler(("WORK_OF_ART", "Tomasz Lazar"), ("PERSON", "Lazar"))
    assert groups(nlp, "The photographer Tomasz Lazar won. Lazar said.") == [
        ["Tomasz Lazar", "Lazar"]
    ]
    # Guard: a title that is no name shape does not take a person's name.
    nlp = ruler(("WORK_OF_ART", "Without America 2"), ("PERSON", "America 2"))
    assert len(groups(nlp, "He wrote Without America 2. America 2 said.")) == 2


def test_bad_leading_words_are_cut_from_a_name():
    nlp = ruler(
        ("PERSON", "Russell Crowe"), ("PERSON", "Said Crowe"), ("PERSON", "Zealander Jackson")
    )
    text = 'Russell Crowe came. "I am glad," Said Crowe. The New Zealander Jackson won.'
    assert groups(nlp, text) == [["Russell Crowe", "Crowe"], ["Jackson"]]
    # Guard: "Said" that starts a sentence is a first name ("Said Kouachi").
    nlp = ruler(("PERSON", "Said Kouachi"))
    assert groups(nlp, "Police came. Said Kouachi fled.") == [["Said Kouachi"]]


def test_a_caption_word_before_a_first_name_and_surname_is_cut():
    # All capitals, or written in lowercase elsewhere in the story, no first name, and
    # followed by a first name: "RIP Stan Freberg" is "Stan Freberg".
    nlp = ruler(
        ("PERSON", "Stan Freberg"),
        ("PERSON", "RIP Stan Freberg"),
        ("PERSON", "Shocked Terry Cooper"),
    )
    text = (
        "Stan Freberg died. A fan wrote: RIP Stan Freberg. Fans were shocked. "
        "Shocked Terry Cooper spoke."
    )
    assert groups(nlp, text) == [["Stan Freberg", "Stan Freberg"], ["Terry Cooper"]]
    # Guards: a title or royal rank ("Prince George" must not become "George"), a first
    # name ("Will Smith", though "will" is a word), a word the story never writes in
    # lowercase ("Manchester"), and initials before one surname ("AP McCoy").
    nlp = ruler(
        ("PERSON", "Prince George"),
        ("PERSON", "Will Smith"),
        ("PERSON", "AP McCoy"),
        ("PERSON", "President Barack Obama"),
    )
    text = (
        "The prince smiled. Prince George waved. Will Smith will act. AP McCoy won. "
        "The president spoke: President Barack Obama."
    )
    assert groups(nlp, text) == [
        ["Prince George"],
        ["Will Smith"],
        ["AP McCoy"],
        ["President Barack Obama"],
    ]


def test_a_first_name_before_the_full_name_joins_it_when_always_a_person():
    nlp = ruler(("PERSON", "Donna"), ("PERSON", "Peter Lane"), ("PERSON", "Donna Lane"))
    text = "His parents, Donna and Peter Lane, wept. Donna Lane spoke."
    assert groups(nlp, text) == [["Donna", "Donna Lane"], ["Peter Lane"]]
    # Guard: a word NER also calls an organisation (a team) stays apart.
    words = ["McLaren", "struggled", ".", "McLaren", "spoke", ".", "McLaren", "Smith", "won"]
    doc = Doc(spacy.blank("en").vocab, words=words)
    doc.ents = [
        Span(doc, 0, 1, label="ORG"),
        Span(doc, 3, 4, label="PERSON"),
        Span(doc, 6, 8, label="PERSON"),
    ]
    found = [[m.text for m in e.mentions] for e in group_mentions(find_mentions(doc, LABELS))]
    assert found == [["McLaren", "McLaren"], ["McLaren Smith"]]
    # A full name named before it wins over a later, longer one.
    nlp = ruler(("PERSON", "Jyoti Singh"), ("PERSON", "Jyoti"), ("PERSON", "Jyoti Singh Pandey"))
    text = "Jyoti Singh, 23, died. Had Jyoti not fought back... Jyoti Singh Pandey was a student."
    assert groups(nlp, text) == [["Jyoti Singh", "Jyoti"], ["Jyoti Singh Pandey"]]


def test_a_first_name_joins_a_hyphenated_or_apostrophe_full_name():
    nlp = ruler(("PERSON", "Sam Waley-Cohen"), ("PERSON", "Sam"))
    assert groups(nlp, "Sam Waley-Cohen rode. Sam won.") == [["Sam Waley-Cohen", "Sam"]]
    nlp = ruler(("PERSON", "Ronnie O'Sullivan"), ("PERSON", "Ronnie"))
    assert groups(nlp, "Ronnie O'Sullivan won. Ronnie smiled.") == [["Ronnie O'Sullivan", "Ronnie"]]


def test_a_name_without_its_middle_name_joins_the_full_name():
    nlp = ruler(("PERSON", "Joshua Quincy Burns"), ("PERSON", "Joshua Burns"))
    text = "Joshua Quincy Burns, 30, was jailed. Joshua Burns denies it."
    assert groups(nlp, text) == [["Joshua Quincy Burns", "Joshua Burns"]]
    # Guard: with two such full names it stays apart.
    nlp = ruler(
        ("PERSON", "Joshua Quincy Burns"),
        ("PERSON", "Joshua Adam Burns"),
        ("PERSON", "Joshua Burns"),
    )
    text = "Joshua Quincy Burns met Joshua Adam Burns. Joshua Burns left."
    assert len(groups(nlp, text)) == 3


def test_typographic_apostrophes_are_the_plain_one():
    nlp = ruler(("PERSON", "Peter O’Toole"), ("PERSON", "Peter O'Toole"), ("PERSON", "O'Toole"))
    text = "Peter O’Toole acted. Peter O'Toole drank. O'Toole died."
    assert groups(nlp, text) == [["Peter O’Toole", "Peter O'Toole", "O'Toole"]]
    assert form_key(["O’Toole"]) == form_key(["O'Toole"]) == ("o'toole",)


# --- rule 10: titles -------------------------------------------------------------------------


def test_a_title_before_a_name_is_ignored():
    nlp = ruler(("PERSON", "Mila Kunis"), ("PERSON", "Ms Kunis"), ("PERSON", "Kunis"))
    text = "Mila Kunis is sued. Ms Kunis denies it. Kunis laughed."
    assert groups(nlp, text) == [["Mila Kunis", "Ms Kunis", "Kunis"]]
    nlp = ruler(("PERSON", "Stephen Docherty"), ("PERSON", "Dr. Docherty"))
    assert groups(nlp, "Stephen Docherty, 66, spoke. Dr. Docherty left.") == [
        ["Stephen Docherty", "Dr. Docherty"]
    ]
    nlp = ruler(("PERSON", "Prime Minister David Cameron"), ("PERSON", "David Cameron"))
    assert groups(nlp, "Prime Minister David Cameron spoke. David Cameron left.") == [
        ["Prime Minister David Cameron", "David Cameron"]
    ]


def test_a_title_of_the_other_gender_keeps_two_relatives_apart():
    nlp = ruler(
        ("PERSON", "Summer Robertson"),
        ("PERSON", "Miss Robertson"),
        ("PERSON", "Mr Robertson"),
        ("PERSON", "Robertson"),
    )
    text = (
        "Summer Robertson died. Miss Robertson was 21. Miss Robertson loved travel. "
        "Her father Mr Robertson spoke. Robertson had planned the trip."
    )
    assert groups(nlp, text) == [
        ["Summer Robertson", "Miss Robertson", "Miss Robertson", "Robertson"],
        ["Mr Robertson"],
    ]
    # Named as often as each other, neither title goes.
    nlp = ruler(("PERSON", "Mr Smith"), ("PERSON", "Mrs Smith"))
    assert groups(nlp, "Mr Smith and Mrs Smith came. Mr Smith spoke. Mrs Smith smiled.") == [
        ["Mr Smith", "Mr Smith"],
        ["Mrs Smith", "Mrs Smith"],
    ]
    # A surname after a title is no first name: "Mr Lane" is not "Lane Kiffin".
    nlp = ruler(("PERSON", "Lane Kiffin"), ("PERSON", "Mr Lane"))
    assert groups(nlp, "Lane Kiffin coached. Mr Lane spoke.") == [["Lane Kiffin"], ["Mr Lane"]]


def test_a_gendered_title_never_joins_a_full_name_of_the_other_gender():
    # The story names "Pete Saunders" and, later, "Mrs Saunders" (another person, the
    # prosecutor): a woman's title never joins a man's full name.
    nlp = ruler(("PERSON", "Pete Saunders"), ("PERSON", "Mrs Saunders"))
    text = "Pete Saunders, a campaigner, spoke. Mrs Saunders decided. Mrs Saunders left."
    assert groups(nlp, text) == [["Pete Saunders"], ["Mrs Saunders", "Mrs Saunders"]]
    nlp = ruler(("PERSON", "Cheryl Silvonek"), ("PERSON", "Mr Silvonek"))
    assert groups(nlp, "Cheryl Silvonek died. Mr Silvonek wept.") == [
        ["Cheryl Silvonek"],
        ["Mr Silvonek"],
    ]
    # Guards: the same gender ("Mrs Saunders" ~ "Alison Saunders"), a first name the list
    # gives both sexes ("Jamie"), and a first name it does not know ("Xanthe"), join.
    for first in ("Alison", "Jamie", "Xanthe"):
        nlp = ruler(("PERSON", f"{first} Saunders"), ("PERSON", "Mrs Saunders"))
        text = f"{first} Saunders spoke. Mrs Saunders decided."
        assert groups(nlp, text) == [[f"{first} Saunders", "Mrs Saunders"]], first
    # With a woman of that surname in the story too, the title goes and the surname is
    # shared as usual: "Mrs Saunders" joins the one named far more.
    nlp = ruler(
        ("PERSON", "Pete Saunders"), ("PERSON", "Alison Saunders"), ("PERSON", "Mrs Saunders")
    )
    text = (
        "Alison Saunders ruled. Alison Saunders spoke. Alison Saunders left. Pete Saunders, "
        "no relation, objected. Mrs Saunders declined."
    )
    assert groups(nlp, text) == [
        ["Alison Saunders", "Alison Saunders", "Alison Saunders", "Mrs Saunders"],
        ["Pete Saunders"],
    ]


def test_the_name_list_knows_first_names_and_their_gender():
    from attentive_reader.corpus.names import first_name_gender, is_first_name

    assert first_name_gender("Pete") == "m" and first_name_gender("CHERYL") == "f"
    assert first_name_gender("Jamie") is None and is_first_name("Jamie")
    assert not is_first_name("Aintree") and first_name_gender("Aintree") is None


# --- rule 11: glued names, possessives inside, place labels ------------------------------------


def test_two_names_glued_by_a_lost_full_stop_are_cut():
    nlp = ruler(
        ("PERSON", "Luis Enrique"),
        ("PERSON", "Enrique"),
        ("GPE", "Valencia"),
        ("PERSON", "Valencia Enrique"),
    )
    text = (
        "Barcelona boss Luis Enrique spoke. Enrique smiled. They play Valencia next. "
        "Ahead of the game against Valencia Enrique said: 'We are ready.'"
    )
    assert groups(nlp, text) == [["Luis Enrique", "Enrique", "Enrique"], ["Valencia", "Valencia"]]
    # Guards: a tail that is no person ("New York Post"), and a lone first name before a
    # one-word tail ("Ronnie O'Sullivan"), keep the name whole.
    nlp = ruler(("GPE", "New York"), ("ORG", "Post"), ("ORG", "New York Post"))
    text = "He read the New York Post in New York. The Post said no."
    assert groups(nlp, text) == [["New York Post", "Post"], ["New York"]]
    nlp = ruler(("PERSON", "Ronnie"), ("PERSON", "O'Sullivan"), ("PERSON", "Ronnie O'Sullivan"))
    text = "Ronnie O'Sullivan won. O'Sullivan smiled. Ronnie waved."
    assert groups(nlp, text) == [["Ronnie O'Sullivan", "O'Sullivan", "Ronnie"]]
    # A two-word name is only cut after a known place or an organisation: the maid
    # "Natalia" (GPE to NER) does not cut "Natalia Moon".
    nlp = ruler(("PERSON", "Natalia Moon"), ("GPE", "Natalia"), ("PERSON", "Moon"))
    text = "Natalia Moon sang. Her maid, also named Natalia, cooked. Moon smiled."
    assert groups(nlp, text) == [["Natalia Moon", "Moon"], ["Natalia"]]
    # A person's name (to NER) of a name and a name of several words that is no person:
    # "rivals Atletico Real Madrid attacking midfielder Isco", beside the teams "Atletico"
    # and "Real Madrid", is the two teams (47681f33; whole, "Atletico Madrid" took "Real
    # Madrid" in as its middle name). Guards: a place before it ("Boston Red Sox" beside
    # "Boston" and "Red Sox") and a one-word tail ("New York Post" above) keep it whole.
    text = (
        "Real Madrid beat Atletico . Atletico Madrid lost . Atletico fans wept at rivals "
        "Atletico Real Madrid attacking midfielder Isco ."
    )
    spans = [(0, 2, "ORG"), (3, 4, "PERSON"), (5, 7, "PERSON"), (9, 10, "PERSON")]
    spans += [(14, 17, "PERSON"), (19, 20, "PERSON")]
    assert labelled_groups(text, spans) == [
        ["Real Madrid", "Real Madrid"],
        ["Atletico", "Atletico Madrid", "Atletico", "Atletico"],
        ["Isco"],
    ]
    text = "Boston cheered . The Red Sox won . Boston Red Sox fans sang ."
    spans = [(0, 1, "GPE"), (4, 6, "ORG"), (8, 11, "PERSON")]
    assert labelled_groups(text, spans) == [["Boston"], ["Red Sox", "Boston Red Sox"]]


def test_a_word_that_is_no_first_name_before_someone_elses_surname_is_cut():
    # A caption that lost its full stop: "... at Aintree Treadwell's contented look", the
    # jockey being "Liam Treadwell". "Aintree" is no first name, and "Treadwell" is the
    # surname of another full name of the story: two names, and the racecourse stays apart.
    nlp = ruler(
        ("PERSON", "Aintree"),
        ("PERSON", "Liam Treadwell"),
        ("PERSON", "Aintree Treadwell"),
        ("PERSON", "Treadwell"),
    )
    text = (
        "In Aintree's unsaddling area the horse rested. His jockey Liam Treadwell smiled. "
        "The horse won the race at Aintree Treadwell's contented look said it all. "
        "'I am delighted,' said Treadwell."
    )
    assert groups(nlp, text) == [
        ["Aintree", "Aintree"],
        ["Liam Treadwell", "Treadwell", "Treadwell"],
    ]
    # Guards: a known first name ("Ronnie Treadwell" is his brother) and initials ("B.B.
    # King" beside "Claudette King") keep the name whole.
    for head in ("Ronnie", "B.B."):
        nlp = ruler(
            ("PERSON", head),
            ("PERSON", "Liam Treadwell"),
            ("PERSON", f"{head} Treadwell"),
        )
        text = f"{head} came. Liam Treadwell rode. {head} Treadwell watched."
        found = groups(nlp, text)
        assert [f"{head} Treadwell"] in [g[-1:] for g in found], (head, found)


def test_a_place_never_joins_a_full_name_by_the_first_name_rule():
    # "Essex" the county (NORP / GPE to NER, a known place) stays apart from "Joey Essex".
    nlp = ruler(("PERSON", "Joey Essex"), ("GPE", "Essex"))
    text = "Joey Essex came. He starred in The Only Way is Essex, filmed in Essex."
    assert groups(nlp, text) == [["Joey Essex"], ["Essex", "Essex"]]
    # "Jordan" is a known place too, but also a first name the list knows: it joins.
    nlp = ruler(("PERSON", "Jordan Henderson"), ("PERSON", "Jordan"))
    text = "Jordan Henderson captains Liverpool. Jordan scored twice."
    assert groups(nlp, text) == [["Jordan Henderson", "Jordan"]]
    # A word NER calls a person in fewer than a third of its mentions, and that the name
    # list does not know, is no first name: the headland "Trevose" stays apart.
    text = "Trevose Smith walked past Trevose , Trevose and Trevose . Trevose waved ."
    spans = [(0, 2, "PERSON"), (4, 5, "LOC"), (6, 7, "LOC"), (8, 9, "LOC"), (10, 11, "PERSON")]
    assert labelled_groups(text, spans) == [["Trevose Smith"], ["Trevose"] * 4]
    # Named as a person more often, it joins ("Aliesha", GPE to NER in four of nine
    # mentions, is "Aliesha Peterson").
    spans = [(0, 2, "PERSON"), (4, 5, "LOC"), (6, 7, "PERSON"), (8, 9, "LOC"), (10, 11, "PERSON")]
    assert labelled_groups(text, spans) == [["Trevose Smith", *["Trevose"] * 4]]


def test_a_place_and_its_demonym_never_join_a_longer_name_that_is_no_place():
    nlp = ruler(("PERSON", "Ipsos MORI Scotland"), ("GPE", "Scotland"), ("NORP", "Scottish"))
    text = "A poll by Ipsos MORI Scotland found that Scottish voters in Scotland agree."
    assert groups(nlp, text) == [["Ipsos MORI Scotland"], ["Scottish", "Scotland"]]


def test_a_possessive_inside_a_name_is_cut_to_its_owner():
    nlp = ruler(("FAC", "Crystal Palace"), ("FAC", "Crystal Palace's XI"))
    text = "Crystal Palace won. Crystal Palace's XI cost little."
    assert groups(nlp, text) == [["Crystal Palace", "Crystal Palace"]]
    # Guard: an owner that is no name of the story keeps the name whole.
    nlp = ruler(("GPE", "People's Republic of China"))
    assert groups(nlp, "The People's Republic of China spoke.") == [["People's Republic of China"]]


def test_place_labels_agree_with_each_other():
    nlp = ruler(("FAC", "Crystal Palace"), ("GPE", "Palace"))
    assert groups(nlp, "They lost at Crystal Palace. Palace won 2-1.") == [
        ["Crystal Palace", "Palace"]
    ]


# --- rule 9: wrong-merge guards -------------------------------------------------------------


def test_prefixed_names_never_join_the_name_after_the_hyphen():
    nlp = ruler(
        ("NORP", "Muslims"),
        ("NORP", [{"LOWER": "non"}, {"TEXT": "-"}, {"LOWER": "muslims"}]),
        ("GPE", "Saudi Arabia"),
        ("NORP", "Saudi"),
    )
    text = "Muslims and non-Muslims met. Saudi Arabia spoke. An anti-Saudi protest followed."
    assert groups(nlp, text) == [["Muslims"], ["non-Muslims"], ["Saudi Arabia"], ["anti-Saudi"]]


def test_a_place_does_not_join_a_longer_name_that_is_no_place():
    nlp = ruler(("PERSON", "Dark Seoul"), ("GPE", "Seoul"))
    assert groups(nlp, "The Dark Seoul attack hit banks in Seoul.") == [["Dark Seoul"], ["Seoul"]]
    # A place inside a longer place still joins.
    nlp = ruler(("GPE", "Seoul"), ("GPE", "Downtown Seoul"))
    assert groups(nlp, "Downtown Seoul is busy. Seoul grows.") == [["Downtown Seoul", "Seoul"]]


def test_a_place_joins_a_longer_name_only_when_that_is_mostly_a_place():
    # The club "Real Madrid" is an organisation to NER twice and a facility once ("came
    # through at Real Madrid"): the city "Madrid" stays apart (issue 14, Daily Mail story
    # 41988ddd), as does "Australia" from the movement "Reclaim Australia" (99bf5fd0).
    text = (
        "Real Madrid won . Bueno came through at Real Madrid . Real Madrid lost . He left Madrid ."
    )
    spans = [(0, 2, "ORG"), (8, 10, "FAC"), (11, 13, "ORG"), (17, 18, "GPE")]
    assert labelled_groups(text, spans) == [["Real Madrid"] * 3, ["Madrid"]]
    text = "Reclaim Australia marched . Reclaim Australia rallied in Australia ."
    spans = [(0, 2, "ORG"), (4, 6, "FAC"), (8, 9, "GPE")]
    assert labelled_groups(text, spans) == [["Reclaim Australia"] * 2, ["Australia"]]
    # A longer name NER mostly calls a place still takes it ("the Province of Quebec", GPE
    # twice and ORG once), and so does one whose other words are place words, however
    # seldom NER calls it a place: "Greater Manchester" and "South-East Asia" (the hyphen is
    # no word of the key), organisations to NER in two of three mentions. (A longer place
    # that the tables know, "New South Wales", is another place: version 6's test.)
    text = "Province of Quebec voted . Province of Quebec won . Province of Quebec and Quebec ."
    spans = [(0, 3, "GPE"), (5, 8, "ORG"), (10, 13, "GPE"), (14, 15, "GPE")]
    assert labelled_groups(text, spans) == [["Province of Quebec"] * 3 + ["Quebec"]]
    for name in ("Greater Manchester", "South - East Asia"):
        n = len(name.split())
        text = f"{name} voted . {name} won . {name} lost . {name.split()[-1]} cheered ."
        spans = [(0, n, "ORG"), (n + 2, 2 * n + 2, "ORG"), (2 * n + 4, 3 * n + 4, "GPE")]
        spans.append((3 * n + 6, 3 * n + 7, "GPE"))
        assert labelled_groups(text, spans) == [[name] * 3 + [name.split()[-1]]]


def test_a_mention_ner_cut_short_of_a_longer_name_of_the_story_is_that_name():
    # "Real Madrid striker Karim Benzema": NER reads "Madrid" (GPE) alone; the story writes
    # "Real Madrid" elsewhere, so the mention is "Real Madrid", with its label (6e68621a).
    text = "Real Madrid won . Real Madrid striker Karim Benzema is hurt ."
    doc = Doc(spacy.blank("en").vocab, words=text.split())
    doc.ents = [Span(doc, 0, 2, "ORG"), Span(doc, 5, 6, "GPE"), Span(doc, 7, 9, "PERSON")]
    mentions = find_mentions(doc, LABELS)
    assert [(m.start, m.end, m.text, m.label) for m in mentions] == [
        (0, 2, "Real Madrid", "ORG"),
        (4, 6, "Real Madrid", "ORG"),
        (7, 9, "Karim Benzema", "PERSON"),
    ]
    story = Story(id="s", article=text, highlights=("Real Madrid lose Karim Benzema",))
    nlp = ruler(("ORG", "Real Madrid"), ("PERSON", "Karim Benzema"))
    (example, _) = make_examples(story, doc, [nlp(h) for h in story.highlights])
    assert example.context[:6] == ("@entity0", "won", ".", "@entity0", "striker", "@entity1")
    # Guards: the words before must be the longer name word for word, case included ("a
    # real Madrid fan" keeps "real" a word), they must not start in lowercase ("a State
    # Party" keeps "a" a word before "State Party"), and a mention never grows over the one
    # before.
    text = "Real Madrid won . A real Madrid fan and Spain Real Madrid star came ."
    doc = Doc(spacy.blank("en").vocab, words=text.split())
    doc.ents = [
        Span(doc, 0, 2, "ORG"),
        Span(doc, 6, 7, "GPE"),
        Span(doc, 9, 11, "GPE"),
        Span(doc, 11, 12, "GPE"),
    ]
    assert [m.text for m in find_mentions(doc, LABELS)] == [
        "Real Madrid",
        "Madrid",
        "Spain Real",
        "Madrid",
    ]
    text = "It is a State Party . It became a State Party today ."
    doc = Doc(spacy.blank("en").vocab, words=text.split())
    doc.ents = [Span(doc, 2, 5, "ORG"), Span(doc, 9, 11, "ORG")]
    assert [m.text for m in find_mentions(doc, LABELS)] == ["a State Party", "State Party"]


# --- tokenization ---------------------------------------------------------------------------


def test_a_dateline_glued_to_the_first_word_is_split():
    nlp = split_glued_parentheses(spacy.blank("en"))
    assert [t.text for t in nlp("(CNN)Over the year")] == ["(", "CNN", ")", "Over", "the", "year"]
    assert [t.text for t in nlp("(HLN)HLN's host")][:5] == ["(", "HLN", ")", "HLN", "'s"]
    # Applying it twice changes nothing; other parentheses are as before.
    nlp = split_glued_parentheses(nlp)
    assert [t.text for t in nlp("(CNN) -- f(x) 2)")] == [
        "(",
        "CNN",
        ")",
        "--",
        "f(x",
        ")",
        "2",
        ")",
    ]


# --- highlights -----------------------------------------------------------------------------


def test_a_highlight_form_of_an_article_entity_gets_its_marker():
    nlp = ruler(("GPE", "Iran"), ("GPE", "United States"), ("NORP", "Houthi"))
    story = Story(
        id="s",
        article="Iran and the United States talked. Houthi rebels fought.",
        highlights=("Iranians and U.S. officials talk", "Houthis fight on"),
    )
    examples = make_examples(story, nlp(story.article), [nlp.make_doc(h) for h in story.highlights])
    assert [(ex.query, ex.answer) for ex in examples] == [
        (("@placeholder", "and", "@entity1", "officials", "talk"), "@entity0"),
        (("@entity0", "and", "@placeholder", "officials", "talk"), "@entity1"),
        (("@placeholder", "fight", "on"), "@entity2"),
    ]


def test_the_grouping_rules_version_is_recorded():
    info = grouping_info()
    assert info["rules_version"] == GROUPING_RULES_VERSION == 7
    assert info["name_tables"]["regions"].startswith("corpus/region_forms.json")
    assert info["name_tables"]["first_names"].startswith("corpus/name_genders.json")
    assert info["name_tables"]["countryinfo"]


# --- the anonymization report -----------------------------------------------------------------


def test_related_kind_names_how_two_markers_are_related():
    assert related_kind("Iran", "Iranian") == "alias"
    assert related_kind("U.S.", "America") == "alias"
    assert related_kind("Houthi", "Houthis") == "plural"
    assert related_kind("FBI", "Federal Bureau of Investigation") == "acronym"
    assert related_kind("Benaud", "Richie Benaud") == "surname"
    assert related_kind("Richie", "Richie Benaud") == "first name"
    # Unrelated, and a place inside a longer name that is no place.
    assert related_kind("Obama", "Chicago") is None
    assert related_kind("Seoul", "Dark Seoul") is None


def test_the_report_on_two_hand_checked_questions():
    context = ("@entity0", "said", "@entity1", "met", "@entity0")
    names = {"@entity0": "Richie Benaud", "@entity1": "Benaud"}
    first = ClozeExample(
        id="s_0_0",
        story_id="s",
        context=context,
        query=("@placeholder", "said"),
        answer="@entity0",
        candidates=("@entity0", "@entity1"),
        entities=names,
    )
    second = ClozeExample(
        id="s_1_1",
        story_id="s",
        context=context,
        query=("@entity0", "met", "@placeholder"),
        answer="@entity1",
        candidates=("@entity0", "@entity1"),
        entities=names,
    )
    report = anonymization_report([first, second])
    # Maximum frequency says @entity0 (2 occurrences) twice: right once. Exclusive frequency
    # drops @entity0 from the second (it is in the query): right twice. Word distance, first
    # question: @entity0 at 0 scores 0 ("said" expected at 1, found at 1), @entity1 at 2
    # scores 2: right. Second question: @entity1 at 2 scores 0 ("@entity0" expected at 0) +
    # 2 ("met" expected at 1, found at 3) = 2; @entity0 at 4 also scores 2 + 0 = 2: a tie of
    # two, credit 1/2 under a random tie-break, (1 + 1/2) / 2 = 75%. The first-occurrence
    # predictor takes @entity0 and is wrong: 50%.
    assert (report["maximum_frequency"], report["exclusive_frequency"]) == (50.0, 100.0)
    assert report["word_distance"] == 75.0
    assert report["first_occurrence"] == {
        "maximum_frequency": 50.0,
        "exclusive_frequency": 100.0,
        "word_distance": 50.0,
    }
    assert (report["questions"], report["documents"], report["entities_per_document"]) == (2, 1, 2)
    # Both answers have a related second marker: "Benaud" is the surname of "Richie Benaud".
    assert report["related_second_marker"] == 100.0
    assert report["related_kinds"] == {"surname": 2}
    assert report["plain_name_queries"] == 0.0
    # One document: a cluster bootstrap over documents cannot vary, so no interval.
    assert report["intervals"]["maximum_frequency"] == 0.0
    assert interval(50.0, 100) == 9.8 and interval(10.0, 0) == 0.0


def test_the_report_interval_is_a_cluster_bootstrap_over_documents():
    # Two documents, one all right and one all wrong: a draw is both once each (50%), or one
    # twice (0% or 100%, each with probability 1/4): the 2.5 and 97.5 percentiles are 0 and
    # 100, half-width 50 points, however many questions each document holds.
    assert cluster_interval([1, 1, 1, 0, 0, 0], ["a", "a", "a", "b", "b", "b"]) == 50.0
    # Every document scores the same: no draw differs.
    assert cluster_interval([1, 0, 1, 0], ["a", "a", "b", "b"]) == 0.0
    # 10 documents of 5 questions answered alike (5 right, 5 wrong): the questions are not
    # independent, and the interval is about that of 10 questions, not of 50.
    scores = [float(d < 5) for d in range(10) for _ in range(5)]
    docs = [str(d) for d in range(10) for _ in range(5)]
    wide = cluster_interval(scores, docs)
    assert interval(50.0, 50) == 13.9 and wide >= 2 * 13.9
    assert abs(wide - interval(50.0, 10)) <= 5.0  # 31.0 for 10 independent questions
    # Reproducible (fixed seed), and the lengths must match.
    assert cluster_interval(scores, docs) == wide
    with pytest.raises(ValueError, match="cluster ids"):
        cluster_interval([1.0], [])
