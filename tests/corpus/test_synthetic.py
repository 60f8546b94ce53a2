"""The built-in synthetic corpus: determinism, format, ground truth, baselines, entity ruler."""

from __future__ import annotations

import hashlib
import re
import string
from collections import Counter
from pathlib import Path

import pytest

from attentive_reader.cli import main
from attentive_reader.corpus import synthetic
from attentive_reader.corpus.manifest import read_manifest
from attentive_reader.corpus.records import Story
from attentive_reader.corpus.sources import UrlLists, parse_story
from attentive_reader.corpus.synthetic import (
    COMPACT_SHAPE,
    DEFAULT_SHAPE,
    LONG_SHAPE,
    Entity,
    Mention,
    StoryShape,
    SyntheticStory,
    build_ruler_pipeline,
    format_story,
    frequency_baselines,
    ground_truth_questions,
    write_corpus,
)
from attentive_reader.corpus.synthetic import words as word_lists
from attentive_reader.corpus.synthetic.examples import write_examples
from attentive_reader.corpus.synthetic.story import generate_corpus, generate_story
from attentive_reader.corpus.synthetic.toy import toy_example, write_toy_dataset


@pytest.fixture(scope="module")
def corpus() -> list[SyntheticStory]:
    return generate_corpus(300, seed=0)


def _files(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
    }


def _sentences(article: str) -> list[str]:
    return [s for s in re.split(r"(?<=\.)\s+", article) if s]


def test_same_seed_gives_identical_bytes(tmp_path):
    write_corpus(tmp_path / "a", generate_corpus(40, seed=3), seed=3)
    write_corpus(tmp_path / "b", generate_corpus(40, seed=3), seed=3)
    files_a, files_b = _files(tmp_path / "a"), _files(tmp_path / "b")
    assert len([name for name in files_a if name.endswith(".story")]) == 40
    assert files_a == files_b
    other = [s.story for s in generate_corpus(40, seed=4)]
    assert [s.story for s in generate_corpus(40, seed=3)] != other


# SHA-256 of the .story texts of stories 0-59 of seed 11, written by the generator before its
# word lists became package data (commit 269f844): the corpus must never change silently.
GOLDEN = {
    "default": "6f06db5093f3a7a92a89cbfab9f53b26e85de973868bff2f3305df73c44a47f3",
    "compact": "208c6d8d3f7175d163c2958845ea0e4069145e4dc2894c482a47b65c97269261",
}


@pytest.mark.parametrize("shape", [DEFAULT_SHAPE, COMPACT_SHAPE], ids=lambda s: s.name)
def test_the_corpus_is_byte_identical_to_the_one_before_the_data_files(shape):
    digest = hashlib.sha256()
    for item in generate_corpus(60, 11, shape):
        digest.update(format_story(item.story).encode())
    assert digest.hexdigest() == GOLDEN[shape.name]


def _fields(template: str) -> set[str]:
    return {name for _, name, _, _ in string.Formatter().parse(template) if name}


def test_templates_use_exactly_their_slots_and_known_words():
    words = {"role", "when", "years", "amount", "thousands"}
    for kind in word_lists.FACT_KINDS:
        slots = {slot for slot, _ in kind.slots}
        for template in kind.article + kind.highlight:
            # Every argument is named once; the rest are plain words.
            assert _fields(template) & {"P", "Q", "O", "R", "G"} == slots, (kind.name, template)
            assert _fields(template) - slots <= words, template
    for label, templates in word_lists.FILLERS_ONE.items():
        assert label in ("PERSON", "GPE", "ORG")
        assert all(_fields(t) - words == {"X"} for t in templates)
    assert all(_fields(t) - words == {"X", "Y"} for t in word_lists.FILLERS_TWO)
    assert all(not _fields(t) for t in word_lists.FILLERS_NONE)
    assert len({kind.name for kind in word_lists.FACT_KINDS}) == len(word_lists.FACT_KINDS) == 9


