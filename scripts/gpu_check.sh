#!/usr/bin/env bash
# The GPU check: what the toolkit does on one NVIDIA GPU, in one run of under 8 minutes.
#
#   bash scripts/gpu_check.sh [OUT]        # from the repository root; OUT: ./gpu-check
#
# Stages: install, the paper configs' throughput (benchmark.py), a real fit / test / evaluate /
# answer, every shipped reader's throughput, the report (gpu_check_report.py). Each has a time
# limit inside GPU_CHECK_BUDGET; GPU_CHECK_DEVICE=cpu runs them at tiny sizes (the tests do).
# Settings and what each stage measures: docs/scale.md ("The GPU check").
set -u -o pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
out=$(mkdir -p "${1:-gpu-check}" && cd "${1:-gpu-check}" && pwd)
device=${GPU_CHECK_DEVICE:-cuda}
examples=${GPU_CHECK_EXAMPLES:-50000}
budget=${GPU_CHECK_BUDGET:-470}
python=${PYTHON:-python3}
work=$(mktemp -d "${TMPDIR:-/tmp}/gpu-check.XXXXXX")
started=$(date +%s)
export PYTHONUNBUFFERED=1
cd "$repo" || exit 1

say() { echo "[gpu_check $(( $(date +%s) - started )) s] $*"; }

# Seconds left for a stage: its own limit, or what the budget has left less a reserve for the
# report, whichever is smaller (at least 1).
left() {
    local rest=$(( budget - ($(date +%s) - started) - 15 ))
    local limit=$(( $1 < rest ? $1 : rest ))
    echo $(( limit > 1 ? limit : 1 ))
}

# stage NAME LIMIT COMMAND...: run COMMAND with its output in OUT/NAME.log; its status, start
# and seconds go to OUT/stages.jsonl (124: out of time).
stage() {
    local name=$1 limit
    limit=$(left "$2")
    shift 2
    say "$name (at most $limit s)"
    local begin end rc
    begin=$(date +%s.%N)
    # bash -c: COMMAND may be one of the functions below (exported)
    timeout --kill-after=10 "$limit" bash -c '"$@"' "$name" "$@" >"$out/$name.log" 2>&1
    rc=$?
    end=$(date +%s.%N)
    echo "{\"stage\": \"$name\", \"rc\": $rc, \"limit_s\": $limit, \"seconds\": $(awk "BEGIN {print $end - $begin}")}" >>"$out/stages.jsonl"
    say "$name: exit $rc"
    tail -n 3 "$out/$name.log"
    return $rc
}

cli() { "$python" -c 'import sys; from attentive_reader.cli import main; sys.exit(main(sys.argv[1:]))' "$@"; }
export -f cli
export repo out device examples python work

: >"$out/stages.jsonl"

# --- 1. install ------------------------------------------------------------------------------
install() {
    if [ "${GPU_CHECK_OFFLINE:-0}" = 1 ]; then
        echo "GPU_CHECK_OFFLINE=1: nothing installed"
        return 0
    fi
    if [ "$device" = cuda ] && ! "$python" -c 'import torch, sys; sys.exit(not torch.cuda.is_available())'; then
        "$python" -m pip install torch || return 1  # PyPI's Linux torch is a CUDA build
    fi
    "$python" -m pip install -e "$repo" || return 1
}
export -f install
# The install has its own limit, outside the budget, which counts from after it.
measured_budget=$budget
budget=100000
stage install 1800 install
budget=$measured_budget
started=$(date +%s)
export PYTHONPATH="$repo${PYTHONPATH:+:$PYTHONPATH}"

environment() {
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader || true
    "$python" - "$out/environment.json" "$device" <<'EOF'
import json, platform, sys
import pytorch_lightning, torch
from attentive_reader.version import __version__
device = sys.argv[2]
if device == "cuda" and not torch.cuda.is_available():
    sys.exit(f"torch {torch.__version__} sees no CUDA device (CUDA build: {torch.version.cuda})")
info = {
    "attentive_reader": __version__,
    "python": platform.python_version(),
    "torch": torch.__version__,
    "cuda": torch.version.cuda,
    "cudnn": torch.backends.cudnn.version() if device == "cuda" else None,
    "pytorch_lightning": pytorch_lightning.__version__,
    "device": device,
    "gpu": torch.cuda.get_device_name(0) if device == "cuda" else None,
    "gpu_memory_gib": (
        torch.cuda.get_device_properties(0).total_memory / 2**30 if device == "cuda" else None
    ),
    "cpu_count": __import__("os").cpu_count(),
}
json.dump(info, open(sys.argv[1], "w"), indent=2)
print(info)
EOF
}
export -f environment
stage environment 60 environment || { say "no usable $device environment: stopping"; exit 1; }

# --- 2. the targets' throughput: the paper configs at their sizes ----------------------------
if [ "$device" = cuda ]; then
    sizes=(--train-batches 20 --rounds 2 --threads 8)
else
    sizes=(--quick --train-batches 2 --rounds 1 --threads 2)
fi
stage bench_paper 150 "$python" scripts/benchmark.py --device "$device" --sections train encoder \
    --shipped --paper-sizes --entries attentive_reader_paper impatient_reader_paper \
    "${sizes[@]}" --output "$out/bench_paper.json"

