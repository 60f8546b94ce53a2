"""The one checkpoint read (``checkpoint_file.read_checkpoint``)."""

from __future__ import annotations

import pytest
import torch

from attentive_reader.common.checkpoint_file import read_checkpoint
from attentive_reader.common.errors import UserError


class _Custom:
    """A class of this test module: unpickling it means importing and building it."""


def test_a_checkpoint_round_trips_from_the_file_its_bytes_or_a_map(tmp_path):
    path = tmp_path / "run.ckpt"
    state = {"epoch": 3, "state_dict": {"w": torch.arange(4.0)}}
    torch.save(state, path)
    for loaded in (
        read_checkpoint(path),
        read_checkpoint(path, content=path.read_bytes()),
        read_checkpoint(path, mmap=True),
    ):
        assert loaded["epoch"] == 3 and torch.equal(loaded["state_dict"]["w"], torch.arange(4.0))


def test_missing_unreadable_and_code_carrying_files_are_one_line_errors(tmp_path):
    with pytest.raises(UserError, match="checkpoint not found: .*absent.ckpt"):
        read_checkpoint(tmp_path / "absent.ckpt")
    (tmp_path / "notes.ckpt").write_text("not a checkpoint", encoding="utf-8")
    with pytest.raises(UserError, match="notes.ckpt is not a readable checkpoint"):
        read_checkpoint(tmp_path / "notes.ckpt")
    # An object that only full unpickling could build: weights_only refuses it.
    torch.save({"extra": _Custom()}, tmp_path / "code.ckpt")
    with pytest.raises(UserError, match="code.ckpt is not a readable checkpoint"):
        read_checkpoint(tmp_path / "code.ckpt")
