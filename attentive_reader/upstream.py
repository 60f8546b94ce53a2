"""The one place that reads private attributes of Lightning and ``datasets``.

Each use has a test (``tests/test_upstream.py``), so that an upgrade that renames one breaks
here, in one place, with a message naming it. Floor 0: nothing is imported at module level.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def dataset_fingerprint(rows: Any) -> str:
    """The fingerprint ``datasets`` keeps for a ``Dataset`` (private ``_fingerprint``): what
    identifies its content and the transforms that made it."""
    return rows._fingerprint


def uses_distributed_sampler(trainer: Any) -> bool:
    """Whether a Lightning ``Trainer`` replaces the data loaders' samplers by distributed
    ones (``use_distributed_sampler``, kept on the private ``_accelerator_connector``)."""
    connector = getattr(trainer, "_accelerator_connector", None)
    return bool(getattr(connector, "use_distributed_sampler", False))


def on_subcommand_parser(cls: type) -> type:
    """Class decorator for a ``LightningCLI`` subclass: its method
    ``configure_subcommand_parser(parser, subcommand)`` runs on each subcommand's parser once
    Lightning has added the subcommand's own arguments (``--ckpt_path``), which exist only
    then. Lightning's hook for that moment is the private ``_prepare_subcommand_parser``.
    """
    base = next((k for k in cls.__mro__[1:] if "_prepare_subcommand_parser" in vars(k)), None)
    if base is None:
        raise TypeError(
            f"{cls.__name__}: this Lightning version has no LightningCLI."
            "_prepare_subcommand_parser; attentive_reader/common/upstream.py needs an update"
        )
    configure: Callable[[Any, Any, str], None] = cls.configure_subcommand_parser

    def _prepare_subcommand_parser(self: Any, klass: type, subcommand: str, **kwargs: Any) -> Any:
        parser = base._prepare_subcommand_parser(self, klass, subcommand, **kwargs)
        configure(self, parser, subcommand)
        return parser

    cls._prepare_subcommand_parser = _prepare_subcommand_parser
    return cls
