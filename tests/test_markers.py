"""The markers of anonymized text (``attentive_reader.common.markers``)."""

from __future__ import annotations

import pytest

from attentive_reader.common.markers import (
    ENTITY_PREFIX,
    PLACEHOLDER,
    entity_index,
    entity_marker,
    is_entity_marker,
)


def test_markers_round_trip_and_are_told_from_other_tokens():
    assert (ENTITY_PREFIX, PLACEHOLDER) == ("@entity", "@placeholder")
    assert entity_marker(12) == "@entity12" and entity_index("@entity12") == 12
    assert all(entity_index(entity_marker(k)) == k for k in range(300))
    assert is_entity_marker("@entity0") and not is_entity_marker(PLACEHOLDER)
    assert not is_entity_marker("@entity") and not is_entity_marker("@entityX")
    with pytest.raises(ValueError, match="not an entity marker: '@placeholder'"):
        entity_index(PLACEHOLDER)
