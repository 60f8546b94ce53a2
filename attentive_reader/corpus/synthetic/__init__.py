"""The built-in synthetic news corpus: seeded, news-like stories in the CNN ``.story`` format.

Every story relates a handful of people, places and organisations through *facts* (an
appointment, a contract, a meeting, a takeover, a move, ...). Each fact is stated in the
article in exactly one sentence; every fact kind that appears in a story appears at least
twice (the second instance, about other entities, is the distractor). Filler sentences add
further mentions of random entities (people later by surname) and plain news boilerplate.
The highlights restate some of the facts with paraphrase templates that share none of the
article sentence's relation words.

The corpus is built so that reading is needed and counting is not: how often an entity is
mentioned is drawn independently of whether its fact is highlighted, so the answer of a
cloze question is the most frequent entity of the article about as often as a random
candidate is (see ``frequency_baselines``), while a reader that finds the sentence stating the
highlight's fact can always answer.

Story ``n`` of seed ``s`` depends only on ``(s, n)``: a larger corpus extends a smaller one.
Splits are fixed by the story number (a repeating pattern of train / validation / test).
The generator records every entity mention it writes (``SyntheticStory``), so tests can
compute baselines without a spaCy model, and ``build_ruler_pipeline`` gives a spaCy pipeline
that recognises every name the generator can write when no statistical model is installed.

The package's rooms: ``words.py`` (the word lists and templates of ``words.json`` /
``templates.json``), ``shapes.py`` (story shapes and the generated records), ``story.py``
(the generator: ``generate_corpus``, ``generate_story``), ``files.py`` (``.story`` files, url
lists, the entity ruler, ``synthesize``), ``ground_truth.py`` (the frequency baselines on the
generator's own ground truth), ``toy.py`` (the already-anonymized toy relation task) and
``examples.py`` (generated examples written as a processed dataset with the normal manifest).
This module gathers the names of ``files.py``, ``shapes.py`` and ``ground_truth.py``; the
generator and the word lists are imported from their own modules.
"""

from attentive_reader.corpus.synthetic.files import (
    GENERATOR_VERSION,
    MARKER_FILE,
    URL_LIST_FILES,
    build_ruler_pipeline,
    format_story,
    ruler_patterns,
    synthesize,
    synthetic_origin,
    write_corpus,
)
from attentive_reader.corpus.synthetic.ground_truth import (
    FrequencyBaselines,
    frequency_baselines,
    ground_truth_questions,
)
from attentive_reader.corpus.synthetic.shapes import (
    COMPACT_SHAPE,
    DEFAULT_SHAPE,
    LONG_SHAPE,
    SHAPES,
    URL_PREFIX,
    Entity,
    Mention,
    SplitName,
    StoryShape,
    SyntheticStory,
    split_of,
    story_url,
)

__all__ = [
    "COMPACT_SHAPE",
    "DEFAULT_SHAPE",
    "GENERATOR_VERSION",
    "LONG_SHAPE",
    "MARKER_FILE",
    "SHAPES",
    "URL_LIST_FILES",
    "URL_PREFIX",
    "Entity",
    "FrequencyBaselines",
    "Mention",
    "SplitName",
    "StoryShape",
    "SyntheticStory",
    "build_ruler_pipeline",
    "format_story",
    "frequency_baselines",
    "ground_truth_questions",
    "ruler_patterns",
    "split_of",
    "story_url",
    "synthesize",
    "synthetic_origin",
    "write_corpus",
]
