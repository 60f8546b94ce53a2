"""The shared argument checks (``attentive_reader.common.checks``)."""

from __future__ import annotations

import pytest

from attentive_reader.common.checks import (
    check_positive,
    check_positive_options,
    check_positive_or_none,
    is_positive_int,
)
from attentive_reader.common.errors import UserError


@pytest.mark.parametrize(
    ("value", "ok"),
    [
        (1, True),
        (7, True),
        (0, False),
        (-2, False),
        (True, False),
        (1.0, False),
        ("3", False),
        (None, False),
    ],
)
def test_is_positive_int(value, ok):
    assert is_positive_int(value) is ok


def test_check_positive_names_the_first_bad_value():
    check_positive(a=1, b=2)
    with pytest.raises(ValueError, match=r"^b must be a positive integer, got 0$"):
        check_positive(a=1, b=0, c=-1)
    with pytest.raises(ValueError, match=r"^flag must be a positive integer, got True$"):
        check_positive(flag=True)


def test_check_positive_or_none_lets_none_pass():
    check_positive_or_none(cap=None, other=3)
    with pytest.raises(ValueError, match=r"^cap must be a positive integer or None, got 0$"):
        check_positive_or_none(cap=0)


def test_check_positive_options_names_the_option_as_typed():
    check_positive_options(limit=3, batch_size=1)
    with pytest.raises(UserError, match=r"^--batch-size must be a positive integer, got 0$"):
        check_positive_options(limit=3, batch_size=0, max_penalty=-1)
