"""The rule that fits a document's entity markers into a reader's block, by hand-computed
cases: it fits (identity), it is over the block (first-occurrence renumbering), it has more
entities than the block (the most frequent kept, an answer left out is unanswerable)."""

import numpy as np

from attentive_reader.data.batching import EncodedExample
from attentive_reader.data.entity_block import (
    IDENTITY,
    UNANSWERABLE,
    example_fit,
    fit_encoded,
    fit_entities,
    stored_ids,
)
from attentive_reader.data.vocab import Vocabulary
from tests.corpus.fixtures import numbered_example


def test_numbers_inside_the_block_are_read_as_stored():
    fit = fit_entities([2, 0, 2, 1], [0], num_entities=3)
    assert fit is IDENTITY and not fit.relabelled
    assert [fit.reader_number(k) for k in range(3)] == [0, 1, 2]
    assert fit.stored_number(2) == 2 and fit.answer_id(1) == 1


def test_numbers_over_the_block_are_renumbered_by_first_occurrence_query_only_last():
    # context @entity5 @entity9 @entity5, query names @entity7 only: 5, 9, then 7.
    fit = fit_entities([5, 9, 5], [7, 9], num_entities=4)
    assert fit.mapping == {5: 0, 9: 1, 7: 2} and fit.dropped == 0
    assert fit.stored_number(1) == 9 and fit.answer_id(9) == 1


def test_one_number_over_the_block_relabels_the_whole_example():
    fit = fit_entities([1, 0, 3], [], num_entities=3)
    assert fit.mapping == {1: 0, 0: 1, 3: 2}


def test_more_entities_than_the_block_keep_the_most_frequent():
    # Counts: 0 once, 1 twice, 2 three times, 3 once: the block of 2 keeps 2 and 1, numbered
    # by first occurrence (1 before 2); 0 and 3 are left out.
    fit = fit_entities([0, 1, 2, 1, 2, 3, 2], [3], num_entities=2)
    assert fit.mapping == {1: 0, 2: 1} and fit.dropped == 2
    assert fit.reader_number(0) is None and fit.answer_id(0) == UNANSWERABLE
    assert fit.answer_id(2) == 1


def test_ties_keep_the_first_to_occur_and_query_only_entities_go_first():
    assert fit_entities([4, 3, 5], [], num_entities=2).mapping == {4: 0, 3: 1}
    fit = fit_entities([0, 1], [5], num_entities=2)  # 5 occurs in no context: left out
    assert fit.mapping == {0: 0, 1: 1} and fit.dropped == 1


def test_a_stored_example_and_its_encoded_ids_fit_alike():
    example = numbered_example(
        0,
        "@entity3 met @entity0 . @entity2 saw @entity0 and @entity3 .",
        "@placeholder met @entity9",
        "@entity2",
    )
    vocab = Vocabulary(["met", "saw", "and", "."], num_entities=2)
    context = stored_ids(example.context, vocab)
    # Markers beyond the block are -1 - k; @entity0 is inside it (token id 3).
    assert context.tolist() == [-4, 5, 3, 8, -3, 6, 3, 7, -4, 8]
    encoded = EncodedExample(
        id="ex0",
        context=context,
        query=stored_ids(example.query, vocab),
        answer=2,
        candidates=[3, 0, 2],
    )
    fitted, fit = fit_encoded(encoded, num_entities=2)
    # Counts 3: 2, 0: 2, 2: 1, 9: 0 -> the block keeps 3 and 0; the answer (2) is left out.
    assert fit == example_fit(example, num_entities=2)
    assert fit.mapping == {3: 0, 0: 1} and fit.dropped == 2
    assert vocab.decode(fitted.context) == (
        "@entity0 met @entity1 . <unk> saw @entity1 and @entity0 .".split()
    )
    assert vocab.decode(fitted.query) == ["@placeholder", "met", "<unk>"]
    assert list(fitted.candidates) == [0, 1] and fitted.answer == UNANSWERABLE


def test_an_encoded_example_inside_the_block_is_returned_as_is():
    encoded = EncodedExample("a", np.array([3, 5, 4]), np.array([2, 4]), 1, [0, 1])
    fitted, fit = fit_encoded(encoded, num_entities=2)
    assert fitted is encoded and fit is IDENTITY
