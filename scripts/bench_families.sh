#!/usr/bin/env bash
# `bench compile` (eager vs compiled, same batches, one process each) on the shapes of Qwen3-0.6B and
# Gemma-3-1B (random weights, synthetic ids, batch 1 x 512, 2 threads): LoRA, QLoRA and the full
# fine-tune, fp32 and bf16. Prints one Markdown table; each run's JSON line goes to stderr.
#   scripts/bench_families.sh [qwen3|gemma3|all] [lora|qlora|full|all] [fp32|bf16|all]
# STEPS (default 3) measured steps after WARMUP (default 1). Run nothing else meanwhile.
set -euo pipefail
cd "$(dirname "$0")/.."
cli=build/bin/tunebench-cli
[ -x "$cli" ] || { echo "bench_families.sh: $cli not found: build first (scripts/setup.sh build)" >&2; exit 1; }
models=${1:-all} recipes=${2:-all} dtypes=${3:-all}
[ "$models" = all ] && models="qwen3 gemma3"
[ "$recipes" = all ] && recipes="lora qlora full"
[ "$dtypes" = all ] && dtypes="fp32 bf16"
steps=${STEPS:-3} warmup=${WARMUP:-1} threads=${THREADS:-2}
echo "| shape | dtype | recipe | eager tok/s | compile tok/s | speed-up | warm-up (s) | loss max rel diff | eager GiB | compile GiB | eager pieces |"
echo "|---|---|---|---|---|---|---|---|---|---|---|"
for model in $models; do
  case $model in qwen3) base=qwen3_0_6b ;; gemma3) base=gemma3_1b ;; *) echo "unknown model $model" >&2; exit 2 ;; esac
  for recipe in $recipes; do
    config=bench/${base}_lora extra=()
    [ "$recipe" = full ] && config=bench/${base}_full
    [ "$recipe" = qlora ] && extra=(model.quantize_base=true)
    for dtype in $dtypes; do
      echo "==> $model $recipe $dtype" >&2
      line=$("$cli" bench compile --config "$config" --steps "$steps" --warmup "$warmup" num_threads="$threads" \
        dtype="$dtype" "${extra[@]}" | tail -n 1) || { echo "| $base | $dtype | $recipe | failed | | | | | | | |"; continue; }
      echo "$line" >&2
      python3 - "$base" "$dtype" "$recipe" "$line" <<'PY'
import json, sys
base, dtype, recipe, line = sys.argv[1:]
j = json.loads(line)
pieces = ", ".join(j.get("compile_eager_pieces") or []) or "none"
print(f"| {base} 1x512 | {dtype} | {recipe} | {j['eager_tokens_per_s']:.1f} | {j['compile_tokens_per_s']:.1f} | "
      f"{j['speedup']:.2f}x | {j['compile_warmup_s']:.1f} | {j['loss_max_rel_diff']:.1e} | "
      f"{j['eager_peak_memory_gib']:.2f} | {j['compile_peak_memory_gib']:.2f} | {pieces} |")
PY
    done
  done
done
