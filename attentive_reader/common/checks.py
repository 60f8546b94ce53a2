"""Argument checks shared by the package's constructors (floor 0, beside ``errors``).

Each raises a ``ValueError`` that names the argument and the value it got, as torchtune's
constructors do; a command turns it into its option's one-line error
(``check_positive_options`` raises that error itself).
"""

from __future__ import annotations

from attentive_reader.common.errors import UserError


def is_positive_int(value: object) -> bool:
    """Whether ``value`` is an ``int`` (not a ``bool``) of at least 1."""
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1


def check_positive(**values: object) -> None:
    """Raise a ``ValueError`` naming the first value that is not a positive integer."""
    for name, value in values.items():
        if not is_positive_int(value):
            raise ValueError(f"{name} must be a positive integer, got {value!r}")


def check_positive_options(**values: object) -> None:
    """Like ``check_positive`` for a command's options: a ``UserError`` that names the
    option as typed (``batch_size`` -> ``--batch-size``)."""
    try:
        check_positive(**{f"--{name.replace('_', '-')}": value for name, value in values.items()})
    except ValueError as err:
        raise UserError(str(err)) from None


def check_positive_or_none(**values: object) -> None:
    """Like ``check_positive``, but ``None`` (no limit) passes too."""
    for name, value in values.items():
        if value is not None and not is_positive_int(value):
            raise ValueError(f"{name} must be a positive integer or None, got {value!r}")


def check_dropout(dropout: float) -> None:
    """Raise a ``ValueError`` unless ``0 <= dropout < 1``."""
    if not 0.0 <= dropout < 1.0:
        raise ValueError(f"dropout must be in [0, 1), got {dropout}")
