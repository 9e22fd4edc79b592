#!/usr/bin/env bash
# Runs torchtune's own single-device configs (tests/data/torchtune_configs, unchanged) one optimizer step
# each, with what a user sets locally: the tokenizer files (this project's fixtures of each family's
# format), a local Alpaca JSON (the bundled sample) for the Hub dataset, random weights for the model
# folder (checkpoint_dir=null: nothing to download), device=$DEVICE (default cpu; the configs say cuda), and batch_size=1, gradient_accumulation_steps=1,
# max_steps_per_epoch=1 so that an 8B model's step fits a CPU's minutes. Prints one Markdown row per config:
# exit status, wall time, peak RSS, the step's loss, and the first error line when it failed.
#   scripts/run_torchtune_configs.sh [REGEX]   (default: every config; e.g. 'qwen2_5/0.5B|llama3_2/1B')
# SKIP=REGEX leaves matching configs out (e.g. SKIP='13B|14B|27B' where bf16 weights would not fit in RAM).
# OVERRIDES='key=value ...' adds overrides to every run (e.g. OVERRIDES=optimizer_in_bwd=False, to see
# what a setting saves).
# EXPECT_ALL_PASS=1 exits non-zero when a config fails that the compat table does not refuse (its log's
# tail goes to stderr), or when one it refuses runs. TB_CLI: the tunebench-cli to run (default build/bin).
set -euo pipefail
cd "$(dirname "$0")/.."
cli=${TB_CLI:-$PWD/build/bin/tunebench-cli}
[ -x "$cli" ] || { echo "run_torchtune_configs.sh: $cli not found: build first (scripts/setup.sh build)" >&2; exit 1; }
filter=${1:-.}
work=$(mktemp -d "${TMPDIR:-/tmp}/tunebench-torchtune-runs.XXXXXX")
trap 'rm -rf "$work"' EXIT

# vocab.json + merges.txt, the files torchtune's Qwen and Phi-4 tokenizers read, from a tokenizer.json.
split_bpe() {
  mkdir -p "$work/$2"
  python3 - "$1" "$work/$2" <<'PY'
import json, sys
model = json.load(open(sys.argv[1], encoding="utf-8"))["model"]
json.dump(model["vocab"], open(sys.argv[2] + "/vocab.json", "w", encoding="utf-8"), ensure_ascii=False)
with open(sys.argv[2] + "/merges.txt", "w", encoding="utf-8") as f:
    f.write("#version: 0.2\n")
    for m in model["merges"]:
        f.write((" ".join(m) if isinstance(m, list) else m) + "\n")
PY
}
split_bpe tests/data/tokenizers/qwen/tokenizer.json qwen
split_bpe tests/data/tokenizers/phi4/tokenizer.json phi4

# Configs the compat table refuses (docs/torchtune-compat.md): they must fail, at validation.
refused='dora|qdora|llama3_2_vision'

echo "| config | status | wall (s) | peak RSS (GiB) | loss | note |"
echo "|---|---|---|---|---|---|"
failures=0
for config in $(cd tests/data/torchtune_configs && find . -name '*.yaml' | sed 's|^\./||' | sort); do
  [[ $config =~ $filter ]] || continue
  [ -n "${SKIP:-}" ] && [[ $config =~ $SKIP ]] && continue
  file=tests/data/torchtune_configs/$config
  recipe=lora_finetune_single_device
  [[ $config == *full* ]] && recipe=full_finetune_single_device
  tokenizer=$(grep -A1 '^tokenizer:' "$file" | sed -n 's/.*_component_: *//p')
  case $tokenizer in
    *llama3_tokenizer) tok=(tokenizer.path=tests/data/tokenizers/llama3/tokenizer.json) ;;
    *qwen2_tokenizer|*qwen2_5_tokenizer|*qwen3_tokenizer)
      tok=(tokenizer.path="$work/qwen/vocab.json" tokenizer.merges_file="$work/qwen/merges.txt") ;;
    *phi4_tokenizer) tok=(tokenizer.vocab_path="$work/phi4/vocab.json" tokenizer.merges_path="$work/phi4/merges.txt") ;;
    *) tok=(tokenizer.path=resources/tokenizer/tokenizer.model) ;;  # SentencePiece: Llama 2, Mistral, Gemma, Phi-3
  esac
  out=$work/out/${config%.yaml}
  log=$work/log
  start=$(date +%s.%N)
  set +e
  /usr/bin/time -f '%M' -o "$work/rss" "$cli" run "$recipe" --config "$file" output_dir="$out" \
    checkpointer.checkpoint_dir=null 'checkpointer.checkpoint_files=[]' "${tok[@]}" \
    dataset.source=json dataset.data_files=resources/datasets/tiny_instruct.json \
    device="${DEVICE:-cpu}" batch_size=1 gradient_accumulation_steps=1 max_steps_per_epoch=1 epochs=1 \
    ${OVERRIDES:-} >"$log" 2>&1
  status=$?
  set -e
  wall=$(python3 -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.1f}')" "$start" "$(date +%s.%N)")
  rss=$(python3 -c "import sys; print(f'{int(sys.argv[1]) / 2**20:.2f}')" "$(tail -n 1 "$work/rss" | tr -dc 0-9)")
  loss=$(sed -n 's/^step 1\/1 .*| loss \([^ ]*\) .*/\1/p' "$log" | head -n 1)
  note=$(grep -m1 -E 'error|failed|refused|not supported' "$log" | cut -c1-160 | tr '|' '/' || true)
  if [ $status -eq 0 ]; then
    echo "| $config | ok | $wall | $rss | $loss | |"
    [[ $config =~ $refused ]] && failures=$((failures + 1))
  else
    echo "| $config | exit $status | $wall | $rss | $loss | $note |"
    if ! [[ $config =~ $refused ]]; then
      failures=$((failures + 1))
      { echo "--- $config: the log's last lines"; tail -n 20 "$log"; } >&2
    fi
  fi
  rm -rf "$out"
done
if [ "${EXPECT_ALL_PASS:-0}" = 1 ] && [ $failures -gt 0 ]; then
  echo "run_torchtune_configs.sh: $failures config(s) did not do what the compat table says" >&2
  exit 1
fi
