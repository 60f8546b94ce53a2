"""The benchmark's synthetic data: cloze examples of CNN-like lengths, written by the
package's writer of generated examples (``corpus.synthetic.examples.write_examples``)."""

from __future__ import annotations

import math
from dataclasses import asdict
from pathlib import Path

import numpy as np

from attentive_reader.corpus.records import ClozeExample
from attentive_reader.corpus.synthetic.examples import write_examples
from bench.settings import Settings


def lognormal_mu(mean: float, sigma: float, cap: float) -> float:
    """The ``mu`` of a log-normal whose mean below ``cap`` (values above dropped) is ``mean``."""

    def truncated_mean(mu: float) -> float:
        def phi(z: float) -> float:
            return 0.5 * (1.0 + math.erf(z / math.sqrt(2.0)))

        top = math.log(cap)
        return (
            math.exp(mu + sigma**2 / 2)
            * phi((top - mu - sigma**2) / sigma)
            / phi((top - mu) / sigma)
        )

    low, high = 0.0, math.log(cap)
    for _ in range(100):
        middle = (low + high) / 2
        low, high = (middle, high) if truncated_mean(middle) < mean else (low, middle)
    return (low + high) / 2


def sample_lengths(
    rng: np.random.Generator, count: int, mean: float, sigma: float, cap: int, floor: int = 3
) -> np.ndarray:
    """``count`` lengths from a log-normal with mean ``mean``, values over ``cap`` redrawn."""
    mu = lognormal_mu(mean, sigma, cap)
    lengths = np.empty(0, dtype=np.int64)
    while len(lengths) < count:
        draw = rng.lognormal(mu, sigma, 2 * count).round().astype(np.int64)
        lengths = np.concatenate([lengths, draw[(draw <= cap) & (draw >= floor)]])
    return lengths[:count]


def synthetic_examples(
    rng: np.random.Generator, count: int, settings: Settings, split: str
) -> list[ClozeExample]:
    """``count`` cloze examples with CNN-like lengths (every candidate occurs; the answer is
    the first)."""
    num_words = settings.vocab_size - 3 - settings.num_entities
    ranks = np.arange(1, num_words + 1)
    zipf = (1.0 / ranks) / (1.0 / ranks).sum()
    words = np.array([f"w{k}" for k in range(num_words)], dtype=object)
    contexts = sample_lengths(
        rng, count, settings.mean_context, settings.sigma, settings.max_context
    )
    queries = sample_lengths(rng, count, settings.mean_query, 0.3, 40)
    examples = []
    for i, (n, m) in enumerate(zip(contexts, queries)):
        k = min(settings.entities_per_example, settings.num_entities, int(n))
        markers = [f"@entity{e}" for e in rng.choice(settings.num_entities, k, replace=False)]
        context = words[rng.choice(num_words, int(n), p=zipf)].tolist()
        slots = rng.choice(int(n), max(k, int(n) // 11), replace=False)
        for j, slot in enumerate(slots):  # every candidate occurs, then more mentions
            context[slot] = markers[j % k] if j < k else markers[rng.integers(k)]
        query = words[rng.choice(num_words, int(m), p=zipf)].tolist()
        query[int(rng.integers(m))] = "@placeholder"
        examples.append(
            ClozeExample(
                id=f"{split}-{i}",
                story_id=f"{split}-{i}",
                context=tuple(context),
                query=tuple(query),
                answer=markers[0],
                candidates=tuple(markers),
                entities={marker: f"Name {marker}" for marker in markers},
                url="",
            )
        )
    return examples


def write_dataset(folder: Path, settings: Settings, seed: int = 0) -> Path:
    """A processed dataset directory (the package's writer of generated examples, with its
    manifest) and a ``vocab.json`` of exactly ``vocab_size`` ids."""
    from attentive_reader.data.vocab import Vocabulary

    rng = np.random.default_rng(seed)
    train = settings.batch_size * settings.train_batches
    sizes = {"train": train, "validation": settings.batch_size, "test": settings.eval_examples}
    splits = {
        split: synthetic_examples(rng, size, settings, split) for split, size in sizes.items()
    }
    options = {"seed": seed, **asdict(settings)}
    write_examples(folder / "data", splits, source="benchmark", options=options)
    num_words = settings.vocab_size - 3 - settings.num_entities
    Vocabulary([f"w{k}" for k in range(num_words)], settings.num_entities).save(
        folder / "vocab.json"
    )
    return folder / "data"
