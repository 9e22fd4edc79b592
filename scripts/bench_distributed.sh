#!/usr/bin/env bash
# The issue-28 figures: data parallel on this machine. For each recipe, the same global batch trained by
# one process with every thread and by N processes (run --nproc-per-node N) with threads divided among
# them: median step time after warm-up, tokens/s, and the share of the step the gradient all-reduce takes
# (rank 0's own measure: the wait for the sums after backward), with the sums overlapping backward (as
# the recipes run) and after it (TUNEBENCH_DDP_OVERLAP=0). stories15M, random weights, synthetic ids, eager.
#   scripts/bench_distributed.sh [STEPS]       default 12 steps, the first 2 not counted
# Env: NPROC (default 2), THREADS (threads in all, default: the cores), BATCH (global, default 4).
set -euo pipefail
cd "$(dirname "$0")/.."
cli=build/bin/tunebench-cli
python=${TB_PYTHON:-python3}
[ -x "$cli" ] || { echo "bench_distributed.sh: $cli not found: build first (scripts/setup.sh build)" >&2; exit 1; }
steps=${1:-12}
nproc=${NPROC:-2}
threads=${THREADS:-$(nproc)}
batch=${BATCH:-4}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

summary() {  # metrics.jsonl -> "median_s tokens_per_s allreduce_s"
  "$python" - "$1" <<'PY'
import json, re, statistics, sys
steps, reduce_s = [], None
for line in open(sys.argv[1]):
    j = json.loads(line)
    if "event" not in j and "loss" in j:
        steps.append(j)
    elif j.get("event") == "info":
        m = re.search(r"all-reduce of the gradients over \d+ processes: ([0-9.]+) s per step", j.get("message", ""))
        if m: reduce_s = float(m.group(1))
steady = steps[2:] or steps
t = statistics.median(s["step_time_s"] for s in steady)
tok = statistics.median(s["tokens_per_second"] for s in steady)
print(f"{t:.3f} {tok:.0f} {reduce_s if reduce_s is not None else 0:.3f}")
PY
}

echo "| recipe | processes x threads | batch per process | median step (s) | tokens/s | all-reduce wait (s/step) | share of the step |"
echo "|---|---|---|---|---|---|---|"
for recipe in full lora; do
  common=(max_steps_per_epoch="$steps" log_peak_memory_stats=false save_every_n_steps=null)
  echo "==> $recipe: 1 x $threads" >&2
  "$cli" run "${recipe}_finetune_single_device" --config "configs/bench/stories15m_$recipe.yaml" \
    output_dir="$work/$recipe-1" num_threads="$threads" batch_size="$batch" "${common[@]}" >/dev/null
  read -r t tok _ < <(summary "$work/$recipe-1/logs/metrics.jsonl")
  echo "| $recipe | 1 x $threads | $batch | $t | $tok | - | - |"
  per=$((threads / nproc)); [ "$per" -ge 1 ] || per=1
  for overlap in 1 0; do
    label="$nproc x $per"; [ "$overlap" = 1 ] || label="$label, sums after backward"
    echo "==> $recipe: $label" >&2
    TUNEBENCH_DDP_OVERLAP=$overlap "$cli" run --nproc-per-node "$nproc" "${recipe}_finetune_distributed" \
      --config "configs/bench/stories15m_$recipe.yaml" output_dir="$work/$recipe-$nproc-$overlap" \
      num_threads="$per" batch_size=$((batch / nproc)) "${common[@]}" >/dev/null 2>"$work/launcher.err"
    read -r t tok r < <(summary "$work/$recipe-$nproc-$overlap/logs/metrics.jsonl")
    share=$("$python" -c "print(f'{100 * $r / $t:.0f}%')")
    echo "| $recipe | $label | $((batch / nproc)) | $t | $tok | $r | $share |"
  done
done
