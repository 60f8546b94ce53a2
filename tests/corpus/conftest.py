"""The corpus tests' shared set-up: the saved entity-ruler pipeline (``model``) and the tiny
story corpus (``corpus``) of the preprocessing tests, made once per module.

A module that needs another pipeline defines its own ``model`` (``test_cluster.py``).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.corpus.fixtures import write_corpus
from tests.corpus.pipelines import save_pipeline


@pytest.fixture(scope="module")
def model(tmp_path_factory) -> str:
    """The folder of the ``corpus_patterns`` ruler pipeline (``--spacy-model``)."""
    return save_pipeline(tmp_path_factory.mktemp("pipeline") / "ruler")


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    """``fixtures.write_corpus``: 30 good stories and 4 bad ones, in ``stories/``."""
    return write_corpus(tmp_path_factory.mktemp("corpus") / "stories")
