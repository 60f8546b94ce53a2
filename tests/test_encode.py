"""``attentive-reader encode`` builds the id cache once; a 2-process DDP ``fit`` (gloo, CPU)
then trains on the dataset folder made read-only, and writes nothing there.

The folder is made read-only by a read-only bind mount in a private mount namespace
(``unshare``), which holds for root too; where that is not possible a non-root user gets
``chmod``. Either way the folder's files are compared before and after.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from attentive_reader.cli import main as cli_main
from attentive_reader.corpus.synthetic.toy import write_toy_dataset

ROOT = Path(__file__).resolve().parents[1]
BASE = ROOT / "configs" / "attentive_reader.yaml"
# Runs "$@" with the folder "$0" mounted read-only (in a private mount namespace).
READ_ONLY_MOUNT = 'mount --bind -o ro "$0" "$0" && exec "$@"'


def _unshare_works() -> bool:
    try:
        probe = subprocess.run(["unshare", "-rm", "true"], capture_output=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return probe.returncode == 0


def _read_only(folder: Path, argv: list[str]) -> list[str]:
    """``argv`` run with ``folder`` read-only to it."""
    if _unshare_works():
        return ["unshare", "-rm", "sh", "-c", READ_ONLY_MOUNT, str(folder), *argv]
    if os.geteuid() == 0:
        pytest.skip("root ignores file modes and unshare is not permitted here")
    for path in [folder, *folder.rglob("*")]:
        path.chmod(path.stat().st_mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))
    return argv


def _snapshot(folder: Path) -> dict[str, tuple[int, int]]:
    return {
        str(path.relative_to(folder)): (path.stat().st_size, path.stat().st_mtime_ns)
        for path in sorted(folder.rglob("*"))
    }


@pytest.mark.slow
def test_encode_then_ddp_fit_on_a_read_only_dataset(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    toy = write_toy_dataset(tmp_path / "toy", num_train=32, num_validation=16, num_test=8)
    assert cli_main(["encode", str(toy)]) == 0
    printed = capsys.readouterr().out
    assert "train: 32 examples in" in printed and str(toy / ".encoded") in printed
    before = _snapshot(toy)
    fit = [sys.executable, "-m", "attentive_reader.cli", "fit", "--config", str(BASE)]
    fit += ["--data.path", str(toy), "--data.batch_size", "8", "--trainer.accelerator", "cpu"]
    fit += ["--trainer.devices", "2", "--trainer.strategy", "ddp", "--trainer.max_epochs", "1"]
    fit += ["--trainer.num_sanity_val_steps", "0", "--trainer.enable_progress_bar", "false"]
    fit += ["--trainer.enable_model_summary", "false", "--trainer.logger", "CSVLogger"]
    fit += ["--trainer.logger.save_dir", str(tmp_path / "logs")]
    env = {**os.environ, "ATTENTIVE_READER_CACHE": str(tmp_path / "user-cache")}
    run = subprocess.run(_read_only(toy, fit), capture_output=True, text=True, timeout=300, env=env)
    assert run.returncode == 0, run.stderr[-3000:]
    assert list(tmp_path.glob("logs/**/checkpoints/last.ckpt"))  # it trained
    assert not (tmp_path / "user-cache").exists()  # the ranks read the cache beside the data
    assert _snapshot(toy) == before

    # Other data options need other ids: on the read-only folder that is one line saying
    # what to do, not a write.
    encode = [sys.executable, "-m", "attentive_reader.cli", "encode", str(toy)]
    run = subprocess.run(
        _read_only(toy, [*encode, "--max-words", "5"]),
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert run.returncode == 2, run.stderr[-3000:]
    (line,) = run.stderr.strip().splitlines()
    assert "cannot be written" in line and "attentive-reader encode DATASET" in line, line
    assert _snapshot(toy) == before
