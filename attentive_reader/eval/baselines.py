"""The non-neural baselines of Hermann et al. (2015): see ``corpus.baselines``.

They are pure functions over records and live on the ``corpus`` floor, where the synthetic
corpus's ground-truth baselines use them too; this module keeps the evaluation's import path.
"""

from attentive_reader.corpus.baselines import (
    BASELINES,
    BaselineName,
    BaselineScores,
    baseline_predictor,
    exclusive_frequency,
    maximum_frequency,
    positions_by_word,
    score_baselines,
    word_distance,
    word_distance_score,
    word_distance_scores,
)

__all__ = [
    "BASELINES",
    "BaselineName",
    "BaselineScores",
    "baseline_predictor",
    "exclusive_frequency",
    "maximum_frequency",
    "positions_by_word",
    "score_baselines",
    "word_distance",
    "word_distance_score",
    "word_distance_scores",
]
