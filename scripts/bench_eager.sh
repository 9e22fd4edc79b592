#!/usr/bin/env bash
# Eager throughput against PyTorch's own eager step, in one sitting (issue "full fine-tune" benchmark):
# llama2.c stories15M with random weights, batch 4 x 256, fp32, 2 threads, medians after warm-up.
#   scripts/bench_eager.sh [extra bench overrides, e.g. dtype=bf16]
# Needs a built tree (scripts/setup.sh build) and python3 with torch for the baseline.
set -euo pipefail
cd "$(dirname "$0")/.."
steps=${STEPS:-10}
threads=${THREADS:-2}
python=${TB_PYTHON:-/usr/bin/python3}  # the Debian python that has python3-torch
dtype=fp32
for o in "$@"; do case $o in dtype=*) dtype=${o#dtype=} ;; esac; done

ours=$(build/bin/tunebench-cli bench step --config bench/stories15m_full --steps "$steps" --warmup 2 \
  num_threads="$threads" "$@" | tail -n 1)
# tunebench keeps freed blocks in the heap (training::keep_freed_memory_in_process); PyTorch gets the
# same glibc setting, so the comparison is of the steps, not of the allocator.
theirs=$(GLIBC_TUNABLES=glibc.malloc.mmap_max=0:glibc.malloc.trim_threshold=2147483647 \
  "$python" scripts/bench/pytorch_eager_step.py --preset stories15m --batch 4 --seq 256 \
  --threads "$threads" --steps "$steps" --warmup 2 --dtype "$dtype" | tail -n 1)
echo "tunebench eager: $ours"
echo "pytorch eager:   $theirs"
"$python" - "$ours" "$theirs" <<'PY'
import json, sys
ours, theirs = json.loads(sys.argv[1]), json.loads(sys.argv[2])
print("tokens/s: tunebench %.0f, pytorch %.0f, ratio %.2fx" % (
    ours["tokens_per_s"], theirs["tokens_per_s"], ours["tokens_per_s"] / theirs["tokens_per_s"]))
print("peak %.3f GiB against weights + grads + AdamW %.3f GiB (%.2fx)" % (
    ours["peak_memory_gib"], ours["floor_gib"], ours["peak_over_floor"]))
PY
