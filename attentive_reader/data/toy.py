"""The toy cloze task now lives with the other generators: ``corpus.synthetic.toy``.

This module keeps the old import path (scripts and tests use ``data.toy``).
"""

from attentive_reader.corpus.synthetic.toy import (
    FILLERS,
    NAMES,
    RELATIONS,
    toy_example,
    write_toy_dataset,
)

__all__ = ["FILLERS", "NAMES", "RELATIONS", "toy_example", "write_toy_dataset"]
