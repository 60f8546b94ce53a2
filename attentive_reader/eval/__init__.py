"""Evaluation: ``evaluate(...) -> Report`` (exact accuracy, intervals, breakdowns, baselines).

``inference.py`` runs a reader over a split (imported lazily: it needs torch), ``report.py``
holds the pure figures, ``baselines.py`` the paper's non-neural baselines.
"""

from attentive_reader.eval.evaluation import (
    CheckpointInfo,
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
