"""Grouping rules version 7 (issue 29), each on a hand-written story, with its guard.

Version 7 reads a ``.story`` file's caption lines as sentences of their own (a full stop
where a paragraph ends without one) and knows the ranks of the armed forces in two or three
words. Each case comes from an answer whose marker stood directly beside another marker in
the 100 real Hugging Face rows read as ``.story`` files with their lines; each story test
fails on version 6.
"""

from __future__ import annotations

from attentive_reader.corpus.cloze import make_examples
from attentive_reader.corpus.sources.stories import parse_story
from tests.corpus.pipelines import labelled_groups, ruler


def test_a_caption_line_does_not_run_on_into_the_next_paragraph():
    # "defeat at Goodison Park" is a caption line of its own in the .story file; joined to
    # the next paragraph without a stop, the two names stood side by side as one sentence.
    nlp = ruler(("FAC", "Goodison Park"), ("PERSON", "Wayne Rooney"), ("ORG", "Everton"))
    text = (
        "Everton won 3 - 0 .\n\nThe defeat by Everton at Goodison Park\n\n"
        "Wayne Rooney waits on the touchline .\n\n@highlight\n\nWayne Rooney lost to Everton"
    )
    story = parse_story(text, story_id="s", source="s.story")
    docs = [nlp.make_doc(h) for h in story.highlights]
    examples = make_examples(story, nlp(story.article), docs)
    assert "at @entity1 . @entity2 waits" in " ".join(examples[0].context)
    # Guard: a paragraph that ends a sentence is kept as written, its names as they were.
    story = parse_story(
        text.replace("Goodison Park\n", "Goodison Park.\n"), story_id="s", source="s"
    )
    assert story.article.split("\n\n")[1] == "The defeat by Everton at Goodison Park."


def test_a_rank_of_the_armed_forces_in_two_words_is_one_name_with_the_person():
    # "Air Commodore" (ORG to NER) "Andrew Lambert" (PERSON): the rank and the man were two
    # markers side by side, and "Air Commodore" an entity of its own.
    text = "Air Commodore Andrew Lambert said so . Lambert added more . The Air Commodore fund"
    spans = [(0, 2, "ORG"), (2, 4, "PERSON"), (7, 8, "PERSON"), (13, 15, "ORG")]
    assert labelled_groups(text, spans) == [
        ["Air Commodore Andrew Lambert", "Lambert"],
        ["Air Commodore"],
    ]
    # Guard: a rank joins a person only; before an organisation it stays a name apart.
    text = "Wing Commander Barclays paid ."
    assert labelled_groups(text, [(0, 2, "ORG"), (2, 3, "ORG")]) == [
        ["Wing Commander"],
        ["Barclays"],
    ]


def test_a_title_whose_last_word_ner_read_as_a_name_joins_the_person():
    # "Secretary of" + "State" (ORG) + "John Kerry": the title's last word was an entity of
    # its own, standing beside the man's marker (20 CNN stories; 100 Hugging Face rows).
    text = "Secretary of State John Kerry spoke . Kerry left . The State paid ."
    spans = [(2, 3, "ORG"), (3, 5, "PERSON"), (7, 8, "PERSON"), (11, 12, "ORG")]
    assert labelled_groups(text, spans) == [["Secretary of State John Kerry", "Kerry"], ["State"]]
    # Guards: words before that make no title ("Department of" + "State") stay out, and a
    # title before no person joins nothing.
    text = "Department of State John Kerry spoke . Secretary of State Barclays paid ."
    spans = [(2, 3, "ORG"), (3, 5, "PERSON"), (9, 10, "ORG"), (10, 11, "ORG")]
    assert labelled_groups(text, spans) == [["State", "State"], ["John Kerry"], ["Barclays"]]