def test_story_n_does_not_depend_on_corpus_size():
    assert generate_corpus(5, seed=1) == generate_corpus(12, seed=1)[:5]
    assert generate_story(1, 7) == generate_corpus(12, seed=1)[7]


def test_bad_arguments_are_value_errors():
    with pytest.raises(ValueError, match="num_stories"):
        generate_corpus(0)
    with pytest.raises(ValueError, match="story number"):
        generate_story(0, -1)


def test_files_are_valid_story_files_with_fixed_splits(tmp_path):
    stories = generate_corpus(30, seed=2)
    info = write_corpus(tmp_path, stories, seed=2)
    assert info["splits"] == {"train": 24, "validation": 3, "test": 3}
    urls = UrlLists.from_dir(str(tmp_path / "url_lists"))
    for item in stories:
        path = tmp_path / "stories" / f"{item.story.id}.story"
        text = path.read_text(encoding="utf-8")
        assert text.count("\n@highlight\n") == len(item.story.highlights) >= 1
        parsed = parse_story(text, story_id=item.story.id, source=str(path))
        assert isinstance(parsed, Story)
        assert parsed.article == item.story.article
        assert parsed.highlights == item.story.highlights
        assert urls.split_of(item.story.id) == item.story.split == synthetic.split_of(item.number)


def test_format_story_layout():
    story = Story(id="x", article="One.\n\nTwo.", highlights=("H1", "H2"))
    assert format_story(story) == "One.\n\nTwo.\n\n@highlight\n\nH1\n\n@highlight\n\nH2\n"