# --- 3. a real epoch: fit, test, evaluate, answer ---------------------------------------------
corpus() {
    "$python" - "$work" "$examples" "$repo/scripts" "$out" <<'EOF'
import sys, time
from pathlib import Path
sys.path.insert(0, sys.argv[3])
import benchmark_scale
started = time.perf_counter()
path = benchmark_scale.generate_corpus(Path(sys.argv[1]), int(sys.argv[2]), benchmark_scale.CorpusShape())
seconds = time.perf_counter() - started
import datasets, json
import pyarrow.compute as pc
train = datasets.load_from_disk(str(path))["train"]
tokens = pc.sum(pc.list_value_length(train.data.column("context"))).as_py()  # from the Arrow lengths: no strings built
summary = {"train_examples": len(train), "train_context_tokens": tokens, "seconds": seconds}
json.dump(summary, open(Path(sys.argv[4]) / "corpus.json", "w"), indent=2)
print(f"{path}: {summary}")
EOF
}
export -f corpus
stage corpus 90 corpus
data="$work/corpus-$examples"
if [ "$device" = cuda ]; then
    trainer=(--trainer.accelerator gpu --trainer.devices 1 --trainer.precision bf16-mixed)
    workers=4
else
    trainer=(--trainer.accelerator cpu --trainer.devices 1 --trainer.precision bf16-mixed
             --model.embedding_dim 16 --model.hidden_dim 16)
    workers=1
fi

sample_gpu() {  # GPU utilisation (%) and memory used (MiB), twice a second, until killed
    if [ "$device" = cuda ]; then
        exec nvidia-smi --query-gpu=timestamp,utilization.gpu,memory.used \
            --format=csv,noheader,nounits -lms 500
    fi
}
sample_gpu >"$out/gpu_samples.csv" 2>&1 &
sampler=$!
date +%s.%N >"$out/fit_started"
stage fit 240 cli fit --config configs/attentive_reader_paper.yaml --data.path "$data" \
    "${trainer[@]}" --trainer.max_epochs 1 --trainer.max_time 00:00:02:30 \
    --trainer.default_root_dir "$work/runs" --data.num_workers "$workers" \
    --trainer.logger.class_path pytorch_lightning.loggers.CSVLogger \
    --trainer.logger.init_args.save_dir "$work/runs" \
    --trainer.profiler.class_path pytorch_lightning.profilers.SimpleProfiler \
    --trainer.profiler.init_args.dirpath "$out" --trainer.profiler.init_args.filename fit_profile
date +%s.%N >"$out/fit_ended"
kill "$sampler" 2>/dev/null
wait "$sampler" 2>/dev/null
best=$(ls "$work"/runs/lightning_logs/version_*/checkpoints/best-*.ckpt 2>/dev/null | head -n 1)
metrics=$(ls "$work"/runs/lightning_logs/version_*/metrics.csv 2>/dev/null | head -n 1)
[ -n "$metrics" ] && cp "$metrics" "$out/fit_metrics.csv"
if [ -n "$best" ]; then
    stage test 90 cli test --config configs/attentive_reader_paper.yaml --data.path "$data" \
        "${trainer[@]}" --trainer.default_root_dir "$work/runs" --data.num_workers "$workers" \
        --ckpt_path "$best"
    stage evaluate 90 cli evaluate --ckpt "$best" --data "$data" --device "$device" \
        --out "$out/evaluate.json"
    # the first of the toolkit's default pipelines that is installed (corpus/pipeline.py)
    spacy_model=$("$python" -c 'import importlib.util as u
from attentive_reader.corpus.pipeline import DEFAULT_MODELS
print(next(m for m in DEFAULT_MODELS if u.find_spec("spacy") and u.find_spec(m)))' 2>/dev/null)
    if [ -n "$spacy_model" ]; then
        cat >"$work/article.txt" <<'EOF'
The mayor of Springfield, Jane Alvarez, opened the new bridge over the Miller River on Monday.
Alvarez said the bridge would cut the drive to Shelbyville by twenty minutes. Governor Tom Reed
praised the project, which the Springfield council had approved in 2019.
EOF
        stage answer 90 cli answer --ckpt "$best" --document "$work/article.txt" \
            --query "@placeholder opened the new bridge over the Miller River" \
            --spacy-model "$spacy_model" --device "$device" --json --out "$out/answer.json"
    else
        echo "{\"stage\": \"answer\", \"skipped\": \"spaCy or its English pipeline is not installed here\"}" >>"$out/stages.jsonl"
        say "answer: skipped (spaCy or its English pipeline is not installed here)"
    fi
else
    say "fit left no best checkpoint: test, evaluate and answer skipped"
fi

# --- 4. every shipped reader ------------------------------------------------------------------
if [ "$device" = cuda ]; then
    sizes=(--train-batches 12 --rounds 1 --threads 8)
fi
stage bench_shipped 150 "$python" scripts/benchmark.py --device "$device" --sections train \
    --shipped "${sizes[@]}" --output "$out/bench_shipped.json"

# --- 5. the report ----------------------------------------------------------------------------
"$python" scripts/gpu_check_report.py "$out" >"$out/report.log" 2>&1 || say "report failed (OUT/report.log)"
say "done: $out/gpu_check.md"
rm -rf "$work"
