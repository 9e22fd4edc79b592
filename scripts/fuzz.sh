#!/usr/bin/env bash
# Fuzzing as a habit: libFuzzer targets (tests/fuzz/fuzz_*.cpp) over the torch-free parsers a user's
# files reach: the YAML config loader with overrides, tokenizer.json, tiktoken files (Llama 3's
# tokenizer.model), chat templates, config.json, dataset rows, safetensors headers and Parquet files. Built with clang-14 under AddressSanitizer and UndefinedBehaviorSanitizer.
#   scripts/fuzz.sh [SECONDS] [TARGET...]   fuzz each target for SECONDS (default 60), all targets by default
#   scripts/fuzz.sh --regressions          only replay tests/fuzz/regressions/<target>/* (what fuzzing found)
# Seeds: the project's own files of each kind (bundled configs, tokenizer fixtures, chat templates, model
# config.json files, datasets) plus tests/fuzz/seeds/<target>/ and the regressions. A finding is written to
# build-fuzz/findings/<target>/; turn it into a regression by copying it to tests/fuzz/regressions/<target>/
# once it is fixed. Needs clang-14 and libclang-rt-14-dev (scripts/setup.sh fuzz installs them).
# FUZZ_TIMEOUT (seconds, default 10): an input that runs longer is a finding. It is wall-clock time, so
# on a machine busy with other work (a build beside a niced fuzzer) raise it, or slow inputs are reported
# that take milliseconds alone; rerun a finding with `build-fuzz/bin/fuzz_<target> <file>` to tell.
set -euo pipefail
cd "$(dirname "$0")/.."

regressions_only=0
seconds=60
if [ "${1:-}" = "--regressions" ]; then regressions_only=1; shift; elif [[ "${1:-}" =~ ^[0-9]+$ ]]; then seconds=$1; shift; fi
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(config tokenizer_json tiktoken chat_template hf_config json_rows safetensors parquet)

cxx=${CXX_FUZZ:-clang++-14}
command -v "$cxx" >/dev/null || { echo "fuzz.sh: $cxx not found: apt-get install clang-14 libclang-rt-14-dev" >&2; exit 1; }
out=${FUZZ_OUT:-build-fuzz}  # FUZZ_OUT: another folder, for a second run beside this one
mkdir -p "$out/obj" "$out/bin" "$out/findings"
flags=(-std=c++17 -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=undefined
       -Irecipes $(pkg-config --cflags oniguruma libutf8proc yaml-cpp))
libs=($(pkg-config --libs oniguruma libutf8proc yaml-cpp snappy libzstd liblz4 libbrotlidec zlib))

# The torch-free engine sources the targets reach, each compiled once (make-style: only when newer).
sources=(recipes/config/*.cpp recipes/text/*.cpp recipes/checkpoint/hf_config.cpp recipes/checkpoint/safetensors_header.cpp
         recipes/models/model_args.cpp
         recipes/data/json_rows.cpp recipes/data/csv_rows.cpp recipes/data/row_stream.cpp recipes/data/dataset.cpp recipes/data/bpe_tokenizer.cpp recipes/data/tokenizer.cpp
         recipes/data/parquet_thrift.cpp recipes/data/parquet_pages.cpp recipes/data/parquet_reader.cpp)
objects=()
pids=()
for src in "${sources[@]}"; do
  obj="$out/obj/$(echo "$src" | tr / _).o"
  objects+=("$obj")
  if [ ! -f "$obj" ] || [ "$src" -nt "$obj" ] || [ -n "$(find recipes -name '*.h' -newer "$obj" -print -quit)" ]; then
    "$cxx" "${flags[@]}" -fsanitize=fuzzer-no-link -c "$src" -o "$obj" &
    pids+=($!)
    if [ ${#pids[@]} -ge 2 ]; then wait "${pids[0]}"; pids=("${pids[@]:1}"); fi
  fi
done
for p in "${pids[@]}"; do wait "$p"; done
ar rcs "$out/libfuzzcore.a" "${objects[@]}"

seed_files() {
  case $1 in
    config) ls configs/*/*.yaml tests/data/config/*.yaml 2>/dev/null ;;
    tokenizer_json) find tests/data/tokenizers -name tokenizer.json -size -2M ;;
    tiktoken) ;;  # tests/fuzz/seeds/tiktoken: ranks of the Llama 3 fixture's vocabulary
    chat_template) ls tests/data/chat_templates/*.jinja ;;
    hf_config) find resources tests/data -name config.json ;;
    json_rows) ls resources/datasets/*.json* tests/data/datasets/*.json* 2>/dev/null ;;
    safetensors) find resources tests/data -name '*.safetensors' -size -64k ;;
    parquet) ;;  # tests/fuzz/seeds/parquet: small files DuckDB wrote (flat and nested, several codecs)
  esac
}

status=0
for t in "${targets[@]}"; do
  bin="$out/bin/fuzz_$t"
  "$cxx" "${flags[@]}" -fsanitize=fuzzer "tests/fuzz/fuzz_$t.cpp" "$out/libfuzzcore.a" "${libs[@]}" -o "$bin"
  regressions="tests/fuzz/regressions/$t"
  if [ -d "$regressions" ] && [ -n "$(ls -A "$regressions")" ]; then
    echo "==> fuzz_$t: replaying $(ls "$regressions" | wc -l) regression input(s)"
    "$bin" -runs=0 "$regressions"/* >/dev/null 2>"$out/fuzz_$t.regressions.log" || { cat "$out/fuzz_$t.regressions.log" >&2; status=1; }
  fi
  [ $regressions_only = 1 ] && continue
  corpus="$out/corpus/$t"
  mkdir -p "$corpus" "$out/findings/$t"
  seed_files "$t" | while read -r f; do cp -f "$f" "$corpus/$(echo "$f" | tr / _)"; done
  [ -d "tests/fuzz/seeds/$t" ] && cp -f tests/fuzz/seeds/$t/* "$corpus/" 2>/dev/null || true
  # What fuzzing found once seeds it again: mutations of a fixed shape look for its neighbours.
  [ -d "$regressions" ] && cp -f "$regressions"/* "$corpus/" 2>/dev/null || true
  echo "==> fuzz_$t: $seconds s from $(ls "$corpus" | wc -l) inputs"
  if ! "$bin" -max_total_time="$seconds" -timeout="${FUZZ_TIMEOUT:-10}" -rss_limit_mb=2048 -max_len=65536 -print_final_stats=1 \
       -artifact_prefix="$out/findings/$t/" "$corpus" >"$out/fuzz_$t.log" 2>&1; then
    echo "fuzz_$t: FOUND a problem: $(ls "$out/findings/$t" | head -1) (log: $out/fuzz_$t.log)" >&2
    grep -m3 -E "ERROR|SUMMARY|runtime error" "$out/fuzz_$t.log" >&2 || true
    status=1
  fi
  grep -E "stat::number_of_executed_units|stat::new_units_added" "$out/fuzz_$t.log" | tr '\n' ' '; echo
done
exit $status
