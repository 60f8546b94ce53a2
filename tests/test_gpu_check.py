"""``scripts/gpu_check.sh`` (issue 38): its report from a GPU run's files, and the whole script
on the CPU at tiny sizes (``GPU_CHECK_DEVICE=cpu``), which keeps it working without a GPU."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPTS = Path(__file__).resolve().parents[1] / "scripts"
sys.path.insert(0, str(SCRIPTS))
import gpu_check_report as report  # noqa: E402  (a script beside gpu_check.sh)

ATTENTIVE = "configs/attentive_reader_paper.yaml"
IMPATIENT = "configs/impatient_reader_paper.yaml"
DENSE_BF16 = "Dense limit (reference maths, equal-length unpadded), bf16-mixed"

# Lightning's simple profiler, as it writes its report (cut to the rows the report reads).
PROFILE = """FIT Profiler Report

-------------------------------------------------------------------------------------------
|  Action                                      	|  Mean duration (s)	|  Num calls      	|  Total time (s) 	|  Percentage %   	|
-------------------------------------------------------------------------------------------
|  Total                                       	|  -              	|  585            	|  130.0          	|  100 %          	|
-------------------------------------------------------------------------------------------
|  run_training_epoch                          	|  125.0          	|  1              	|  125.0          	|  96.2           	|
|  run_training_batch                          	|  0.12           	|  1000           	|  120.0          	|  92.3           	|
|  [_TrainingEpochLoop].train_dataloader_next  	|  0.005          	|  1000           	|  5.0            	|  3.8            	|
"""


def bench_row(rates: list[float], tokens: float, bf16_share: float | None = None) -> dict:
    return {
        "examples_per_second": rates,
        "median_examples_per_second": sorted(rates)[len(rates) // 2],
        "median_tokens_per_second": tokens,
        "share_of_dense": 0.5,
        "share_of_dense_bf16": bf16_share,
        "data_wait_share": 0.01,
        "peak_gpu_mib": 2048.0,
    }


def gpu_run(out: Path) -> None:
    """The files of a GPU run (numbers chosen so that every figure can be worked by hand)."""
    out.mkdir()
    (out / "environment.json").write_text(
        json.dumps({"device": "cuda", "gpu": "NVIDIA H200", "torch": "2.11.0+cu130"})
    )
    (out / "stages.jsonl").write_text(
        '{"stage": "fit", "rc": 0, "limit_s": 240, "seconds": 150.0}\n'
        '{"stage": "answer", "skipped": "spaCy or its English pipeline is not installed here"}\n'
        '{"stage": "bench_shipped", "rc": 124, "limit_s": 49, "seconds": 51.0}\n'
    )
    # 40,000 examples of 750 context tokens: 1,000 steps of 32 is 32,000 of them.
    (out / "corpus.json").write_text(
        json.dumps({"train_examples": 40_000, "train_context_tokens": 30_000_000})
    )
    (out / "fit-fit_profile.txt").write_text(PROFILE)
    (out / "gpu_samples.csv").write_text(
        "2026/12/04 18:40:00.000, 0, 500\n"
        "2026/12/04 18:40:00.500, 30, 2500\n"
        "2026/12/04 18:40:01.000, 50, 2900\n"
        "2026/12/04 18:40:01.500, 0, 2000\n"
    )
    (out / "test.log").write_text("│         test_acc          │    0.046000000089406967   │\n")
    paper = {
        "settings": {
            "batch_size": 32,
            "mean_context": 761.8,
            "max_context": 2000,
            "train_batches": 20,
            "rounds": 2,
            "embedding_dim": 200,
            "hidden_dim": 256,
        },
        "train": {
            DENSE_BF16: bench_row([400.0, 500.0], 240_000.0, 1.0),
            f"{ATTENTIVE}, bf16-mixed": bench_row([200.0, 250.0], 190_000.0, 0.52),
            f"{ATTENTIVE}, fp32": bench_row([300.0, 200.0], 200_000.0),
            f"{IMPATIENT}, bf16-mixed": bench_row([160.0, 150.0], 150_000.0),
            f"{IMPATIENT}, fp32": bench_row([150.0, 80.0], 90_000.0),
        },
    }
    (out / "bench_paper.json").write_text(json.dumps(paper))
    (out / "bench_shipped.log").write_text(
        "round 1/1: Reference (plain loop), fp32: 1872.4 examples/s, 1811.2 per CPU second\n"
        "round 1/1: configs/as_reader.yaml, fp32: 244.1 examples/s, 217.0 per CPU second\n"
    )


def test_the_report_works_out_the_epoch_and_the_targets_from_a_gpu_runs_files(tmp_path):
    out = tmp_path / "run"
    gpu_run(out)
    result = report.build(out)
    fit = result["fit"]
    assert fit["steps"] == 1000 and fit["examples"] == 32_000 and not fit["full_epoch"]
    assert fit["training_seconds"] == pytest.approx(125.0)  # 120 in steps + 5 waiting
    assert fit["examples_per_second"] == pytest.approx(256.0)  # 32,000 / 125
    assert fit["context_tokens_per_second"] == pytest.approx(256.0 * 750)
    assert fit["loader_share"] == pytest.approx(0.04)  # 5 / 125
    assert fit["cnn_epoch_seconds_estimate"] == pytest.approx(380_298 / 256.0)
    samples = result["gpu_samples"]
    assert samples["utilization_mean"] == pytest.approx(20.0)  # (0 + 30 + 50 + 0) / 4
    assert samples["utilization_busy_mean"] == pytest.approx(40.0)  # from 30 to 50
    assert samples["memory_used_peak_mib"] == 2900
    assert result["test_acc"] == pytest.approx(0.046)
    targets = {row["target"]: row for row in result["targets"]}
    epoch = next(row for name, row in targets.items() if "full CNN epoch" in name)
    assert epoch["measured"] == pytest.approx(1485.5, abs=0.1) and epoch["met"] is False
    share = next(row for name, row in targets.items() if name.startswith("the same fit"))
    assert share["measured"] == pytest.approx(192_000 / 240_000) and share["met"] is True
    impatient_bf16 = targets["Impatient / Attentive Reader, paper configs, bf16-mixed"]
    assert impatient_bf16["measured"] == pytest.approx((0.8 + 0.6) / 2)  # rounds' median
    assert impatient_bf16["met"] is True
    impatient_fp32 = targets["Impatient / Attentive Reader, paper configs, fp32"]
    assert impatient_fp32["measured"] == pytest.approx((0.5 + 0.4) / 2)
    assert impatient_fp32["met"] is False
    # The page: the targets, a stopped stage's log, a skipped stage and its reason.
    page = report.markdown(result, out)
    assert "| the same fit's context tokens/s as a share of the dense limit" in page
    assert "80% | yes |" in page
    assert "stopped by --trainer.max_time" in page
    assert "| configs/as_reader.yaml, fp32 | 244.1 |" in page  # from the log of a stopped run
    assert "`answer`: not run (spaCy or its English pipeline is not installed here)" in page


def test_the_report_says_what_was_not_measured(tmp_path, capsys):
    out = tmp_path / "empty"
    out.mkdir()
    assert report.main([str(out)]) == 0
    result = json.loads((out / "gpu_check.json").read_text())
    assert result["fit"] is None and all(row["met"] is None for row in result["targets"])
    assert "not measured" in (out / "gpu_check.md").read_text()
    with pytest.raises(SystemExit):
        report.main([str(tmp_path / "nowhere")])
    assert "run scripts/gpu_check.sh first" in capsys.readouterr().err


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("timeout") is None, reason="needs coreutils' timeout")
def test_the_gpu_check_runs_every_stage_on_the_cpu(tmp_path):
    """The same stages as on a GPU, at tiny sizes: every shipped reader config is built and
    trained by the benchmark, a real fit / test / evaluate runs, and the report is written."""
    out = tmp_path / "out"
    environ = {
        **os.environ,
        "GPU_CHECK_DEVICE": "cpu",
        "GPU_CHECK_OFFLINE": "1",
        "GPU_CHECK_EXAMPLES": "400",
        "PYTHON": sys.executable,
        "TMPDIR": str(tmp_path),
    }
    run = subprocess.run(
        ["bash", str(SCRIPTS / "gpu_check.sh"), str(out)],
        capture_output=True,
        text=True,
        env=environ,
        timeout=900,
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    stages = report.stages(out)
    for name in (
        "environment",
        "bench_paper",
        "corpus",
        "fit",
        "test",
        "evaluate",
        "bench_shipped",
    ):
        assert stages[name]["rc"] == 0, (name, (out / f"{name}.log").read_text()[-3000:])
    result = json.loads((out / "gpu_check.json").read_text())
    assert result["corpus"]["train_examples"] == 400
    assert result["fit"]["full_epoch"] and result["fit"]["examples"] == 400
    assert result["evaluate"]["n"] == 1000 and result["test_acc"] is not None
    shipped = result["bench_shipped"]["train"]
    configs = sorted(p.stem for p in (SCRIPTS.parent / "configs").glob("*.yaml"))
    for name in configs:  # every shipped reader, in both precisions
        for precision in ("fp32", "bf16-mixed"):
            assert shipped[f"configs/{name}.yaml, {precision}"]["median_examples_per_second"] > 0
    paper = result["bench_paper"]["train"]
    assert {f"{ATTENTIVE}, fp32", f"{IMPATIENT}, bf16-mixed"} <= set(paper)
    assert result["bench_paper"]["settings"]["hidden_dim"] == 256  # the paper's sizes
    page = (out / "gpu_check.md").read_text()
    assert "## Targets" in page and "## One epoch of `attentive-reader fit`" in page
    # Nothing of the run is left in its temporary folder.
    assert not list(tmp_path.glob("gpu-check.*"))
