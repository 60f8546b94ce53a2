"""The markers of anonymized text (the DeepMind format; floor 0: imports nothing).

Entities are ``@entity0``, ``@entity1``, ...; the query's blank is ``@placeholder``.
"""

from __future__ import annotations

PLACEHOLDER = "@placeholder"
ENTITY_PREFIX = "@entity"
# A whole token that is an entity marker, for Arrow's regex kernels.
MARKER_PATTERN = rf"^{ENTITY_PREFIX}[0-9]+$"


def entity_marker(index: int) -> str:
    """The marker of entity ``index`` (``@entity0``, ``@entity1``, ...)."""
    return f"{ENTITY_PREFIX}{index}"


def entity_index(marker: str) -> int:
    """The number in an entity marker: ``entity_index("@entity12") == 12``.

    Raises:
        ValueError: if ``marker`` is not of the form ``@entityN``.
    """
    if not marker.startswith(ENTITY_PREFIX) or not marker[len(ENTITY_PREFIX) :].isdigit():
        raise ValueError(f"not an entity marker: {marker!r}")
    return int(marker[len(ENTITY_PREFIX) :])


def is_entity_marker(token: str) -> bool:
    """Whether ``token`` is an entity marker (``@entity`` and digits)."""
    return token.startswith(ENTITY_PREFIX) and token[len(ENTITY_PREFIX) :].isdigit()
