#!/usr/bin/env bash
# GGUF export per type: wall time, peak memory, file size and bytes per parameter.
#   scripts/bench_export.sh [CONFIG] [TYPES...] [-- k=v ...]
# Default: a 1B-parameter Llama 3.2 architecture with seeded random weights (nothing to download) and
# the bundled SentencePiece tokenizer, every type. Run from the repository root after building.
set -euo pipefail
cd "$(dirname "$0")/.."
cli=${TB_CLI:-build/bin/tunebench-cli}
config=${1:-configs/tiny/eval_stories.yaml}
shift || true
types=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do types+=("$1"); shift; done
[ "${1:-}" = "--" ] && shift
overrides=("$@")
if [ ${#overrides[@]} -eq 0 ] && [ "$config" = configs/tiny/eval_stories.yaml ]; then
  overrides=(model._component_=torchtune.models.llama3_2.llama3_2_1b '~model.path' checkpointer.checkpoint_dir=null dtype=bf16)
fi
[ ${#types[@]} -gt 0 ] || types=(f32 f16 bf16 q8_0 q4_0 q4_k_m q5_k_m q6_k)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
printf '%-8s %10s %10s %14s %12s %9s\n' type seconds peak_GiB bytes parameters bytes/param
for t in "${types[@]}"; do
  /usr/bin/time -f '%e %M' -o "$out/time" "$cli" export gguf --config "$config" --output "$out/m.gguf" --type "$t" \
    "${overrides[@]}" > "$out/json" 2> "$out/err" || { echo "$t: failed: $(tail -1 "$out/err")"; continue; }
  read -r secs kb < "$out/time"
  python3 - "$t" "$secs" "$kb" "$out/json" <<'PY'
import json, sys
t, secs, kb, path = sys.argv[1], float(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
r = json.loads(open(path).read().strip().splitlines()[-1])
print(f"{t:<8} {secs:10.1f} {kb / 2**20:10.2f} {r['bytes']:14d} {r['parameters']:12d} {r['bytes_per_parameter']:9.3f}")
PY
  rm -f "$out/m.gguf"
done