def test_stories_are_news_sized(corpus):
    lengths = sorted(len(item.story.article.split()) for item in corpus)
    assert 100 <= lengths[0] and lengths[-1] <= 450
    assert 150 <= lengths[len(lengths) // 2] <= 300
    assert all(2 <= len(item.story.highlights) <= 4 for item in corpus)


def test_mentions_are_the_names_written(corpus):
    for item in corpus:
        labels = Counter(e.label for e in item.entities)
        assert set(labels) == {"PERSON", "ORG", "GPE"} or len(labels) >= 2
        for m in item.article_mentions:
            entity = item.entities[m.entity]
            assert item.story.article[m.start : m.end] in (entity.name, entity.short)
        first = {}
        for m in item.article_mentions:
            first.setdefault(m.entity, item.story.article[m.start : m.end])
        # People are introduced by their full name, later often by surname only.
        assert all(first[i] == e.name for i, e in enumerate(item.entities))
        for highlight, mentions in zip(item.story.highlights, item.highlight_mentions):
            for m in mentions:
                assert highlight[m.start : m.end] == item.entities[m.entity].name
        assert len({e.name for e in item.entities}) == len(item.entities)
        surnames = [e.short for e in item.entities if e.short]
        assert len(set(surnames)) == len(surnames)


def test_surnames_occur_alone(corpus):
    surname_only = sum(
        item.story.article[m.start : m.end] == item.entities[m.entity].short
        for item in corpus
        for m in item.article_mentions
    )
    assert surname_only > 0.1 * sum(len(item.article_mentions) for item in corpus)


def test_each_highlight_fact_is_stated_in_exactly_one_sentence_with_other_words(corpus):
    for item in corpus:
        sentences = _sentences(item.story.article)
        kinds = Counter(kind for kind, _ in item.facts)
        for highlight, fact_index in zip(item.story.highlights, item.highlighted):
            kind, members = item.facts[fact_index]
            names = [{item.entities[e].name, item.entities[e].short} - {None} for e in members]
            stating = [s for s in sentences if all(any(n in s for n in ns) for ns in names)]
            assert len(stating) == 1, (highlight, stating)
            # A distractor fact of the same kind, about other entities, is in the article.
            assert kinds[kind] >= 2
            # Paraphrased: the highlight's words around the names are not in the sentence.
            words = [w for w in re.split(r"\W+", highlight.lower()) if len(w) > 3]
            sentence_words = set(re.split(r"\W+", stating[0].lower()))
            names_words = {w.lower() for e in members for w in item.entities[e].name.split()}
            relation_words = [w for w in words if w not in names_words]
            assert any(w not in sentence_words for w in relation_words), highlight


def test_every_question_has_one_answer(corpus):
    """Given the kind and the other entities of a highlight, exactly one fact fits."""
    for item in corpus:
        assert ground_truth_questions(item)
        for mentions, fact_index in zip(item.highlight_mentions, item.highlighted):
            kind, members = item.facts[fact_index]
            for m in mentions:
                others = {e for e in members if e != m.entity}
                fitting = [f for f in item.facts if f[0] == kind and others <= set(f[1])]
                assert fitting == [item.facts[fact_index]]


def _story(counts: list[int], highlight: list[list[int]]) -> SyntheticStory:
    """A hand-made story: entity i mentioned counts[i] times (in order 0, 1, ...)."""
    entities = tuple(Entity(f"E{i}", "ORG") for i in range(len(counts)))
    mentions = tuple(Mention(i, 0, 0) for i, c in enumerate(counts) for _ in range(c))
    highlights = tuple(tuple(Mention(e, 0, 0) for e in h) for h in highlight)
    return SyntheticStory(
        story=Story(id="s", article="", highlights=("h",) * len(highlight)),
        number=0,
        entities=entities,
        article_mentions=mentions,
        highlight_mentions=highlights,
        facts=(),
        highlighted=(),
    )


def test_frequency_baselines_hand_computed():
    # Counts: e0 3, e1 1, e2 3 (tie with e0, which occurs first), e3 2.
    story = _story([3, 1, 3, 2], [[1, 0], [2, 9]])
    # Questions: (e1 | e0), (e0 | e1), (e2 | e9); e9 is not in the article: no question.
    assert ground_truth_questions(story) == [(1, (0,)), (0, (1,)), (2, (9,))]
    figures = frequency_baselines([story])
    assert figures.questions == 3
    assert figures.max_frequency == pytest.approx(1 / 3)  # predicts e0: right once
    # Exclusive: e2 for (e1|e0) -> wrong, e0 for (e0|e1) -> right, e0 for (e2|e9) -> wrong.
    assert figures.exclusive_frequency == pytest.approx(1 / 3)
    assert figures.answer_is_most_frequent == pytest.approx(2 / 3)  # e0 and e2 are top
    assert figures.chance_most_frequent == pytest.approx(2 / 4)
    assert figures.mean_candidates == 4


def test_counting_does_not_find_the_answer(corpus):
    figures = frequency_baselines(corpus)
    assert figures.questions > 1000
    assert figures.max_frequency <= 0.40
    assert figures.exclusive_frequency <= 0.40
    # The answer is a most frequent entity about as often as a random candidate is.
    assert figures.answer_is_most_frequent <= figures.chance_most_frequent + 0.03


def test_inventories_are_disjoint():
    pools = {
        "first": set(word_lists.FIRST_NAMES),
        "surname": set(word_lists.SURNAMES),
        "stem": set(word_lists.ORG_STEMS),
        "suffix": set(word_lists.ORG_SUFFIXES),
        "place words": {w for p in word_lists.CITIES + word_lists.COUNTRIES for w in p.split()},
    }
    names = list(pools)
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            assert not pools[a] & pools[b], (a, b, pools[a] & pools[b])


def test_ruler_pipeline_tags_exactly_the_written_names(corpus):
    nlp = build_ruler_pipeline()
    assert nlp.pipe_names == ["ner"]
    for item in corpus[:40]:
        doc = nlp(item.story.article)
        found = {(e.start_char, e.end_char, e.label_) for e in doc.ents}
        expected = {(m.start, m.end, item.entities[m.entity].label) for m in item.article_mentions}
        assert found == expected


def test_ruler_pipeline_loads_as_the_toolkit_ner_model(tmp_path):
    from attentive_reader.corpus.pipeline import load_pipeline

    build_ruler_pipeline().to_disk(tmp_path / "ruler")
    nlp = load_pipeline(str(tmp_path / "ruler"))
    doc = nlp("Shares in Greystone Bank rose after Susan Kennedy flew to Lisbon. Kennedy smiled.")
    assert [(e.text, e.label_) for e in doc.ents] == [
        ("Greystone Bank", "ORG"),
        ("Susan Kennedy", "PERSON"),
        ("Lisbon", "GPE"),
        ("Kennedy", "PERSON"),
    ]


def test_synth_command(tmp_path, capsys):
    out = tmp_path / "corpus"
    assert main(["synth", str(out), "--stories", "12", "--seed", "5"]) == 0
    assert "wrote 12 synthetic stories" in capsys.readouterr().out
    first = _files(out)
    assert len(list((out / "stories").glob("*.story"))) == 12
    assert (out / "entity_ruler" / "config.cfg").is_file()
    assert main(["synth", str(out), "--stories", "12", "--seed", "5"]) == 2
    assert "--overwrite" in capsys.readouterr().err
    assert main(["synth", str(out), "--stories", "10", "--seed", "5", "--overwrite"]) == 0
    assert len(list((out / "stories").glob("*.story"))) == 10
    assert (out / "url_lists" / "all_train.txt").read_bytes() == b"".join(
        f"{synthetic.story_url(5, n)}\n".encode() for n in range(10) if n % 10 < 8
    )
    kept = {k: v for k, v in _files(out).items() if k.endswith(".story")}
    assert kept.items() <= first.items()
    assert main(["synth", str(out), "--stories", "0"]) == 2


# --- The compact shape (the demo's short stories) ---------------------------------------------


@pytest.fixture(scope="module")
def compact() -> list[SyntheticStory]:
    return generate_corpus(300, seed=0, shape=COMPACT_SHAPE)


def test_default_shape_is_the_default(corpus):
    assert generate_corpus(20, seed=0, shape=DEFAULT_SHAPE) == corpus[:20]
    assert generate_story(0, 5, DEFAULT_SHAPE) == corpus[5]


def test_compact_is_deterministic_and_extends(tmp_path, compact):
    assert generate_corpus(30, seed=0, shape=COMPACT_SHAPE) == compact[:30]
    assert generate_story(0, 17, COMPACT_SHAPE) == compact[17]
    info_a = write_corpus(tmp_path / "a", compact[:20], seed=0, shape=COMPACT_SHAPE)
    write_corpus(tmp_path / "b", generate_corpus(20, 0, COMPACT_SHAPE), seed=0, shape=COMPACT_SHAPE)
    assert _files(tmp_path / "a") == _files(tmp_path / "b")
    assert info_a["shape"] == "compact"
    assert "shape" not in write_corpus(tmp_path / "c", compact[:3], seed=0)


def test_compact_stories_are_shorter_with_fewer_candidates(corpus, compact):
    def median(values: list[int]) -> int:
        return sorted(values)[len(values) // 2]

    words = [len(item.story.article.split()) for item in compact]
    assert median(words) <= 120 and max(words) <= 200
    assert median(words) < 0.6 * median([len(item.story.article.split()) for item in corpus])
    assert 5 <= frequency_baselines(compact).mean_candidates <= 9
    assert all(2 <= len(item.story.highlights) <= 4 for item in compact)


def test_compact_keeps_a_same_kind_distractor_and_one_answer(compact):
    for item in compact:
        kinds = Counter(kind for kind, _ in item.facts)
        assert min(kinds.values()) >= 2
        assert ground_truth_questions(item)
        for mentions, fact_index in zip(item.highlight_mentions, item.highlighted):
            kind, members = item.facts[fact_index]
            for m in mentions:
                others = {e for e in members if e != m.entity}
                fitting = [f for f in item.facts if f[0] == kind and others <= set(f[1])]
                assert fitting == [item.facts[fact_index]]


def test_compact_counting_does_not_find_the_answer(compact):
    figures = frequency_baselines(compact)
    assert figures.questions > 1000
    assert figures.max_frequency <= 0.40
    assert figures.exclusive_frequency <= 0.40
    assert figures.answer_is_most_frequent <= figures.chance_most_frequent + 0.03


def test_story_shape_is_validated():
    with pytest.raises(ValueError, match="at least twice"):
        StoryShape("bad", ((1, (1,)),), (1,), (1.0,), (0, 0), 0)
    with pytest.raises(ValueError, match="mention_weights"):
        StoryShape("bad", ((1, (2,)),), (1, 2), (1.0,), (0, 0), 0)


def test_synth_command_compact(tmp_path, capsys):
    out = tmp_path / "corpus"
    assert main(["synth", str(out), "--stories", "12", "--seed", "5", "--compact"]) == 0
    assert "wrote 12 compact synthetic stories" in capsys.readouterr().out
    expected = generate_corpus(12, 5, COMPACT_SHAPE)
    for item in expected:
        text = (out / "stories" / f"{item.story.id}.story").read_text(encoding="utf-8")
        assert text == format_story(item.story)
    assert '"shape": "compact"' in (out / "synthetic.json").read_text()


def test_long_stories_are_as_long_as_real_news_and_keep_every_fact_apart():
    """The long shape: ~850 anonymized tokens (real CNN stories: ~830), many facts of many
    kinds, each kind stated 2-3 times (each with its own template), every fact in one
    sentence; the command writes it with --shape long."""
    stories = generate_corpus(20, 9, LONG_SHAPE)
    words = [len(re.findall(r"\w+|[^\w\s]", s.story.article)) for s in stories]
    assert 800 <= sum(words) / len(words) <= 1000  # before names become one marker each
    for item in stories:
        kinds = Counter(kind for kind, _ in item.facts)
        assert len(kinds) >= 6 and set(kinds.values()) <= {2, 3}
        assert len(item.entities) >= 20
    assert generate_story(9, 3, LONG_SHAPE) == stories[3]  # independent of the corpus size


def test_synth_command_long(tmp_path, capsys):
    out = tmp_path / "corpus"
    assert main(["synth", str(out), "--stories", "3", "--seed", "5", "--shape", "long"]) == 0
    assert "wrote 3 long synthetic stories" in capsys.readouterr().out
    for item in generate_corpus(3, 5, LONG_SHAPE):
        text = (out / "stories" / f"{item.story.id}.story").read_text(encoding="utf-8")
        assert text == format_story(item.story)
    assert '"shape": "long"' in (out / "synthetic.json").read_text()


# --- Generated cloze examples as a processed dataset (the toy task) ---------------------------


def test_write_examples_round_trips_with_the_normal_manifest(tmp_path):
    import datasets

    from attentive_reader.corpus.records import ClozeExample

    def example(i: int, context: str) -> ClozeExample:
        return ClozeExample(
            id=f"g{i}",
            story_id=f"s{i}",
            context=tuple(context.split()),
            query=("@entity0", "met", "@placeholder"),
            answer="@entity1",
            candidates=("@entity0", "@entity1"),
            entities={"@entity0": "Ada", "@entity1": "Bo"},
        )

    train = [example(0, "@entity0 met @entity1 ."), example(1, "@entity1 saw @entity0 twice .")]
    manifest = write_examples(
        tmp_path / "d", {"train": train, "test": [example(2, "@entity0 @entity1")]},
        source="unit", options={"n": 3},
    )  # fmt: skip
    assert read_manifest(tmp_path / "d") == manifest and manifest["complete"]
    assert manifest["synthetic"] == {"generator": "unit"} and manifest["options"] == {"n": 3}
    assert manifest["inputs"] == [{"path": "unit", "kind": "generated"}]
    assert "source" not in manifest
    assert manifest["examples"] == {"train": 2, "validation": 0, "test": 1}
    assert manifest["counts"]["read"] == manifest["counts"]["kept"] == 3
    # One document per example: context tokens (4 + 5 + 2) / 3, two entities, 3-token queries.
    assert manifest["statistics"]["context_tokens"] == pytest.approx(11 / 3, abs=1e-3)
    assert manifest["statistics"]["entities_per_document"] == 2.0
    assert manifest["statistics"]["query_tokens"] == 3.0
    loaded = datasets.load_from_disk(str(tmp_path / "d"))
    assert [ClozeExample.from_row(r) for r in loaded["train"]] == train
    assert len(loaded["validation"]) == 0
    with pytest.raises(ValueError, match="unknown split"):
        write_examples(tmp_path / "e", {"dev": train}, source="unit", options={})


def test_the_toy_dataset_is_its_examples_with_the_normal_manifest(tmp_path):
    import datasets
    import numpy as np

    from attentive_reader.corpus.records import ClozeExample

    path = write_toy_dataset(tmp_path / "toy", num_train=5, num_validation=2, num_test=3, seed=4)
    rng = np.random.default_rng(4)
    expected = {
        split: [toy_example(rng, f"toy-{split}-{i}") for i in range(n)]
        for split, n in (("train", 5), ("validation", 2), ("test", 3))
    }
    loaded = datasets.load_from_disk(str(path))
    assert {s: [ClozeExample.from_row(r) for r in loaded[s]] for s in expected} == expected
    manifest = read_manifest(path)
    assert manifest is not None and manifest["synthetic"] == {"generator": "toy"}
    assert manifest["options"]["seed"] == 4 and manifest["examples"]["test"] == 3


def test_synthesize_refuses_an_earlier_corpus_without_touching_it(tmp_path):
    from attentive_reader.common.errors import UserError
    from attentive_reader.corpus.synthetic import synthesize

    info = synthesize(tmp_path / "c", 6, seed=2, shape=COMPACT_SHAPE)
    assert info["stories"] == 6 and info["shape"] == "compact"
    before = _files(tmp_path / "c")
    assert before == {
        **_files(tmp_path / "c"),
        **{f"stories/{s.story.id}.story": format_story(s.story).encode()
           for s in generate_corpus(6, 2, COMPACT_SHAPE)},
    }  # fmt: skip
    with pytest.raises(UserError, match="already holds 6 .story files; pass --overwrite"):
        synthesize(tmp_path / "c", 3, seed=2)
    assert _files(tmp_path / "c") == before
    synthesize(tmp_path / "c", 3, seed=2, overwrite=True)
    assert len(list((tmp_path / "c" / "stories").glob("*.story"))) == 3
    (tmp_path / "file").write_text("x")
    with pytest.raises(UserError, match="is not a folder"):
        synthesize(tmp_path / "file", 3)


def test_synthetic_origin_finds_the_mark_or_the_made_up_urls(tmp_path):
    corpus = tmp_path / "corpus"
    write_corpus(corpus, generate_corpus(3, seed=7), seed=7)
    stories = corpus / "stories"
    found = synthetic.synthetic_origin([str(stories)])
    assert (found["generator"], found["seed"]) == ("attentive_reader.corpus.synthetic", 7)
    assert found["found"] == str((corpus / "synthetic.json").resolve())
    one = next(stories.glob("*.story"))
    assert synthetic.synthetic_origin([f"train={one}"])["seed"] == 7  # a file, a split prefix
    # Copied away from the mark, the url lists still give it away.
    copied = tmp_path / "elsewhere"
    (copied / "lists").mkdir(parents=True)
    for path in (corpus / "url_lists").iterdir():
        (copied / "lists" / path.name).write_bytes(path.read_bytes())
    (copied / "stories").mkdir()
    origin = synthetic.synthetic_origin([str(copied / "stories")], str(copied / "lists"))
    assert origin["found"].startswith("the urls of ")
    # Anything else is not the synthetic corpus.
    real = tmp_path / "real"
    (real / "lists").mkdir(parents=True)
    (real / "lists" / "all_train.txt").write_text("https://edition.cnn.com/a\n")
    assert synthetic.synthetic_origin([str(real)], str(real / "lists")) is None
    assert synthetic.synthetic_origin(["cnn_dailymail", str(tmp_path / "missing")]) is None
