"""Evaluation: ``evaluate(...) -> Report`` (exact accuracy, intervals, breakdowns, baselines).

``inference.py`` runs a reader over a split (imported lazily: it needs torch),
``checkpoints.py`` reads each evaluated checkpoint, ``report.py`` holds the pure figures;
the paper's non-neural baselines are ``corpus/baselines.py``.
"""

from attentive_reader.eval.checkpoints import CheckpointInfo
from attentive_reader.eval.evaluation import (
    EvaluationOptions,
    Report,
    SystemResult,
    evaluate,
    load_examples,
)

__all__ = [
    "CheckpointInfo",
    "EvaluationOptions",
    "Report",
    "SystemResult",
    "evaluate",
    "load_examples",
]
