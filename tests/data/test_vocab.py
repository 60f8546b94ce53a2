import pytest

from attentive_reader.data.vocab import EntityOutOfRange, Vocabulary


def test_layout_specials_then_entity_block_then_words():
    vocab = Vocabulary(["the", "a"], num_entities=3)
    assert vocab.tokens == [
        "<pad>",
        "<unk>",
        "@placeholder",
        "@entity0",
        "@entity1",
        "@entity2",
        "the",
        "a",
    ]
    assert len(vocab) == 8
    assert vocab.entity_id(2) == 5 == Vocabulary.entity_offset + 2


def test_build_keeps_top_words_ties_alphabetical_and_skips_markers():
    tokens = [
        ["b", "a", "@entity0", "c", "b", "@placeholder"],
        ["a", "b", "@entity9", "d", "<unk>"],
    ]
    vocab = Vocabulary.build(tokens, max_words=3, num_entities=10)
    # b:3, a:2, c:1, d:1 -> top 3 with the tie c/d broken alphabetically
    assert vocab.words == ["b", "a", "c"]
    assert Vocabulary.build(reversed(tokens), max_words=3, num_entities=10) == vocab


def test_encode_decode_round_trip_and_unknowns():
    vocab = Vocabulary(["met", "."], num_entities=2)
    ids = vocab.encode(["@entity1", "met", "@placeholder", "zebra", "."])
    assert ids == [4, 5, 2, 1, 6]
    assert vocab.decode(ids) == ["@entity1", "met", "@placeholder", "<unk>", "."]


def test_entity_beyond_block_is_an_error():
    vocab = Vocabulary([], num_entities=2)
    with pytest.raises(EntityOutOfRange) as info:
        vocab.encode(["@entity0", "@entity7"])
    assert info.value.index == 7 and info.value.num_entities == 2


def test_save_load_round_trip(tmp_path):
    vocab = Vocabulary(["x", "é"], num_entities=4)
    vocab.save(tmp_path / "vocab.json")
    loaded = Vocabulary.load(tmp_path / "vocab.json")
    assert loaded == vocab and loaded.tokens == vocab.tokens
    assert Vocabulary.from_dict(vocab.to_dict()) == vocab


@pytest.mark.parametrize(
    "words, num_entities, message",
    [
        (["a"], 0, "num_entities"),
        (["a", "a"], 3, "distinct"),
        (["@entity3"], 3, "entity markers"),
        (["<pad>"], 3, "special"),
    ],
)
def test_bad_arguments_are_rejected(words, num_entities, message):
    with pytest.raises(ValueError, match=message):
        Vocabulary(words, num_entities)
